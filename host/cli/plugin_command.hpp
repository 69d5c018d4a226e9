// `ctx plugin pin|verify|list`: the plugin lock file (host/plugins/lock_file.hpp).
//   ctx plugin pin    --lock FILE [--state DIR] [--replace] PLUGIN.so...
//       trust on first use: pins each file's identity note, hash and size (executes nothing);
//       the lock is written, under its flock, only when every file could be pinned; re-pinning
//       other bytes of a pinned plugin needs --replace.
//   ctx plugin verify --lock FILE [--state DIR] [--load [--timeout SECONDS]]
//       re-checks every entry's bytes, note and dependencies; --load also loads each in a
//       supervised child with a deadline (default 10 s). One line per entry.
//   ctx plugin list   --lock FILE [--json]
// Exit codes: 0 done, 1 a pin or a verification failed (one stderr line per failure).
// `verify --load` forks: call it from a single-threaded process.
#ifndef CTX_HOST_CLI_PLUGIN_COMMAND_HPP_
#define CTX_HOST_CLI_PLUGIN_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

// The parsed options of one `ctx plugin` command (which of them apply is the command line's).
struct PluginOptions {
  std::filesystem::path lock;
  std::optional<std::filesystem::path> state;  // default: default_state_dir
  bool json = false;                           // list
  bool replace = false;                        // pin
  bool load = false;                           // verify
  unsigned timeout_seconds = 10;               // verify --load: 1..86400
  std::vector<std::filesystem::path> files;    // pin: at least one
};

// Each throws only what the lock file and loader throw (the caller prints "ctx: error: ...");
// per-plugin failures are stderr lines and exit 1.
int run_plugin_pin(const PluginOptions& options, const CommandIo& io);
int run_plugin_verify(const PluginOptions& options, const CommandIo& io);
int run_plugin_list(const PluginOptions& options, const CommandIo& io);

// The usage lines of `ctx plugin`.
std::string plugin_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_PLUGIN_COMMAND_HPP_
