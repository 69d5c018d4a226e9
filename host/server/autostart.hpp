// Starting the `ctx serve` of a state dir from a command that found none running (`ctx hook`):
// the one process that takes the state dir's server lock (<state>/ctx.sock.lock, which every
// `ctx serve` holds for its life) starts a detached `ctx serve` and hands that lock down to it, so
// processes racing at first use start one server, and none while one runs or is starting.
// Thread-safe; forks: the child calls only async-signal-safe functions before it execs.
#ifndef CTX_HOST_SERVER_AUTOSTART_HPP_
#define CTX_HOST_SERVER_AUTOSTART_HPP_

#include <chrono>
#include <filesystem>

#include "host/app/state_layout.hpp"

namespace ctx::server {

// The environment variable naming the descriptor of the lock the started `ctx serve` inherits.
inline constexpr const char* kLockFdVariable = "CTX_SERVE_LOCK_FD";
// The started server's stdout and stderr (append; cut to nothing once past kServeLogLimit): one
// line when it starts, one when it stops by itself, and why it could not start.
using runtime::kServeLogFile;
inline constexpr long kServeLogLimit = 64 * 1024;
// How long a started server stays without a connection before it exits (docs/cli.md: ctx hook).
inline constexpr std::chrono::seconds kDefaultAutoServeIdle{1800};

enum class AutoStart {
  kStarted,   // this process took the lock and started `ctx serve`, which now holds it
  kLockHeld,  // a server runs or is starting (another process holds the lock): nothing done
  kFailed,    // the lock file or the log cannot be opened, or fork failed: nothing started
};

// Starts `executable serve --state STATE_DIR --idle-exit SECONDS` in a new session (double fork,
// setsid), stdin /dev/null, stdout and stderr to <state>/serve.log, every other descriptor closed
// but the lock's, which it gets as descriptor 3 named by $CTX_SERVE_LOCK_FD; waits only for the
// intermediate child. Never throws. REQUIRES: state_dir is absolute.
AutoStart start_server_detached(const std::filesystem::path& state_dir,
                                const std::filesystem::path& executable,
                                std::chrono::seconds idle_exit) noexcept;

}  // namespace ctx::server

#endif  // CTX_HOST_SERVER_AUTOSTART_HPP_
