// The adapter of a host whose hooks speak the Claude Code wire format (Claude Code itself, and
// Codex, which copies it): everything but a table of host facts (NativeHostProfile) is shared.
// Immutable after construction; every method is thread-safe and deterministic.
//
// parse_hook: the host's stdin JSON (host_adapter.hpp's result); an event outside the profile's
//   documented set parses as "ignored". Errors: InvalidArgument for a malformed, oversized
//   (> 1 MiB), non-UTF-8, too deep or wrongly typed payload; kFailedPrecondition without an
//   installation key.
// render_reply: reply_request.hpp's request ->
//   context events  -> {"hookSpecificOutput": {"hookEventName": E, "additionalContext": text,
//                        "reloadSkills": true (SessionStart with "installed", when the host
//                        reloads skills)}, "systemMessage": text}
//   message events, or no event -> {"systemMessage": text}
//   any other event -> {}
//   Members with nothing to say are left out. Never a "decision", "reason", "continue": false
//   or a permission decision: ctx never blocks a prompt or a tool.
// install_locations: host_adapter.hpp's install_locations_json over the profile's directories.
#ifndef CTX_PLUGINS_HOSTS_COMMON_NATIVE_HOST_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_NATIVE_HOST_HPP_

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/hook_input.hpp"
#include "plugins/hosts/common/host_adapter.hpp"

namespace ctx::host_adapters {

// The facts of one host (host-formats.md): its events, its reply shapes, where it looks.
struct NativeHostProfile {
  std::string_view id;                                // the plugin id ("claude-code")
  std::set<std::string> documented_events;            // parsed; all others are "ignored"
  std::set<std::string, std::less<>> context_events;  // get hookSpecificOutput
  std::set<std::string, std::less<>> message_events;  // get only systemMessage
  bool reloads_skills = false;  // SessionStart after an install adds reloadSkills: true
  HostDirs user;
  HostDirs project;
  std::string_view mcp_format;  // "json" | "toml"
  // The user entries inside the host's own configuration directory, for a host that moves them
  // there when it runs with one (config "config_dir"); an empty entry does not move. nullopt: the
  // host has no such directory, and its adapter refuses config_dir.
  std::optional<HostDirs> user_in_config_dir;
};

class NativeHostAdapter {
 public:
  // `profile` must outlive the adapter. Config members: installation_key, tenant_id, home,
  // project_dir, scope, and config_dir where the profile has user_in_config_dir
  // (adapter_config.hpp). Errors: InvalidArgument for a malformed config.
  NativeHostAdapter(const NativeHostProfile& profile, std::string_view config_json);

  const NativeHostProfile& profile() const noexcept { return *profile_; }

  Json parse_hook(std::string_view payload_json) const;
  // Errors: InvalidArgument for a malformed request (reply_request.hpp).
  Json render_reply(std::string_view request_json) const;
  Json install_locations() const;

 private:
  const NativeHostProfile* profile_;
  AdapterConfig config_;
};

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_NATIVE_HOST_HPP_
