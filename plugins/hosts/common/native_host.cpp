#include "plugins/hosts/common/native_host.hpp"

#include "plugins/hosts/common/reply_request.hpp"

namespace ctx::host_adapters {
namespace {

const std::set<std::string, std::less<>> kConfigMembers = {"installation_key", "tenant_id", "home",
                                                           "project_dir", "scope"};
const std::set<std::string, std::less<>> kConfigMembersWithConfigDir = {
    "installation_key", "tenant_id", "home", "project_dir", "scope", "config_dir"};

}  // namespace

NativeHostAdapter::NativeHostAdapter(const NativeHostProfile& profile, std::string_view config_json)
    : profile_(&profile),
      config_(read_adapter_config(
          config_json, std::string(profile.id) + " adapter",
          profile.user_in_config_dir ? kConfigMembersWithConfigDir : kConfigMembers)) {}

Json NativeHostAdapter::parse_hook(std::string_view payload_json) const {
  return parse_hook_payload(payload_json, profile_->documented_events, config_, profile_->id);
}

Json NativeHostAdapter::render_reply(std::string_view request_json) const {
  const ReplyRequest request = read_reply_request(request_json);
  const std::string text = reply_text(request);
  Json reply = Json::object();
  const std::string event = request.event.value_or("");
  if (profile_->context_events.count(event) != 0) {
    Json specific = {{"hookEventName", event}};
    if (!text.empty()) specific["additionalContext"] = text;
    if (profile_->reloads_skills && event == "SessionStart" && !request.installed.empty()) {
      specific["reloadSkills"] = true;
    }
    if (specific.size() > 1) reply["hookSpecificOutput"] = specific;
    if (!text.empty()) reply["systemMessage"] = text;
  } else if ((event.empty() || profile_->message_events.count(event) != 0) && !text.empty()) {
    reply["systemMessage"] = text;
  }
  return reply;
}

Json NativeHostAdapter::install_locations() const {
  return install_locations_json(config_, profile_->user, profile_->project, profile_->mcp_format,
                                profile_->user_in_config_dir);
}

}  // namespace ctx::host_adapters
