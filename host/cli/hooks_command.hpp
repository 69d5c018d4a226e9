// `ctx hooks install|uninstall claude-code|codex [--project DIR | --user] [--state DIR] [--json]`:
// writes or removes the host's hook configuration (runtime/hooks/hooks_config.hpp) so that the
// host runs `<this ctx> hook <adapter> [--state DIR]` on each event its adapter handles.
// --project defaults to the current directory; --user uses $HOME. Exit codes: 0 done (or already
// so), 1 the file is malformed or cannot be written (one stderr line, file untouched), 2 usage.
#ifndef CTX_HOST_CLI_HOOKS_COMMAND_HPP_
#define CTX_HOST_CLI_HOOKS_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// Runs `ctx hooks ...`; `args` is the whole argv without the program name (args[0] == "hooks").
// Never throws.
int run_hooks_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const Environment& env);

// The usage lines of `ctx hooks`.
std::string hooks_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_HOOKS_COMMAND_HPP_
