// The host-adapter suite: a hook payload becomes a scope, signals and a work reference without
// the prompt text; replies and install locations are JSON objects.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance::detail {
namespace {

constexpr char kPrompt[] = "Please add a PDF export to report.py ctx-conformance-prompt-4711";

Json sample_payload(const PluginUnderTest& plugin) {
  const Json& config = plugin.kit_config();
  if (const auto host = config.find("host_adapter");
      host != config.end() && host->contains("hook_payload")) {
    return host->at("hook_payload");
  }
  return {{"hook_event_name", "UserPromptSubmit"},
          {"session_id", "ctx-conformance-session"},
          {"transcript_path", "/tmp/ctx-conformance/transcript.jsonl"},
          {"cwd", "/tmp/ctx-conformance/project"},
          {"permission_mode", "default"},
          {"prompt", kPrompt}};
}

ctx_bytes bytes_of(const std::string& text) {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

class Adapter {
 public:
  explicit Adapter(PluginUnderTest& plugin)
      : ops_(*plugin.loaded().host_adapter_ops()), instance_(plugin, plugin.fresh_config()) {}
  bool created() const { return instance_.created().code == CTX_OK; }
  const std::string& create_message() const { return instance_.created().message; }

  CallResult parse_hook(const std::string& payload) {
    return call("parse_hook", [&](ctx_sink* out, ctx_error* err) {
      return ops_.parse_hook(instance_.handle(), bytes_of(payload), out, err);
    });
  }
  CallResult render_reply(const std::string& actions) {
    return call("render_reply", [&](ctx_sink* out, ctx_error* err) {
      return ops_.render_reply(instance_.handle(), bytes_of(actions), out, err);
    });
  }
  // Null when the plugin does not offer install_locations.
  std::optional<CallResult> install_locations() {
    if (ops_.struct_size < sizeof(ctx_host_adapter_ops) || ops_.install_locations == nullptr) {
      return std::nullopt;
    }
    return call("install_locations", [&](ctx_sink* out, ctx_error* err) {
      return ops_.install_locations(instance_.handle(), out, err);
    });
  }

 private:
  CallResult call(const std::string& name,
                  const std::function<ctx_code(ctx_sink*, ctx_error*)>& op) {
    Sink sink;
    CallResult result = invoke(name, [&](ctx_error* err) { return op(sink.get(), err); });
    result.output = sink.text();
    return result;
  }

  const ctx_host_adapter_ops& ops_;
  RawInstance instance_;
};

}  // namespace

void register_host_adapter_suite(const std::shared_ptr<PluginUnderTest>& plugin) {
  add_plugin_test(plugin, "HostAdapter", "ParseHookYieldsScopeSignalsAndWorkRef", [plugin] {
    Adapter adapter(*plugin);
    ASSERT_TRUE(adapter.created()) << "create failed: " << adapter.create_message();
    const Json parsed = expect_ok_object(adapter.parse_hook(sample_payload(*plugin).dump()),
                                         "parse_hook of the sample payload");
    ASSERT_TRUE(parsed.is_object());
    EXPECT_TRUE(parsed.contains("event") && parsed["event"].is_string())
        << "\"event\" must be the host's event name, a string";
    static const std::set<std::string> kKinds = {
        CTX_HOOK_KIND_IGNORED,    CTX_HOOK_KIND_SESSION_START, CTX_HOOK_KIND_PROMPT,
        CTX_HOOK_KIND_TOOL_USE,   CTX_HOOK_KIND_TURN_END,      CTX_HOOK_KIND_COMPACT,
        CTX_HOOK_KIND_SESSION_END};
    EXPECT_TRUE(parsed.contains("kind") && parsed["kind"].is_string() &&
                kKinds.count(parsed["kind"].get<std::string>()) == 1)
        << "\"kind\" must be one of the CTX_HOOK_KIND_* names";
    ASSERT_TRUE(parsed.contains("scope") && parsed["scope"].is_object()) << "no \"scope\" object";
    for (const char* field : {"tenant_id", "workspace_id", "repository_id", "session_id",
                              "exposure_id", "host_context_id"}) {
      const Json& scope = parsed["scope"];
      EXPECT_TRUE(scope.contains(field) && scope[field].is_string() &&
                  !scope[field].get<std::string>().empty())
          << "scope needs a non-empty string \"" << field << "\"";
    }
    ASSERT_TRUE(parsed.contains("signals") && parsed["signals"].is_array()) << "no \"signals\"";
    for (const Json& signal : parsed["signals"]) {
      ASSERT_TRUE(signal.is_string()) << "signals must be strings";
      const std::string text = signal.get<std::string>();
      EXPECT_FALSE(text.empty());
      for (const char c : text) EXPECT_FALSE(c >= 'A' && c <= 'Z') << "signal \"" << text << "\"";
    }
    EXPECT_TRUE(parsed.contains("work_ref") && parsed["work_ref"].is_object())
        << "no \"work_ref\" object";
  });

  add_plugin_test(plugin, "HostAdapter", "ParseHookIsDeterministic", [plugin] {
    Adapter adapter(*plugin);
    ASSERT_TRUE(adapter.created()) << "create failed: " << adapter.create_message();
    const std::string payload = sample_payload(*plugin).dump();
    const CallResult first = adapter.parse_hook(payload);
    ASSERT_EQ(first.code, CTX_OK) << first.message;
    EXPECT_EQ(adapter.parse_hook(payload).output, first.output);
    Adapter other(*plugin);
    ASSERT_TRUE(other.created());
    EXPECT_EQ(other.parse_hook(payload).output, first.output) << "instances disagree";
  });

  add_plugin_test(plugin, "HostAdapter", "ParseHookNeverCopiesThePrompt", [plugin] {
    Adapter adapter(*plugin);
    ASSERT_TRUE(adapter.created()) << "create failed: " << adapter.create_message();
    const Json payload = sample_payload(*plugin);
    const std::string prompt = payload.value("prompt", std::string(kPrompt));
    const CallResult parsed = adapter.parse_hook(payload.dump());
    ASSERT_EQ(parsed.code, CTX_OK) << parsed.message;
    EXPECT_EQ(parsed.output.find(prompt), std::string::npos) << "the output holds the prompt";
    const auto marker = prompt.rfind(' ');
    if (marker != std::string::npos && prompt.size() - marker > 8) {
      EXPECT_EQ(parsed.output.find(prompt.substr(marker + 1)), std::string::npos)
          << "the output holds words of the prompt";
    }
  });

  add_plugin_test(plugin, "HostAdapter", "RenderReplyWritesJson", [plugin] {
    Adapter adapter(*plugin);
    ASSERT_TRUE(adapter.created()) << "create failed: " << adapter.create_message();
    expect_ok_object(adapter.render_reply(R"({"actions":[]})"), "render_reply of no actions");
    expect_ok_object(
        adapter.render_reply(
            R"({"actions":[{"kind":"SuggestCapability","capability_id":"skill:pdf"}]})"),
        "render_reply of one action");
  });

  if (plugin->has_install_locations()) {
    add_plugin_test(plugin, "HostAdapter", "InstallLocationsIsAnObject", [plugin] {
      Adapter adapter(*plugin);
      ASSERT_TRUE(adapter.created()) << "create failed: " << adapter.create_message();
      const auto locations = adapter.install_locations();
      ASSERT_TRUE(locations.has_value());
      expect_ok_object(*locations, "install_locations");
    });
  }
}

}  // namespace ctx::conformance::detail
