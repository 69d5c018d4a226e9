#include "host/engine/planning/lexical.hpp"

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

bool is_sorted_unique(const std::vector<std::string>& values) noexcept {
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (!(values[i - 1] < values[i])) return false;
  }
  return true;
}

}  // namespace ctx::engine::planning
