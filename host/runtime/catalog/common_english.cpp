// english_commonness (see common_english.hpp).
#include "host/runtime/catalog/common_english.hpp"

#include <algorithm>
#include <iterator>

namespace ctx::runtime {
namespace {
#include "host/runtime/catalog/data/common_english.inc"

bool in(const std::string_view* begin, const std::string_view* end, std::string_view word) {
  return std::binary_search(begin, end, word);
}
}  // namespace

EnglishCommonness english_commonness(std::string_view lowered) noexcept {
  if (in(std::begin(kEnglishSize10), std::end(kEnglishSize10), lowered)) {
    return EnglishCommonness::kMostCommon;
  }
  if (in(std::begin(kEnglishSize20), std::end(kEnglishSize20), lowered)) {
    return EnglishCommonness::kCommon;
  }
  return EnglishCommonness::kUncommon;
}

}  // namespace ctx::runtime
