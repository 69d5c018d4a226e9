// The C tables CTX_PLUGIN builds, called through their C function pointers in process: how each
// kind's class is constructed, how returns, exceptions and sink refusals become codes, verdicts
// and error text, and when the optional host-adapter op is absent.
#include <gtest/gtest.h>

#include <cstring>
#include <ctx/sdk/plugin.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace sdk = ctx::sdk;
namespace kinds = ctx::sdk::plugin_kind;

struct Collected {
  std::string text;
  ctx_code refusal = CTX_OK;
};

ctx_code collect(void* context, const uint8_t* data, size_t size) {
  auto* c = static_cast<Collected*>(context);
  if (c->refusal != CTX_OK) return c->refusal;
  c->text.append(reinterpret_cast<const char*>(data), size);
  return CTX_OK;
}

// Records what the host services saw.
struct HostLog {
  std::vector<std::string> lines;
  bool cancel = false;
};
void host_log(void* context, int32_t level, const char* message, size_t size) {
  static_cast<HostLog*>(context)->lines.push_back(std::to_string(level) + ":" +
                                                  std::string(message, size));
}
void host_progress(void*, uint64_t, uint64_t) {}
int32_t host_cancelled(void* context) { return static_cast<HostLog*>(context)->cancel ? 1 : 0; }
int64_t host_now(void*) { return 1234; }

// A verifier constructed from (Host, config): accepts signing bytes equal to the config, throws
// ctx::InvalidArgument for an empty assertion and std::runtime_error for "boom".
class EchoVerifier final : public sdk::Verifier {
 public:
  EchoVerifier(const sdk::Host& host, std::string_view config) : host_(host), key_(config) {
    host_.log(sdk::Host::LogLevel::kInfo, "created");
  }
  bool verify(std::string_view assertion, std::string_view signing_bytes) override {
    if (assertion.empty()) throw ctx::InvalidArgument("empty assertion");
    if (assertion == "boom") throw std::runtime_error("exploded");
    if (assertion == "cancel?" && host_.cancelled()) {
      throw ctx::Error("cancelled", ctx::ErrorCode::kCancelled);
    }
    return signing_bytes == key_ && host_.now_unix_micros() == 1234;
  }

 private:
  sdk::Host host_;
  std::string key_;
};

// An installer constructed from nothing; each op answers its own name and input.
class NamingInstaller final : public sdk::Installer {
 public:
  std::string target_identity() override { return "identity"; }
  std::string install(std::string_view r) override { return "install:" + std::string(r); }
  std::string activate(std::string_view r) override { return "activate:" + std::string(r); }
  std::string deactivate(std::string_view r) override { return "deactivate:" + std::string(r); }
  std::string reconcile(std::string_view r) override {
    if (r == "fail") throw ctx::Error("root changed", ctx::ErrorCode::kFailedPrecondition);
    return "reconcile:" + std::string(r);
  }
};

// Host adapters with and without the optional op, constructed from the config alone.
class PlainAdapter : public sdk::HostAdapter {
 public:
  explicit PlainAdapter(std::string_view config) : config_(config) {}
  std::string parse_hook(std::string_view p) override { return config_ + "|" + std::string(p); }
  std::string render_reply(std::string_view a) override { return "reply:" + std::string(a); }

 private:
  std::string config_;
};
class LocatingAdapter final : public PlainAdapter {
 public:
  using PlainAdapter::PlainAdapter;
  std::string install_locations() override { return R"({"skills":"/s"})"; }
};

ctx_bytes bytes(std::string_view text) { return sdk::bytes(text); }

void* create(const ctx_plugin_descriptor& d, const ctx_host_api* host, std::string_view config) {
  void* instance = nullptr;
  ctx_error err{};
  EXPECT_EQ(d.create(host, bytes(config), &instance, &err), CTX_OK) << err.message;
  EXPECT_NE(instance, nullptr);
  return instance;
}

TEST(SdkTables, DescriptorCarriesTheMacroArgumentsAndTheRequiredMinor) {
  constexpr ctx_plugin_descriptor d =
      sdk::internal::make_descriptor<EchoVerifier, kinds::verifier>("echo", "2.0.0");
  EXPECT_EQ(d.abi_major, CTX_ABI_MAJOR);
  EXPECT_EQ(d.struct_size, sizeof(ctx_plugin_descriptor));
  EXPECT_EQ(d.abi_minor_required, EchoVerifier::kAbiMinorRequired);
  EXPECT_EQ(d.abi_minor_built, CTX_ABI_MINOR);
  EXPECT_EQ(d.kind, CTX_KIND_VERIFIER);
  EXPECT_STREQ(d.id, "echo");
  EXPECT_STREQ(d.version, "2.0.0");
  const auto* ops = static_cast<const ctx_verifier_ops*>(d.ops);
  EXPECT_EQ(ops->struct_size, sizeof(ctx_verifier_ops));
}

TEST(SdkTables, VerifierVerdictsCodesAndHostServices) {
  constexpr ctx_plugin_descriptor d =
      sdk::internal::make_descriptor<EchoVerifier, kinds::verifier>("echo", "2.0.0");
  HostLog log;
  const ctx_host_api host{sizeof(ctx_host_api), &log, &host_log, &host_progress, &host_cancelled,
                          &host_now};
  void* instance = create(d, &host, "key");
  ASSERT_EQ(log.lines, std::vector<std::string>{std::to_string(CTX_LOG_INFO) + ":created"});
  const auto* ops = static_cast<const ctx_verifier_ops*>(d.ops);

  uint32_t verdict = 7;
  ctx_error err;
  std::memset(err.message, 'X', sizeof err.message);
  EXPECT_EQ(ops->verify(instance, bytes("{}"), bytes("key"), &verdict, &err), CTX_OK);
  EXPECT_EQ(verdict, CTX_VERDICT_ACCEPTED);
  EXPECT_EQ(err.message[0], 'X') << "success wrote into the error buffer";

  verdict = 7;
  EXPECT_EQ(ops->verify(instance, bytes("{}"), bytes("other"), &verdict, &err), CTX_OK);
  EXPECT_EQ(verdict, CTX_VERDICT_REJECTED);

  verdict = 7;
  EXPECT_EQ(ops->verify(instance, bytes(""), bytes("key"), &verdict, &err), CTX_INVALID_ARGUMENT);
  EXPECT_STREQ(err.message, "empty assertion");
  EXPECT_EQ(verdict, CTX_VERDICT_REJECTED);

  EXPECT_EQ(ops->verify(instance, bytes("boom"), bytes("key"), &verdict, &err), CTX_INTERNAL);
  EXPECT_STREQ(err.message, "exploded");
  EXPECT_EQ(verdict, CTX_VERDICT_REJECTED);

  log.cancel = true;
  EXPECT_EQ(ops->verify(instance, bytes("cancel?"), bytes("key"), &verdict, &err), CTX_CANCELLED);

  EXPECT_EQ(ops->verify(instance, bytes("{}"), bytes("key"), nullptr, &err), CTX_INVALID_ARGUMENT);
  EXPECT_EQ(ops->verify(nullptr, bytes("{}"), bytes("key"), &verdict, &err),
            CTX_INVALID_ARGUMENT);
  EXPECT_EQ(verdict, CTX_VERDICT_REJECTED);
  EXPECT_EQ(d.destroy(instance, &err), CTX_OK);
}

TEST(SdkTables, HostServicesPastAShortTableAreAbsent) {
  constexpr ctx_plugin_descriptor d =
      sdk::internal::make_descriptor<EchoVerifier, kinds::verifier>("echo", "2.0.0");
  HostLog log;
  // A host whose table ends before `log`: the plugin must not call it, and the clock reads 0.
  const ctx_host_api host{offsetof(ctx_host_api, log), &log, &host_log, &host_progress,
                          &host_cancelled, &host_now};
  void* instance = create(d, &host, "key");
  EXPECT_TRUE(log.lines.empty());
  uint32_t verdict = 7;
  ctx_error err{};
  const auto* ops = static_cast<const ctx_verifier_ops*>(d.ops);
  EXPECT_EQ(ops->verify(instance, bytes("{}"), bytes("key"), &verdict, &err), CTX_OK);
  EXPECT_EQ(verdict, CTX_VERDICT_REJECTED) << "now_unix_micros was read past struct_size";
  EXPECT_EQ(d.destroy(instance, &err), CTX_OK);
  void* no_host = create(d, nullptr, "key");
  EXPECT_EQ(d.destroy(no_host, &err), CTX_OK);
}

TEST(SdkTables, CreateWithoutAnOutParameterIsAnInvalidArgument) {
  constexpr ctx_plugin_descriptor d =
      sdk::internal::make_descriptor<EchoVerifier, kinds::verifier>("echo", "2.0.0");
  ctx_error err{};
  EXPECT_EQ(d.create(nullptr, bytes("key"), nullptr, &err), CTX_INVALID_ARGUMENT);
  EXPECT_STREQ(err.message, "instance out-parameter is missing");
}

TEST(SdkTables, InstallerOpsWriteTheirRepliesAndPassSinkRefusalsThrough) {
  constexpr ctx_plugin_descriptor d =
      sdk::internal::make_descriptor<NamingInstaller, kinds::installer>("naming", "1.0.0");
  EXPECT_EQ(d.kind, CTX_KIND_INSTALLER);
  void* instance = create(d, nullptr, "ignored");
  const auto* ops = static_cast<const ctx_installer_ops*>(d.ops);
  Collected out;
  ctx_sink sink{&out, &collect};
  ctx_error err{};
  EXPECT_EQ(ops->target_identity(instance, &sink, &err), CTX_OK);
  EXPECT_EQ(ops->install(instance, bytes("a"), &sink, &err), CTX_OK);
  EXPECT_EQ(ops->activate(instance, bytes("b"), &sink, &err), CTX_OK);
  EXPECT_EQ(ops->deactivate(instance, bytes("c"), &sink, &err), CTX_OK);
  EXPECT_EQ(ops->reconcile(instance, bytes("d"), &sink, &err), CTX_OK);
  EXPECT_EQ(out.text, "identityinstall:aactivate:bdeactivate:creconcile:d");
  EXPECT_EQ(ops->reconcile(instance, bytes("fail"), &sink, &err), CTX_FAILED_PRECONDITION);
  EXPECT_STREQ(err.message, "root changed");
  out.refusal = CTX_RESOURCE_EXHAUSTED;
  EXPECT_EQ(ops->install(instance, bytes("a"), &sink, &err), CTX_RESOURCE_EXHAUSTED);
  EXPECT_EQ(ops->install(instance, bytes("a"), nullptr, &err), CTX_INVALID_ARGUMENT);
  EXPECT_EQ(d.destroy(instance, &err), CTX_OK);
}

TEST(SdkTables, InstallLocationsIsNullUnlessTheClassOffersIt) {
  constexpr ctx_plugin_descriptor plain =
      sdk::internal::make_descriptor<PlainAdapter, kinds::host_adapter>("plain", "1.0.0");
  constexpr ctx_plugin_descriptor locating =
      sdk::internal::make_descriptor<LocatingAdapter, kinds::host_adapter>("locating", "1.0.0");
  const auto* plain_ops = static_cast<const ctx_host_adapter_ops*>(plain.ops);
  const auto* locating_ops = static_cast<const ctx_host_adapter_ops*>(locating.ops);
  EXPECT_EQ(plain_ops->install_locations, nullptr);
  ASSERT_NE(locating_ops->install_locations, nullptr);

  void* instance = create(locating, nullptr, "cfg");
  Collected out;
  ctx_sink sink{&out, &collect};
  ctx_error err{};
  EXPECT_EQ(locating_ops->parse_hook(instance, bytes("p"), &sink, &err), CTX_OK);
  EXPECT_EQ(locating_ops->render_reply(instance, bytes("a"), &sink, &err), CTX_OK);
  EXPECT_EQ(locating_ops->install_locations(instance, &sink, &err), CTX_OK);
  EXPECT_EQ(out.text, "cfg|preply:a{\"skills\":\"/s\"}");
  EXPECT_EQ(locating.destroy(instance, &err), CTX_OK);
}

TEST(SdkTables, LongErrorTextIsTruncatedAndTerminated) {
  ctx_error err;
  std::memset(err.message, 'X', sizeof err.message);
  const std::string text(2000, 'e');
  EXPECT_EQ(sdk::guard(&err, [&] { throw ctx::Error(text, ctx::ErrorCode::kDataLoss); }),
            CTX_DATA_LOSS);
  EXPECT_EQ(std::strlen(err.message), sizeof err.message - 1);
  EXPECT_EQ(sdk::guard(&err, [] { throw 42; }), CTX_INTERNAL);
  EXPECT_STREQ(err.message, "unknown exception");
  // A ctx::Error carrying kOk must not read as success.
  EXPECT_EQ(sdk::guard(&err, [] { throw ctx::Error("odd", ctx::ErrorCode::kOk); }), CTX_INTERNAL);
}

}  // namespace
