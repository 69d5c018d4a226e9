// Hook configuration writer: puts the `ctx hook <adapter>` command handlers into a coding host's
// own hook configuration and takes them out again, preserving everything else in the file.
//
//   Claude Code  user ~/.claude/settings.json   project DIR/.claude/settings.json
//   Codex        user ~/.codex/hooks.json       project DIR/.codex/hooks.json
// Both files hold {"hooks": {EVENT: [{"matcher"?, "hooks": [HANDLER...]}...]}, ...} (spec
// host-formats §1.2, §3.1). ctx adds one matcher group per event it handles,
// {"hooks": [{"type": "command", "command": "<ctx> hook <adapter>[ --state <dir>]",
// "timeout": seconds}]}, and recognises its handlers by their command: a `ctx` executable (any
// directory) followed by `hook <adapter>`.
//
// install is idempotent (a second run with the same command changes nothing and writes nothing);
// uninstall removes exactly the ctx handlers, then the groups, events and "hooks" object they
// alone filled, and when the result equals the content saved before the last change it writes
// back those exact bytes (or removes the file ctx created) and deletes the backup. Before every
// other change the previous bytes go to "<file>.ctx-backup" (0600; empty when there was no
// file). Writes are atomic
// (temporary file, fsync, rename) and keep the file's mode (a new file gets 0644 less the umask);
// a symlinked file is updated at its target. Not safe against a concurrent writer of the same
// file (the host's own editor included): the last rename wins, the file is never torn.
#ifndef CTX_HOST_APP_HOOK_HOOKS_CONFIG_HPP_
#define CTX_HOST_APP_HOOK_HOOKS_CONFIG_HPP_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/error.hpp"
#include "host/core/json_reader.hpp"
#include "host/core/state_fs.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime::hooks {

enum class HookHost { kClaudeCode, kCodex };
// The adapter plugin ids of the hosts.
inline constexpr core::EnumStrings<HookHost, 2> kHookHostStrings{
    "hook host", {HookHost::kClaudeCode, HookHost::kCodex}, {"claude-code", "codex"}};
enum class HookScope { kUser, kProject };

// "claude-code" / "codex" (the adapter plugin ids).
std::string_view host_name(HookHost host) noexcept;
// The host named `name`, or nullopt.
std::optional<HookHost> parse_host(std::string_view name) noexcept;

// The events ctx installs handlers for: the events the host's adapter documents.
const std::vector<std::string>& installed_events(HookHost host);

// The existing configuration file cannot be read as the host's hook configuration (not JSON,
// not an object, a duplicate key, "hooks" or an event entry of the wrong type, not a regular
// file). Code: kFailedPrecondition. Nothing was changed.
class MalformedHooksConfig : public FailedPrecondition {
 public:
  explicit MalformedHooksConfig(const std::string& message) : FailedPrecondition(message) {}
};

// Which file a host's hooks live in.
struct HookTarget {
  HookHost host = HookHost::kClaudeCode;
  std::filesystem::path file;
};

// The target for `host` in `scope`: under `home` (user) or `project_dir` (project); Codex's user
// configuration is in `codex_home` ($CODEX_HOME) when that is absolute, else in home/.codex, and
// Claude Code's in `claude_config_dir` ($CLAUDE_CONFIG_DIR) when that is absolute, else in
// home/.claude. Errors: InvalidArgument when the directory needed is not absolute.
HookTarget hook_target(
    HookHost host, HookScope scope, const std::filesystem::path& home,
    const std::filesystem::path& project_dir,
    const std::optional<std::filesystem::path>& codex_home = std::nullopt,
    const std::optional<std::filesystem::path>& claude_config_dir = std::nullopt);

// How the handler runs ctx: the executable (absolute) and an optional --state directory.
struct HookCommand {
  std::filesystem::path executable;
  std::optional<std::filesystem::path> state_dir;
};

// The shell command line of the handler, e.g. "/usr/bin/ctx hook claude-code"; words that need it
// are single-quoted. Errors: InvalidArgument when the executable is not absolute or is not named
// "ctx".
std::string hook_command_line(HookHost host, const HookCommand& command);

// What install or uninstall did.
struct HooksChange {
  bool changed = false;                         // false: the file already was as asked
  std::filesystem::path file;                   // the file written (a symlink's target)
  std::optional<std::filesystem::path> backup;  // set when the previous bytes were saved
  bool created = false;                         // there was no file before (the backup is empty)
  std::vector<std::string> events;              // events whose ctx handler was added or removed
  std::string notice;  // one line for the user (review in /hooks, trust, disabled hooks)
  // uninstall: the file is back to its bytes before install (or gone, when ctx created it) and
  // the backup was deleted.
  bool restored = false;
};

// True when `command` is a ctx handler's command line for `host`: a `ctx` executable (any
// directory) followed by `hook <adapter>`.
bool is_ctx_hook_command(std::string_view command, HookHost host);

// What the target's file holds of ctx (read only).
struct InstalledHooks {
  std::filesystem::path file;        // the file read (a symlink's target)
  std::vector<std::string> events;   // events that have a ctx handler, in file order
  std::vector<std::string> missing;  // installed_events(host) without one
  // The --state directory the ctx handlers name (the first that names one); nullopt: none does
  // (the default state dir).
  std::optional<std::filesystem::path> state_dir;
  // Codex's trust key of each ctx handler: "<target.file>:<event_snake>:<group>:<handler>"
  // (host-formats §7), in file order.
  std::vector<std::string> trust_keys;
};

// Errors: MalformedHooksConfig; SystemError. A missing file holds nothing.
InstalledHooks read_installed_hooks(const HookTarget& target);

// "SessionStart" -> "session_start": the event as Codex's trust keys name it.
std::string snake_event(std::string_view event);

// Writes the ctx handlers into the target's file (creating it and its directory when needed).
// Errors: MalformedHooksConfig (nothing changed); InvalidArgument from hook_command_line;
// SystemError when the file system refuses.
// `state_fs` writes the file (the backup first).
HooksChange install_hooks(const HookTarget& target, const HookCommand& command,
                          core::StateFs& state_fs = store::default_state_fs());

// Removes every ctx handler of the target's host. A missing file is no change.
// Errors: MalformedHooksConfig (nothing changed); SystemError.
HooksChange uninstall_hooks(const HookTarget& target,
                            core::StateFs& state_fs = store::default_state_fs());

// ---- Codex's hook trust in $CODEX_HOME/config.toml (host-formats §7) ----------------------
// Codex runs a hook only when config.toml holds [hooks.state."<key>"] trusted_hash equal to the
// hook's current hash; `ctx hooks install codex --trust` has Codex write those entries (through
// `codex app-server`), after saving config.toml's bytes in config.toml.ctx-backup. Uninstall takes
// ctx's entries out again, text only (every other byte kept), and when what is left equals the
// saved content as TOML data it writes back the saved bytes; the backup is then deleted.

// What config.toml says (a missing file says nothing). Errors: MalformedHooksConfig (not TOML).
struct CodexConfigFacts {
  std::map<std::string, std::string> trusted_hashes;    // hooks.state key -> trusted_hash
  std::vector<std::filesystem::path> trusted_projects;  // [projects."<dir>"] trust_level="trusted"
};
CodexConfigFacts read_codex_config(const std::filesystem::path& config_toml);

// True when `project` or a directory above it is among `facts`' trusted projects.
bool codex_project_trusted(const CodexConfigFacts& facts, const std::filesystem::path& project);

// Saves config_toml's bytes to "<config_toml>.ctx-backup" (0600; empty when there is no file)
// unless that backup exists already (it then holds the bytes before ctx's first trust).
// Errors: SystemError.
void save_codex_config_backup(const std::filesystem::path& config_toml,
                              core::StateFs& state_fs = store::default_state_fs());

// `toml` without its [hooks.state."KEY"] tables (header and body) for every KEY of `keys`, and
// without a [hooks.state] table left empty by that. Every other byte is kept.
std::string without_trust_tables(std::string_view toml, const std::vector<std::string>& keys);

// Removes ctx's trust entries `keys` from config_toml (see above). changed: the file was
// written; restored: to the bytes saved before ctx's first trust. Errors: MalformedHooksConfig
// (not TOML, or an entry of `keys` is not in the table form Codex writes: nothing written);
// SystemError.
struct TrustRemoval {
  bool changed = false;
  bool restored = false;
  std::size_t removed = 0;  // entries of `keys` that were there
};
TrustRemoval remove_codex_trust(const std::filesystem::path& config_toml,
                                const std::vector<std::string>& keys,
                                core::StateFs& state_fs = store::default_state_fs());

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_APP_HOOK_HOOKS_CONFIG_HPP_
