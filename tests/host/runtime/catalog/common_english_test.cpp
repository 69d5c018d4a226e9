// english_commonness: SCOWL's size-10 and size-20 words, lower-case ASCII only.
#include "host/runtime/catalog/common_english.hpp"

#include <gtest/gtest.h>

namespace ctx::runtime {
namespace {

TEST(CommonEnglish, TheListsSayHowCommonAWordIs) {
  EXPECT_EQ(english_commonness("make"), EnglishCommonness::kMostCommon);
  EXPECT_EQ(english_commonness("table"), EnglishCommonness::kMostCommon);
  EXPECT_EQ(english_commonness("settings"), EnglishCommonness::kCommon);
  EXPECT_EQ(english_commonness("kubernetes"), EnglishCommonness::kUncommon);
  EXPECT_EQ(english_commonness("helm"), EnglishCommonness::kUncommon);
  EXPECT_EQ(english_commonness("Make"), EnglishCommonness::kUncommon);  // lower-case words only
  EXPECT_EQ(english_commonness(""), EnglishCommonness::kUncommon);
}

}  // namespace
}  // namespace ctx::runtime
