#include "host/engine/lexical.hpp"

#include <cstdint>
#include <ctx/support/text.hpp>
#include <optional>

#include "host/core/crypto.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {
namespace {

// Decodes one UTF-8 code point at `pos`; nullopt on malformed input or surrogates.
std::optional<char32_t> decode(std::string_view text, std::size_t& pos) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  const std::uint8_t lead = byte(pos);
  std::size_t length = 0;
  char32_t cp = 0;
  if (lead < 0x80) {
    ++pos;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return std::nullopt;
  }
  if (pos + length > text.size()) return std::nullopt;
  for (std::size_t i = 1; i < length; ++i) {
    const std::uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  pos += length;
  return cp;
}

// Python's str.isspace() set.
bool is_python_space(char32_t cp) noexcept {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A)) return true;
  return cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool any_alnum(char c) noexcept { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

template <typename First, typename Rest>
bool token_like(std::string_view text, First first, Rest rest) noexcept {
  if (text.empty() || text.size() > kMaxTokenChars || !first(text[0])) return false;
  for (std::size_t i = 1; i < text.size(); ++i) {
    if (!rest(text[i])) return false;
  }
  return true;
}

bool punct(char c, bool colon) noexcept {
  return c == '.' || c == '_' || c == '@' || c == '-' || (colon && c == ':');
}

}  // namespace

bool is_trimmed_string(std::string_view text) noexcept {
  if (text.empty()) return false;
  std::size_t pos = 0;
  bool first = true;
  char32_t last = 0;
  while (pos < text.size()) {
    const auto cp = decode(text, pos);
    if (!cp) return false;
    if (first && is_python_space(*cp)) return false;
    first = false;
    last = *cp;
  }
  return !is_python_space(last);
}

bool is_valid_unicode(std::string_view text) noexcept {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {  // ASCII: always one valid code point
      ++pos;
    } else if (!decode(text, pos)) {
      return false;
    }
  }
  return true;
}

bool is_opaque_token(std::string_view text) noexcept {
  return token_like(text, any_alnum, [](char c) { return any_alnum(c) || punct(c, true); });
}

bool is_canonical_token(std::string_view text) noexcept {
  return token_like(text, lower_alnum, [](char c) { return lower_alnum(c) || punct(c, true); });
}

bool is_plugin_id(std::string_view text) noexcept { return support::is_plugin_id(text); }

bool is_capability_name(std::string_view text) noexcept {
  return token_like(text, lower_alnum, [](char c) { return lower_alnum(c) || punct(c, false); });
}

bool is_capability_kind(std::string_view kind) noexcept {
  return find_enum<CapabilityKind>(kind).has_value();
}

bool is_installable_kind(std::string_view kind) noexcept {
  const auto typed = find_enum<CapabilityKind>(kind);
  return typed && *typed != CapabilityKind::kHarness;
}

bool is_capability_identity(std::string_view capability_id, std::string_view kind) noexcept {
  if (!is_capability_kind(kind) || capability_id.size() > kMaxTokenChars) return false;
  const auto colon = capability_id.find(':');
  if (colon == std::string_view::npos || capability_id.substr(0, colon) != kind) return false;
  return is_capability_name(capability_id.substr(colon + 1));
}

bool is_capability_identity(std::string_view capability_id, CapabilityKind kind) noexcept {
  return is_capability_identity(capability_id, to_string(kind));
}

std::string_view capability_kind_of(std::string_view capability_id) noexcept {
  const auto colon = capability_id.find(':');
  if (colon == std::string_view::npos) return {};
  const auto kind = capability_id.substr(0, colon);
  return is_capability_identity(capability_id, kind) ? kind : std::string_view{};
}

bool is_digest(std::string_view text) noexcept { return core::is_sha256_hex(text); }

bool is_schema_id(std::string_view text) noexcept {
  if (text.size() < 5 || text.size() > 131 || text.substr(0, 4) != "ctx.") return false;
  const auto rest = text.substr(4);
  if (!lower_alnum(rest[0])) return false;
  for (char c : rest.substr(1)) {
    if (!lower_alnum(c) && c != '.' && c != '-') return false;
  }
  return true;
}

}  // namespace ctx::engine
