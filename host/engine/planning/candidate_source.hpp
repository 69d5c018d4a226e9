// Candidate projection (spec §8.3): scored graph rows + material and install ports -> typed
// CapabilityCandidates with actionability load / install / manual and a source digest that binds
// every authority fact. Thread-safe; the ports and the graph must outlive the source.
#ifndef CTX_HOST_ENGINE_PLANNING_CANDIDATE_SOURCE_HPP_
#define CTX_HOST_ENGINE_PLANNING_CANDIDATE_SOURCE_HPP_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/core/lru_map.hpp"
#include "host/engine/planning/candidates.hpp"
#include "host/engine/planning/ports.hpp"
#include "host/engine/planning/retrieval.hpp"

namespace ctx::engine::planning {

inline constexpr std::int64_t kDefaultCandidateLimit = 50;
inline constexpr std::int64_t kMaxCandidateLimit = 512;
// Entries per memo (a few KiB each at most): ample for 512-row retrievals of many observations.
inline constexpr std::size_t kDefaultMemoCapacity = 16'384;
inline constexpr std::string_view kIndexedAdapterVersion = "ctx.indexed-candidate-source-v4";
inline constexpr std::string_view kCandidateProjectionVersion = "ctx.catalog-entry.graph-v4";

// The graph rows of one retrieval and the candidates projected from them.
struct CandidateRetrieval {
  std::vector<RetrievedNode> rows;
  std::vector<CapabilityCandidate> candidates;
};

class CatalogCandidateSource {
 public:
  // `material` and `install` may be null (every row is then manual / never install).
  // candidate_limit: 6..512; memo_capacity bounds the drift and projection memos (LRU; the
  // drift memos keep at least 512 ids).
  // Errors: PlannerValidationError for a bad limit or snapshot digest.
  CatalogCandidateSource(const GraphRetrievalPort& graph, MaterialPort* material,
                         InstallBundlePort* install,
                         std::int64_t candidate_limit = kDefaultCandidateLimit,
                         std::size_t memo_capacity = kDefaultMemoCapacity);
  CatalogCandidateSource(const CatalogCandidateSource&) = delete;
  CatalogCandidateSource& operator=(const CatalogCandidateSource&) = delete;

  // canon-A sha256 of {adapter_version, allowed_entity_types, artifact_sha256,
  // graph_schema_version, installation_snapshot_digest, material_snapshot_digest,
  // projection_version}.
  const std::string& catalog_snapshot_digest() const noexcept { return catalog_snapshot_digest_; }
  const std::optional<std::string>& material_snapshot_digest() const noexcept {
    return material_snapshot_digest_;
  }
  const std::optional<std::string>& installation_snapshot_digest() const noexcept {
    return installation_snapshot_digest_;
  }

  // One row per unambiguous identity, ordered by (-score, id, source); empty when the
  // observation has no signals and no languages. A row whose authority is malformed is dropped.
  // Errors: CandidateSourceUnavailable (retrieval failed, a port snapshot moved, or a port's
  // answer changed within one snapshot).
  std::vector<CapabilityCandidate> retrieve(const WorkObservation& observation) const;
  // retrieve() plus the graph rows the candidates were projected from. Errors: as retrieve().
  CandidateRetrieval retrieve_pinned(const WorkObservation& observation) const;
  // End validation of `earlier` (retrieve_pinned(observation) of this source; only its rows are
  // read): retrieves again and asks every authority port again; true when the graph rows are
  // identical (the projection is a function of rows, observation and port answers).
  // Errors: as retrieve().
  bool unchanged(const WorkObservation& observation, const CandidateRetrieval& earlier) const;

  // The material descriptor retrieval observed for `capability_id` in this snapshot (nullopt when
  // none was observed or it was malformed): the one a load presentation's source digest binds.
  std::optional<MaterialDescriptor> observed_material(const std::string& capability_id) const;

 private:
  // What the material and install ports say about one row (nullopt: malformed, row dropped).
  struct RowAuthority {
    std::optional<MaterialDescriptor> material;
    bool loadable = false;
    std::optional<InstallPlanDescriptor> install;
    friend bool operator==(const RowAuthority&, const RowAuthority&) = default;
  };
  // Sorted unique union of the observation's signals and languages.
  static std::vector<std::string> query_tags(const WorkObservation& observation);
  // Checks the pinned port snapshots, then asks the graph. Caller holds mutex_.
  std::vector<RetrievedNode> retrieve_rows(const std::vector<std::string>& tags) const;
  // Asks the material and install ports about one row, detecting same-snapshot drift.
  // Caller holds mutex_.
  std::optional<RowAuthority> observe_authority(CapabilityKind kind,
                                                const std::string& capability_id) const;

  const GraphRetrievalPort& graph_;
  MaterialPort* material_;
  InstallBundlePort* install_;
  std::int64_t candidate_limit_;
  std::optional<std::string> material_snapshot_digest_;
  std::optional<std::string> installation_snapshot_digest_;
  std::string catalog_snapshot_digest_;
  mutable std::mutex mutex_;
  // Port answers seen in this snapshot (nullopt = malformed), to detect same-snapshot drift;
  // least recently used ids are evicted. An install answer is "" (none) or descriptor digest +
  // result material identity digest.
  mutable core::LruMap<std::string, std::optional<MaterialDescriptor>> material_seen_;
  mutable core::LruMap<std::string, std::optional<std::string>> install_seen_;
  // The source digest last projected per capability id, with the exact inputs it binds: the
  // second retrieval of one plan (and every later one) reuses it instead of re-encoding.
  struct Projection {
    std::string inputs;
    std::string source_digest;
  };
  mutable core::LruMap<std::string, Projection> projections_;
  // The last retrieval's projection: the candidates are a pure function of the graph rows, the
  // observation's signals and languages and the authority answers of each row, so a retrieval
  // with exactly the same inputs (the ports are still asked about every row) reuses them.
  struct LastProjection {
    std::vector<std::string> signals;
    std::vector<std::string> languages;
    std::vector<RetrievedNode> rows;
    std::vector<std::optional<RowAuthority>> authorities;
    std::vector<CapabilityCandidate> candidates;
  };
  mutable std::optional<LastProjection> last_;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_CANDIDATE_SOURCE_HPP_
