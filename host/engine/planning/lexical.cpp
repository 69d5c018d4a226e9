#include "host/engine/planning/lexical.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

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

namespace {
// Sorted (binary search): pronouns, articles, auxiliaries, conjunctions and prepositions, and the
// words of chit-chat and acknowledgement.
constexpr std::string_view kStopWords[] = {
    "a",       "about",    "above",     "after",  "again",     "ahead",     "all",        "already",
    "alright", "also",     "always",    "am",     "amazing",   "an",        "and",        "another",
    "any",     "anything", "are",       "as",     "at",        "awesome",   "back",       "be",
    "because", "been",     "before",    "being",  "below",     "best",      "better",     "between",
    "bit",     "both",     "but",       "by",     "bye",       "can",       "cannot",     "cant",
    "cool",    "could",    "did",       "do",     "does",      "doing",     "done",       "dont",
    "down",    "each",     "else",      "even",   "ever",      "every",     "everything", "explain",
    "few",     "fine",     "for",       "from",   "further",   "get",       "gets",       "give",
    "going",   "gone",     "good",      "got",    "great",     "had",       "has",        "have",
    "having",  "he",       "hello",     "her",    "here",      "hers",      "hey",        "hi",
    "him",     "his",      "hmm",       "how",    "however",   "i",         "if",         "im",
    "in",      "into",     "is",        "isnt",   "it",        "its",       "itself",     "just",
    "keep",    "know",     "later",     "let",    "lets",      "like",      "lol",        "look",
    "looks",   "lot",      "many",      "may",    "maybe",     "me",        "mean",       "might",
    "mine",    "more",     "most",      "much",   "must",      "my",        "myself",     "need",
    "needs",   "never",    "nevermind", "nice",   "no",        "nope",      "nor",        "not",
    "now",     "of",       "off",       "oh",     "ok",        "okay",      "on",         "once",
    "one",     "only",     "onto",      "or",     "other",     "others",    "our",        "ours",
    "out",     "over",     "perfect",   "please", "pretty",    "proceed",   "quite",      "rather",
    "really",  "right",    "said",      "same",   "say",       "says",      "see",        "seems",
    "she",     "should",   "so",        "some",   "something", "sometimes", "sorry",      "sounds",
    "still",   "such",     "sure",      "tell",   "than",      "thank",     "thanks",     "that",
    "thats",   "the",      "their",     "theirs", "them",      "then",      "there",      "these",
    "they",    "thing",    "things",    "think",  "this",      "those",     "though",     "through",
    "thx",     "to",       "too",       "try",    "under",     "until",     "up",         "us",
    "very",    "via",      "wait",      "want",   "wants",     "was",       "way",        "we",
    "well",    "went",     "were",      "what",   "whatever",  "whats",     "when",       "where",
    "whether", "which",    "while",     "who",    "whom",      "whose",     "why",        "will",
    "with",    "within",   "without",   "would",  "wow",       "yeah",      "yep",        "yes",
    "yet",     "you",      "your",      "yours",  "yourself",  "yup"};
static_assert(std::is_sorted(std::begin(kStopWords), std::end(kStopWords)));
}  // namespace

bool is_stop_word(std::string_view lowered) noexcept {
  return std::binary_search(std::begin(kStopWords), std::end(kStopWords), lowered);
}

std::string term_stem(std::string_view word) {
  std::string out(word);
  if (out.size() < 5 ||
      !std::all_of(out.begin(), out.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
    return out;
  }
  const auto ends = [&](std::string_view suffix) {
    return out.size() > suffix.size() &&
           out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  struct Rule {
    std::string_view suffix;
    std::string_view replacement;
  };
  static constexpr Rule kRules[] = {{"ically", "ic"}, {"ies", "y"}, {"ing", ""},
                                    {"ed", ""},       {"ly", ""},   {"s", ""}};
  for (const auto& [suffix, replacement] : kRules) {
    if (!ends(suffix)) continue;
    if (suffix == "s" && (ends("ss") || ends("us") || ends("is"))) return out;
    std::string base = out.substr(0, out.size() - suffix.size()) + std::string(replacement);
    if (base.size() < 4) return out;
    // "debugging" -> "debug", "planned" -> "plan"; "called", "passed" keep their double letter.
    if ((suffix == "ing" || suffix == "ed") && base[base.size() - 1] == base[base.size() - 2] &&
        base.back() != 'l' && base.back() != 's' && base.back() != 'z') {
      base.pop_back();
    }
    return base;
  }
  return out;
}

std::vector<std::string> ascii_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      current.push_back(c);
    } else if (!current.empty()) {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace ctx::engine::planning
