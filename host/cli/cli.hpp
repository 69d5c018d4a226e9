// The `ctx` command line, as a library so tests can run it in process: argument parsing,
// dispatch, help, and the plugin commands.
//
//   ctx --help | --version
//   ctx plugin pin    --lock FILE [--state DIR] [--replace] PLUGIN.so...
//   ctx plugin verify --lock FILE [--state DIR] [--load [--timeout SECONDS]]
//   ctx plugin list   --lock FILE [--json]
//
// Exit codes: 0 success, 1 a command failed (one line per failure on stderr), 2 usage error.
// Thread-safety: run() keeps no global state; concurrent pins of one lock file serialise on
// its directory's flock. `verify --load` forks: call it from a single-threaded process.
#ifndef CTX_HOST_CLI_CLI_HPP_
#define CTX_HOST_CLI_CLI_HPP_

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ctx::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The process environment the CLI reads (nothing else is read from the environment).
struct Environment {
  std::optional<std::string> xdg_state_home;  // $XDG_STATE_HOME
  std::optional<std::string> home;            // $HOME
  // Reads the variables above from this process.
  static Environment from_process();
};

// $XDG_STATE_HOME/ctx when set and absolute, else $HOME/.local/state/ctx.
// Errors: InvalidArgument when neither variable gives an absolute directory.
std::filesystem::path default_state_dir(const Environment& env);

// Runs `ctx` with `args` (argv without the program name), writing results to `out` and
// diagnostics to `err`; returns the exit code. Never throws.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& env);

// The --help text.
std::string usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CLI_HPP_
