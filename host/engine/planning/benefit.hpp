// Pure, deterministic net-benefit assessment and bounded set selection (spec §8.5, §8.6).
// Integer arithmetic only; no I/O. The values are plain data checked by validate_* on every
// entry point; NetBenefitPolicy is immutable after construction. Thread-safe (no shared state).
#ifndef CTX_HOST_ENGINE_PLANNING_BENEFIT_HPP_
#define CTX_HOST_ENGINE_PLANNING_BENEFIT_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine::planning {

inline constexpr std::int64_t kMaxCandidates = 512;
inline constexpr std::int64_t kMaxSelectedCapabilities = 5;
inline constexpr std::int64_t kMaxPpm = 1'000'000;
inline constexpr std::int64_t kMaxQuantity = 1'000'000;
inline constexpr std::int64_t kMaxRelationKeys = 64;
inline constexpr std::int64_t kMaxSearchEvaluations = 1'000'000;
inline constexpr std::int64_t kMaxUtilityUnits = INT64_MAX;
inline constexpr std::size_t kMaxBenefitResultJsonBytes = 32u * 1024u * 1024u;

inline constexpr std::string_view kPolicySchemaId = "ctx.net-benefit-policy-v3";
inline constexpr std::string_view kSelectionAlgorithmId = "ctx.greedy-bounded-subset-exchange-v1";
inline constexpr std::string_view kResultSchemaId = "ctx.benefit-selection-result-v1";

// Bounded physical and attention quantities (each 0..10^6); the policy owns their prices.
struct ResourceCosts {
  std::int64_t context_tokens = 0;
  std::int64_t tool_schema_tokens = 0;
  std::int64_t runtime_millis = 0;
  std::int64_t permission_burden_units = 0;
  std::int64_t credential_burden_units = 0;
  std::int64_t approval_prompts = 0;
  std::int64_t process_units = 0;
  std::int64_t child_agent_units = 0;
  friend bool operator==(const ResourceCosts&, const ResourceCosts&) = default;
};

// Privacy-safe evidence attributed to one exact capability source (counts 0..10^6).
struct EvidenceSummary {
  std::string capability_id;
  CapabilityKind kind = CapabilityKind::kSkill;  // the kind part of capability_id
  std::string source_digest;
  std::string evidence_window_digest;
  bool opportunity_observable = false;
  std::int64_t opportunities_observed = 0;
  std::int64_t exposed_count = 0;
  std::int64_t successful_invocations = 0;
  std::int64_t failed_invocations = 0;
  std::int64_t effective_outcomes = 0;
  std::int64_t validated_outcomes = 0;
  std::int64_t harmful_outcomes = 0;
  friend bool operator==(const EvidenceSummary&, const EvidenceSummary&) = default;
};

// One capability's authenticated static and contextual facts; coverage_keys / complements /
// conflicts are sorted unique.
struct BenefitCandidate {
  std::string capability_id;
  std::string source_digest;
  std::string resource_profile_digest;
  Availability availability = Availability::kUnsupported;
  std::int64_t expected_task_benefit_ppm = 0;
  std::int64_t relevance_ppm = 0;
  std::int64_t trust_ppm = 0;
  std::optional<ResourceCosts> costs;
  EvidenceSummary evidence;
  bool source_trusted = false;
  bool security_approved = false;
  bool permissions_allowed = false;
  bool credentials_available = false;
  std::vector<std::string> coverage_keys;
  std::optional<std::string> equivalence_key;
  std::vector<std::string> complements;
  std::vector<std::string> conflicts;
  friend bool operator==(const BenefitCandidate&, const BenefitCandidate&) = default;
};

// Individual assessment before set effects.
struct CandidateAssessment {
  BenefitCandidate candidate;
  AssessmentTier tier = AssessmentTier::kIneligible;
  std::vector<std::string> reason_codes;
  std::int64_t evidence_adjustment_ppm = 0;
  std::int64_t expected_benefit_u = 0;
  std::int64_t expected_cost_u = 0;
  std::int64_t individual_net_benefit_u = 0;
  const std::string& capability_id() const noexcept { return candidate.capability_id; }
  const std::string& source_digest() const noexcept { return candidate.source_digest; }
  friend bool operator==(const CandidateAssessment&, const CandidateAssessment&) = default;
};

// One selected assessment plus its leave-one-out gain in the final set (>= 1).
struct BenefitSelection {
  std::string capability_id;
  std::string source_digest;
  BenefitTier tier = BenefitTier::kAdvisory;
  std::int64_t individual_net_benefit_u = 0;
  std::int64_t marginal_net_benefit_u = 0;
  friend bool operator==(const BenefitSelection&, const BenefitSelection&) = default;
};

// Errors: BenefitValidationError naming the field.
void validate_resource_costs(const ResourceCosts& costs);
void validate_evidence(const EvidenceSummary& evidence);
void validate_benefit_candidate(const BenefitCandidate& candidate);

// Canonical mappings (the keys of the audit JSON).
core::Json to_json(const ResourceCosts& costs);
core::Json to_json(const EvidenceSummary& evidence);
core::Json to_json(const BenefitCandidate& candidate);
core::Json to_json(const CandidateAssessment& assessment);
core::Json to_json(const BenefitSelection& selection);

// The canonical, versioned selection result; its digest is canon-A over every field + schema.
// Only NetBenefitPolicy::select and from_json construct one, both fully validated.
class BenefitSelectionResult {
 public:
  const std::vector<BenefitSelection>& selections() const noexcept { return selections_; }
  const std::vector<CandidateAssessment>& assessments() const noexcept { return assessments_; }
  const std::optional<AbstentionCode>& abstention_code() const noexcept { return abstention_code_; }
  const std::string& policy_digest() const noexcept { return policy_digest_; }
  std::int64_t requested_limit() const noexcept { return requested_limit_; }
  std::int64_t candidate_pool_count() const noexcept { return candidate_pool_count_; }
  std::int64_t search_evaluation_count() const noexcept { return search_evaluation_count_; }
  const std::string& result_digest() const noexcept { return result_digest_; }
  static constexpr std::string_view result_schema_id() noexcept { return kResultSchemaId; }

  // Canonical ASCII JSON of every field plus result_digest (at most 32 MiB), encoded once when
  // the result was built; result_digest is the sha256 of the same text without that field.
  const std::string& to_json() const noexcept { return text_; }
  // Decodes JSON, revalidates every field, and requires the digest and `text` itself to equal the
  // one re-encoding of the decoded fields. Errors: BenefitValidationError.
  static BenefitSelectionResult from_json(std::string_view text);

  friend bool operator==(const BenefitSelectionResult&, const BenefitSelectionResult&) = default;

 private:
  friend class NetBenefitPolicy;
  BenefitSelectionResult() = default;
  static BenefitSelectionResult create(std::vector<BenefitSelection> selections,
                                       std::vector<CandidateAssessment> assessments,
                                       std::optional<AbstentionCode> abstention_code,
                                       std::string policy_digest, std::int64_t requested_limit,
                                       std::int64_t search_evaluation_count);
  // Checks every invariant but the digest.
  void validate() const;
  // Sets text_ from the fields and returns the digest it embeds.
  // Errors: BenefitValidationError (> 32 MiB).
  std::string encode();

  std::vector<BenefitSelection> selections_;
  std::vector<CandidateAssessment> assessments_;
  std::optional<AbstentionCode> abstention_code_;
  std::string policy_digest_;
  std::int64_t requested_limit_ = 0;
  std::int64_t candidate_pool_count_ = 0;
  std::int64_t search_evaluation_count_ = 0;
  std::string result_digest_;
  std::string text_;
};

// Every tunable of the policy, with the original's defaults. Only calibration_digest and
// minimum_relevance_ppm have no default.
struct NetBenefitPolicyConfig {
  std::string calibration_digest;
  std::int64_t minimum_relevance_ppm = 0;
  std::int64_t minimum_trust_ppm = 0;
  std::int64_t minimum_marginal_net_benefit_u = 1;
  std::int64_t context_token_cost_u = 0;
  std::int64_t tool_schema_token_cost_u = 0;
  std::int64_t runtime_millisecond_cost_u = 0;
  std::int64_t permission_burden_cost_u = 0;
  std::int64_t credential_burden_cost_u = 0;
  std::int64_t approval_prompt_cost_u = 0;
  std::int64_t process_unit_cost_u = 0;
  std::int64_t child_agent_unit_cost_u = 0;
  std::int64_t new_coverage_bonus_u_per_key = 0;
  std::int64_t overlap_penalty_u_per_key = 0;
  std::int64_t complementarity_bonus_u = 0;
  std::int64_t successful_invocation_evidence_ppm = 100'000;
  std::int64_t failed_invocation_evidence_ppm = -250'000;
  std::int64_t effective_outcome_evidence_ppm = 500'000;
  std::int64_t validated_outcome_evidence_ppm = 1'000'000;
  std::int64_t harmful_outcome_evidence_ppm = -1'000'000;
  std::int64_t idle_opportunity_evidence_ppm = -100'000;
  std::int64_t evidence_prior_observations = 1;
  friend bool operator==(const NetBenefitPolicyConfig&, const NetBenefitPolicyConfig&) = default;
};

// Frozen policy: hard gates + integer net benefit per candidate, then greedy admission with
// bounded subset exchange ("ctx.greedy-bounded-subset-exchange-v1") under the global bound.
class NetBenefitPolicy {
 public:
  // Errors: BenefitValidationError naming the violated invariant.
  explicit NetBenefitPolicy(NetBenefitPolicyConfig config);

  const NetBenefitPolicyConfig& config() const noexcept { return config_; }
  const std::string& calibration_digest() const noexcept { return config_.calibration_digest; }
  // canon-A sha256 of every config field + policy_schema_id + selection_algorithm_id.
  const std::string& policy_digest() const noexcept { return policy_digest_; }
  static constexpr std::string_view policy_schema_id() noexcept { return kPolicySchemaId; }
  static constexpr std::string_view selection_algorithm_id() noexcept {
    return kSelectionAlgorithmId;
  }

  // Hard gates, then one candidate's integer net benefit (§8.5).
  // Errors: BenefitValidationError for an invalid candidate or an out-of-bound cost.
  CandidateAssessment assess(const BenefitCandidate& candidate) const;

  // Selects executable value first, then advisory value for unused slots, at most
  // requested_limit (0..5) in total (§8.6). Errors: BenefitValidationError (invalid or duplicate
  // candidates, contradictory relations, pool > 512, search bound exceeded).
  BenefitSelectionResult select(const std::vector<BenefitCandidate>& candidates,
                                std::int64_t requested_limit = kMaxSelectedCapabilities) const;

  // Re-runs select on the result's exact candidates and demands equality.
  // Errors: BenefitValidationError ("does not match").
  void validate_result(const BenefitSelectionResult& result) const;

 private:
  NetBenefitPolicyConfig config_;
  std::string policy_digest_;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_BENEFIT_HPP_
