// Option parsing shared by the service commands (query, desired, policy, journal, hook):
// `--state DIR`, `--json`, named value options and positional arguments, in any order; `--`
// ends the options. A malformed command line is a CommandUsage (exit 2, except for `ctx hook`).
#ifndef CTX_HOST_CLI_COMMAND_OPTIONS_HPP_
#define CTX_HOST_CLI_COMMAND_OPTIONS_HPP_

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"
#include "host/core/error.hpp"

namespace ctx::cli {

class CommandUsage : public InvalidArgument {
 public:
  explicit CommandUsage(const std::string& message) : InvalidArgument(message) {}
};

struct CommandLine {
  std::optional<std::filesystem::path> state;
  bool json = false;
  std::map<std::string, std::string> values;  // "--work" -> "FILE"
  std::vector<std::string> positional;
};

// Parses args[first..]. `value_options` take one value each ("--work"); --state always, --json
// when `takes_json`. Errors: CommandUsage naming `command`.
CommandLine parse_command_line(const std::vector<std::string>& args, std::size_t first,
                               const std::string& command,
                               const std::set<std::string>& value_options, bool takes_json);

// --state made absolute, else the default state dir.
std::filesystem::path command_state_dir(const CommandLine& line, const Environment& env);

// Replaces CR/LF so a message is one line.
std::string single_line_text(std::string text);

// Runs `body`; CommandUsage -> "ctx: MESSAGE (see ctx --help)" and `usage_code`; any other
// exception -> "ctx: error: MESSAGE" and exit 1. Never throws.
template <typename F>
int run_guarded(std::ostream& err, int usage_code, F&& body) {
  try {
    return body();
  } catch (const CommandUsage& e) {
    err << "ctx: " << single_line_text(e.what()) << " (see ctx --help)\n";
    return usage_code;
  } catch (const std::exception& e) {
    err << "ctx: error: " << single_line_text(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    err << "ctx: error: unknown failure\n";
    return kExitFailure;
  }
}

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_COMMAND_OPTIONS_HPP_
