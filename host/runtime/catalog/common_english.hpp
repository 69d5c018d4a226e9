// How common a word is in general English, independent of any catalog: SCOWL's size-10 list (about
// 4,000 of the most common English words: "make", "open", "file", "table", "test") and its size-20
// list (the next 6,800: "settings", "query", "debug"). Product and tool names ("kubernetes",
// "terraform", "helm", "postgres") are in neither. The lists are compiled in
// (data/common_english.inc, written by data/make_common_english.sh; licence data/SCOWL-COPYRIGHT).
// Pure functions; thread-safe. Owned by planning quality (issue 34 item 4).
#ifndef CTX_HOST_RUNTIME_CATALOG_COMMON_ENGLISH_HPP_
#define CTX_HOST_RUNTIME_CATALOG_COMMON_ENGLISH_HPP_

#include <string_view>

namespace ctx::runtime {

enum class EnglishCommonness {
  kMostCommon,  // SCOWL size 10
  kCommon,      // SCOWL size 20
  kUncommon,    // neither (rarer English, jargon, product and tool names)
};

// The commonness of `lowered` (a lower-case ASCII word; anything else is kUncommon).
EnglishCommonness english_commonness(std::string_view lowered) noexcept;

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_COMMON_ENGLISH_HPP_
