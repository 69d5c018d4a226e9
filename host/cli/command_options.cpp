#include "host/cli/command_options.hpp"

namespace ctx::cli {

namespace fs = std::filesystem;

CommandLine parse_command_line(const std::vector<std::string>& args, std::size_t first,
                               const std::string& command,
                               const std::set<std::string>& value_options, bool takes_json) {
  CommandLine line;
  bool only_positional = false;
  for (std::size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (only_positional || arg.empty() || arg.front() != '-' || arg == "-") {
      line.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    if (arg == "--json" && takes_json) {
      line.json = true;
      continue;
    }
    const bool is_state = arg == "--state";
    if (!is_state && value_options.count(arg) == 0) {
      throw CommandUsage("unknown option " + arg + " for " + command);
    }
    if (i + 1 >= args.size() || args[i + 1].empty()) throw CommandUsage(arg + " needs a value");
    const std::string& value = args[++i];
    if (is_state) {
      if (line.state) throw CommandUsage("--state is given twice");
      line.state = value;
    } else if (!line.values.emplace(arg, value).second) {
      throw CommandUsage(arg + " is given twice");
    }
  }
  return line;
}

fs::path command_state_dir(const CommandLine& line, const Environment& env) {
  return line.state ? fs::absolute(*line.state) : default_state_dir(env);
}

std::string single_line_text(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace ctx::cli
