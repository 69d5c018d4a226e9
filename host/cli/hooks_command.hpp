// `ctx hooks install|uninstall claude-code|codex [--project DIR | --user] [--state DIR] [--json]`:
// writes or removes the host's hook configuration (runtime/hooks/hooks_config.hpp) so that the
// host runs `<this ctx> hook <adapter> [--state DIR]` on each event its adapter handles.
// --project defaults to the current directory; --user uses $HOME. Exit codes: 0 done (or already
// so), 1 the file is malformed or cannot be written (one stderr line, file untouched), 2 usage.
#ifndef CTX_HOST_CLI_HOOKS_COMMAND_HPP_
#define CTX_HOST_CLI_HOOKS_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"
#include "host/runtime/hooks/hooks_config.hpp"

namespace ctx::cli {

struct HooksOptions {
  bool install = true;  // else uninstall
  runtime::hooks::HookHost host = runtime::hooks::HookHost::kClaudeCode;
  bool user = false;                             // --user (else the project)
  std::optional<std::filesystem::path> project;  // --project DIR; default: the current directory
  std::optional<std::filesystem::path> state;    // install only
  bool json = false;
};

// Errors: what the hook configuration throws (a malformed or unwritable file: nothing written).
int run_hooks(const HooksOptions& options, const CommandIo& io);

// The usage lines of `ctx hooks`.
std::string hooks_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_HOOKS_COMMAND_HPP_
