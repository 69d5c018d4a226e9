// catalog_terms: the graph terms of an entry, bounded and sorted.
#include "host/runtime/catalog/catalog_terms.hpp"

#include <gtest/gtest.h>

#include "host/runtime/catalog/catalog.hpp"

namespace ctx::runtime {
namespace {

TEST(CatalogTerms, DescriptionTokensNameTokensAndTagsBoundedAndSorted) {
  EXPECT_EQ(catalog_terms("pdf-export", {"documents"}, "Export the report to PDF, 2024 ok"),
            (std::vector<std::string>{"documents", "export", "pdf", "report"}));
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
            (std::vector<std::string>{"debugger", "debugging", "faults", "finds", "stack",
                                      "toolkit", "traces", "triage"}));
}

}  // namespace
}  // namespace ctx::runtime
