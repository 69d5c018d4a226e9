// Generic host adapter: the logic behind the "generic" host-adapter plugin, linked straight into
// tests. Immutable after construction; every method is thread-safe and deterministic.
//
// Config (JSON object, may be empty): {"skills_dir": "<dir>", "tenant_id": "<id>"}
//   skills_dir defaults to ".agents/skills" (Agent Skills' project path), tenant_id to "local".
//
// Generic hook payload (a JSON object; what Claude Code / Codex send fits it, unknown members are
// ignored):
//   "hook_event_name"  required string, e.g. "UserPromptSubmit", "SessionStart", "PreToolUse"
//   "session_id"       required string, 1..256 bytes
//   "cwd"              optional string; identifies the workspace (only its digest is output)
//   "prompt"           optional string; scanned for signals, never copied (only its digest)
//   "turn_id", "tool_use_id"  optional strings, part of the work reference
//   "tool_name"        optional string; "tool_input.file_path" feeds file signals
//   "files"            optional array of path strings; their extensions feed signals
//   "signals"          optional array of explicit tokens
//   "tenant_id", "workspace_id", "repository_id", "exposure_id", "host_context_id"
//                      optional string overrides of the derived scope
//
// parse_hook reply:
//   {"event": hook_event_name,
//    "scope": {"tenant_id": tenant (config/override), "workspace_id": override or
//              "ws-" + first 32 hex of sha256("ctx.generic.workspace\n" + cwd) ("ws-none" without
//              cwd), "repository_id": override or the workspace id, "session_id",
//              "exposure_id": override or "generic", "host_context_id": override or "generic"},
//    "signals": sorted, de-duplicated lower-case tokens (at most kMaxSignals), from
//      1. explicit "signals" matching [a-z0-9][a-z0-9+#._-]{0,63} after lower-casing (others
//         are dropped),
//      2. the language of each file extension in "files" and "tool_input.file_path",
//      3. prompt words (split on anything but [A-Za-z0-9+#._-]) that are in the vocabulary
//         (see signal_vocabulary) or end in a known file extension (mapped to the language),
//      4. "tool-" + lower-cased tool_name when that is a valid token;
//    "work_ref": {"event", "session_id", "turn_id"?, "tool_use_id"?, "prompt_sha256"?,
//                 "id": sha256 of the compact JSON of the other work_ref members}}
// render_reply input: {"actions": [objects with a string "kind"], "challenge": object?}
//   reply: {"schema": "ctx.generic-reply.v1", "continue": true, "actions": [...verbatim...],
//           "challenge": {...} (only when given), "message": one line per action,
//           "ctx: <kind> <capability_id>"}
// install_locations: {"skills": skills_dir}
#ifndef CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace ctx::generic_host {

using Json = nlohmann::json;

inline constexpr std::string_view kPluginId = "generic";
inline constexpr std::string_view kReplySchema = "ctx.generic-reply.v1";
inline constexpr std::size_t kMaxSignals = 32;

// The prompt words that become signals as they are (languages, formats, tools, frameworks).
const std::set<std::string, std::less<>>& signal_vocabulary();

// The language signal for a file extension without the dot ("py" -> "python"), or empty.
std::string_view language_for_extension(std::string_view extension);

class GenericAdapter {
 public:
  // Errors: InvalidArgument when the config is not an object, has unknown members, or a member
  // is not a non-empty string.
  explicit GenericAdapter(std::string_view config_json);

  // Errors: InvalidArgument for a malformed payload (messages never quote it).
  Json parse_hook(std::string_view payload_json) const;
  // Errors: InvalidArgument when "actions" is missing, or an action is not an object with "kind".
  Json render_reply(std::string_view actions_json) const;
  Json install_locations() const;

 private:
  std::string skills_dir_ = ".agents/skills";
  std::string tenant_id_ = "local";
};

}  // namespace ctx::generic_host

#endif  // CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_
