// Generic host adapter: the logic behind the "generic" host-adapter plugin, linked straight into
// tests. Immutable after construction; every method is thread-safe and deterministic.
//
// Config (adapter_config.hpp): {"installation_key", "tenant_id", "skills_dir"}; skills_dir
// defaults to ".agents/skills" (Agent Skills' project path).
//
// Generic hook payload: a JSON object in the common hook shape (what Claude Code and Codex send
// fits it; unknown members are ignored). Events: the union of both hosts' documented events
// (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop, PreCompact,
// PostCompact, SessionEnd); others parse as "ignored". On top of the common fields:
//   "files"    optional array of path strings; their languages and extensions feed signals
//   "signals"  optional array of strings; their word tokens feed signals
//   "tenant_id", "workspace_id", "repository_id", "exposure_id", "host_context_id"
//              optional engine-token overrides of the derived scope
// Result: host_adapter.hpp, with "adapter": "generic".
//
// render_reply: reply_request.hpp's request ->
//   {"schema": "ctx.generic-reply.v1", "continue": true, "event"?: E,
//    "recommended": [capability ids], "installed": [capability ids],
//    "challenges": [{"challenge_digest", "capability_id"?,
//                    "approve": "ctx consent approve <digest> --key FILE",
//                    "deny": "ctx consent deny <digest> --key FILE"}],  (+ " --state DIR"
//                    when the request names a state_dir)
//    "message": reply_text}
// install_locations: {"skills": skills_dir}
#ifndef CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_
#define CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_

#include <set>
#include <string>
#include <string_view>

#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::generic_host {

using Json = host_adapters::Json;

inline constexpr std::string_view kPluginId = "generic";
inline constexpr std::string_view kReplySchema = "ctx.generic-reply.v1";

// The events this adapter documents.
const std::set<std::string>& documented_events();

class GenericAdapter {
 public:
  // Errors: InvalidArgument for a malformed config.
  explicit GenericAdapter(std::string_view config_json);

  // Errors: InvalidArgument for a malformed payload (messages never quote it);
  // kFailedPrecondition without an installation key.
  Json parse_hook(std::string_view payload_json) const;
  // Errors: InvalidArgument for a malformed request.
  Json render_reply(std::string_view request_json) const;
  Json install_locations() const;

 private:
  host_adapters::AdapterConfig config_;
};

}  // namespace ctx::generic_host

#endif  // CTX_PLUGINS_HOSTS_GENERIC_CORE_GENERIC_ADAPTER_HPP_
