// A `codex app-server` child spoken to over its stdio: JSON-RPC, one JSON object per line
// (host-formats §7). ctx uses it for what Codex's /hooks does: list the hooks Codex loads with
// their trust status and current hash, and write their trust into $CODEX_HOME/config.toml.
// The child inherits ctx's environment (HOME, CODEX_HOME) and runs in `cwd`; it is ended when the
// object is destroyed. Not thread-safe.
#ifndef CTX_HOST_CLI_CODEX_APP_SERVER_HPP_
#define CTX_HOST_CLI_CODEX_APP_SERVER_HPP_

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace ctx::cli {

// The `codex` executable: `explicit_path` when given, else the first `codex` on `path_env`.
// Errors: NotFound ("codex was not found on PATH: give --codex PATH").
std::filesystem::path find_codex(const std::optional<std::filesystem::path>& explicit_path,
                                 const std::optional<std::string>& path_env);

class CodexAppServer {
 public:
  // Starts `codex app-server` and initializes the session. Every call waits at most `timeout`.
  // Errors: SystemError (cannot start), FailedPrecondition (it exits or answers out of protocol).
  CodexAppServer(const std::filesystem::path& codex, const std::filesystem::path& cwd,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~CodexAppServer();
  CodexAppServer(const CodexAppServer&) = delete;
  CodexAppServer& operator=(const CodexAppServer&) = delete;

  // The result of `method`. Errors: FailedPrecondition naming the method and Codex's error
  // message (or the exit / timeout); notifications in between are skipped.
  core::Json call(std::string_view method, const core::Json& params);

 private:
  void send(const core::Json& message);
  void stop() noexcept;  // closes the pipes and reaps the child (SIGKILL after 2 s)
  std::string read_line(std::string_view method);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;
  long next_id_ = 1;
  std::chrono::milliseconds timeout_;
};

// One hook as `hooks/list` reports it.
struct CodexHook {
  std::string key;           // "<file>:<event_snake>:<group>:<handler>"
  std::string source_path;   // the hooks.json / config.toml it came from
  std::string command;       // the command line
  std::string current_hash;  // "sha256:..."
  std::string trust_status;  // "trusted", "untrusted", "modified", "managed"
};

// The hooks Codex loads for `cwd` (hooks/list), with the warnings it reports.
struct CodexHookList {
  std::vector<CodexHook> hooks;
  std::vector<std::string> warnings;
};
CodexHookList list_codex_hooks(CodexAppServer& server, const std::filesystem::path& cwd);

// Upserts hooks.state.<key>.trusted_hash = current_hash for each hook (config/batchWrite into the
// user's config.toml). Errors: those of call().
void trust_codex_hooks(CodexAppServer& server, const std::vector<CodexHook>& hooks);

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CODEX_APP_SERVER_HPP_
