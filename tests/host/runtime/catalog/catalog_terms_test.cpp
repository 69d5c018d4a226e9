// catalog_terms: the graph terms of an entry, bounded and sorted.
#include "host/runtime/catalog/catalog_terms.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "host/runtime/catalog/catalog.hpp"

namespace ctx::runtime {
namespace {

TEST(CatalogTerms, DescriptionTokensNameTokensAndTagsBoundedAndSorted) {
  // "documents" also stands as its stem "document" (engine::planning::term_stem).
  EXPECT_EQ(catalog_terms("pdf-export", {"documents"}, "Export the report to PDF, 2024 ok"),
            (std::vector<std::string>{"document", "documents", "export", "pdf", "report"}));
  std::string long_description;
  for (int i = 0; i < 300; ++i) long_description += "word" + std::to_string(i) + " ";
  EXPECT_EQ(catalog_terms("x", {}, long_description).size(), kMaxNodeTags);
}

TEST(CatalogTerms, AnEntrysLabelFolderAndWhenToUseAreTerms) {
  CatalogEntry entry;
  entry.name = "debugging-toolkit-debugger";
  entry.label = "Debugger";
  entry.folder = "debugger";
  entry.description = "Finds faults.";
  entry.when_to_use = "Stack traces";
  entry.tags = {"triage"};
  EXPECT_EQ(catalog_terms(entry),
            (std::vector<std::string>{"debug", "debugger", "debugging", "fault", "faults", "find",
                                      "finds", "stack", "toolkit", "trace", "traces", "triage"}));
}

// Stems come after words: a description that fills the bound keeps its words, not their stems.
TEST(CatalogTerms, StemsAreAddedAfterTheWordsWithinTheBound) {
  std::string long_description;
  for (int i = 0; i < 98; ++i) long_description += "word" + std::to_string(i) + " ";
  const auto terms = catalog_terms("x", {}, long_description + "brainstorming");
  EXPECT_EQ(terms.size(), kMaxNodeTags);
  EXPECT_NE(std::find(terms.begin(), terms.end(), "brainstorming"), terms.end());
  EXPECT_EQ(std::find(terms.begin(), terms.end(), "brainstorm"), terms.end());
  const auto short_terms = catalog_terms("x", {}, "brainstorming");
  EXPECT_NE(std::find(short_terms.begin(), short_terms.end(), "brainstorm"), short_terms.end());
}

}  // namespace
}  // namespace ctx::runtime
