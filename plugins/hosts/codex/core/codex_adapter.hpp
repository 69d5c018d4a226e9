// OpenAI Codex CLI host adapter: the "codex" plugin's logic, linked straight into tests. The
// behaviour is native_host.hpp's; this file holds Codex's facts
// (/work/shared/spec/host-formats.md §3; Codex adds model and turn_id, transcript_path may be
// null, and its output schemas refuse members they do not list):
//   documented events: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop,
//     SubagentStop, PreCompact, PostCompact, SessionEnd (0.169 fires it: §7; SubagentStart,
//     PermissionRequest and later events parse as "ignored");
//   hookSpecificOutput {hookEventName, additionalContext} on SessionStart, UserPromptSubmit,
//     PreToolUse, PostToolUse (no reloadSkills); systemMessage only on Stop, SubagentStop,
//     PreCompact, PostCompact; always a JSON object (Stop takes JSON only on exit 0);
//   install locations: user ~/.agents/skills, ~/.codex/agents, ~/.codex/config.toml (with
//     config "config_dir", $CODEX_HOME: ~/.agents/skills, <config_dir>/agents,
//     <config_dir>/config.toml); project .agents/skills, .codex/agents, .codex/config.toml;
//     "mcp_format": "toml".
#ifndef CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_

#include <string_view>

#include "plugins/hosts/common/native_host.hpp"

namespace ctx::codex_host {

inline constexpr std::string_view kPluginId = "codex";

const host_adapters::NativeHostProfile& host_profile();

class CodexAdapter final : public host_adapters::NativeHostAdapter {
 public:
  // Errors: InvalidArgument for a malformed config (adapter_config.hpp).
  explicit CodexAdapter(std::string_view config_json)
      : NativeHostAdapter(host_profile(), config_json) {}
};

}  // namespace ctx::codex_host

#endif  // CTX_PLUGINS_HOSTS_CODEX_CORE_CODEX_ADAPTER_HPP_
