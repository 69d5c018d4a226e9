#include "plugins/hosts/codex/core/codex_adapter.hpp"

namespace ctx::codex_host {

const host_adapters::NativeHostProfile& host_profile() {
  static const host_adapters::NativeHostProfile kProfile{
      .id = kPluginId,
      // Codex 0.169 fires SessionEnd (reason "other"; host-formats §7), so a session releases
      // what it holds.
      .documented_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                            "SubagentStop", "PreCompact", "PostCompact", "SessionEnd"},
      .context_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"},
      .message_events = {"Stop", "SubagentStop", "PreCompact", "PostCompact"},
      .reloads_skills = false,
      .user = {".agents/skills", ".codex/agents", ".codex/config.toml"},
      .project = {".agents/skills", ".codex/agents", ".codex/config.toml"},
      .mcp_format = "toml",
      // $CODEX_HOME (default ~/.codex) holds config.toml and agents/; user skills stay in
      // ~/.agents/skills whatever it is ($CODEX_HOME/skills is the deprecated location).
      .user_in_config_dir = host_adapters::HostDirs{"", "agents", "config.toml"},
  };
  return kProfile;
}

}  // namespace ctx::codex_host
