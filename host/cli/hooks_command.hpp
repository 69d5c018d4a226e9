// `ctx hooks install|uninstall|status claude-code|codex [--project DIR | --user] ...`: writes,
// removes or reports the host's hook configuration (app/hook/hooks_config.hpp) so that the
// host runs `<this ctx> hook <adapter> [--state DIR]` on each event its adapter handles.
// --project defaults to the current directory; --user uses $HOME.
//   install [--state DIR] [--trust [--codex PATH]]: --trust (Codex) has `codex app-server` record
//     ctx's hooks as trusted, as Codex's /hooks does; without it the output says how.
//   uninstall: removes what ctx made — its handlers (restoring the file's bytes, then deleting
//     the backup), its Codex trust entries, the activation links of its state dir in the host's
//     skills directory, and the directories install made that are left empty.
//   status [--codex PATH]: installed, trusted (Codex), which state dir, project trusted (Codex).
// Exit codes: 0 done (or already so; status: reported), 1 a malformed or unwritable file, or
// Codex refused (one stderr line, the file untouched), 2 usage.
#ifndef CTX_HOST_CLI_HOOKS_COMMAND_HPP_
#define CTX_HOST_CLI_HOOKS_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"
#include "host/app/hook/hooks_config.hpp"

namespace ctx::cli {

enum class HooksAction { kInstall, kUninstall, kStatus };

struct HooksOptions {
  HooksAction action = HooksAction::kInstall;
  runtime::hooks::HookHost host = runtime::hooks::HookHost::kClaudeCode;
  bool user = false;                             // --user (else the project)
  std::optional<std::filesystem::path> project;  // --project DIR; default: the current directory
  std::optional<std::filesystem::path> state;    // install only
  bool trust = false;                            // install codex only
  std::optional<std::filesystem::path> codex;    // --codex PATH (else `codex` on $PATH)
  bool json = false;
};

// Errors: what the hook configuration throws (a malformed or unwritable file: nothing written);
// NotFound / FailedPrecondition from Codex (--trust: codex missing, or it refused).
int run_hooks(const HooksOptions& options, const CommandIo& io);

// The usage lines of `ctx hooks`.
std::string hooks_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_HOOKS_COMMAND_HPP_
