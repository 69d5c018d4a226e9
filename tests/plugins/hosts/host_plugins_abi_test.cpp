// The three host-adapter modules through their C ABI (dlopen, ctx_plugin_entry, the ops table):
// documented events of both hosts parse to CTX_OK with JSON output, malformed payloads return
// CTX_INVALID_ARGUMENT with one line of text that never quotes the payload, a missing key is
// CTX_FAILED_PRECONDITION, and replies come back as JSON objects.
#include <ctx/abi/plugin_abi.h>
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kConfig[] =
    R"({"installation_key":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})";
constexpr char kMarker[] = "Quokkamarker";

ctx_code append(void* context, const uint8_t* data, size_t size) {
  static_cast<std::string*>(context)->append(reinterpret_cast<const char*>(data), size);
  return CTX_OK;
}

ctx_bytes bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

struct Call {
  ctx_code code = CTX_UNKNOWN;
  std::string out;
  std::string message;
};

// One loaded module and one instance of it.
class Module {
 public:
  Module(const char* path, const std::string& config) {
    handle_ = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    const auto entry =
        reinterpret_cast<ctx_plugin_entry_fn>(::dlsym(handle_, CTX_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) return;
    const ctx_host_negotiation negotiation = {sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 0,
                                              CTX_ABI_MINOR};
    descriptor_ = entry(&negotiation);
    ctx_error err{};
    if (descriptor_->create(nullptr, bytes(config), &instance_, &err) != CTX_OK) {
      instance_ = nullptr;
    }
  }
  ~Module() {
    if (instance_ != nullptr) {
      ctx_error err{};
      descriptor_->destroy(instance_, &err);
    }
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  bool ready() const { return instance_ != nullptr; }
  const ctx_plugin_descriptor& descriptor() const { return *descriptor_; }
  Call parse_hook(const std::string& payload) {
    return call([&](ctx_sink* sink, ctx_error* err) {
      return ops().parse_hook(instance_, bytes(payload), sink, err);
    });
  }
  Call render_reply(const std::string& request) {
    return call([&](ctx_sink* sink, ctx_error* err) {
      return ops().render_reply(instance_, bytes(request), sink, err);
    });
  }
  Call install_locations() {
    return call([&](ctx_sink* sink, ctx_error* err) {
      return ops().install_locations(instance_, sink, err);
    });
  }

 private:
  const ctx_host_adapter_ops& ops() const {
    return *static_cast<const ctx_host_adapter_ops*>(descriptor_->ops);
  }
  template <typename Op>
  Call call(Op op) {
    Call result;
    ctx_sink sink = {&result.out, &append};
    ctx_error err{};
    result.code = op(&sink, &err);
    if (result.code != CTX_OK) result.message = err.message;
    return result;
  }
  void* handle_ = nullptr;
  const ctx_plugin_descriptor* descriptor_ = nullptr;
  void* instance_ = nullptr;
};

Json common(const char* event) {
  return {{"session_id", "s-1"},      {"transcript_path", nullptr}, {"cwd", "/home/u/proj"},
          {"hook_event_name", event}, {"turn_id", "t-1"},           {"unknown_field", {1, 2}}};
}

// A payload for each event either host documents.
std::vector<Json> payloads() {
  std::vector<Json> out;
  for (const char* event :
       {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop",
        "PreCompact", "PostCompact", "SessionEnd", "FutureEvent"}) {
    Json payload = common(event);
    payload["prompt"] = std::string("export a PDF ") + kMarker;
    payload["tool_name"] = "Bash";
    payload["tool_input"] = {{"command", std::string("echo ") + kMarker}};
    payload["source"] = "startup";
    payload["trigger"] = "auto";
    payload["reason"] = "other";
    payload["stop_hook_active"] = false;
    payload["last_assistant_message"] = kMarker;
    out.push_back(payload);
  }
  return out;
}

struct ModuleCase {
  const char* path;
  const char* id;
};

class HostPluginAbi : public ::testing::TestWithParam<ModuleCase> {};

TEST_P(HostPluginAbi, ParsesEveryEventAndRendersObjects) {
  Module module(GetParam().path, kConfig);
  ASSERT_TRUE(module.ready());
  EXPECT_STREQ(module.descriptor().id, GetParam().id);
  EXPECT_EQ(module.descriptor().kind, CTX_KIND_HOST_ADAPTER);
  for (const Json& payload : payloads()) {
    const std::string event = payload.at("hook_event_name");
    SCOPED_TRACE(event);
    const Call parsed = module.parse_hook(payload.dump());
    ASSERT_EQ(parsed.code, CTX_OK) << parsed.message;
    Json result = Json::parse(parsed.out);
    EXPECT_EQ(result.at("adapter"), GetParam().id);
    EXPECT_TRUE(result.at("event") == event || result.at("event") == "ignored");
    result.erase("signals");
    EXPECT_THAT(result.dump(), Not(HasSubstr("arker")));

    Json request = {{"event", result.at("event")},
                    {"actions", {{{"kind", "RequestConsent"}, {"entity_id", "skill:pdf"}}}},
                    {"challenge", {{"challenge_digest", std::string(64, 'f')}}}};
    const Call reply = module.render_reply(request.dump());
    ASSERT_EQ(reply.code, CTX_OK) << reply.message;
    const Json rendered = Json::parse(reply.out);
    EXPECT_TRUE(rendered.is_object());
    EXPECT_FALSE(rendered.contains("decision"));
    EXPECT_THAT(reply.out, Not(HasSubstr("arker")));
  }
  const Call locations = module.install_locations();
  ASSERT_EQ(locations.code, CTX_OK) << locations.message;
  EXPECT_TRUE(Json::parse(locations.out).contains("skills"));
}

TEST_P(HostPluginAbi, MalformedPayloadsAreInvalidArgumentWithOneCleanLine) {
  Module module(GetParam().path, kConfig);
  ASSERT_TRUE(module.ready());
  const std::string good = payloads()[1].dump();
  const std::vector<std::string> bad = {
      good.substr(0, good.size() - 7),
      std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":")") +
          kMarker + std::string(11u << 20, 'x') + "\"}",
      std::string("{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"s\",\"prompt\":\"") +
          kMarker + "\xF0\x28\x8C\x28\"}",
      std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":{"t":")") +
          kMarker + "\"}}",
      std::string(2000, '[') + std::string(2000, ']'),
      std::string(R"({"hook_event_name":"Stop","session_id":")") + kMarker + R"(","deep":)" +
          std::string(100, '[') + std::string(100, ']') + "}",
      "",
  };
  for (const std::string& payload : bad) {
    SCOPED_TRACE(payload.substr(0, 40));
    const Call parsed = module.parse_hook(payload);
    EXPECT_EQ(parsed.code, CTX_INVALID_ARGUMENT) << parsed.message;
    EXPECT_EQ(parsed.message.find('\n'), std::string::npos);
    EXPECT_THAT(parsed.message, Not(HasSubstr("arker")));
    EXPECT_FALSE(parsed.message.empty());
  }
}

TEST_P(HostPluginAbi, WithoutAKeyParsingIsAFailedPrecondition) {
  Module module(GetParam().path, "");
  ASSERT_TRUE(module.ready());
  const Call parsed = module.parse_hook(payloads()[1].dump());
  EXPECT_EQ(parsed.code, CTX_FAILED_PRECONDITION);
  EXPECT_THAT(parsed.message, HasSubstr("installation_key"));
}

INSTANTIATE_TEST_SUITE_P(Modules, HostPluginAbi,
                         ::testing::Values(ModuleCase{CTX_CLAUDE_CODE_HOST_MODULE, "claude-code"},
                                           ModuleCase{CTX_CODEX_HOST_MODULE, "codex"},
                                           ModuleCase{CTX_GENERIC_HOST_MODULE, "generic"}),
                         [](const ::testing::TestParamInfo<ModuleCase>& info) {
                           std::string name = info.param.id;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
