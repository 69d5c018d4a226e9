// The SQLite capability-graph artifact (spec §8.1–8.2): build_graph_store writes it once;
// GraphStore::open authenticates the pinned bytes in memory and serves indexed, scored retrieval.
// GraphStore is immutable after open and thread-safe (calls serialize on one connection).
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

// Writes a new graph store at `path` (which must not exist): tables metadata, nodes, edges, the
// retrieval index node_terms (+ idx_node_terms_term: label slug/text tokens, tags, alias slugs),
// an FTS5 trigram index of labels (substring matches) and per-term document frequencies.
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
  // metadata; PRAGMA user_version 1, a newer one is "newer schema version N"). The pages are
  // not re-read: pinned bytes are bytes build_graph_store integrity-checked, so the cost of an
  // open is the read and the hash.
  // Errors: GraphArtifactPinMismatch (sha256 differs), CandidateSourceUnavailable (anything else).
  static std::unique_ptr<GraphStore> open(const std::filesystem::path& path,
                                          std::string_view expected_sha256);
  ~GraphStore() override;
  GraphStore(const GraphStore&) = delete;
  GraphStore& operator=(const GraphStore&) = delete;

  std::vector<engine::planning::RetrievedNode> retrieve(const std::vector<std::string>& query_tags,
                                                        std::int64_t top_n) const override;
  const std::string& artifact_sha256() const noexcept override { return artifact_sha256_; }
  const std::string& graph_schema_version() const noexcept override { return schema_version_; }

  std::int64_t node_count() const noexcept { return node_count_; }
  // True when SQLite reports the connection read-only (sqlite3_db_readonly).
  bool read_only() const;
  // EXPLAIN QUERY PLAN detail lines of the per-signal candidate lookup (for tests and tooling).
  std::vector<std::string> candidate_lookup_plan() const;

 private:
  GraphStore() = default;

  std::unique_ptr<Database> db_;  // retrieval's statements are cached on it
  mutable std::mutex mutex_;
  std::string artifact_sha256_;
  std::string schema_version_;
  std::int64_t node_count_ = 0;
  double mean_tags_ = 1.0;  // mean tag count of the retrievable nodes (metadata)
};

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_GRAPH_STORE_HPP_
