// The planner's word rules: the stop words of conversation and generic English, and the light
// suffix stem that lets a prompt word find a catalog term of another form.
#include "host/engine/planning/lexical.hpp"

#include <gtest/gtest.h>

namespace ctx::engine::planning {
namespace {

TEST(PlanningLexical, StopWordsAreConversationNotCapabilities) {
  for (const char* word : {"the", "with", "thanks", "ok", "why", "please", "you", "yup"}) {
    EXPECT_TRUE(is_stop_word(word)) << word;
  }
  for (const char* word : {"go", "python", "pdf", "test", "deploy", "rust", "c", ""}) {
    EXPECT_FALSE(is_stop_word(word)) << word;
  }
}

TEST(PlanningLexical, TermStemsStripOneCommonSuffix) {
  EXPECT_EQ(term_stem("brainstorming"), "brainstorm");
  EXPECT_EQ(term_stem("systematically"), "systematic");
  EXPECT_EQ(term_stem("manifests"), "manifest");
  EXPECT_EQ(term_stem("environments"), "environment");
  EXPECT_EQ(term_stem("debugging"), "debug");
  EXPECT_EQ(term_stem("libraries"), "library");
  EXPECT_EQ(term_stem("deployed"), "deploy");
  EXPECT_EQ(term_stem("called"), "call");
  // Too short, a non-letter, or a protected ending: the word itself.
  EXPECT_EQ(term_stem("tests"), "test");
  for (const char* word : {"uses", "class", "status", "analysis", "http2s", "k8s", "a", ""}) {
    EXPECT_EQ(term_stem(word), word) << word;
  }
  EXPECT_EQ(term_stem(term_stem("brainstorming")), "brainstorm");
}

}  // namespace
}  // namespace ctx::engine::planning
