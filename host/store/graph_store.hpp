// The SQLite capability-graph artifact (spec §8.1–8.2): build_graph_store writes it once;
// GraphStore::open authenticates the pinned bytes in memory and serves indexed, scored retrieval.
// GraphStore is immutable after open and thread-safe (calls serialize on one connection, which
// the stores opened on the same pinned bytes in one process share).
#ifndef CTX_HOST_STORE_GRAPH_STORE_HPP_
#define CTX_HOST_STORE_GRAPH_STORE_HPP_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/planning/retrieval.hpp"

namespace ctx::store {

class Database;

// One catalog node: id is "kind:name"; label defaults to the part after ':' and title to label.
struct GraphNode {
  std::string id;
  std::string type;
  std::optional<std::string> label;
  std::optional<std::string> title;
  std::vector<std::string> tags;
  bool never_load = false;
  core::Json attrs = core::Json::object();  // other attributes, stored as canonical JSON
};

// One undirected edge; weight is informational.
struct GraphEdge {
  std::string source;
  std::string target;
  double weight = 0.0;
};

// Writes a new graph store at `path` (which must not exist; PRAGMA user_version 2): tables
// metadata, nodes, edges, the retrieval index node_terms (+ idx_node_terms_term: label slug/text
// tokens, tags, alias slugs), term_postings (each of those terms' nodes ranked by what the term
// alone scores for them, so retrieval reads a bounded prefix per signal), an FTS5 trigram index
// of labels (substring matches) and per-term document frequencies.
// The finished file is integrity-checked (every page; SystemError when that fails) and left
// writable; callers pin it with chmod 0444 and its sha256.
// Errors: InvalidArgument (duplicate/empty node id, edge to an unknown node), SystemError (I/O).
void build_graph_store(const std::filesystem::path& path, const std::vector<GraphNode>& nodes,
                       const std::vector<GraphEdge>& edges = {});

class GraphStore final : public engine::planning::GraphRetrievalPort {
 public:
  // Reads the artifact (a regular, non-symlink, non-writable file without -wal/-shm sidecars)
  // into memory once and hashes those bytes; only when the sha256 equals `expected_sha256` are
  // the same bytes opened as a read-only in-memory database (Database::from_image: no copy on
  // disk, nothing another process can change) and checked (tables, columns, indexes, count
  // metadata; PRAGMA user_version 1 or 2, a newer one is "newer schema version N"). The pages are
  // not re-read: pinned bytes are bytes build_graph_store integrity-checked, so the cost of an
  // open is the read and the hash. A file this process read and hashed before and whose status
  // is unchanged (verified_files.hpp) is not read again while a store of its bytes is still
  // open here or was one of the last few opened: the new store shares those authenticated bytes.
  // Errors: GraphArtifactPinMismatch (sha256 differs), CandidateSourceUnavailable (anything else).
  static std::unique_ptr<GraphStore> open(const std::filesystem::path& path,
                                          std::string_view expected_sha256);
  ~GraphStore() override;
  GraphStore(const GraphStore&) = delete;
  GraphStore& operator=(const GraphStore&) = delete;

  // The best `top_n` nodes for the signals `query_tags`, best first. Candidates are the first
  // max(top_n, 64) nodes of each signal's term_postings list and as many labels holding it (the
  // read is bounded by the signals, not by the catalog's size); each is then scored exactly.
  std::vector<engine::planning::RetrievedNode> retrieve(const std::vector<std::string>& query_tags,
                                                        std::int64_t top_n) const override;
  const std::string& artifact_sha256() const noexcept override;
  const std::string& graph_schema_version() const noexcept override;

  std::int64_t node_count() const noexcept;
  // True when SQLite reports the connection read-only (sqlite3_db_readonly).
  bool read_only() const;
  // EXPLAIN QUERY PLAN detail lines of the per-signal candidate lookup (for tests and tooling):
  // term_postings' primary key (schema 2), node_terms' idx_node_terms_term (schema 1).
  std::vector<std::string> candidate_lookup_plan() const;
  // True when both stores serve one in-memory image (the second open read nothing).
  bool shares_image_with(const GraphStore& other) const noexcept { return image_ == other.image_; }

 private:
  struct Image;
  explicit GraphStore(std::shared_ptr<Image> image) : image_(std::move(image)) {}

  std::shared_ptr<Image> image_;  // the authenticated bytes as a database, and their metadata
};

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_GRAPH_STORE_HPP_
