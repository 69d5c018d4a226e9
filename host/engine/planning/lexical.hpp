// Lexical checks the planner applies to its inputs (spec §1.1): canonical tokens, capability
// names and ids, digests. Pure functions; thread-safe.
#ifndef CTX_HOST_ENGINE_PLANNING_LEXICAL_HPP_
#define CTX_HOST_ENGINE_PLANNING_LEXICAL_HPP_

#include <string>
#include <string_view>
#include <vector>

namespace ctx::engine::planning {

// `^[a-z0-9][a-z0-9._:@-]{0,127}$`.
bool is_canonical_token(std::string_view text) noexcept;
// `^[a-z0-9][a-z0-9._@-]{0,127}$` (no colon).
bool is_capability_name(std::string_view text) noexcept;
// The spelling of a CapabilityKind (engine::kCapabilityKindStrings, the one table).
bool is_capability_kind(std::string_view text) noexcept;
// skill, agent or mcp-server (a harness is never installed).
bool is_installable_kind(std::string_view text) noexcept;
// `kind:name`, a canonical token with a declared kind and a capability name.
bool is_capability_id(std::string_view text) noexcept;
// 64 lower-case hex characters.
bool is_digest(std::string_view text) noexcept;
// The maximal runs of [a-z0-9] in `text`, in order; every other byte separates (upper-case
// letters included, so callers that want case-insensitive tokens lower-case first).
std::vector<std::string> ascii_tokens(std::string_view text);
// Is `lowered` (a lower-cased [a-z0-9] token) a word of conversation or generic English that says
// nothing about which capability fits ("the", "thanks", "ok", "continue", "why")? A fixed list.
bool is_stop_word(std::string_view lowered) noexcept;
// A light suffix stem of a lower-cased word ("brainstorming" -> "brainstorm", "systematically" ->
// "systematic", "manifests" -> "manifest", "debugging" -> "debug"); the word itself when it has
// fewer than 5 letters, holds a non-letter, or no rule leaves 4 letters. Catalog terms carry the
// stems of their words, and a prompt word that is no term is looked up by its stem.
std::string term_stem(std::string_view lowered);

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_LEXICAL_HPP_
