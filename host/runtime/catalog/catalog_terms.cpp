// catalog_terms (see catalog_terms.hpp).
#include "host/runtime/catalog/catalog_terms.hpp"

#include <algorithm>
#include <set>

#include "host/engine/planning/lexical.hpp"
#include "host/runtime/catalog/catalog.hpp"

namespace ctx::runtime {
namespace {

const std::set<std::string, std::less<>> kStopWords = {
    "the",  "and",   "for",   "with",  "this",  "that",  "from",   "into",   "when",  "use",
    "uses", "used",  "using", "you",   "your",  "are",   "can",    "any",    "all",   "its",
    "via",  "not",   "but",   "has",   "have",  "will",  "them",   "they",   "their", "then",
    "than", "also",  "such",  "like",  "one",   "each",  "other",  "which",  "what",  "who",
    "how",  "out",   "onto",  "over",  "about", "after", "before", "should", "would", "could",
    "does", "while", "where", "there", "these", "those", "being",  "been",   "was",   "were",
    "only", "just",  "more",  "most",  "some"};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

class Terms {
 public:
  void add(std::string term) {
    if (ordered_.size() >= kMaxNodeTags || term.empty() || term.size() > 64) return;
    if (!engine::planning::is_canonical_token(term)) return;
    if (seen_.insert(term).second) ordered_.push_back(std::move(term));
  }
  void add_words(std::string_view text) {
    for (auto& token : engine::planning::ascii_tokens(lower(text))) add(std::move(token));
  }
  void add_text(std::string_view text) {
    for (auto& token : engine::planning::ascii_tokens(lower(text))) {
      if (token.size() < 3 || kStopWords.count(token)) continue;
      if (std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;
      }
      add(std::move(token));
    }
  }
  // The stems of the words added so far (engine::planning::term_stem), after them: a bound
  // drops stems before words.
  void add_stems() {
    const std::vector<std::string> words = ordered_;
    for (const auto& word : words) add(engine::planning::term_stem(word));
  }
  std::vector<std::string> sorted() && {
    std::sort(ordered_.begin(), ordered_.end());
    return std::move(ordered_);
  }

 private:
  std::vector<std::string> ordered_;
  std::set<std::string> seen_;
};

}  // namespace

std::vector<std::string> catalog_terms(std::string_view name, const std::vector<std::string>& tags,
                                       std::string_view description) {
  Terms terms;
  for (const auto& tag : tags) terms.add(tag);
  terms.add_words(name);
  terms.add_text(description);
  terms.add_stems();
  return std::move(terms).sorted();
}

std::vector<std::string> catalog_terms(const CatalogEntry& entry) {
  Terms terms;
  for (const auto& tag : entry.tags) terms.add(tag);
  terms.add_words(entry.name);
  terms.add_words(entry.label);
  terms.add_words(entry.folder);
  terms.add_text(entry.description);
  terms.add_text(entry.when_to_use);
  terms.add_stems();
  return std::move(terms).sorted();
}

}  // namespace ctx::runtime
