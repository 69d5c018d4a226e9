#include "host/engine/vocabulary.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "host/engine/claim_store.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

// Every value spells a distinct string that parses back to it; unknown spellings are typed errors.
template <typename E, std::size_t N>
void expect_round_trip(const core::EnumStrings<E, N>& strings) {
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < N; ++i) {
    const E value = strings.values[i];
    const std::string_view text = to_string(value);
    EXPECT_FALSE(text.empty());
    EXPECT_TRUE(seen.insert(text).second) << text;
    EXPECT_EQ(parse_enum<E>(text), value) << text;
    EXPECT_EQ(find_enum<E>(text), value) << text;
    const core::Json json = value;
    EXPECT_EQ(json, core::Json(std::string(text)));
    EXPECT_EQ(json.get<E>(), value);
  }
  EXPECT_EQ(find_enum<E>(""), std::nullopt);
  EXPECT_EQ(find_enum<E>("no-such-value"), std::nullopt);
  CTX_EXPECT_THROW(parse_enum<E>("no-such-value"), core::JsonFieldError,
                   "unknown " + std::string(strings.what));
  CTX_EXPECT_THROW(core::Json(7).get<E>(), core::JsonFieldError, "must be a string");
  CTX_EXPECT_THROW(core::Json("NO-SUCH").get<E>(), core::JsonFieldError, "unknown");
}

TEST(Vocabulary, EveryEnumRoundTripsThroughItsOneTable) {
  expect_round_trip(kInstallationStrings);
  expect_round_trip(kActivationStrings);
  expect_round_trip(kEffectStrings);
  expect_round_trip(kSessionStatusStrings);
  expect_round_trip(kHostLevelStrings);
  expect_round_trip(kExposureStrings);
  expect_round_trip(kInvocationStrings);
  expect_round_trip(kActionabilityStrings);
  expect_round_trip(kPlanStatusStrings);
  expect_round_trip(kBenefitTierStrings);
  expect_round_trip(kCapabilityKindStrings);
  expect_round_trip(kMaterialOriginStrings);
  expect_round_trip(kConsentModeStrings);
  expect_round_trip(kOutcomeStrings);
  expect_round_trip(kEventKindStrings);
  expect_round_trip(kActionKindStrings);
  expect_round_trip(kCandidateActionabilityStrings);
  expect_round_trip(kAvailabilityStrings);
  expect_round_trip(kAssessmentTierStrings);
  expect_round_trip(kDecisionStrings);
  expect_round_trip(kDecisionBasisStrings);
  expect_round_trip(kSlotStateStrings);
  expect_round_trip(kHostStateStrings);
}

// An install outcome row's spelling comes from its one table (outcome rows and digests store it).
TEST(Vocabulary, InstallOutcomeIsSpelledByItsOneTable) {
  EXPECT_EQ(install_outcome_name(InstallOutcome::kApplied), "applied");
  EXPECT_EQ(install_outcome_name(InstallOutcome::kFailed), "failed");
  EXPECT_EQ(parse_enum<InstallOutcome>("applied"), InstallOutcome::kApplied);
  EXPECT_EQ(parse_enum<InstallOutcome>("failed"), InstallOutcome::kFailed);
  EXPECT_EQ(find_enum<InstallOutcome>("indeterminate"), std::nullopt);
  CTX_EXPECT_THROW(parse_enum<InstallOutcome>("Applied"), core::JsonFieldError,
                   "unknown install outcome");
}

// The spellings these enums replaced in payloads, plans, audits and store rows.
TEST(Vocabulary, NewlyTypedFieldsKeepTheirPersistedSpellings) {
  const std::pair<std::string_view, std::string_view> spelled[] = {
      {to_string(CandidateActionability::kUnavailable), "unavailable"},
      {to_string(CandidateActionability::kNone), "none"},
      {to_string(Availability::kUnsupported), "unsupported"},
      {to_string(AssessmentTier::kIneligible), "ineligible"},
      {to_string(Decision::kGranted), "granted"},
      {to_string(Decision::kDenied), "denied"},
      {to_string(DecisionBasis::kPreapprovedPolicy), "preapproved-policy"},
      {to_string(DecisionBasis::kInteractive), "interactive"},
      {to_string(SlotState::kIndeterminate), "indeterminate"},
      {to_string(HostState::kPromptContextPrepared), "prompt-context-prepared"}};
  for (const auto& [text, frozen] : spelled) EXPECT_EQ(text, frozen);
  // A ToolCallObserved outcome spells only the two invocations it can observe.
  EXPECT_EQ(kToolCallOutcomeStrings.find("succeeded"), Invocation::kInvokedSucceeded);
  EXPECT_EQ(kToolCallOutcomeStrings.find("failed"), Invocation::kInvokedFailed);
  EXPECT_EQ(kToolCallOutcomeStrings.find("not-invoked"), std::nullopt);
}

TEST(Vocabulary, OnlyLoadInstallAndManualCandidatesArePresentable) {
  std::set<std::string_view> presented;
  for (const CandidateActionability state : kCandidateActionabilityStrings.values) {
    const std::optional<Actionability> as = presentable(state);
    if (!as) continue;
    EXPECT_EQ(to_string(*as), to_string(state));  // the same persisted spelling
    presented.insert(to_string(state));
  }
  EXPECT_EQ(presented, (std::set<std::string_view>{"install", "load", "manual"}));
}

TEST(Vocabulary, PersistedSpellingsAreFrozen) {
  EXPECT_EQ(to_string(Effect::kRollbackActivate), "rollback-activate");
  EXPECT_EQ(to_string(HostLevel::kPromptContextExperiment), "prompt-context-experiment");
  EXPECT_EQ(to_string(Invocation::kInvokedSucceeded), "invoked-succeeded");
  EXPECT_EQ(to_string(CapabilityKind::kMcpServer), "mcp-server");
  EXPECT_EQ(to_string(EventKind::kProviderSubmissionObserved), "ProviderSubmissionObserved");
  EXPECT_EQ(to_string(ActionKind::kNoChange), "NoChange");
  // Spellings are case-sensitive.
  EXPECT_EQ(find_enum<PlanStatus>("Ready"), std::nullopt);
  EXPECT_EQ(find_enum<Installation>(" installed"), std::nullopt);
}

TEST(Vocabulary, AbstentionCodesKeepTheirSpellingsAndBelongToOneStatus) {
  std::map<std::string_view, PlanStatus> status_by_code;
  for (const AbstentionCode code : kAbstentionCodeStrings.values) {
    EXPECT_EQ(parse_enum<AbstentionCode>(to_string(code)), code);
    status_by_code.emplace(to_string(code), plan_status_of(code));
  }
  EXPECT_EQ(status_by_code, (std::map<std::string_view, PlanStatus>{
                                {"below-net-benefit", PlanStatus::kAbstained},
                                {"catalog-unavailable", PlanStatus::kDegraded},
                                {"limit-zero", PlanStatus::kAbstained},
                                {"no-feasible-capability", PlanStatus::kAbstained},
                                {"planner-failed", PlanStatus::kDegraded}}));
  EXPECT_EQ(core::Json(AbstentionCode::kNoFeasibleCapability), "no-feasible-capability");
  EXPECT_EQ(to_string(TargetScope::kUser), "user");
  EXPECT_EQ(to_string(RollbackStrategy::kAtomicRestore), "atomic-restore");
  EXPECT_EQ(to_string(ExpiryReason::kExpired), "expired");
  EXPECT_EQ(find_enum<AbstentionCode>("exploded"), std::nullopt);
}

TEST(Vocabulary, ReaderReadsEnumsByTheirTraits) {
  const core::Json value = {{"effect", "prepare"}, {"status", "exploded"}};
  const core::JsonObjectReader r(value, "thing");
  EXPECT_EQ(r.enumerated<Effect>("effect"), Effect::kPrepare);
  EXPECT_EQ(r.optional_enumerated<Effect>("missing"), std::nullopt);
  CTX_EXPECT_THROW(r.enumerated<PlanStatus>("status"), core::JsonFieldError,
                   "unknown status; must be one of ready, abstained, degraded");
}

}  // namespace
}  // namespace ctx::engine
