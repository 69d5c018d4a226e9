#include "host/engine/planning/lexical.hpp"

#include "host/core/crypto.hpp"

namespace ctx::engine::planning {
namespace {

bool is_lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool token_like(std::string_view text, bool allow_colon) noexcept {
  if (text.empty() || text.size() > 128 || !is_lower_alnum(text.front())) return false;
  for (char c : text.substr(1)) {
    if (is_lower_alnum(c) || c == '.' || c == '_' || c == '@' || c == '-') continue;
    if (allow_colon && c == ':') continue;
    return false;
  }
  return true;
}

}  // namespace

bool is_canonical_token(std::string_view text) noexcept { return token_like(text, true); }
bool is_capability_name(std::string_view text) noexcept { return token_like(text, false); }

bool is_capability_kind(std::string_view text) noexcept {
  for (std::string_view kind : kCapabilityKinds) {
    if (kind == text) return true;
  }
  return false;
}

bool is_installable_kind(std::string_view text) noexcept {
  return text == "skill" || text == "agent" || text == "mcp-server";
}

bool is_capability_id(std::string_view text) noexcept {
  if (!is_canonical_token(text)) return false;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  return is_capability_kind(text.substr(0, colon)) && is_capability_name(text.substr(colon + 1));
}

bool is_digest(std::string_view text) noexcept { return core::is_sha256_hex(text); }

bool is_sorted_unique(const std::vector<std::string>& values) noexcept {
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (!(values[i - 1] < values[i])) return false;
  }
  return true;
}

}  // namespace ctx::engine::planning
