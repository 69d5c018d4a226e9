// Per-project activation (issue 36): where the skills of a session are activated, and when they
// leave. Thread-safe free functions and a value type; files are private (0600 in 0700 dirs).
//
// Targets: `ctx hooks install HOST --project DIR | --user` records one target per (host
// adapter, scope, directory) as <state>/activation-targets/<digest>.json. A session's target is
// found from its cwd: the adapter's project target whose directory is the cwd or its nearest
// ancestor, else the adapter's user target, else none (skills then activate in
// <state>/skills/active). Never another project's. The project's token "prj-<32 hex>" (an HMAC
// of the target's skills directory under the installation key) is the repository id of the
// session's scope, so every session of a project shares it and no other project does. The
// single <state>/activation-target.json of earlier builds is migrated into the directory (as a
// project target of its recorded directory) the first time targets are read or written.
//
// Lifecycle of a project's skills folder (ProjectLifecycle, <state>/projects/<token>.json): the
// capability sets the project's last kRecentPrompts prompts planned, in any of its sessions,
// and the skills released while one of those prompts still wanted them ("lingering": left in
// the folder). A skill leaves the folder only when no session of the project holds it active
// and none of the project's last kRecentPrompts prompts planned it. The file also keeps the
// project's last kEndedSessions ended sessions (keyed references, never raw ids): an approval
// that activates a capability for a session that has already ended releases it at once.
#ifndef CTX_HOST_RUNTIME_CATALOG_PROJECT_ACTIVATION_HPP_
#define CTX_HOST_RUNTIME_CATALOG_PROJECT_ACTIVATION_HPP_

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace ctx::runtime {

// Which of a host's skills directories an activation target is: a project's, or the user's.
enum class ActivationScope { kProject, kUser };

// Where the skills of one project's (or the user's) sessions of one host are activated.
struct ActivationTarget {
  std::string adapter;
  std::filesystem::path project_dir;  // for kUser: the home directory
  std::filesystem::path skills_dir;
  ActivationScope scope = ActivationScope::kProject;
  // Where the same adapter reads agents and MCP servers (its install_locations "agents", "mcp",
  // "mcp_format"); all empty when it names none (the generic adapter).
  std::filesystem::path agents_dir;
  std::filesystem::path mcp_file;
  std::string mcp_format;  // "json" (Claude Code) or "toml" (Codex)
};

// "prj-" + the first 32 hex of HMAC(key, "ctx.activation-project-v1\0" || skills_dir).
std::string project_token(const std::string& installation_key,
                          const std::filesystem::path& skills_dir);

// Records `target` under <state>/activation-targets/ (idempotent; another skills dir for the
// same adapter, scope and directory replaces it). Errors: UnsafeStateFile, SystemError.
void record_activation_target(const std::filesystem::path& state_dir,
                              const ActivationTarget& target);

// Every recorded target, the legacy file migrated first. Errors: UnsafeStateFile, DataLoss
// (a malformed target file), SystemError.
std::vector<ActivationTarget> read_activation_targets(const std::filesystem::path& state_dir);

// Forgets the target of `adapter` recorded for `dir` in `scope` (ctx hooks uninstall): sessions
// there then find their target as if it had never been recorded. True when there was one.
// Errors: SystemError.
bool forget_activation_target(const std::filesystem::path& state_dir, const std::string& adapter,
                              const std::filesystem::path& dir, ActivationScope scope);

// The target of a session of `adapter` whose cwd is `cwd` (rule above); nullopt for a relative
// or absent cwd without a user target, or no target at all.
std::optional<ActivationTarget> find_activation_target(
    const std::vector<ActivationTarget>& targets, const std::string& adapter,
    const std::optional<std::filesystem::path>& cwd);

inline constexpr std::size_t kRecentPrompts = 3;
inline constexpr std::size_t kEndedSessions = 64;

// One project's recent prompts and lingering skills, changed under a per-project file lock.
class ProjectLifecycle {
 public:
  // `state_dir` absolute; `token` a project_token().
  ProjectLifecycle(std::filesystem::path state_dir, std::string token);

  // A prompt of the project planned `capability_ids` (`prompt_key` names the prompt, e.g. its
  // host work reference): they join the recent window (the oldest prompt leaves it); a retry of
  // a prompt already in the window (same key) changes nothing. Returns the lingering skills no
  // recent prompt wants any more, with the material identity JSON each was released with, and
  // forgets them: the caller removes each that no session holds. Errors: UnsafeStateFile,
  // SystemError.
  std::map<std::string, core::Json> record_prompt(const std::string& prompt_key,
                                                  const std::vector<std::string>& capability_ids);
  // A session ended (SessionEnd): `session` (its work scope, a JSON object) with the keyed
  // references of its streams joins the project's last kEndedSessions ended sessions (the
  // oldest leaves). Idempotent. Errors: UnsafeStateFile, DataLoss, SystemError.
  void end_session(const std::vector<std::string>& stream_refs, const core::Json& session);
  // The ended session one of whose streams is `stream_ref` is live again (a prompt of it came):
  // it leaves the ended sessions. Writes only when it was there. Errors: as end_session.
  void resume(const std::string& stream_ref);
  // The ended session one of whose streams is `stream_ref`, unless it was resumed since.
  // Errors: UnsafeStateFile, DataLoss.
  std::optional<core::Json> ended(const std::string& stream_ref) const;
  // True when one of the project's recent prompts planned `capability_id`.
  bool wanted(const std::string& capability_id) const;
  // Records that `capability_id` (material identity `material`) was released but left in the
  // folder because a recent prompt wants it.
  void linger(const std::string& capability_id, const core::Json& material);

 private:
  core::Json load() const;
  void store(const core::Json& state) const;
  std::filesystem::path dir_;
  std::filesystem::path file_;
  std::string token_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_PROJECT_ACTIVATION_HPP_
