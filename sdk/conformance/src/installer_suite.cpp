// The installer suite: target identity and an install/activate/reconcile round trip in a fresh
// root, using the request contract documented in ctx/conformance/conformance.hpp.
#include <gtest/gtest.h>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance::detail {
namespace {

constexpr char kCapability[] = "skill:ctx-conformance";
constexpr char kBody[] =
    "---\nname: ctx-conformance\ndescription: conformance kit fixture\n---\nSay hello.\n";

// The MaterialIdentity digest plugin_abi.h states, computed here independently of any installer.
std::string material_identity_digest(const std::string& capability_id, const std::string& bytes) {
  const Json identity = {{"capability_id", capability_id},
                         {"content_bytes", bytes.size()},
                         {"content_sha256", core::sha256_hex(bytes)},
                         {"kind", capability_id.substr(0, capability_id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}};
  return core::canonical_digest(identity, core::Encoding::kAscii);
}

ctx_bytes bytes_of(const std::string& text) {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// Calls one request op and returns its reply object (recording failures).
class Installer {
 public:
  explicit Installer(PluginUnderTest& plugin)
      : ops_(*plugin.loaded().installer_ops()), instance_(plugin, plugin.fresh_config()) {}

  bool created() const { return instance_.created().code == CTX_OK; }
  const std::string& create_message() const { return instance_.created().message; }

  Json target_identity() {
    return call("target_identity", [&](ctx_sink* out, ctx_error* err) {
      return ops_.target_identity(instance_.handle(), out, err);
    });
  }
  Json install(const Json& request) { return request_op("install", ops_.install, request); }
  Json activate(const Json& request) { return request_op("activate", ops_.activate, request); }
  Json deactivate(const Json& request) {
    return request_op("deactivate", ops_.deactivate, request);
  }
  Json reconcile(const Json& request) { return request_op("reconcile", ops_.reconcile, request); }

 private:
  using RequestFn = ctx_code (*)(void*, ctx_bytes, ctx_sink*, ctx_error*);

  Json request_op(const std::string& name, RequestFn fn, const Json& request) {
    const std::string text = request.dump();
    return call(name, [&](ctx_sink* out, ctx_error* err) {
      return fn(instance_.handle(), bytes_of(text), out, err);
    });
  }

  Json call(const std::string& name, const std::function<ctx_code(ctx_sink*, ctx_error*)>& op) {
    Sink sink;
    CallResult result = invoke(name, [&](ctx_error* err) { return op(sink.get(), err); });
    result.output = sink.text();
    return expect_ok_object(result, name);
  }

  const ctx_installer_ops& ops_;
  RawInstance instance_;
};

// State of kCapability in a reconcile reply, or null when the reply does not list it.
Json state_of(const Json& reply) {
  if (!reply.is_object() || !reply.contains("capabilities") || !reply["capabilities"].is_array()) {
    ADD_FAILURE() << "reconcile reply has no \"capabilities\" array";
    return nullptr;
  }
  for (const Json& item : reply["capabilities"]) {
    if (item.is_object() && item.value("capability_id", "") == kCapability) return item;
  }
  ADD_FAILURE() << "reconcile reply does not list " << kCapability;
  return nullptr;
}

bool flag(const Json& state, const char* name) {
  if (!state.is_object() || !state.contains(name) || !state[name].is_boolean()) {
    ADD_FAILURE() << "reconcile state has no boolean \"" << name << "\"";
    return false;
  }
  return state[name].get<bool>();
}

}  // namespace

void register_installer_suite(const std::shared_ptr<PluginUnderTest>& plugin) {
  add_plugin_test(plugin, "Installer", "TargetIdentityDescribesTheRoot", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const Json identity = installer.target_identity();
    for (const char* field : {"device", "inode", "owner", "mode"}) {
      EXPECT_TRUE(identity.contains(field) && identity[field].is_number_unsigned())
          << "target identity needs an unsigned integer \"" << field << "\"";
    }
    EXPECT_TRUE(identity.contains("path") && identity["path"].is_string() &&
                !identity["path"].get<std::string>().empty())
        << "target identity needs a non-empty string \"path\"";
    EXPECT_EQ(installer.target_identity(), identity) << "target identity is not stable";
  });

  add_plugin_test(plugin, "Installer", "InstallActivateReconcileRoundTrip", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const std::string digest = core::sha256_hex(kBody);
    const Json entry = {{"capability_id", kCapability}, {"content_sha256", digest}};
    const Json reconcile = {{"capabilities", Json::array({entry})}};

    Json state = state_of(installer.reconcile(reconcile));
    EXPECT_FALSE(flag(state, "installed")) << "a fresh root reports the capability installed";
    EXPECT_FALSE(flag(state, "active")) << "a fresh root reports the capability active";

    const std::string material = material_identity_digest(kCapability, kBody);
    const Json installed = installer.install(
        {{"capability_id", kCapability}, {"content", kBody}, {"content_sha256", digest}});
    EXPECT_EQ(installed.value("outcome", ""), "applied");
    EXPECT_EQ(installed.value("observed_material_identity_digest", ""), material)
        << "install must report the MaterialIdentity digest (plugin_abi.h), not a content hash";
    EXPECT_TRUE(core::is_sha256_hex(installed.value("verification_digest", "")))
        << "an applied install needs a sha-256 \"verification_digest\"";
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_FALSE(flag(state, "active"));

    const Json activated = installer.activate(entry);
    EXPECT_EQ(activated.value("outcome", ""), "applied");
    EXPECT_EQ(activated.value("observed_material_identity_digest", ""), material)
        << "activate must report the MaterialIdentity digest of the active material";
    EXPECT_TRUE(core::is_sha256_hex(activated.value("verification_digest", "")))
        << "an applied activation needs a sha-256 \"verification_digest\"";
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_TRUE(flag(state, "active"));
    EXPECT_EQ(state.value("active_material_identity_digest", Json()), material)
        << "reconcile must report the MaterialIdentity digest of the active material";
    EXPECT_TRUE(core::is_sha256_hex(state.value("verification_digest", "")))
        << "an active reconcile entry needs a sha-256 \"verification_digest\"";

    EXPECT_EQ(installer.deactivate({{"capability_id", kCapability}}).value("outcome", ""),
              "applied");
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_FALSE(flag(state, "active"));
  });

  add_plugin_test(plugin, "Installer", "DigestMismatchIsNeverApplied", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const std::string wrong = core::sha256_hex("other bytes");
    const Json reply = installer.install(
        {{"capability_id", kCapability}, {"content", kBody}, {"content_sha256", wrong}});
    EXPECT_NE(reply.value("outcome", ""), "applied");
    const Json entry = {{"capability_id", kCapability}, {"content_sha256", wrong}};
    const Json state = state_of(installer.reconcile({{"capabilities", Json::array({entry})}}));
    EXPECT_FALSE(flag(state, "installed"))
        << "material that failed its digest is reported installed";
  });
}

}  // namespace ctx::conformance::detail
