#include "plugins/hosts/codex/core/codex_adapter.hpp"

namespace ctx::codex_host {

const host_adapters::NativeHostProfile& host_profile() {
  static const host_adapters::NativeHostProfile kProfile{
      .id = kPluginId,
      .documented_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                            "SubagentStop", "PreCompact", "PostCompact"},
      .context_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"},
      .message_events = {"Stop", "SubagentStop", "PreCompact", "PostCompact"},
      .reloads_skills = false,
      .user = {".agents/skills", ".codex/agents", ".codex/config.toml"},
      .project = {".agents/skills", ".codex/agents", ".codex/config.toml"},
      .mcp_format = "toml",
      .user_in_config_dir = std::nullopt,  // its skills stay in ~/.agents whatever CODEX_HOME is
  };
  return kProfile;
}

}  // namespace ctx::codex_host
