#include "host/cli/command_options.hpp"

#include "host/app/consent.hpp"

namespace ctx::cli {

namespace fs = std::filesystem;

fs::path command_state_dir(const std::optional<fs::path>& state, const Environment& env) {
  return state ? fs::absolute(*state) : default_state_dir(env);
}

std::optional<fs::path> printed_state(const fs::path& state, const Environment& env) {
  return runtime::printed_state_dir(state, env.home, env.xdg_state_home);
}

std::string single_line_text(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace ctx::cli
