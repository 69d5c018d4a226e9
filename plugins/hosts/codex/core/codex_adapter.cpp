#include "plugins/hosts/codex/core/codex_adapter.hpp"

#include "plugins/hosts/common/host_adapter.hpp"
#include "plugins/hosts/common/reply_request.hpp"

namespace ctx::codex_host {
namespace {

namespace ha = ctx::host_adapters;

const std::set<std::string, std::less<>> kConfigMembers = {"installation_key", "tenant_id", "home",
                                                           "project_dir", "scope"};
const std::set<std::string, std::less<>> kContextEvents = {"SessionStart", "UserPromptSubmit",
                                                           "PreToolUse", "PostToolUse"};
const std::set<std::string, std::less<>> kMessageOnlyEvents = {"Stop", "SubagentStop", "PreCompact",
                                                               "PostCompact"};

}  // namespace

const std::set<std::string>& documented_events() {
  static const std::set<std::string> kEvents = {
      "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
      "Stop",         "SubagentStop",     "PreCompact", "PostCompact"};
  return kEvents;
}

CodexAdapter::CodexAdapter(std::string_view config_json)
    : config_(ha::read_adapter_config(config_json, "codex adapter", kConfigMembers)) {}

Json CodexAdapter::parse_hook(std::string_view payload_json) const {
  return ha::parse_hook_payload(payload_json, documented_events(), config_, kPluginId);
}

Json CodexAdapter::render_reply(std::string_view request_json) const {
  const ha::ReplyRequest request = ha::read_reply_request(request_json);
  const std::string text = ha::reply_text(request);
  Json reply = Json::object();
  const std::string event = request.event.value_or("");
  if (kContextEvents.count(event) != 0) {
    Json specific = {{"hookEventName", event}};
    if (!text.empty()) specific["additionalContext"] = text;
    if (specific.size() > 1) reply["hookSpecificOutput"] = specific;
    if (!text.empty()) reply["systemMessage"] = text;
  } else if ((event.empty() || kMessageOnlyEvents.count(event) != 0) && !text.empty()) {
    reply["systemMessage"] = text;
  }
  return reply;
}

Json CodexAdapter::install_locations() const {
  return ha::install_locations_json(
      config_, {".agents/skills", ".codex/agents", ".codex/config.toml"},
      {".agents/skills", ".codex/agents", ".codex/config.toml"}, "toml");
}

}  // namespace ctx::codex_host
