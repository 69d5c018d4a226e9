#include "plugins/hosts/claude-code/core/claude_code_adapter.hpp"

namespace ctx::claude_code_host {

const host_adapters::NativeHostProfile& host_profile() {
  static const host_adapters::NativeHostProfile kProfile{
      .id = kPluginId,
      .documented_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                            "SubagentStop", "PreCompact", "SessionEnd"},
      .context_events = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"},
      .message_events = {"Stop", "SubagentStop", "PreCompact"},
      .reloads_skills = true,
      .user = {".claude/skills", ".claude/agents", ".claude.json"},
      .project = {".claude/skills", ".claude/agents", ".mcp.json"},
      // With $CLAUDE_CONFIG_DIR set, Claude Code keeps there what it keeps in ~/.claude (and
      // its ~/.claude.json).
      .mcp_format = "json",
      .user_in_config_dir = host_adapters::HostDirs{"skills", "agents", ".claude.json"},
  };
  return kProfile;
}

}  // namespace ctx::claude_code_host
