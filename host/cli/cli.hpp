// The `ctx` command line, as a library so tests can run it in process: one CLI11 App tree
// (cli.cpp) parses every form the --help text lists into that command's options struct
// (plugin_command.hpp, catalog_command.hpp, hook_command.hpp, ...), then runs the command.
//
//   ctx --help | --version
//   ctx plugin pin|verify|list ...   ctx init    ctx catalog import   ctx serve
//   ctx hook ADAPTER                 ctx hooks install|uninstall      ctx query prepare|reopen
//   ctx desired set                  ctx consent ...                  ctx policy set
//   ctx journal verify               ctx demo
//
// Exit codes: 0 success, 1 a command failed (one line per failure on stderr, "ctx: error: ..."),
// 2 usage error (one line, "ctx: MESSAGE (see ctx --help)") — except `ctx hook`, which never
// exits 2: a malformed hook command line is exit 1 with one line "ctx hook: MESSAGE".
// Thread-safety: run() keeps no global state; concurrent pins of one lock file serialise on
// its directory's flock. `plugin verify --load` forks: call it from a single-threaded process.
#ifndef CTX_HOST_CLI_CLI_HPP_
#define CTX_HOST_CLI_CLI_HPP_

#include <filesystem>
#include <istream>
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
  std::optional<std::string> xdg_state_home{};  // $XDG_STATE_HOME
  std::optional<std::string> home{};            // $HOME
  std::optional<std::string> path{};            // $PATH
  std::optional<std::string> codex_home{};      // $CODEX_HOME
  std::optional<std::string> claude_config_dir{};  // $CLAUDE_CONFIG_DIR
  std::optional<std::string> autoserve{};          // $CTX_AUTOSERVE (0, off, no, false: off)
  std::optional<std::string> autoserve_idle{};     // $CTX_AUTOSERVE_IDLE (seconds)
  std::optional<std::string> serve_lock_fd{};      // $CTX_SERVE_LOCK_FD (set by ctx hook)
  // This process's ctx executable, which `ctx hook` starts `ctx serve` with; nullopt (the CLI
  // run as a library) starts none.
  std::optional<std::filesystem::path> executable{};
  // Reads the variables above from this process, and /proc/self/exe as the executable.
  static Environment from_process();
};

// $XDG_STATE_HOME/ctx when set and absolute, else $HOME/.local/state/ctx.
// Errors: InvalidArgument when neither variable gives an absolute directory.
std::filesystem::path default_state_dir(const Environment& env);

// Runs `ctx` with `args` (argv without the program name), reading `in` where a command reads
// stdin (`ctx hook`, "-" for a file), writing results to `out` and diagnostics to `err`;
// returns the exit code. Never throws.
int run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Environment& env);
// The same with std::cin as `in`.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& env);

// The overview `ctx --help` and `ctx help` print. `ctx COMMAND... --help` prints the parser's
// own help of the command reached (its options, as defined), with that command's overview lines.
std::string usage();

// One leaf command as the parser defines it: its words after "ctx", and the names of its
// options ("--state") and positionals ("DIR"); so tests can hold the overview to the parser.
struct CommandSpec {
  std::string path;
  std::vector<std::string> options;
  std::vector<std::string> positionals;
};
std::vector<CommandSpec> command_specs();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CLI_HPP_
