// OpenAI Codex CLI host adapter: the logic behind the "codex" host-adapter plugin, linked
// straight into tests. Immutable after construction; every method is thread-safe and
// deterministic. Formats: /work/shared/spec/host-formats.md §3 (hooks, skills, MCP).
//
// Config: adapter_config.hpp (installation_key, tenant_id, home, project_dir, scope).
//
// parse_hook: the stdin JSON of a Codex command hook (§3.1; Codex adds model and turn_id, and
//   transcript_path may be null). Documented events: SessionStart, UserPromptSubmit, PreToolUse,
//   PostToolUse, Stop, SubagentStop, PreCompact, PostCompact. Every other event (SubagentStart,
//   PermissionRequest, later ones) parses as "ignored". Unknown fields are ignored. Result:
//   host_adapter.hpp. Errors as the Claude Code adapter's.
//
// render_reply: reply_request.hpp's request -> Codex's Claude-compatible reply, restricted to the
//   members Codex's output schemas allow per event (they refuse additional properties):
//   SessionStart, UserPromptSubmit, PreToolUse, PostToolUse ->
//     {"hookSpecificOutput": {"hookEventName": E, "additionalContext": text},
//      "systemMessage": text}
//   Stop, SubagentStop, PreCompact, PostCompact, or no event -> {"systemMessage": text}
//   "ignored" -> {}
//   Always a JSON object (Stop and SubagentStop accept only JSON on exit 0). Never a
//   "decision", a "reason" or "continue": false: ctx never blocks or continues a turn.
//
// install_locations: user ~/.agents/skills, ~/.codex/agents, ~/.codex/config.toml; project
//   .agents/skills, .codex/agents, .codex/config.toml; "mcp_format": "toml".
#ifndef CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_

#include <set>
#include <string>
#include <string_view>

#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::codex_host {

using Json = host_adapters::Json;

inline constexpr std::string_view kPluginId = "codex";

// The events this adapter documents.
const std::set<std::string>& documented_events();

class CodexAdapter {
 public:
  // Errors: InvalidArgument for a malformed config (adapter_config.hpp).
  explicit CodexAdapter(std::string_view config_json);

  Json parse_hook(std::string_view payload_json) const;
  // Errors: InvalidArgument for a malformed request (reply_request.hpp).
  Json render_reply(std::string_view request_json) const;
  Json install_locations() const;

 private:
  host_adapters::AdapterConfig config_;
};

}  // namespace ctx::codex_host

#endif  // CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_
