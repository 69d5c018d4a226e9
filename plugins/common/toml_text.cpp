#include "plugins/common/toml_text.hpp"

#include <cstdio>

namespace ctx::plugin_common {
namespace {

void escape_into(std::string& out, char c, bool multiline) {
  const auto u = static_cast<unsigned char>(c);
  switch (c) {
    case '\\':
      out += "\\\\";
      return;
    case '"':
      out += "\\\"";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\t':
      out += multiline ? "\t" : "\\t";
      return;
    case '\n':
      out += multiline ? "\n" : "\\n";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\r':
      out += "\\r";
      return;
    default:
      break;
  }
  if (u < 0x20 || u == 0x7f) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(u));
    out += buffer;
    return;
  }
  out += c;
}

}  // namespace

std::string toml_basic_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) escape_into(out, c, false);
  out += '"';
  return out;
}

std::string toml_multiline_string(std::string_view text) {
  std::string out = "\"\"\"\n";
  for (const char c : text) escape_into(out, c, true);
  out += "\"\"\"";
  return out;
}

bool is_toml_bare_key(std::string_view key) noexcept {
  if (key.empty()) return false;
  for (const char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

}  // namespace ctx::plugin_common
