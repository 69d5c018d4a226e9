// The planner's pinned input ports (spec §8.3–8.4): authenticated benefit facts, catalog
// material descriptors and install planning bundles. Each port names the snapshot digest it serves;
// the planner pins those digests at construction and refuses to plan if one drifts. Implementations
// must be safe to call from several threads.
#ifndef CTX_HOST_ENGINE_PLANNING_PORTS_HPP_
#define CTX_HOST_ENGINE_PLANNING_PORTS_HPP_

#include <optional>
#include <string>

#include "host/engine/identities.hpp"
#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/candidates.hpp"

namespace ctx::engine::planning {

// Policy inputs for one exact retrieved presentation.
class BenefitFactsPort {
 public:
  virtual ~BenefitFactsPort() = default;
  virtual std::string benefit_facts_snapshot_digest() const = 0;
  // Facts for `presentation` (same capability_id and source_digest), or nullopt when the port has
  // none (planning then fails: "candidate is missing authenticated benefit facts").
  virtual std::optional<BenefitCandidate> benefit_candidate(const CapabilityCandidate& presentation,
                                                            const WorkObservation& observation) = 0;
  // The share (ppm, 0..10^6) of the best relevance of one plan's candidate pool that a candidate
  // needs: the planner takes a relevance under it as 0 (the candidate matches much worse than
  // the best match). 0 (the default): no such rule. Read once, when the planner is built; the
  // snapshot digest must change with it.
  virtual std::int64_t relevance_share_of_best_ppm() const { return 0; }
};

// Catalog material descriptors: "load" (v2, with a material identity) or "manual".
class MaterialPort {
 public:
  virtual ~MaterialPort() = default;
  virtual std::string material_snapshot_digest() const = 0;
  // The descriptor of `capability_id`; its provenance_digest must equal material_snapshot_digest.
  // Errors: CandidateAuthorityUnavailable drops only this candidate; anything else makes the
  // catalog unavailable.
  virtual MaterialDescriptor describe(const std::string& capability_id, CapabilityKind kind) = 0;
};

// Exact install authority (a v2 descriptor plus the result material it binds) for installable
// kinds; nullopt when the capability cannot be installed.
class InstallBundlePort {
 public:
  virtual ~InstallBundlePort() = default;
  virtual std::string installation_snapshot_digest() const = 0;
  // Errors: as MaterialPort::describe.
  virtual std::optional<InstallPlanningBundle> describe_bundle(const std::string& capability_id,
                                                               CapabilityKind kind) = 0;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_PORTS_HPP_
