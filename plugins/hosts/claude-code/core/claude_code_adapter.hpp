// Claude Code host adapter: the "claude-code" plugin's logic, linked straight into tests. The
// behaviour is native_host.hpp's; this file holds Claude Code's facts
// (/work/shared/spec/host-formats.md §1 hooks, §2 locations):
//   documented events: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop,
//     SubagentStop, PreCompact, SessionEnd (Setup, Notification, PermissionRequest and every
//     later event parse as "ignored");
//   hookSpecificOutput on SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, with
//     reloadSkills: true on SessionStart after an install; systemMessage only on Stop,
//     SubagentStop, PreCompact; {} on SessionEnd;
//   install locations: user ~/.claude/skills, ~/.claude/agents, ~/.claude.json; project
//     .claude/skills, .claude/agents, .mcp.json; "mcp_format": "json".
#ifndef CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_

#include <string_view>

#include "plugins/hosts/common/native_host.hpp"

namespace ctx::claude_code_host {

inline constexpr std::string_view kPluginId = "claude-code";

const host_adapters::NativeHostProfile& host_profile();

class ClaudeCodeAdapter final : public host_adapters::NativeHostAdapter {
 public:
  // Errors: InvalidArgument for a malformed config (adapter_config.hpp).
  explicit ClaudeCodeAdapter(std::string_view config_json)
      : NativeHostAdapter(host_profile(), config_json) {}
};

}  // namespace ctx::claude_code_host

#endif  // CTX_PLUGINS_HOSTS_CLAUDE_CODE_CORE_CLAUDE_CODE_ADAPTER_HPP_
