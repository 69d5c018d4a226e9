#include "host/store/graph_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"
#include "host/store/sqlite.hpp"
#include "host/store/verified_files.hpp"

namespace ctx::store {
namespace {

using engine::planning::CandidateSourceUnavailable;
using engine::planning::GraphArtifactPinMismatch;
using engine::planning::RetrievedNode;

constexpr const char* kSchemaVersion = "1";
// Retrieval scoring (see GraphStore::retrieve).
constexpr double kBm25K1 = 1.2;
constexpr double kBm25B = 0.75;
constexpr double kLabelWeight = 3.0;
constexpr double kSubstringWeight = 0.5;
constexpr const char* kUnavailable = "indexed graph candidate source is unavailable";

// The artifact's tables and indexes (PRAGMA user_version 1). Older artifacts without a
// user_version are version 1.
constexpr std::string_view kVersion1[] = {
    "CREATE TABLE metadata(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    "CREATE TABLE nodes(id TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, label TEXT NOT NULL,"
    " title TEXT NOT NULL, tags_json TEXT NOT NULL, attrs_json TEXT NOT NULL,"
    " search_text TEXT NOT NULL, degree INTEGER NOT NULL DEFAULT 0,"
    " never_load INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE edges(source TEXT NOT NULL, target TEXT NOT NULL,"
    " weight REAL NOT NULL DEFAULT 0, attrs_json TEXT NOT NULL DEFAULT '{}',"
    " PRIMARY KEY(source, target))",
    "CREATE TABLE node_terms(term TEXT NOT NULL, node_id TEXT NOT NULL)",
    "CREATE TABLE term_stats(term TEXT PRIMARY KEY NOT NULL, df INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE VIRTUAL TABLE label_trigrams USING fts5(label, tokenize='trigram')",
    "CREATE INDEX idx_nodes_type ON nodes(type)",
    "CREATE INDEX idx_nodes_search_text ON nodes(search_text)",
    "CREATE INDEX idx_edges_source ON edges(source)",
    "CREATE INDEX idx_edges_target ON edges(target)",
    "CREATE INDEX idx_node_terms_term ON node_terms(term, node_id)",
};
// Version 2: each retrieval term's nodes in the order of what that term alone scores for them
// (signal_weight), so a lookup reads a bounded prefix of a term's list (GraphStore::retrieve).
constexpr std::string_view kVersion2[] = {
    "CREATE TABLE term_postings(term TEXT NOT NULL, rank INTEGER NOT NULL, node_id TEXT NOT NULL,"
    " PRIMARY KEY(term, rank)) WITHOUT ROWID",
};
constexpr Migration kMigrations[] = {{1, kVersion1}, {2, kVersion2}};
constexpr int kUserVersion = 2;
// Version 1 artifacts (no term_postings) are still read; their lookups read whole term lists.
constexpr int kUnversionedVersion = 1;
// A lookup reads at most this many of a term's best nodes (at least the requested top_n).
constexpr std::int64_t kPostingsPerSignal = 64;
constexpr std::string_view kWhat = "graph store";

// A stored artifact that is not what build_graph_store writes.
struct InvalidArtifact {
  std::string message;
};

// ---- tokenisation shared by build and retrieval ----

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string strip(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return std::string(text.substr(begin, end - begin));
}

// Lower-cased label split on runs of '-', '_' and '/'.
std::vector<std::string> slug_tokens(std::string_view label) {
  std::vector<std::string> out;
  std::string current;
  for (char c : ascii_lower(label)) {
    if (c == '-' || c == '_' || c == '/') {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

// Runs of [a-z0-9] of the lower-cased text.
std::vector<std::string> text_tokens(std::string_view text) {
  return engine::planning::ascii_tokens(ascii_lower(text));
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

std::string node_name(std::string_view id) {
  const auto colon = id.find(':');
  return std::string(colon == std::string_view::npos ? id : id.substr(colon + 1));
}

// Only nodes of a capability kind are indexed for retrieval (other node types, e.g. "concept",
// are stored but never retrieved).
bool retrievable_kind(std::string_view type) {
  return engine::find_enum<engine::CapabilityKind>(type).has_value();
}

// Terms under which a node can be found: every way a signal can score against it (§8.2): label
// slug and text tokens, lower-cased tags, and the alias slugs behind the explicit-name boost.
std::set<std::string> retrieval_terms(const std::string& id, const std::string& label,
                                      const std::vector<std::string>& tags) {
  std::set<std::string> terms;
  for (auto& t : slug_tokens(label)) terms.insert(std::move(t));
  for (auto& t : text_tokens(label)) terms.insert(std::move(t));
  for (const auto& tag : tags) {
    std::string lowered = ascii_lower(tag);
    if (!lowered.empty()) terms.insert(std::move(lowered));
  }
  for (const std::string& alias : {label, node_name(id)}) {
    const auto tokens = text_tokens(alias);
    if (!tokens.empty()) terms.insert(join(tokens, "-"));
  }
  return terms;
}

// Slug tokens (len >= 3) of the label and of every tag: the IDF document of one node.
std::set<std::string> idf_terms(const std::string& label, const std::vector<std::string>& tags) {
  std::set<std::string> terms;
  for (auto& t : slug_tokens(label)) {
    if (t.size() >= 3) terms.insert(std::move(t));
  }
  for (const auto& tag : tags) {
    for (auto& t : slug_tokens(tag)) {
      if (t.size() >= 3) terms.insert(std::move(t));
    }
  }
  return terms;
}

// BM25's inverse document frequency of a term found in `df` of `n` nodes (0 when df is 0 or n is).
double bm25_idf(std::int64_t df, std::int64_t n) {
  if (n <= 0 || df <= 0) return 0.0;
  const double count = static_cast<double>(n);
  const double found = static_cast<double>(df);
  return std::log(1.0 + (count - found + 0.5) / (found + 0.5));
}

// What retrieval knows of one node when it scores a signal against it.
struct NodeFacts {
  std::string label_lower;
  std::vector<std::string> slug;  // slug_tokens(label)
  std::set<std::string> tags;     // lower-cased
  double length_norm = 0.0;       // BM25's k1 * (1 - b + b * |tags| / mean tags)
};

NodeFacts node_facts(const std::string& label, std::set<std::string> lowered_tags,
                     double mean_tags) {
  NodeFacts facts;
  facts.label_lower = ascii_lower(label);
  facts.slug = slug_tokens(label);
  facts.length_norm =
      kBm25K1 *
      (1.0 - kBm25B +
       kBm25B * static_cast<double>(std::max<std::size_t>(lowered_tags.size(), 1)) / mean_tags);
  facts.tags = std::move(lowered_tags);
  return facts;
}

// What one (normalised) signal scores against a node, with its inverse document frequency
// `idf`: kLabelWeight x idf when it is a word of the label, kSubstringWeight x idf when it is
// only inside the label (3+ characters), plus BM25 over the tags (each present once, so tf = 1)
// when it is a tag. `label_word` and `found` say which matched.
struct SignalWeight {
  double score = 0.0;
  bool found = false;
  bool label_word = false;
};

SignalWeight signal_weight(const NodeFacts& node, const std::string& signal, double idf) {
  SignalWeight out;
  if (std::find(node.slug.begin(), node.slug.end(), signal) != node.slug.end()) {
    out.score += kLabelWeight * idf;
    out.found = out.label_word = true;
  } else if (signal.size() >= 3 && node.label_lower.find(signal) != std::string::npos) {
    out.score += kSubstringWeight * idf;
    out.found = true;
  }
  if (node.tags.count(signal)) {
    out.score += idf * (kBm25K1 + 1.0) / (1.0 + node.length_norm);
    out.found = true;
  }
  return out;
}

// One retrieval's query: its signals (stripped, lower-cased, first occurrence kept:
// recommend_by_tags' normalisation), their slugs, and the work's text, words and phrase.
struct RetrievalQuery {
  std::vector<std::string> signals;
  std::set<std::string> signal_slugs;
  std::string raw;                  // the tags joined by spaces, lower-cased
  std::vector<std::string> tokens;  // raw's words
  std::string phrase;               // " " + the words + " ", or empty
};

RetrievalQuery retrieval_query(const std::vector<std::string>& query_tags) {
  RetrievalQuery query;
  for (const auto& tag : query_tags) {
    std::string s = ascii_lower(strip(tag));
    if (!s.empty() &&
        std::find(query.signals.begin(), query.signals.end(), s) == query.signals.end()) {
      query.signals.push_back(std::move(s));
    }
  }
  query.raw = ascii_lower(join(query_tags, " "));
  query.tokens = text_tokens(query.raw);
  query.phrase = query.tokens.empty() ? "" : " " + join(query.tokens, " ") + " ";
  for (const auto& s : query.signals) query.signal_slugs.insert(join(text_tokens(s), "-"));
  return query;
}

// The boost of a node named by the work (its label's or name's words): 2000 + 25 per word when a
// signal is the alias's slug (a one-word alias only when the work is that word alone), 1000 + 25
// per word when a multi-word alias is in the work's text or (up to two words) its phrase; else 0.
double alias_boost(const std::string& label, const std::string& id, const RetrievalQuery& query) {
  double boost = 0.0;
  for (const std::string& alias : {label, node_name(id)}) {
    const auto alias_tokens = text_tokens(alias);
    if (alias_tokens.empty()) continue;
    const std::string alias_slug = join(alias_tokens, "-");
    const std::string alias_phrase = join(alias_tokens, " ");
    const bool single = alias_tokens.size() == 1;
    const bool exact_single =
        single && ((query.signals.size() == 1 && query.signals[0] == alias_slug) ||
                   query.tokens == alias_tokens);
    const double weight = 25.0 * static_cast<double>(alias_tokens.size());
    if (query.signal_slugs.count(alias_slug) && (!single || exact_single)) {
      boost = std::max(boost, 2000.0 + weight);
    }
    if (!single && query.raw.find(alias_slug) != std::string::npos) {
      boost = std::max(boost, 1000.0 + weight);
    }
    if (!single && alias_tokens.size() <= 2 && !query.phrase.empty() &&
        query.phrase.find(" " + alias_phrase + " ") != std::string::npos) {
      boost = std::max(boost, 1000.0 + weight);
    }
  }
  return boost;
}

std::string public_label(const std::string& label) {
  const std::string prefix = "skills-sh-";
  if (ascii_lower(label).rfind(prefix, 0) == 0) return label.substr(prefix.size());
  return label;
}

// Python's round(x, 4) (correctly rounded, half-even on the exact binary value, as glibc's
// printf) followed by Decimal half-up to ppm, i.e. the 4-decimal value times 10^6.
std::int64_t normalized_ppm(double ratio) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4f", ratio);
  std::int64_t whole = 0;
  std::int64_t fraction = 0;
  const char* p = buffer;
  while (*p >= '0' && *p <= '9') whole = whole * 10 + (*p++ - '0');
  if (*p == '.') ++p;
  for (int i = 0; i < 4; ++i) fraction = fraction * 10 + (p[i] - '0');
  return whole * 1'000'000 + fraction * 100;
}

bool has_sidecar(const std::filesystem::path& path) {
  struct stat st {};
  return ::lstat((path.string() + "-wal").c_str(), &st) == 0 ||
         ::lstat((path.string() + "-shm").c_str(), &st) == 0 ||
         ::lstat((path.string() + "-journal").c_str(), &st) == 0;
}

// The status of the artifact's name: a regular, non-symlink, non-writable file without sidecars.
struct stat pinned_status(const std::filesystem::path& artifact) {
  struct stat status {};
  if (::lstat(artifact.c_str(), &status) != 0 || S_ISLNK(status.st_mode) ||
      !S_ISREG(status.st_mode) || (status.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0 ||
      has_sidecar(artifact)) {
    throw CandidateSourceUnavailable(kUnavailable);
  }
  return status;
}

// The artifact's bytes, read once through one descriptor (a regular, non-writable file without
// sidecars, the same inode and size as its name showed), and their hex SHA-256; the sha256 is
// remembered for that file status (verified_files.hpp).
struct ArtifactImage {
  std::string bytes;
  std::string sha256;
};

ArtifactImage read_and_hash(const std::filesystem::path& artifact, const struct stat& before) {
  const struct timespec read_at = realtime_now();
  const int in = ::open(artifact.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) throw CandidateSourceUnavailable(kUnavailable);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } in_guard{in};
  struct stat opened {};
  if (::fstat(in, &opened) != 0 || !S_ISREG(opened.st_mode) ||
      (opened.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0 || opened.st_dev != before.st_dev ||
      opened.st_ino != before.st_ino || opened.st_size != before.st_size) {
    throw CandidateSourceUnavailable(kUnavailable);
  }
  ArtifactImage image;
  image.bytes.resize(static_cast<std::size_t>(opened.st_size));
  std::size_t done = 0;
  while (done < image.bytes.size()) {
    const ssize_t n = ::read(in, image.bytes.data() + done, image.bytes.size() - done);
    if (n <= 0) throw CandidateSourceUnavailable(kUnavailable);  // an error, or it shrank
    done += static_cast<std::size_t>(n);
  }
  char probe = 0;
  if (::read(in, &probe, 1) != 0) throw CandidateSourceUnavailable(kUnavailable);  // it grew
  image.sha256 = core::sha256_hex(image.bytes);
  remember_sha256(opened, image.sha256, read_at);
  return image;
}

// The tables, columns and indexes of the schema (not the pages: the bytes are the pinned ones,
// and a pin is only ever taken of a file build_graph_store integrity-checked).
void require_schema(Database& db) {
  const std::map<std::string, std::vector<std::string>> columns = {
      {"metadata", {"key", "value"}},
      {"nodes",
       {"id", "type", "label", "title", "tags_json", "attrs_json", "search_text", "degree",
        "never_load"}},
      {"edges", {"source", "target", "weight", "attrs_json"}},
      {"node_terms", {"term", "node_id"}},
      {"term_stats", {"term", "df"}},
      {"label_trigrams", {"label"}}};
  for (const auto& [table, expected] : columns) {
    std::set<std::string> present;
    auto info = db.prepare("PRAGMA table_info(" + table + ")");
    while (info.step()) present.insert(info.text(1));
    for (const auto& column : expected) {
      if (!present.count(column)) throw InvalidArtifact{"graph store columns are incomplete"};
    }
  }
  std::set<std::string> indexes;
  auto list = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'");
  while (list.step()) indexes.insert(list.text(0));
  for (const char* name : {"idx_nodes_type", "idx_nodes_search_text", "idx_edges_source",
                           "idx_edges_target", "idx_node_terms_term"}) {
    if (!indexes.count(name)) throw InvalidArtifact{"graph store indexes are incomplete"};
  }
}

std::int64_t parse_count(const std::string& text) {
  if (text.empty() || text.size() > 18)
    throw InvalidArtifact{"graph store count metadata is invalid"};
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw InvalidArtifact{"graph store count metadata is invalid"};
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void build_graph_store(const std::filesystem::path& path, const std::vector<GraphNode>& nodes,
                       const std::vector<GraphEdge>& edges) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || ec) {
    throw InvalidArgument("graph store path already exists");
  }
  std::map<std::string, const GraphNode*> by_id;
  for (const auto& node : nodes) {
    if (node.id.empty()) throw InvalidArgument("graph node id must be non-empty");
    if (!by_id.emplace(node.id, &node).second) {
      throw InvalidArgument("graph node id '" + node.id + "' is duplicated");
    }
  }
  std::map<std::string, std::int64_t> degree;
  std::map<std::pair<std::string, std::string>, const GraphEdge*> edge_rows;
  for (const auto& edge : edges) {
    if (!by_id.count(edge.source) || !by_id.count(edge.target)) {
      throw InvalidArgument("graph edge names an unknown node");
    }
    auto key = std::minmax(edge.source, edge.target);
    if (!edge_rows.emplace(std::make_pair(key.first, key.second), &edge).second) continue;
    ++degree[edge.source];
    ++degree[edge.target];
  }

  std::optional<Database> db;
  try {
    db.emplace(path, Database::Mode::kReadWriteCreate, 0);
    db->exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL; PRAGMA cache_size=-65536;");
    migrate(*db, kWhat, kMigrations, kUnversionedVersion);
    Transaction tx(*db, Transaction::Kind::kImmediate);
    auto insert_node = db->prepare(
        "INSERT INTO nodes(id, type, label, title, tags_json, attrs_json,"
        " search_text, degree, never_load) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)");
    auto insert_term = db->prepare("INSERT INTO node_terms(term, node_id) VALUES(?1, ?2)");
    auto insert_trigrams = db->prepare("INSERT INTO label_trigrams(rowid, label) VALUES(?1, ?2)");
    std::map<std::string, std::int64_t> df;
    std::int64_t retrievable = 0;
    std::int64_t retrievable_tags = 0;
    // The retrievable nodes and each term's nodes (indexes into `indexed`), for term_postings.
    struct Indexed {
      const GraphNode* node;
      std::string label;
      std::string label_lower;
      std::int64_t degree;
    };
    std::vector<Indexed> indexed;
    std::map<std::string, std::vector<std::size_t>> term_nodes;
    for (const auto& node : nodes) {
      const std::string label = node.label.value_or(node_name(node.id));
      const std::string title = node.title.value_or(label);
      core::Json tags = core::Json::array();
      for (const auto& tag : node.tags) tags.push_back(tag);
      const std::string search_text = ascii_lower(node.id + " " + label + " " + title + " " +
                                                  node.type + " " + join(node.tags, " "));
      const auto d = degree.find(node.id);
      insert_node.bind(1, node.id)
          .bind(2, node.type)
          .bind(3, label)
          .bind(4, title)
          .bind(5, core::canonical_json(tags, core::Encoding::kAscii))
          .bind(6, core::canonical_json(node.attrs, core::Encoding::kAscii))
          .bind(7, search_text)
          .bind(8, d == degree.end() ? std::int64_t{0} : d->second)
          .bind(9, std::int64_t{node.never_load ? 1 : 0});
      insert_node.run();
      insert_node.reset();
      const std::int64_t node_rowid = db->last_insert_rowid();
      for (const auto& term : idf_terms(label, node.tags)) ++df[term];
      if (node.never_load || !retrievable_kind(node.type)) continue;
      ++retrievable;
      retrievable_tags += static_cast<std::int64_t>(node.tags.size());
      for (const auto& term : retrieval_terms(node.id, label, node.tags)) {
        insert_term.bind(1, term).bind(2, node.id);
        insert_term.run();
        insert_term.reset();
        term_nodes[term].push_back(indexed.size());
      }
      indexed.push_back(Indexed{&node, label, ascii_lower(label),
                                d == degree.end() ? std::int64_t{0} : d->second});
      insert_trigrams.bind(1, node_rowid).bind(2, ascii_lower(label));
      insert_trigrams.run();
      insert_trigrams.reset();
    }
    // term_postings: each term's nodes best first by what the term alone scores for them
    // (signal_weight + alias_boost + log1p(degree), as retrieve scores a one-signal work), ties
    // in retrieve's order (kind, lower-cased label, id).
    {
      const double mean_tags =
          retrievable > 0 && retrievable_tags > 0
              ? static_cast<double>(retrievable_tags) / static_cast<double>(retrievable)
              : 1.0;
      std::vector<NodeFacts> facts;
      facts.reserve(indexed.size());
      for (const auto& item : indexed) {
        std::set<std::string> lowered;
        for (const auto& tag : item.node->tags) lowered.insert(ascii_lower(tag));
        facts.push_back(node_facts(item.label, std::move(lowered), mean_tags));
      }
      const auto node_total = static_cast<std::int64_t>(nodes.size());
      auto insert_posting =
          db->prepare("INSERT INTO term_postings(term, rank, node_id) VALUES(?1, ?2, ?3)");
      std::vector<std::pair<double, std::size_t>> ranked;
      for (const auto& [term, members] : term_nodes) {
        const auto found = df.find(term);
        const double idf = bm25_idf(found == df.end() ? 0 : found->second, node_total);
        // What this term alone, as the whole work, would be scored with at retrieval.
        const auto tokens = text_tokens(term);
        const RetrievalQuery alone{{term},
                                   {join(tokens, "-")},
                                   term,
                                   tokens,
                                   tokens.empty() ? "" : " " + join(tokens, " ") + " "};
        ranked.clear();
        for (const std::size_t at : members) {
          const Indexed& item = indexed[at];
          const double score = signal_weight(facts[at], term, idf).score +
                               alias_boost(item.label, item.node->id, alone) +
                               std::log1p(static_cast<double>(item.degree));
          ranked.emplace_back(score, at);
        }
        std::sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
          const Indexed& x = indexed[a.second];
          const Indexed& y = indexed[b.second];
          return std::make_tuple(-a.first, std::cref(x.node->type), std::cref(x.label_lower),
                                 std::cref(x.node->id)) <
                 std::make_tuple(-b.first, std::cref(y.node->type), std::cref(y.label_lower),
                                 std::cref(y.node->id));
        });
        for (std::size_t rank = 0; rank < ranked.size(); ++rank) {
          insert_posting.bind(1, term)
              .bind(2, static_cast<std::int64_t>(rank))
              .bind(3, indexed[ranked[rank].second].node->id);
          insert_posting.run();
          insert_posting.reset();
        }
      }
    }
    auto insert_edge =
        db->prepare("INSERT INTO edges(source, target, weight, attrs_json) VALUES(?1,?2,?3,'{}')");
    for (const auto& [key, edge] : edge_rows) {
      insert_edge.bind(1, key.first).bind(2, key.second).bind(3, edge->weight);
      insert_edge.run();
      insert_edge.reset();
    }
    auto insert_df = db->prepare("INSERT INTO term_stats(term, df) VALUES(?1, ?2)");
    for (const auto& [term, count] : df) {
      insert_df.bind(1, term).bind(2, count);
      insert_df.run();
      insert_df.reset();
    }
    auto insert_meta = db->prepare("INSERT INTO metadata(key, value) VALUES(?1, ?2)");
    const std::pair<const char*, std::string> metadata[] = {
        {"schema_version", kSchemaVersion},
        {"node_count", std::to_string(nodes.size())},
        {"edge_count", std::to_string(edge_rows.size())},
        {"tag_count", std::to_string(retrievable_tags)},
        {"retrievable_count", std::to_string(retrievable)}};
    for (const auto& [key, value] : metadata) {
      insert_meta.bind(1, key).bind(2, value);
      insert_meta.run();
      insert_meta.reset();
    }
    tx.commit();
    // Every page, once, here: the file is then pinned by its sha256, and GraphStore::open
    // checks only that pin and the schema, so an open costs the same for any graph size.
    auto check = db->prepare("PRAGMA integrity_check");
    if (!check.step() || check.text(0) != "ok") {
      throw engine::EngineStoreError("graph store failed its integrity check");
    }
  } catch (const engine::EngineStoreError& e) {
    db.reset();
    std::filesystem::remove(path, ec);
    throw SystemError(std::string("graph store build failed: ") + e.what());
  }
}

// ---------------------------------------------------------------------------------------------

struct GraphStore::Image {
  std::unique_ptr<Database> db;  // retrieval's statements are cached on it
  std::mutex mutex;              // serialises every use of db
  std::string sha256;
  std::string schema_version;
  std::int64_t node_count = 0;
  double mean_tags = 1.0;  // mean tag count of the retrievable nodes (metadata)
  int version = 1;         // PRAGMA user_version: 2 and later have term_postings
};

namespace {

// The images open in this process by sha256 (while any store holds one), and the last few
// opened (held, so a store closed and opened again right after finds its image).
struct OpenImages {
  static constexpr std::size_t kHeld = 2;
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<void>> by_sha;  // GUARDED_BY(mutex)
  std::vector<std::shared_ptr<void>> held;            // GUARDED_BY(mutex), newest last
};

OpenImages& open_images() {
  static OpenImages images;
  return images;
}

}  // namespace

std::unique_ptr<GraphStore> GraphStore::open(const std::filesystem::path& path,
                                             std::string_view expected_sha256) {
  if (!engine::planning::is_digest(expected_sha256)) throw CandidateSourceUnavailable(kUnavailable);
  const struct stat status = pinned_status(path);
  OpenImages& images = open_images();
  const auto find_open = [&](const std::string& sha) -> std::shared_ptr<Image> {
    std::lock_guard lock(images.mutex);
    const auto it = images.by_sha.find(sha);
    if (it == images.by_sha.end()) return nullptr;
    return std::static_pointer_cast<Image>(it->second.lock());
  };
  // The file is the one this process hashed, unchanged since: its bytes are those of the open
  // image of that sha256, if one is open.
  if (const auto known = known_sha256(status); known && *known == expected_sha256) {
    if (auto shared = find_open(*known)) return std::unique_ptr<GraphStore>(new GraphStore(shared));
  }
  ArtifactImage bytes = read_and_hash(path, status);
  if (bytes.sha256 != expected_sha256) {
    throw GraphArtifactPinMismatch(std::string(kUnavailable) +
                                   ": artifact sha256 does not match its pin");
  }
  if (auto shared = find_open(bytes.sha256))
    return std::unique_ptr<GraphStore>(new GraphStore(shared));
  auto image = std::make_shared<Image>();
  image->sha256 = std::move(bytes.sha256);
  try {
    image->db = Database::from_image(bytes.bytes);
    Database& db = *image->db;
    db.exec("PRAGMA query_only=ON; PRAGMA trusted_schema=OFF;");
    image->version = require_schema_version(db, kWhat, kUserVersion, kUnversionedVersion);
    require_schema(db);
    std::map<std::string, std::string> metadata;
    auto meta = db.prepare("SELECT key, value FROM metadata");
    while (meta.step()) metadata[meta.text(0)] = meta.text(1);
    if (metadata["schema_version"] != kSchemaVersion)
      throw InvalidArtifact{"schema is unsupported"};
    for (const auto& [key, table] :
         {std::pair{"node_count", "nodes"}, std::pair{"edge_count", "edges"}}) {
      auto count = db.prepare(std::string("SELECT COUNT(*) FROM ") + table);
      if (!count.step() || count.integer(0) != parse_count(metadata[key])) {
        throw InvalidArtifact{"graph store count metadata is invalid"};
      }
    }
    image->schema_version = kSchemaVersion;
    image->node_count = parse_count(metadata["node_count"]);
    // The mean tag count of retrievable nodes (BM25's average document length); 1 when the
    // artifact predates these keys or holds no retrievable node.
    if (metadata.count("tag_count") && metadata.count("retrievable_count")) {
      const std::int64_t tags = parse_count(metadata["tag_count"]);
      const std::int64_t count = parse_count(metadata["retrievable_count"]);
      if (count > 0 && tags > 0) {
        image->mean_tags = static_cast<double>(tags) / static_cast<double>(count);
      }
    }
  } catch (const NewerSchemaVersion& e) {
    throw CandidateSourceUnavailable(std::string(kUnavailable) + ": " + e.what());
  } catch (const InvalidArtifact&) {
    throw CandidateSourceUnavailable(kUnavailable);
  } catch (const engine::EngineStoreError&) {
    throw CandidateSourceUnavailable(kUnavailable);
  }
  {
    std::lock_guard lock(images.mutex);
    for (auto it = images.by_sha.begin(); it != images.by_sha.end();) {
      it = it->second.expired() ? images.by_sha.erase(it) : std::next(it);
    }
    images.by_sha[image->sha256] = image;
    images.held.push_back(image);
    if (images.held.size() > OpenImages::kHeld) images.held.erase(images.held.begin());
  }
  return std::unique_ptr<GraphStore>(new GraphStore(std::move(image)));
}

GraphStore::~GraphStore() = default;

const std::string& GraphStore::artifact_sha256() const noexcept { return image_->sha256; }
const std::string& GraphStore::graph_schema_version() const noexcept {
  return image_->schema_version;
}
std::int64_t GraphStore::node_count() const noexcept { return image_->node_count; }

bool GraphStore::read_only() const {
  std::lock_guard lock(image_->mutex);
  return image_->db->read_only();
}

std::vector<std::string> GraphStore::candidate_lookup_plan() const {
  std::lock_guard lock(image_->mutex);
  std::vector<std::string> lines;
  try {
    auto plan = image_->db->prepare(
        image_->version >= 2
            ? "EXPLAIN QUERY PLAN SELECT node_id FROM term_postings WHERE term = ?1 ORDER BY rank"
              " LIMIT ?2"
            : "EXPLAIN QUERY PLAN SELECT node_id FROM node_terms WHERE term = ?1 LIMIT ?2");
    plan.bind(1, std::string_view("python")).bind(2, kPostingsPerSignal);
    while (plan.step()) lines.push_back(plan.text(3));
  } catch (const engine::EngineStoreError&) {
    throw CandidateSourceUnavailable(kUnavailable);
  }
  return lines;
}

namespace {

// One scored candidate of a retrieval.
struct Scored {
  double score;
  engine::CapabilityKind kind;
  std::string label_lower;
  std::string id;
  std::string label;
  std::vector<std::string> tags;
};

// The candidate ids of `signals`, one indexed lookup per signal: the first `per_signal` nodes of
// its term_postings list (the nodes that signal alone scores best, so the read is bounded by the
// signals, not the catalog; a version 1 artifact's whole node_terms list), plus up to as many
// labels that contain a signal of 3+ characters, through the trigram index (the substring-only
// score).
std::set<std::string> candidate_ids(Database& db, int version,
                                    const std::vector<std::string>& signals,
                                    std::int64_t per_signal) {
  std::set<std::string> ids;
  auto lookup =
      version >= 2
          ? db.cached("SELECT node_id FROM term_postings WHERE term = ?1 ORDER BY rank LIMIT ?2")
          : db.cached("SELECT node_id FROM node_terms WHERE term = ?1 LIMIT ?2");
  auto substring = db.cached(
      "SELECT id FROM nodes WHERE rowid IN"
      " (SELECT rowid FROM label_trigrams WHERE label_trigrams MATCH ?1 LIMIT ?2)");
  const std::int64_t limit = version >= 2 ? per_signal : std::int64_t{-1};
  for (const auto& s : signals) {
    lookup->bind(1, s).bind(2, limit);
    while (lookup->step()) ids.insert(lookup->text(0));
    lookup->reset();
    if (s.size() < 3) continue;
    std::string phrase = "\"";
    for (char c : s) {
      phrase.push_back(c);
      if (c == '"') phrase.push_back('"');
    }
    phrase.push_back('"');
    substring->bind(1, phrase).bind(2, limit);
    while (substring->step()) ids.insert(substring->text(0));
    substring->reset();
  }
  return ids;
}

// Scores candidate nodes against one query, each term's idf read once. Errors: InvalidArtifact,
// the store's errors.
class NodeScorer {
 public:
  NodeScorer(Database& db, const RetrievalQuery& query, std::int64_t node_count, double mean_tags)
      : db_(db), query_(query), node_count_(node_count), mean_tags_(mean_tags) {}

  // The node's score, or nullopt when it is not kept (never loaded, too little evidence, no
  // positive score). BM25 over the node's tags, its length normalised by the mean tag count; a
  // signal that is a word of the label counts kLabelWeight times more; a signal only inside a
  // label word counts a little (signal_weight); a node the work names is boosted (alias_boost);
  // then log(1 + degree).
  std::optional<Scored> score(const std::string& id) {
    auto fetch =
        db_.cached("SELECT type, label, tags_json, degree, never_load FROM nodes WHERE id = ?1");
    fetch->bind(1, id);
    if (!fetch->step()) throw InvalidArtifact{"index names a missing node"};
    const std::string type = fetch->text(0);
    std::string label = fetch->text(1);
    const std::string tags_json = fetch->text(2);
    const std::int64_t degree = fetch->integer(3);
    if (fetch->integer(4) != 0) return std::nullopt;  // never_load
    // The index holds capability-kind nodes only: any other stored type means the index and the
    // node table disagree (the artifact is inconsistent), never a row to skip.
    const auto kind = engine::find_enum<engine::CapabilityKind>(type);
    if (!kind) throw InvalidArtifact{"index names a node of no capability kind"};
    const NodeFacts facts = node_facts(label, lowered_tags(tags_json), mean_tags_);
    double score = 0.0;
    std::size_t matched = 0;  // distinct signals found
    bool label_match = false;
    for (const auto& s : query_.signals) {
      const SignalWeight weight = signal_weight(facts, s, idf(s));
      score += weight.score;
      label_match = label_match || weight.label_word;
      if (weight.found) ++matched;
    }
    const double boost = alias_boost(label, id, query_);
    // Evidence: one incidental word of a long description is not a match. A node is kept when
    // it is named, when a signal is a word of its label, when it matches two distinct signals,
    // or when the work has a single signal.
    if (boost == 0.0 && !label_match && matched < 2 && query_.signals.size() > 1) {
      return std::nullopt;
    }
    score += boost;
    if (score <= 0.0) return std::nullopt;
    score += std::log1p(static_cast<double>(degree));
    return Scored{score,
                  *kind,
                  facts.label_lower,
                  id,
                  std::move(label),
                  std::vector<std::string>(facts.tags.begin(), facts.tags.end())};
  }

 private:
  static std::set<std::string> lowered_tags(const std::string& tags_json) {
    std::set<std::string> out;
    const core::Json tags = core::parse_json(tags_json);
    if (!tags.is_array()) throw InvalidArtifact{"tags_json is not an array"};
    for (const auto& tag : tags) {
      if (!tag.is_string()) throw InvalidArtifact{"tags_json holds a non-string"};
      out.insert(ascii_lower(tag.get<std::string>()));
    }
    return out;
  }

  double idf(const std::string& term) {
    const auto it = idf_.find(term);
    if (it != idf_.end()) return it->second;
    auto df = db_.cached("SELECT df FROM term_stats WHERE term = ?1");
    df->bind(1, term);
    const double value =
        df->step() ? bm25_idf(std::max<std::int64_t>(df->integer(0), 1), node_count_) : 0.0;
    idf_.emplace(term, value);
    return value;
  }

  Database& db_;
  const RetrievalQuery& query_;
  std::int64_t node_count_;
  double mean_tags_;
  std::unordered_map<std::string, double> idf_;
};

}  // namespace

std::vector<RetrievedNode> GraphStore::retrieve(const std::vector<std::string>& query_tags,
                                                std::int64_t top_n) const {
  const RetrievalQuery query = retrieval_query(query_tags);
  if (query.signals.empty() || top_n < 1) return {};
  std::vector<Scored> scored;
  std::lock_guard lock(image_->mutex);
  try {
    Database& db = *image_->db;
    NodeScorer scorer(db, query, image_->node_count, image_->mean_tags);
    for (const auto& id :
         candidate_ids(db, image_->version, query.signals, std::max(top_n, kPostingsPerSignal))) {
      if (auto item = scorer.score(id)) scored.push_back(std::move(*item));
    }
  } catch (const InvalidArtifact&) {
    throw CandidateSourceUnavailable("indexed graph candidate retrieval failed");
  } catch (const engine::EngineStoreError&) {
    throw CandidateSourceUnavailable("indexed graph candidate retrieval failed");
  } catch (const InvalidArgument&) {
    throw CandidateSourceUnavailable("indexed graph candidate retrieval failed");
  }
  // Ties rank by the kind's spelling (agent < harness < mcp-server < skill), as the stored text
  // did.
  std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return std::make_tuple(-a.score, engine::to_string(a.kind), std::cref(a.label_lower),
                           std::cref(a.id)) < std::make_tuple(-b.score, engine::to_string(b.kind),
                                                              std::cref(b.label_lower),
                                                              std::cref(b.id));
  });
  std::vector<RetrievedNode> rows;
  if (scored.empty()) return rows;
  const double top = scored.front().score;
  for (auto& item : scored) {
    if (static_cast<std::int64_t>(rows.size()) >= top_n) break;
    rows.push_back(RetrievedNode{item.kind, public_label(item.label), std::move(item.tags),
                                 normalized_ppm(item.score / top)});
  }
  return rows;
}

}  // namespace ctx::store
