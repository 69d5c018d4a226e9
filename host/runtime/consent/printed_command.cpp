#include "host/runtime/consent/printed_command.hpp"

#include <algorithm>
#include <cstdlib>

namespace ctx::runtime {

namespace fs = std::filesystem;

std::string shell_word(std::string_view text) {
  const bool bare = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '.' || c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '@' ||
           c == '%' || c == '=';
  });
  if (bare) return std::string(text);
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string state_argument(const std::optional<fs::path>& state_dir) {
  return state_dir ? " --state " + shell_word(state_dir->string()) : std::string();
}

std::string consent_command(std::string_view verb, std::string_view digest,
                            const std::optional<fs::path>& state_dir) {
  return "ctx consent " + std::string(verb) + " " + std::string(digest) + " --key FILE" +
         state_argument(state_dir);
}

std::optional<fs::path> printed_state_dir(const fs::path& state_dir,
                                          const std::optional<std::string>& home,
                                          const std::optional<std::string>& xdg_state_home) {
  if (!home || home->empty() || !fs::path(*home).is_absolute()) return state_dir;
  const fs::path base = (fs::path(*home) / ".local" / "state").lexically_normal();
  if (xdg_state_home && !xdg_state_home->empty() &&
      fs::path(*xdg_state_home).lexically_normal() != base) {
    return state_dir;  // a fresh shell without $XDG_STATE_HOME would find another dir
  }
  if (state_dir.lexically_normal() == (base / "ctx").lexically_normal()) return std::nullopt;
  return state_dir;
}

std::optional<fs::path> printed_state_dir_of_process(const fs::path& state_dir) {
  const auto variable = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
  };
  return printed_state_dir(state_dir, variable("HOME"), variable("XDG_STATE_HOME"));
}

}  // namespace ctx::runtime
