// The parts of an in-tree host adapter that do not depend on the host: parse_hook's result and
// the install-location table. Pure functions; thread-safe.
//
// parse_hook result:
//   {"kind":     what the event means to ctx (event_kind): "prompt", "tool_use", ...,
//    "event":    the host's event name when the adapter documents it, else "ignored",
//    "adapter":  the adapter id,
//    "scope":    build_scope (hook_input.hpp),
//    "signals":  word tokens of the event (empty for an ignored event),
//    "work_ref": build_work_ref,
//    "context":  {"source"? (SessionStart), "trigger"? (compaction), "reason"? (SessionEnd),
//                 "subagent"?: true} — open host strings reduced by open_token}
#ifndef CTX_PLUGINS_HOSTS_COMMON_HOST_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_HOST_ADAPTER_HPP_

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::host_adapters {

// The host-neutral kind (the C ABI's CTX_HOOK_KIND_*) of a documented Claude Code / Codex
// event name: UserPromptSubmit prompt, PreToolUse and PostToolUse tool_use, SessionStart
// session_start, Stop and SubagentStop turn_end, PreCompact and PostCompact compact, SessionEnd
// session_end; any other name ignored.
std::string_view event_kind(std::string_view event) noexcept;

// Parses one hook payload as described above. Errors: InvalidArgument for an unreadable payload
// (hook_input.hpp); kFailedPrecondition when the config has no installation key.
Json parse_hook_payload(std::string_view payload_json, const std::set<std::string>& documented,
                        const AdapterConfig& config, std::string_view adapter_id);

// The same for a parsed payload object, starting from `signals` (an adapter's own extra signals;
// dropped for an ignored event).
Json parse_hook_object(const Json& payload, const std::set<std::string>& documented,
                       const AdapterConfig& config, std::string_view adapter_id, SignalSet signals);

// Where one scope of a host keeps things, relative to "~" (user) or the project directory.
struct HostDirs {
  std::string skills;
  std::string agents;
  std::string mcp;
};

// {"scope": "project"|"user", "skills", "agents", "mcp" (the primary scope's entries),
//  "mcp_format": mcp_format, "user": {...}, "project": {...}}. User entries start with the
// configured home (else "~/"), or with the configured config_dir for each non-empty entry of
// `user_in_config_dir` (an empty one stays under home); project entries with the configured
// project_dir (else they stay relative to the project root).
Json install_locations_json(const AdapterConfig& config, const HostDirs& user,
                            const HostDirs& project, std::string_view mcp_format,
                            const std::optional<HostDirs>& user_in_config_dir = std::nullopt);

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_HOST_ADAPTER_HPP_
