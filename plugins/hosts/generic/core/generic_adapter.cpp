#include "plugins/hosts/generic/core/generic_adapter.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/hosts/common/host_adapter.hpp"
#include "plugins/hosts/common/reply_request.hpp"

namespace ctx::generic_host {
namespace {

namespace ha = ctx::host_adapters;

const std::set<std::string, std::less<>> kConfigMembers = {"installation_key", "tenant_id",
                                                           "skills_dir"};
constexpr const char* kScopeOverrides[] = {"tenant_id", "workspace_id", "repository_id",
                                           "exposure_id", "host_context_id"};

const ha::Json* string_array(const ha::Json& payload, const char* key) {
  const auto it = payload.find(key);
  if (it == payload.end() || it->is_null()) return nullptr;
  if (!it->is_array())
    throw InvalidArgument("hook payload " + std::string(key) + " must be an array");
  return &*it;
}

}  // namespace

const std::set<std::string>& documented_events() {
  static const std::set<std::string> kEvents = {
      "SessionStart", "UserPromptSubmit", "PreToolUse",  "PostToolUse", "Stop",
      "SubagentStop", "PreCompact",       "PostCompact", "SessionEnd"};
  return kEvents;
}

GenericAdapter::GenericAdapter(std::string_view config_json)
    : config_(ha::read_adapter_config(config_json, "generic adapter", kConfigMembers)) {}

Json GenericAdapter::parse_hook(std::string_view payload_json) const {
  const Json payload = ha::read_json_object(payload_json, "hook payload");
  ha::SignalSet signals;
  if (const Json* explicit_signals = string_array(payload, "signals")) {
    for (const Json& token : *explicit_signals) {
      if (token.is_string()) signals.add_words(token.get_ref<const std::string&>());
    }
  }
  if (const Json* files = string_array(payload, "files")) {
    for (const Json& path : *files) {
      if (path.is_string()) signals.add_path(path.get_ref<const std::string&>());
    }
  }
  Json parsed =
      ha::parse_hook_object(payload, documented_events(), config_, kPluginId, std::move(signals));
  Json& scope = parsed["scope"];
  for (const char* key : kScopeOverrides) {
    const auto it = payload.find(key);
    if (it == payload.end()) continue;
    if (!it->is_string() || !ha::is_engine_token(it->get_ref<const std::string&>())) {
      throw InvalidArgument("hook payload " + std::string(key) + " must be an engine token");
    }
    scope[key] = *it;
    if (std::string_view(key) == "workspace_id" && payload.find("repository_id") == payload.end()) {
      scope["repository_id"] = *it;
    }
  }
  return parsed;
}

Json GenericAdapter::render_reply(std::string_view request_json) const {
  const ha::ReplyRequest request = ha::read_reply_request(request_json);
  Json challenges = Json::array();
  for (const ha::ConsentChallenge& challenge : request.challenges) {
    Json entry = {{"challenge_digest", challenge.digest},
                  {"approve", ha::consent_command("approve", challenge.digest, request.state_dir)},
                  {"deny", ha::consent_command("deny", challenge.digest, request.state_dir)}};
    if (!challenge.capability_id.empty()) entry["capability_id"] = challenge.capability_id;
    challenges.push_back(std::move(entry));
  }
  Json reply = {{"schema", kReplySchema},
                {"continue", true},
                {"recommended", request.recommended},
                {"installed", request.installed},
                {"challenges", std::move(challenges)},
                {"message", ha::reply_text(request)}};
  if (request.event) reply["event"] = *request.event;
  return reply;
}

Json GenericAdapter::install_locations() const {
  return Json{{"skills", config_.skills_dir.value_or(".agents/skills")}};
}

}  // namespace ctx::generic_host
