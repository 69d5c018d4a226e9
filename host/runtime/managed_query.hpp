// Managed-query projections: authority-free, factory-issued views of one committed schema-v3 plan
// (runtime spec §2). Nothing here plans, installs, activates or exposes live planning authority;
// the projection reads only the durable state of one exact journal head.
//
// Every type is sealed: no public constructor (only the projection factories below and the
// composition create them), not copyable, not assignable, final, no JSON conversion. Printing
// (operator<<) shows only non-sensitive identifiers. Instances are immutable and thread-safe.
#ifndef CTX_HOST_RUNTIME_MANAGED_QUERY_HPP_
#define CTX_HOST_RUNTIME_MANAGED_QUERY_HPP_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "host/core/error.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/state.hpp"
#include "host/runtime/engine_snapshot.hpp"

namespace ctx::runtime {

class EngineComposition;
class ManagedQueryProjector;

// One exact managed planning transaction could not be projected or advanced safely.
// Code: kFailedPrecondition. Retry: not until the stream state changes.
class ManagedQueryError : public FailedPrecondition {
 public:
  explicit ManagedQueryError(const std::string& message) : FailedPrecondition(message) {}
};

// Why a head in `state` refuses a new replacement plan (§1.4), or nullopt: "managed query
// session has ended", else "managed query must settle pending authority before replacement"
// while a consent or an effect is pending. The composition raises it as ManagedQueryError; the
// input authority raises it before it stores anything.
std::optional<std::string> managed_replacement_refusal(const engine::EngineState& state);

// Prose-free classification of one row of the committed plan (13 fields, §2.1).
class ManagedCapabilitySelection final {
 public:
  ManagedCapabilitySelection(const ManagedCapabilitySelection&) = delete;
  ManagedCapabilitySelection& operator=(const ManagedCapabilitySelection&) = delete;
  ManagedCapabilitySelection& operator=(ManagedCapabilitySelection&&) = delete;
  // Moving transfers the sealed value (vectors need it); it never duplicates it.
  ManagedCapabilitySelection(ManagedCapabilitySelection&&) noexcept = default;

  const std::string& capability_id() const noexcept { return capability_id_; }
  engine::CapabilityKind kind() const noexcept { return kind_; }
  const std::string& name() const noexcept { return name_; }
  // Derived from the row's typed planning authority.
  engine::Actionability actionability() const noexcept { return actionability_; }
  const std::vector<std::string>& matching_signals() const noexcept { return matching_signals_; }
  const std::vector<std::string>& reason_codes() const noexcept { return reason_codes_; }
  engine::BenefitTier benefit_tier() const noexcept { return benefit_tier_; }
  std::int64_t individual_net_benefit_u() const noexcept { return individual_net_benefit_u_; }
  std::int64_t marginal_net_benefit_u() const noexcept { return marginal_net_benefit_u_; }
  const std::string& source_digest() const noexcept { return source_digest_; }
  const std::string& catalog_identity_digest() const noexcept { return catalog_identity_digest_; }
  const std::optional<std::string>& install_descriptor_digest() const noexcept {
    return install_descriptor_digest_;
  }
  const std::optional<std::string>& install_plan_digest() const noexcept {
    return install_plan_digest_;
  }

  // Prints capability_id, kind and actionability only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedCapabilitySelection& value);

 private:
  friend class ManagedQueryProjector;
  ManagedCapabilitySelection() = default;

  std::string capability_id_;
  engine::CapabilityKind kind_ = engine::CapabilityKind::kSkill;
  std::string name_;
  engine::Actionability actionability_ = engine::Actionability::kManual;
  std::vector<std::string> matching_signals_;
  std::vector<std::string> reason_codes_;
  engine::BenefitTier benefit_tier_ = engine::BenefitTier::kAdvisory;
  std::int64_t individual_net_benefit_u_ = 0;
  std::int64_t marginal_net_benefit_u_ = 0;
  std::string source_digest_;
  std::string catalog_identity_digest_;
  std::optional<std::string> install_descriptor_digest_;
  std::optional<std::string> install_plan_digest_;
};

// Immutable, authority-free projection of one committed schema-v3 plan at one journal head
// (12 fields, §2.2). journal_revision/journal_record_digest name the head that was projected,
// which may be later than the planning event.
class PreparedManagedQuery final {
 public:
  PreparedManagedQuery(const PreparedManagedQuery&) = delete;
  PreparedManagedQuery& operator=(const PreparedManagedQuery&) = delete;
  PreparedManagedQuery& operator=(PreparedManagedQuery&&) = delete;
  PreparedManagedQuery(PreparedManagedQuery&&) noexcept = default;

  engine::PlanStatus status() const noexcept { return status_; }
  // Absent for a ready plan.
  const std::optional<engine::AbstentionCode>& abstention_code() const noexcept {
    return abstention_code_;
  }
  const std::string& plan_id() const noexcept { return plan_id_; }
  const std::string& planning_environment_digest() const noexcept {
    return planning_environment_digest_;
  }
  const std::string& decision_digest() const noexcept { return decision_digest_; }
  std::int64_t journal_revision() const noexcept { return journal_revision_; }
  const std::string& journal_record_digest() const noexcept { return journal_record_digest_; }
  const std::optional<std::string>& benefit_result_digest() const noexcept {
    return benefit_result_digest_;
  }
  const std::optional<std::int64_t>& requested_limit() const noexcept { return requested_limit_; }
  const std::optional<std::int64_t>& candidate_pool_count() const noexcept {
    return candidate_pool_count_;
  }
  const std::optional<std::int64_t>& search_evaluation_count() const noexcept {
    return search_evaluation_count_;
  }
  // Committed order (executable tier first, then id), at most five.
  const std::vector<ManagedCapabilitySelection>& selections() const noexcept { return selections_; }
  // The selections in relevance order, best first: what a host is shown and the order in which
  // a consent is asked for (individual net benefit descending, then capability id).
  std::vector<const ManagedCapabilitySelection*> by_relevance() const;

  // Prints the decision digest only.
  friend std::ostream& operator<<(std::ostream& out, const PreparedManagedQuery& value);

 private:
  friend class ManagedQueryProjector;
  PreparedManagedQuery() = default;

  engine::PlanStatus status_ = engine::PlanStatus::kDegraded;
  std::optional<engine::AbstentionCode> abstention_code_;
  std::string plan_id_;
  std::string planning_environment_digest_;
  std::string decision_digest_;
  std::int64_t journal_revision_ = 0;
  std::string journal_record_digest_;
  std::optional<std::string> benefit_result_digest_;
  std::optional<std::int64_t> requested_limit_;
  std::optional<std::int64_t> candidate_pool_count_;
  std::optional<std::int64_t> search_evaluation_count_;
  std::vector<ManagedCapabilitySelection> selections_;
};

// The projection of the head after a managed advance plus the exact planning transition.
class ManagedAdvanceResult final {
 public:
  ManagedAdvanceResult(const ManagedAdvanceResult&) = delete;
  ManagedAdvanceResult& operator=(const ManagedAdvanceResult&) = delete;
  ManagedAdvanceResult& operator=(ManagedAdvanceResult&&) = delete;
  ManagedAdvanceResult(ManagedAdvanceResult&&) noexcept = default;

  const PreparedManagedQuery& prepared() const noexcept { return prepared_; }
  const engine::Transition& transition() const noexcept { return transition_; }

  // Prints plan_id and the transition's event_id only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedAdvanceResult& value);

 private:
  friend class ManagedQueryProjector;
  ManagedAdvanceResult(PreparedManagedQuery prepared, engine::Transition transition);

  PreparedManagedQuery prepared_;
  engine::Transition transition_;
};

// Projects the committed plan at the exact authoritative head `snapshot` (§2.3). Never plans.
// Checks, in order: expected_plan_id is an opaque token ("expected_plan_id"); revision >= 2
// ("revision"); state present with the snapshot's revision ("state"); snapshot stream equals the
// state scope's stream ("stream"); an exact schema-v3 committed plan ("committed"); plan id
// equals expected_plan_id when given ("plan identity"); record digest is a sha256
// ("journal_record_digest"). Degraded plans project with no selections and no audit fields.
// Errors: ManagedQueryError.
PreparedManagedQuery project_prepared_managed_query_snapshot(
    const EngineSnapshot& snapshot, const std::optional<std::string>& expected_plan_id = {});

// Commits SessionStarted (revision 0) and IntentObserved (revision 1) on a fresh stream through
// `composition` and projects the plan (§1.4). Errors: ManagedQueryError, the engine's errors.
PreparedManagedQuery prepare_managed_query(EngineComposition& composition,
                                           const engine::EngineEvent& session_started,
                                           const engine::EngineEvent& intent_observed);

// Commits or exactly replays one managed plan (§1.4); see EngineComposition.
ManagedAdvanceResult advance_managed_query(EngineComposition& composition,
                                           const engine::EngineEvent& session_started,
                                           const engine::EngineEvent& planning_observed);

// Projects the latest committed plan of `scope` without planning; see EngineComposition.
PreparedManagedQuery reopen_managed_query(EngineComposition& composition,
                                          const engine::ScopeRef& scope,
                                          const std::optional<std::string>& expected_plan_id = {});

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_MANAGED_QUERY_HPP_
