// Schema-v3 planning (spec §8.4, §8.7): pool normalisation, authentication of every candidate's
// facts and authority, net-benefit selection under the global bound min(requested_limit, 5),
// the audit record, and the decision value {status, abstention_code, benefit_audit,
// capabilities:[13-key rows]} with its decision digest.
//
// Entry point for the runtime: build a CapabilityPlanner over the ports, publish
// planning_environment_digest() as the events' catalog_snapshot_digest, and call decide() (replay
// decision hook) or plan(). Thread-safe: plan() serialises on an internal mutex so the pinned
// snapshot checks and the end-of-plan revalidation see one consistent set of port answers.
#ifndef CTX_HOST_ENGINE_PLANNING_PLANNER_HPP_
#define CTX_HOST_ENGINE_PLANNING_PLANNER_HPP_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/lru_map.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/plan.hpp"
#include "host/engine/planning/audit_store.hpp"
#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/candidate_source.hpp"
#include "host/engine/planning/candidates.hpp"
#include "host/engine/planning/ports.hpp"

namespace ctx::engine::planning {

inline constexpr std::string_view kDecisionSchemaId = "ctx.decision.capability-plan";
inline constexpr int kDecisionSchemaVersion = 3;
inline constexpr std::string_view kCurrentWorkSchemaId = "ctx.observation.current-work";
inline constexpr std::string_view kPlanningEnvironmentSchema = "ctx.planning-environment-v1";

// What a selected row may later do: load the exact catalog material, install the exact v2
// descriptor producing result_material, or nothing (manual advice).
struct PlanningAuthority {
  Actionability type = Actionability::kManual;
  std::optional<AuthorizedMaterial> material;            // load
  std::optional<InstallPlanDescriptor> descriptor;       // install (v2)
  std::optional<MaterialIdentity> result_material;       // install
  // {type:"load", material} | {type:"install", descriptor, result_material} | {type:"manual"}
  core::Json to_json() const;
  friend bool operator==(const PlanningAuthority&, const PlanningAuthority&) = default;
};

// One retrieval presentation plus authenticated identity, facts and authority.
struct AuthenticatedCandidate {
  CapabilityCandidate presentation;
  CatalogCapabilityIdentity catalog_identity;
  BenefitCandidate benefit_candidate;
  PlanningAuthority authority;
  friend bool operator==(const AuthenticatedCandidate&, const AuthenticatedCandidate&) = default;
};

// One schema-v3 decision row (PlanCapabilityV3).
struct PlanCapabilityRow {
  CapabilityCandidate presentation;
  CatalogCapabilityIdentity catalog_identity;
  BenefitTier tier = BenefitTier::kAdvisory;  // kExecutable (load/install) | kAdvisory (manual)
  std::int64_t individual_net_benefit_u = 0;
  std::int64_t marginal_net_benefit_u = 0;
  PlanningAuthority authority;
  // The 13 keys: actionability, authority, benefit{individual_net_benefit_u,
  // marginal_net_benefit_u, tier}, capability_id, catalog_entry_digest, catalog_identity,
  // install_descriptor_digest, install_plan_digest, kind, matching_signals, name,
  // normalized_score_ppm, reason_codes.
  core::Json to_json() const;
};

// The 9-field reference to the audited BenefitSelectionResult (the committed plan's own type).
using BenefitAuditReference = engine::BenefitAuditReference;

// ready (rows, no code, audit) | abstained (no rows; limit-zero, below-net-benefit,
// no-feasible-capability; audit) | degraded (no rows; catalog-unavailable, planner-failed; no
// audit).
class CapabilityPlanV3 {
 public:
  // Errors: PlannerValidationError unless `code` is a degradation code (catalog-unavailable,
  // planner-failed).
  static CapabilityPlanV3 degraded(AbstentionCode code);

  PlanStatus status() const noexcept { return status_; }
  const std::optional<AbstentionCode>& abstention_code() const noexcept { return abstention_code_; }
  const std::optional<BenefitAuditReference>& benefit_audit() const noexcept { return audit_; }
  const std::vector<PlanCapabilityRow>& capabilities() const noexcept { return rows_; }

  // The decision surrogate value {abstention_code, benefit_audit, capabilities, status}.
  core::Json decision_value() const;
  // {schema_id: "ctx.decision.capability-plan", schema_version: 3, value: decision_value()}.
  core::Json decision_surrogate() const;
  // sha256 of canon-U(decision_value()): CommittedPlanV3.decision_digest.
  std::string decision_digest() const;

 private:
  friend class CapabilityPlanner;
  CapabilityPlanV3() = default;
  PlanStatus status_ = PlanStatus::kDegraded;
  std::optional<AbstentionCode> abstention_code_;
  std::optional<BenefitAuditReference> audit_;
  std::vector<PlanCapabilityRow> rows_;
};

// Spec §8.4 first bullet: excludes baseline/rejected ids and non-presentable actionability,
// collapses identical duplicates, drops identities with conflicting rows, orders by (id, source,
// actionability, -score, equivalence key, signals, reasons). Active ids are kept.
// Errors: PlannerValidationError (pool > 512 or an invalid candidate).
std::vector<CapabilityCandidate> normalize_candidate_pool(
    const std::vector<CapabilityCandidate>& candidates, const WorkObservation& observation);

struct CapabilityPlannerConfig {
  std::string planner_version;           // opaque token, e.g. "ctx-managed-query-planner-v3"
  std::string catalog_namespace_digest;  // digest
  std::int64_t candidate_limit = kDefaultCandidateLimit;
  // Entries of each per-snapshot memo (facts, material and install answers, catalog identities,
  // projections); least recently used entries are evicted, so drift is detected against the
  // most recent answers only.
  std::size_t memo_capacity = kDefaultMemoCapacity;
};

class CapabilityPlanner {
 public:
  // All references must outlive the planner; `material` and `install` may be null.
  // Errors: PlannerValidationError (bad version/digest/limit, a port snapshot digest malformed).
  CapabilityPlanner(CapabilityPlannerConfig config, NetBenefitPolicy policy,
                    const GraphRetrievalPort& graph, BenefitFactsPort& facts,
                    MaterialPort* material, InstallBundlePort* install,
                    BenefitAuditStore& audit_store);
  CapabilityPlanner(const CapabilityPlanner&) = delete;
  CapabilityPlanner& operator=(const CapabilityPlanner&) = delete;

  const std::string& planner_version() const noexcept { return config_.planner_version; }
  const NetBenefitPolicy& policy() const noexcept { return policy_; }
  // canon-A sha256 of {benefit_facts_snapshot_digest, calibration_digest,
  // catalog_namespace_digest, catalog_retrieval_snapshot_digest, installation_snapshot_digest,
  // material_snapshot_digest, planner_version, policy_digest, schema}: the catalog_snapshot_digest
  // planning events must carry and the plan's catalog_snapshot_id.
  const std::string& planning_environment_digest() const noexcept { return environment_digest_; }
  const std::string& catalog_retrieval_snapshot_digest() const noexcept {
    return source_.catalog_snapshot_digest();
  }

  // Plans for `work`. Retrieval unavailable -> degraded "catalog-unavailable"; audit store
  // unavailable -> degraded "planner-failed". Errors (nothing may be journaled):
  // PlannerValidationError ("net-benefit policy rejected the authenticated candidate pool",
  // "planning inputs drifted during end validation", a pin drifted, missing facts, ...),
  // BenefitAuditDigestCollision, BenefitAuditCorruption.
  CapabilityPlanV3 plan(const WorkObservation& work) const;

  // The replay decision hook: `observation` is a {schema_id, schema_version, value} surrogate of
  // "ctx.observation.current-work" v1; the context's planner version and catalog snapshot digest
  // must equal this planner's. Returns decision_surrogate() of the plan.
  // Errors: PlannerValidationError plus those of plan().
  core::Json decide(const core::Json& observation,
                    const std::optional<std::vector<std::string>>& state_active_ids,
                    std::string_view context_planner_version,
                    std::string_view context_catalog_snapshot_digest) const;

 private:
  void assert_pins() const;
  std::vector<AuthenticatedCandidate> authenticate(const std::vector<CapabilityCandidate>& pool,
                                                   const WorkObservation& work) const;
  // One presentation's facts (validated, drift-checked), catalog identity and authority.
  // Errors: CandidateAuthorityUnavailable (authority only), PlannerValidationError.
  AuthenticatedCandidate authenticate_one(const CapabilityCandidate& presentation,
                                          const WorkObservation& work,
                                          std::string_view observation_key) const;
  BenefitCandidate checked_facts(const CapabilityCandidate& presentation,
                                 const WorkObservation& work,
                                 std::string_view observation_key) const;
  const CatalogCapabilityIdentity& identity_of(const CapabilityCandidate& presentation) const;
  PlanningAuthority authority_of(const CapabilityCandidate& presentation,
                                 const CatalogCapabilityIdentity& identity,
                                 const BenefitCandidate& facts) const;
  // End validation: authenticate(pool, work) would equal `earlier` (compared in place).
  bool reauthenticates(const std::vector<CapabilityCandidate>& pool, const WorkObservation& work,
                       const std::vector<AuthenticatedCandidate>& earlier) const;
  CapabilityPlanV3 select(const std::vector<AuthenticatedCandidate>& candidates,
                          std::int64_t requested_limit) const;
  // The facts the policy selects from: each candidate's, with a relevance under the facts port's
  // share of the pool's best relevance taken as 0 (BenefitFactsPort::relevance_share_of_best_ppm).
  std::vector<BenefitCandidate> policy_inputs(
      const std::vector<AuthenticatedCandidate>& candidates) const;

  CapabilityPlannerConfig config_;
  NetBenefitPolicy policy_;
  BenefitFactsPort& facts_;
  MaterialPort* material_;
  InstallBundlePort* install_;
  BenefitAuditStore& audit_store_;
  CatalogCandidateSource source_;
  std::string facts_snapshot_digest_;
  std::int64_t relevance_share_of_best_ppm_ = 0;  // the facts port's, read once
  std::string environment_digest_;
  mutable std::mutex mutex_;
  // Facts answered per exact (presentation, observation) in this snapshot: a port may not change
  // its answer without changing its snapshot digest. Entries hold validated facts only.
  mutable core::LruMap<std::string, BenefitCandidate> facts_seen_;
  // Catalog identities by capability id (a pure function of the pinned namespace).
  mutable core::LruMap<std::string, CatalogCapabilityIdentity> identities_;
  // The latest selections by exact (requested_limit, authenticated facts): the policy is pure and
  // frozen, so an identical pool reuses the result it encoded and digested once.
  struct SelectionMemo {
    std::int64_t requested_limit;
    std::vector<BenefitCandidate> facts;
    std::shared_ptr<const BenefitSelectionResult> result;
  };
  mutable std::list<SelectionMemo> selections_;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_PLANNER_HPP_
