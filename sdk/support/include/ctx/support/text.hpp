// The predicates ctx applies to identifiers and digests it reads (host and plugins): one rule
// each, so a value one side accepts the other does too. Pure and thread-safe.
#ifndef CTX_SUPPORT_TEXT_HPP_
#define CTX_SUPPORT_TEXT_HPP_

#include <string_view>

namespace ctx::support {

constexpr bool is_ascii_alnum(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Exactly 64 lower-case hex characters: how ctx spells a SHA-256 digest.
constexpr bool is_sha256_hex(std::string_view text) noexcept {
  if (text.size() != 64) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A protocol token (a scheme, audience, key or plugin id): 1-128 characters of [A-Za-z0-9._:@-],
// starting with a letter or digit.
constexpr bool is_token(std::string_view text) noexcept {
  if (text.empty() || text.size() > 128 || !is_ascii_alnum(text.front())) return false;
  for (const char c : text) {
    if (!is_ascii_alnum(c) && c != '.' && c != '_' && c != ':' && c != '@' && c != '-') {
      return false;
    }
  }
  return true;
}

// A plugin id: ^[a-z0-9][a-z0-9._-]{0,63}$ (what a lock entry and a verifier registration name).
constexpr bool is_plugin_id(std::string_view text) noexcept {
  const auto lower_or_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (text.empty() || text.size() > 64 || !lower_or_digit(text.front())) return false;
  for (const char c : text.substr(1)) {
    if (!lower_or_digit(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace ctx::support

#endif  // CTX_SUPPORT_TEXT_HPP_
