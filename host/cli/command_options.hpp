// What every command shares once the command line is parsed (cli.cpp parses it with CLI11 into
// each command's options struct): its streams and environment, the state dir, one-line errors.
#ifndef CTX_HOST_CLI_COMMAND_OPTIONS_HPP_
#define CTX_HOST_CLI_COMMAND_OPTIONS_HPP_

#include <filesystem>
#include <istream>
#include <optional>
#include <ostream>
#include <string>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// The streams and environment one command runs with (`in` is read only by commands given "-"
// for a file, and by `ctx hook`).
struct CommandIo {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  const Environment& env;
};

// `state` (--state DIR) made absolute, else the default state dir.
// Errors: InvalidArgument when there is no default (default_state_dir).
std::filesystem::path command_state_dir(const std::optional<std::filesystem::path>& state,
                                        const Environment& env);

// The state dir the ctx commands a command prints must name (--state DIR): nullopt when `state`
// is the default one a fresh shell of this user finds (runtime::printed_state_dir).
std::optional<std::filesystem::path> printed_state(const std::filesystem::path& state,
                                                   const Environment& env);

// Replaces CR/LF so a message is one line.
std::string single_line_text(std::string text);

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_COMMAND_OPTIONS_HPP_
