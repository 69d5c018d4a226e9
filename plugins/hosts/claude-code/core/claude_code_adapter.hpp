// Claude Code host adapter: the logic behind the "claude-code" host-adapter plugin, linked
// straight into tests. Immutable after construction; every method is thread-safe and
// deterministic. Formats: /work/shared/spec/host-formats.md §1 (hooks) and §2 (locations).
//
// Config: adapter_config.hpp (installation_key, tenant_id, home, project_dir, scope).
//
// parse_hook: the stdin JSON of a Claude Code command hook (§1.4). Documented events:
//   SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop, PreCompact,
//   SessionEnd. Every other event (Setup, Notification, PermissionRequest, later ones) parses as
//   "ignored". Unknown fields are ignored. Result: host_adapter.hpp. Errors: InvalidArgument for
//   a malformed, oversized (> 1 MiB), non-UTF-8, too deep or wrongly typed payload;
//   kFailedPrecondition without an installation key.
//
// render_reply: reply_request.hpp's request -> the JSON Claude Code reads on exit 0 (§1.5–1.6):
//   SessionStart, UserPromptSubmit, PreToolUse, PostToolUse ->
//     {"hookSpecificOutput": {"hookEventName": E, "additionalContext": text,
//                             "reloadSkills": true (SessionStart with "installed" only)},
//      "systemMessage": text}
//   Stop, SubagentStop, PreCompact, or no event -> {"systemMessage": text}
//   SessionEnd, "ignored" -> {}
//   Members with nothing to say are left out ({} when there is nothing at all). Never a
//   "decision", "continue": false or a permission decision: ctx never blocks a prompt or a tool.
//
// install_locations: user ~/.claude/skills, ~/.claude/agents, ~/.claude.json; project
//   .claude/skills, .claude/agents, .mcp.json; "mcp_format": "json".
#ifndef CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_

#include <set>
#include <string>
#include <string_view>

#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::claude_code_host {

using Json = host_adapters::Json;

inline constexpr std::string_view kPluginId = "claude-code";

// The events this adapter documents.
const std::set<std::string>& documented_events();

class ClaudeCodeAdapter {
 public:
  // Errors: InvalidArgument for a malformed config (adapter_config.hpp).
  explicit ClaudeCodeAdapter(std::string_view config_json);

  Json parse_hook(std::string_view payload_json) const;
  // Errors: InvalidArgument for a malformed request (reply_request.hpp).
  Json render_reply(std::string_view request_json) const;
  Json install_locations() const;

 private:
  host_adapters::AdapterConfig config_;
};

}  // namespace ctx::claude_code_host

#endif  // CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_
