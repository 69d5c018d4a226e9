#include "plugins/hosts/common/host_adapter.hpp"

#include <ctx/abi/plugin_abi.h>

namespace ctx::host_adapters {
namespace {

std::string joined(const std::optional<std::string>& base, std::string_view fallback,
                   std::string_view relative) {
  if (!base) return std::string(fallback) + std::string(relative);
  std::string out = *base;
  if (out.back() != '/') out += '/';
  return out + std::string(relative);
}

Json dirs_json(const std::optional<std::string>& base, std::string_view fallback,
               const HostDirs& dirs) {
  return Json{{"skills", joined(base, fallback, dirs.skills)},
              {"agents", joined(base, fallback, dirs.agents)},
              {"mcp", joined(base, fallback, dirs.mcp)}};
}

// The user entries of a host run with its configuration directory: those it moves there start
// with config_dir, the others stay where `home` puts them.
Json moved_dirs_json(const AdapterConfig& config, const HostDirs& user, const HostDirs& moved) {
  Json out = dirs_json(config.home, "~/", user);
  const Json inside = dirs_json(config.config_dir, "", moved);
  for (const auto& [key, relative] :
       {std::pair{"skills", &moved.skills}, {"agents", &moved.agents}, {"mcp", &moved.mcp}}) {
    if (!relative->empty()) out[key] = inside[key];
  }
  return out;
}

}  // namespace

std::string_view event_kind(std::string_view event) noexcept {
  if (event == "UserPromptSubmit") return CTX_HOOK_KIND_PROMPT;
  if (event == "PreToolUse" || event == "PostToolUse") return CTX_HOOK_KIND_TOOL_USE;
  if (event == "SessionStart") return CTX_HOOK_KIND_SESSION_START;
  if (event == "Stop" || event == "SubagentStop") return CTX_HOOK_KIND_TURN_END;
  if (event == "PreCompact" || event == "PostCompact") return CTX_HOOK_KIND_COMPACT;
  if (event == "SessionEnd") return CTX_HOOK_KIND_SESSION_END;
  return CTX_HOOK_KIND_IGNORED;
}

Json parse_hook_payload(std::string_view payload_json, const std::set<std::string>& documented,
                        const AdapterConfig& config, std::string_view adapter_id) {
  return parse_hook_object(read_json_object(payload_json, "hook payload"), documented, config,
                           adapter_id, SignalSet());
}

Json parse_hook_object(const Json& payload, const std::set<std::string>& documented,
                       const AdapterConfig& config, std::string_view adapter_id,
                       SignalSet signals) {
  const HookFields fields = read_hook_fields(payload);
  const std::string event = classify_event(fields, documented);
  const std::string& key = require_installation_key(config, adapter_id);

  if (event == kIgnoredEvent) signals = SignalSet();
  Json context = Json::object();
  if (event != kIgnoredEvent) {
    add_event_signals(fields, event, signals);
    if (event == "SessionStart" && fields.source) context["source"] = open_token(*fields.source);
    if ((event == "PreCompact" || event == "PostCompact") && fields.trigger) {
      context["trigger"] = open_token(*fields.trigger);
    }
    if (event == "SessionEnd" && fields.reason) context["reason"] = open_token(*fields.reason);
    if (fields.in_subagent) context["subagent"] = true;
  }
  return Json{{"kind", event_kind(event)},
              {"event", event},
              {"adapter", adapter_id},
              {"scope", build_scope(fields, key, config.tenant_id, adapter_id)},
              {"signals", signals.to_json()},
              {"work_ref", build_work_ref(fields, event, key, adapter_id)},
              {"context", context}};
}

Json install_locations_json(const AdapterConfig& config, const HostDirs& user,
                            const HostDirs& project, std::string_view mcp_format,
                            const std::optional<HostDirs>& user_in_config_dir) {
  const bool moved = config.config_dir && user_in_config_dir;
  Json out = {{"scope", config.user_scope ? "user" : "project"},
              {"mcp_format", mcp_format},
              {"user", moved ? moved_dirs_json(config, user, *user_in_config_dir)
                             : dirs_json(config.home, "~/", user)},
              {"project", dirs_json(config.project_dir, "", project)}};
  const Json primary = out[config.user_scope ? "user" : "project"];
  for (const char* key : {"skills", "agents", "mcp"}) out[key] = primary[key];
  return out;
}

}  // namespace ctx::host_adapters
