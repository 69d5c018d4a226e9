// Instance configuration shared by the in-tree host adapters. Pure; thread-safe.
//
// Config (a JSON object, may be empty; members outside the adapter's allowed set are refused):
//   "installation_key"  64 hex characters: the host's 32-byte installation key. Required before
//                       parse_hook can key the work reference and scope (never echoed).
//   "tenant_id"         engine token, default "local"
//   "home"              absolute directory standing for "~" in install locations
//   "project_dir"       absolute project directory for project-scope install locations
//   "scope"             "project" (default) or "user": which install locations are primary
//   "config_dir"        absolute directory the host runs with as its user configuration
//                       directory ($CLAUDE_CONFIG_DIR, $CODEX_HOME), for a host whose user
//                       locations move with it
//   "skills_dir"        (generic only) where skills go, default ".agents/skills"
#ifndef CTX_PLUGINS_HOSTS_COMMON_ADAPTER_CONFIG_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_ADAPTER_CONFIG_HPP_

#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace ctx::host_adapters {

struct AdapterConfig {
  std::optional<std::string> installation_key;  // 32 raw bytes
  std::string tenant_id = "local";
  std::optional<std::string> home;
  std::optional<std::string> project_dir;
  bool user_scope = false;
  std::optional<std::string> config_dir;
  std::optional<std::string> skills_dir;
};

// Parses `text` (empty means defaults). `what` names the adapter in messages.
// Errors: InvalidArgument for malformed JSON, an unknown member, or a member of the wrong form
// (the key value is never quoted).
AdapterConfig read_adapter_config(std::string_view text, std::string_view what,
                                  const std::set<std::string, std::less<>>& allowed);

// The installation key. Errors: ctx::Error kFailedPrecondition "<what> has no installation_key"
// when the host configured none.
const std::string& require_installation_key(const AdapterConfig& config, std::string_view what);

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_ADAPTER_CONFIG_HPP_
