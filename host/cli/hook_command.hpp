// `ctx hook ADAPTER [--state DIR]`: reads one hook payload from stdin (a coding host's hook
// event), writes the host's native reply on stdout: through the `ctx serve` of that state dir
// when its socket answers (the server's "hook" method), else in this process on the embedded
// default (app/hook/hook_runner.hpp). ADAPTER is the id of a host-adapter plugin pinned in
// the state dir (claude-code, codex, generic).
// Having answered in process, it starts that server for the hooks after it (server/autostart.hpp:
// detached, one per state dir, exits after $CTX_AUTOSERVE_IDLE seconds without a connection,
// default 1800), unless --no-autoserve, CTX_AUTOSERVE=0 (or off, no, false), or the CLI runs as
// a library (no Environment::executable).
// Exit codes (the hosts' non-blocking contract): 0 with a reply line or with nothing; 1 with one
// stderr line for a malformed, truncated, oversized (> 1 MiB) or non-UTF-8 payload, an unknown
// adapter, a bad command line or a state dir that cannot serve. Never 2: ctx never blocks a
// prompt or a tool. A malformed `ctx hook` command line is exit 1 with one stderr line too
// (cli.cpp: "ctx hook: MESSAGE").
#ifndef CTX_HOST_CLI_HOOK_COMMAND_HPP_
#define CTX_HOST_CLI_HOOK_COMMAND_HPP_

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct HookOptions {
  std::string adapter;
  std::optional<std::filesystem::path> state;
  bool no_autoserve = false;  // --no-autoserve
};

// Whether `ctx hook` with `options` in `env` starts a server when it finds none, and with which
// idle time ($CTX_AUTOSERVE_IDLE: whole seconds, 1 to 604800; any other value: the default).
bool autoserve_enabled(const HookOptions& options, const Environment& env);
std::chrono::seconds autoserve_idle(const Environment& env);

// Reads the payload from io.in. Never throws; never returns 2.
int run_hook(const HookOptions& options, const CommandIo& io);

std::string hook_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_HOOK_COMMAND_HPP_
