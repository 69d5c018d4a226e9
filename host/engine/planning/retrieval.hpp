// The graph retrieval port: scored candidate rows from a pinned catalog snapshot (§8.1–8.2).
// The engine sees only this interface; host/store/graph_store implements it over SQLite.
#ifndef CTX_HOST_ENGINE_PLANNING_RETRIEVAL_HPP_
#define CTX_HOST_ENGINE_PLANNING_RETRIEVAL_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "host/engine/vocabulary.hpp"

namespace ctx::engine::planning {

// One scored graph row: a capability node of a declared kind (the store parses the node's stored
// type at its boundary). name is the node's label (the capability name when it is safe); tags are
// the node's lower-cased tags, sorted and unique.
struct RetrievedNode {
  CapabilityKind kind = CapabilityKind::kSkill;
  std::string name;
  std::vector<std::string> tags;
  std::int64_t normalized_score_ppm = 0;  // round(score / top score, 4) in ppm
  friend bool operator==(const RetrievedNode&, const RetrievedNode&) = default;
};

// Scores catalog nodes against query tags. Implementations are immutable snapshots and must be
// safe to call from several threads.
class GraphRetrievalPort {
 public:
  virtual ~GraphRetrievalPort() = default;
  // The best `top_n` rows of a capability kind for `query_tags` (sorted unique tokens), ranked by
  // (-score, kind's spelling, lower(label), node id); empty when query_tags is empty.
  // Errors: CandidateSourceUnavailable when the snapshot cannot serve.
  virtual std::vector<RetrievedNode> retrieve(const std::vector<std::string>& query_tags,
                                              std::int64_t top_n) const = 0;
  // sha256 of the pinned artifact bytes.
  virtual const std::string& artifact_sha256() const noexcept = 0;
  // The artifact's graph schema version ("1").
  virtual const std::string& graph_schema_version() const noexcept = 0;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_RETRIEVAL_HPP_
