// The graph terms of a catalog entry: the words the planner retrieves an entry by (stored as the
// graph node's tags). Pure functions; thread-safe. Owned by planning quality (issue 34 item 4).
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_TERMS_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_TERMS_HPP_

#include <string>
#include <string_view>
#include <vector>

namespace ctx::runtime {

struct CatalogEntry;

// Explicit tags, then the name's [a-z0-9] runs, then description tokens ([a-z0-9] runs of the
// lower-cased text, 3–64 chars, not a stop word, not all digits), first occurrences kept, at most
// kMaxNodeTags (catalog.hpp), returned sorted.
std::vector<std::string> catalog_terms(std::string_view name, const std::vector<std::string>& tags,
                                       std::string_view description);

// The terms of `entry`: its tags; the words of its name, label and folder; and the tokens of its
// whole description and when_to_use, with the rules and bound above.
std::vector<std::string> catalog_terms(const CatalogEntry& entry);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_TERMS_HPP_
