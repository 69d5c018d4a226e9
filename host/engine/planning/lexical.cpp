#include "host/engine/planning/lexical.hpp"

#include <utility>

#include "host/engine/lexical.hpp"

namespace ctx::engine::planning {

// The engine's lexical classes (§1.1) are the single definition; the planner only adds the
// capability-id form it validates without a separate kind.
bool is_canonical_token(std::string_view text) noexcept { return engine::is_canonical_token(text); }
bool is_capability_name(std::string_view text) noexcept { return engine::is_capability_name(text); }
bool is_capability_kind(std::string_view text) noexcept { return engine::is_capability_kind(text); }
bool is_installable_kind(std::string_view text) noexcept {
  return engine::is_installable_kind(text);
}

bool is_capability_id(std::string_view text) noexcept {
  if (!engine::is_canonical_token(text)) return false;
  return engine::is_capability_identity(text, engine::capability_kind_of(text));
}

bool is_digest(std::string_view text) noexcept { return engine::is_digest(text); }

std::vector<std::string> ascii_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      current.push_back(c);
    } else if (!current.empty()) {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace ctx::engine::planning
