// `ctx hook ADAPTER [--state DIR]`: reads one hook payload from stdin (a coding host's hook
// event), writes the host's native reply on stdout: through the `ctx serve` of that state dir
// when its socket answers (the server's "hook" method), else in this process on the embedded
// default (runtime/hooks/hook_runner.hpp). ADAPTER is the id of a host-adapter plugin pinned in
// the state dir (claude-code, codex, generic).
// Exit codes (the hosts' non-blocking contract): 0 with a reply line or with nothing; 1 with one
// stderr line for a malformed, truncated, oversized (> 1 MiB) or non-UTF-8 payload, an unknown
// adapter, a bad command line or a state dir that cannot serve. Never 2: ctx never blocks a
// prompt or a tool. A malformed `ctx hook` command line is exit 1 with one stderr line too
// (cli.cpp: "ctx hook: MESSAGE").
#ifndef CTX_HOST_CLI_HOOK_COMMAND_HPP_
#define CTX_HOST_CLI_HOOK_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct HookOptions {
  std::string adapter;
  std::optional<std::filesystem::path> state;
};

// Reads the payload from io.in. Never throws; never returns 2.
int run_hook(const HookOptions& options, const CommandIo& io);

std::string hook_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_HOOK_COMMAND_HPP_
