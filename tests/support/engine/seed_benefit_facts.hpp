// The seeds' benefit facts (_Facts.benefit_candidate): every candidate is relevant, trusted and
// approved; manual rows are advisory, the rest executable. Shared by the planner-level and the
// composition-level seed tests.
#ifndef CTX_TESTS_SUPPORT_ENGINE_SEED_BENEFIT_FACTS_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_SEED_BENEFIT_FACTS_HPP_

#include "host/core/crypto.hpp"
#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/candidates.hpp"

namespace ctx::testing {

inline engine::planning::BenefitCandidate seed_benefit_candidate(
    const engine::planning::CapabilityCandidate& presentation) {
  engine::planning::BenefitCandidate facts;
  facts.capability_id = presentation.capability_id;
  facts.source_digest = presentation.source_digest;
  facts.resource_profile_digest = core::sha256_hex("profile:" + presentation.capability_id);
  facts.availability = presentation.actionability == engine::CandidateActionability::kManual
                           ? engine::Availability::kAdvisory
                           : engine::Availability::kExecutable;
  facts.expected_task_benefit_ppm = 800'000;
  facts.relevance_ppm = 900'000;
  facts.trust_ppm = 1'000'000;
  facts.costs = engine::planning::ResourceCosts{};
  facts.evidence.capability_id = presentation.capability_id;
  facts.evidence.kind = presentation.kind;
  facts.evidence.source_digest = presentation.source_digest;
  facts.evidence.evidence_window_digest =
      core::sha256_hex("window:" + presentation.capability_id);
  facts.evidence.opportunity_observable = false;
  facts.source_trusted = true;
  facts.security_approved = true;
  facts.permissions_allowed = true;
  facts.credentials_available = true;
  return facts;
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_SEED_BENEFIT_FACTS_HPP_
