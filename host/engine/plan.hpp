// Schema-v3 committed plans (spec §1.8, §1.9): the 13-key plan row (PlanCapabilityV3), the
// 9-key BenefitAuditReference and CommittedPlanV3. Rows are parsed from the planner's decision
// surrogate value {status, abstention_code, benefit_audit, capabilities}; every typed identity
// inside is re-validated. Errors: StateValidationError naming the rule. Thread-safe (immutable).
#ifndef CTX_HOST_ENGINE_PLAN_HPP_
#define CTX_HOST_ENGINE_PLAN_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

using core::Json;

// One authenticated schema-v3 plan row.
class PlanCapabilityV3 {
 public:
  // Validates the exact 13-key row (§1.8). Errors: StateValidationError.
  static PlanCapabilityV3 from_json(const Json& value);
  // The row mapping, exactly as validated.
  const Json& to_json() const noexcept { return json_; }

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  const std::string& name() const noexcept { return name_; }
  // = catalog_entry_digest.
  const std::string& source_digest() const noexcept { return source_digest_; }
  Actionability actionability() const noexcept { return actionability_; }
  std::int64_t normalized_score_ppm() const noexcept { return score_ppm_; }
  const std::vector<std::string>& matching_signals() const noexcept { return signals_; }
  const std::vector<std::string>& reason_codes() const noexcept { return reasons_; }
  const std::optional<std::string>& install_descriptor_digest() const noexcept {
    return install_descriptor_digest_;
  }
  const std::optional<std::string>& install_plan_digest() const noexcept {
    return install_plan_digest_;
  }
  const CatalogCapabilityIdentity& catalog_identity() const noexcept { return *catalog_; }
  // kExecutable (load/install) or kAdvisory (manual); benefit_tier() is its persisted spelling.
  BenefitTier tier() const noexcept { return tier_; }
  std::string_view benefit_tier() const noexcept { return to_string(tier_); }
  std::int64_t individual_net_benefit_u() const noexcept { return individual_; }
  std::int64_t marginal_net_benefit_u() const noexcept { return marginal_; }

  bool is_manual() const noexcept { return actionability_ == Actionability::kManual; }
  bool is_load() const noexcept { return actionability_ == Actionability::kLoad; }
  bool is_install() const noexcept { return actionability_ == Actionability::kInstall; }
  // authority.material (load rows only).
  const std::optional<AuthorizedMaterial>& load_material() const noexcept { return material_; }
  // authority.descriptor / authority.result_material (install rows only).
  const std::optional<InstallPlanDescriptor>& install_descriptor() const noexcept {
    return descriptor_;
  }
  const std::optional<MaterialIdentity>& install_result_material() const noexcept {
    return result_material_;
  }
  // The row's material identity: the load material's catalog content or the install result.
  MaterialIdentity material_identity() const;

  friend bool operator==(const PlanCapabilityV3&, const PlanCapabilityV3&) = default;

 private:
  PlanCapabilityV3() = default;
  Json json_;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  std::string name_, source_digest_;
  Actionability actionability_ = Actionability::kManual;
  std::int64_t score_ppm_ = 0;
  std::vector<std::string> signals_, reasons_;
  std::optional<std::string> install_descriptor_digest_, install_plan_digest_;
  std::optional<CatalogCapabilityIdentity> catalog_;
  BenefitTier tier_ = BenefitTier::kAdvisory;
  std::int64_t individual_ = 0, marginal_ = 0;
  std::optional<AuthorizedMaterial> material_;
  std::optional<InstallPlanDescriptor> descriptor_;
  std::optional<MaterialIdentity> result_material_;
};

// Replay-safe reference to the stored benefit selection result.
struct BenefitAuditReference {
  std::string result_schema_id;  // "ctx.benefit-selection-result-v1"
  std::string result_digest;
  std::string policy_schema_id;  // "ctx.net-benefit-policy-v3"
  std::string policy_digest;
  std::string selection_algorithm_id;  // "ctx.greedy-bounded-subset-exchange-v1"
  std::string calibration_digest;
  std::int64_t requested_limit = 0;          // 0..5
  std::int64_t candidate_pool_count = 0;     // 0..512
  std::int64_t search_evaluation_count = 0;  // 0..1 000 000

  // Errors: StateValidationError.
  static BenefitAuditReference from_json(const Json& value);
  Json to_json() const;
  friend bool operator==(const BenefitAuditReference&, const BenefitAuditReference&) = default;
};

// The committed decision of a planning event.
class CommittedPlanV3 {
 public:
  // Builds from the decision surrogate value; decision_digest = sha(canon-U(decision)).
  // Errors: StateValidationError (rows, order, status rules), InvalidEventError is never thrown.
  static CommittedPlanV3 from_decision(std::string plan_id, std::string catalog_snapshot_id,
                                       const Json& decision);
  // Builds from explicit fields (decision_digest given).
  static CommittedPlanV3 create(std::string plan_id, std::string catalog_snapshot_id,
                                std::string decision_digest, PlanStatus status,
                                std::optional<AbstentionCode> abstention_code,
                                std::optional<BenefitAuditReference> benefit_audit,
                                std::vector<PlanCapabilityV3> capabilities);
  // As above with the status's persisted spelling. Errors: StateValidationError for an unknown
  // status.
  static CommittedPlanV3 create(std::string plan_id, std::string catalog_snapshot_id,
                                std::string decision_digest, std::string_view status,
                                std::optional<AbstentionCode> abstention_code,
                                std::optional<BenefitAuditReference> benefit_audit,
                                std::vector<PlanCapabilityV3> capabilities);
  static CommittedPlanV3 from_json(const Json& value);
  // 7 keys: abstention_code, benefit_audit, capabilities, catalog_snapshot_id, decision_digest,
  // plan_id, status.
  Json to_json() const;
  // The 4-key decision value {abstention_code, benefit_audit, capabilities, status}.
  Json decision_value() const;

  const std::string& plan_id() const noexcept { return plan_id_; }
  const std::string& catalog_snapshot_id() const noexcept { return catalog_snapshot_id_; }
  const std::string& decision_digest() const noexcept { return decision_digest_; }
  PlanStatus status() const noexcept { return status_; }
  const std::optional<AbstentionCode>& abstention_code() const noexcept { return abstention_code_; }
  const std::optional<BenefitAuditReference>& benefit_audit() const noexcept { return audit_; }
  const std::vector<PlanCapabilityV3>& capabilities() const noexcept { return capabilities_; }
  const PlanCapabilityV3* find(const std::string& capability_id) const noexcept;

  friend bool operator==(const CommittedPlanV3&, const CommittedPlanV3&) = default;

 private:
  CommittedPlanV3() = default;
  void validate() const;
  std::string plan_id_, catalog_snapshot_id_, decision_digest_;
  PlanStatus status_ = PlanStatus::kDegraded;
  std::optional<AbstentionCode> abstention_code_;
  std::optional<BenefitAuditReference> audit_;
  std::vector<PlanCapabilityV3> capabilities_;
};

// sha(canon-U(value)): the StructuredSurrogate value digest (= decision_digest).
std::string surrogate_value_digest(const Json& value);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PLAN_HPP_
