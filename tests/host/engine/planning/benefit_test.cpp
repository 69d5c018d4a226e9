#include "host/engine/planning/benefit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/planning/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine::planning {
namespace {

std::string digest_of(const std::string& text) { return core::sha256_hex(text); }

NetBenefitPolicy seed_policy() {
  NetBenefitPolicyConfig config;
  config.calibration_digest = digest_of("calibration");
  config.minimum_relevance_ppm = 1;
  return NetBenefitPolicy(config);
}

// The seed's _Facts: manual rows are advisory, others executable; 800k benefit, 900k relevance.
BenefitCandidate facts(const std::string& id, Availability availability = Availability::kAdvisory) {
  BenefitCandidate c;
  c.capability_id = id;
  c.source_digest = digest_of("source:" + id);
  c.resource_profile_digest = digest_of("profile:" + id);
  c.availability = availability;
  c.expected_task_benefit_ppm = 800'000;
  c.relevance_ppm = 900'000;
  c.trust_ppm = 1'000'000;
  c.costs = ResourceCosts{};
  c.evidence.capability_id = id;
  c.evidence.kind = parse_enum<CapabilityKind>(id.substr(0, id.find(':')));
  c.evidence.source_digest = c.source_digest;
  c.evidence.evidence_window_digest = digest_of("window:" + id);
  c.source_trusted = c.security_approved = c.permissions_allowed = c.credentials_available = true;
  return c;
}

std::vector<BenefitCandidate> six_competing() {
  std::vector<BenefitCandidate> out;
  for (const char* id : {"agent:reviewer", "harness:python-runner", "mcp-server:docs", "skill:lint",
                         "skill:test", "skill:types"}) {
    out.push_back(facts(id));
  }
  return out;
}

TEST(NetBenefitPolicy, SixCompetingCandidatesOfFourKindsSelectFiveCoveringAllKinds) {
  const auto result = seed_policy().select(six_competing(), 5);
  ASSERT_EQ(result.selections().size(), 5u);
  EXPECT_FALSE(result.abstention_code().has_value());
  std::set<std::string> kinds;
  for (const auto& s : result.selections()) {
    kinds.insert(s.capability_id.substr(0, s.capability_id.find(':')));
    EXPECT_EQ(s.tier, BenefitTier::kAdvisory);
    EXPECT_EQ(s.individual_net_benefit_u, 720'000);  // ppm(ppm(900k, 800k), 1M)
    EXPECT_GT(s.marginal_net_benefit_u, 0);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"agent", "harness", "mcp-server", "skill"}));
  // Ties break by capability id: skill:types is the one left out.
  EXPECT_EQ(result.selections().back().capability_id, "skill:test");
  EXPECT_EQ(result.candidate_pool_count(), 6);
  EXPECT_GT(result.search_evaluation_count(), 0);
  EXPECT_TRUE(core::is_sha256_hex(result.result_digest()));
}

TEST(NetBenefitPolicy, ZeroLimitAbstainsWithAnAuditableResult) {
  const auto result = seed_policy().select({facts("skill:test")}, 0);
  EXPECT_TRUE(result.selections().empty());
  EXPECT_EQ(result.abstention_code(), AbstentionCode::kLimitZero);
  EXPECT_EQ(result.search_evaluation_count(), 0);
  EXPECT_EQ(result.candidate_pool_count(), 1);
  EXPECT_EQ(result.result_digest().size(), 64u);
  // The stored spelling is the code's one spelling; another (even a declared degradation code)
  // does not decode.
  const std::string& text = result.to_json();
  ASSERT_NE(text.find("\"abstention_code\":\"limit-zero\""), std::string::npos);
  EXPECT_EQ(BenefitSelectionResult::from_json(text), result);
  std::string unknown = text;
  unknown.replace(unknown.find("limit-zero"), 10, "limit-none");
  CTX_EXPECT_THROW(BenefitSelectionResult::from_json(unknown), BenefitValidationError,
                   "abstention_code is not a declared code");
  std::string degraded = text;
  degraded.replace(degraded.find("limit-zero"), 10, "planner-failed");
  CTX_EXPECT_THROW(BenefitSelectionResult::from_json(degraded), BenefitValidationError,
                   "abstention_code does not match");
}

TEST(NetBenefitPolicy, OnlyIneligibleCandidatesAbstainAsNoFeasibleCapability) {
  auto untrusted = facts("skill:test");
  untrusted.source_trusted = false;
  auto unknown_cost = facts("skill:lint");
  unknown_cost.costs.reset();
  const auto result = seed_policy().select({untrusted, unknown_cost}, 5);
  EXPECT_EQ(result.abstention_code(), AbstentionCode::kNoFeasibleCapability);
  EXPECT_EQ(result.search_evaluation_count(), 0);
  EXPECT_EQ(result.assessments()[0].reason_codes,
            std::vector<std::string>{"resource-cost-unknown"});
  EXPECT_EQ(result.assessments()[1].reason_codes, std::vector<std::string>{"source-untrusted"});
}

TEST(NetBenefitPolicy, CostAboveBenefitAbstainsBelowNetBenefit) {
  NetBenefitPolicyConfig config;
  config.calibration_digest = digest_of("calibration");
  config.minimum_relevance_ppm = 1;
  config.context_token_cost_u = 1'000;
  NetBenefitPolicy policy(config);
  auto costly = facts("skill:test");
  costly.costs->context_tokens = 1'000;  // 1 000 000 units > 720 000
  const auto result = policy.select({costly}, 5);
  EXPECT_EQ(result.abstention_code(), AbstentionCode::kBelowNetBenefit);
  EXPECT_GT(result.search_evaluation_count(), 0);
  EXPECT_EQ(result.assessments()[0].individual_net_benefit_u, 720'000 - 1'000'000);
}

TEST(NetBenefitPolicy, ExecutableTierIsFilledBeforeAdvisory) {
  std::vector<BenefitCandidate> pool = six_competing();
  auto executable = facts("skill:zz-loaded", Availability::kExecutable);
  executable.expected_task_benefit_ppm = 100'000;  // lower value, still first
  pool.push_back(executable);
  const auto result = seed_policy().select(pool, 2);
  ASSERT_EQ(result.selections().size(), 2u);
  EXPECT_EQ(result.selections()[0].capability_id, "skill:zz-loaded");
  EXPECT_EQ(result.selections()[0].tier, BenefitTier::kExecutable);
  EXPECT_EQ(result.selections()[1].tier, BenefitTier::kAdvisory);
}

TEST(NetBenefitPolicy, ConflictsAndEquivalenceKeysAreNeverSelectedTogether) {
  auto a = facts("skill:a");
  auto b = facts("skill:b");
  auto c = facts("skill:c");
  auto d = facts("skill:d");
  a.conflicts = {"skill:b"};
  c.equivalence_key = "formatter";
  d.equivalence_key = "formatter";
  const auto result = seed_policy().select({a, b, c, d}, 5);
  std::set<std::string> ids;
  for (const auto& s : result.selections()) ids.insert(s.capability_id);
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_FALSE(ids.count("skill:a") && ids.count("skill:b"));
  EXPECT_FALSE(ids.count("skill:c") && ids.count("skill:d"));
}

TEST(NetBenefitPolicy, ComplementarityBonusAppearsInLeaveOneOutMarginals) {
  NetBenefitPolicyConfig config;
  config.calibration_digest = digest_of("calibration");
  config.minimum_relevance_ppm = 1;
  config.complementarity_bonus_u = 5'000;
  auto a = facts("skill:a");
  auto b = facts("skill:b");
  a.complements = {"skill:b"};
  b.complements = {"skill:a"};
  const auto result = NetBenefitPolicy(config).select({a, b}, 5);
  ASSERT_EQ(result.selections().size(), 2u);
  EXPECT_EQ(result.selections()[0].marginal_net_benefit_u, 725'000);
}

TEST(NetBenefitPolicy, OutcomeEvidenceAdjustsTheExpectedEffect) {
  auto c = facts("agent:reviewer", Availability::kExecutable);
  c.evidence.opportunity_observable = true;
  c.evidence.opportunities_observed = 3;
  c.evidence.successful_invocations = 3;
  const auto assessment = seed_policy().assess(c);
  // weighted 300 000 over (1 prior + 3 observations) = 75 000 ppm
  EXPECT_EQ(assessment.evidence_adjustment_ppm, 75'000);
  EXPECT_EQ(assessment.expected_benefit_u, 787'500);  // ppm(900k, 875k)
  EXPECT_EQ(assessment.reason_codes,
            (std::vector<std::string>{"net-benefit-assessed", "positive-outcome-evidence"}));
}

TEST(NetBenefitPolicy, ResultDigestIsDeterministicAndJsonRoundTrips) {
  const auto policy = seed_policy();
  const auto first = policy.select(six_competing(), 5);
  auto reversed = six_competing();
  std::reverse(reversed.begin(), reversed.end());
  const auto second = policy.select(reversed, 5);
  EXPECT_EQ(first.result_digest(), second.result_digest());
  EXPECT_EQ(first.to_json(), second.to_json());
  const auto decoded = BenefitSelectionResult::from_json(first.to_json());
  EXPECT_TRUE(decoded == first);
  policy.validate_result(decoded);
  EXPECT_EQ(policy.policy_digest(), seed_policy().policy_digest());
}

TEST(NetBenefitPolicy, ResultTextIsCanonicalAndItsDigestCoversEveryOtherField) {
  for (const std::int64_t limit : {0, 2, 5}) {
    const auto result = seed_policy().select(six_competing(), limit);
    const std::string& text = result.to_json();
    EXPECT_EQ(core::canonical_json(core::parse_json(text), core::Encoding::kAscii), text);
    const std::string member = "\"result_digest\":\"" + result.result_digest() + "\",";
    const auto at = text.find(member);
    ASSERT_NE(at, std::string::npos);
    std::string without = text;
    without.erase(at, member.size());
    EXPECT_EQ(digest_of(without), result.result_digest());
    EXPECT_EQ(core::parse_json(without).size(), 8u);
  }
}

TEST(NetBenefitPolicy, TamperedOrNonCanonicalResultJsonIsRejected) {
  const auto result = seed_policy().select(six_competing(), 5);
  std::string text = result.to_json();
  const auto at = text.find("\"trust_ppm\":1000000");
  ASSERT_NE(at, std::string::npos);
  std::string tampered = text;
  tampered.replace(at, 19, "\"trust_ppm\":1000001");
  CTX_EXPECT_THROW(BenefitSelectionResult::from_json(tampered), BenefitValidationError,
                   "trust_ppm");
  std::string reweighted = text;
  const auto relevance = reweighted.find("\"relevance_ppm\":900000");
  ASSERT_NE(relevance, std::string::npos);
  reweighted.replace(relevance, 22, "\"relevance_ppm\":900001");
  CTX_EXPECT_THROW(BenefitSelectionResult::from_json(reweighted), BenefitValidationError,
                   "result_digest does not match");
  CTX_EXPECT_THROW(BenefitSelectionResult::from_json(" " + text), BenefitValidationError,
                   "canonical");
}

TEST(NetBenefitPolicy, ValidateResultRejectsAnotherPolicy) {
  NetBenefitPolicyConfig config;
  config.calibration_digest = digest_of("other-calibration");
  config.minimum_relevance_ppm = 1;
  const NetBenefitPolicy other(config);
  EXPECT_NE(other.policy_digest(), seed_policy().policy_digest());
  CTX_EXPECT_THROW(other.validate_result(seed_policy().select(six_competing(), 5)),
                   BenefitValidationError, "policy digest does not match");
}

TEST(NetBenefitPolicy, InvalidPoliciesAndCandidatesAreTypedErrors) {
  NetBenefitPolicyConfig config;
  config.calibration_digest = "not-a-digest";
  CTX_EXPECT_THROW(NetBenefitPolicy{config}, BenefitValidationError, "calibration_digest");
  config.calibration_digest = digest_of("c");
  config.effective_outcome_evidence_ppm = 50'000;
  CTX_EXPECT_THROW(NetBenefitPolicy{config}, BenefitValidationError, "positive evidence weights");
  auto dup = six_competing();
  dup.push_back(dup.front());
  CTX_EXPECT_THROW(seed_policy().select(dup, 5), BenefitValidationError, "duplicate");
  auto bad = facts("skill:a");
  bad.evidence.successful_invocations = 1;  // without an opportunity
  CTX_EXPECT_THROW(seed_policy().select({bad}, 5), BenefitValidationError, "opportunity");
  CTX_EXPECT_THROW(seed_policy().select(six_competing(), 6), BenefitValidationError,
                   "requested_limit");
  auto self = facts("skill:a");
  self.conflicts = {"skill:a"};
  CTX_EXPECT_THROW(seed_policy().select({self}, 5), BenefitValidationError, "itself");
}

}  // namespace
}  // namespace ctx::engine::planning
