// The engine's enumerated vocabulary (spec §1.2–1.9): every enumerated field of events, actions,
// plans and state is one of these enum classes, and its persisted spelling is defined here once,
// in the enum's EnumStrings table. core::to_string(e) spells a value; core::parse_enum<E>(text)
// and JsonObjectReader::enumerated<E>(key) read one (unknown spellings are typed errors).
// Persisted spellings are frozen: never respell or reuse one. Thread-safe (constants).
#ifndef CTX_HOST_ENGINE_VOCABULARY_HPP_
#define CTX_HOST_ENGINE_VOCABULARY_HPP_

#include <optional>
#include <string>
#include <string_view>

#include "host/core/json_reader.hpp"

namespace ctx::engine {

using core::find_enum;
using core::parse_enum;
using core::to_string;

// Binds `Enum` to `table` for core::to_string / parse_enum / JsonObjectReader::enumerated, and
// makes nlohmann store it as its spelling (never as an integer). Json::get<Enum>() of an unknown
// spelling or a non-string throws core::JsonFieldError.
#define CTX_ENGINE_ENUM_STRINGS(Enum, table)                                          \
  }                                                                                   \
  namespace ctx::core {                                                               \
  template <>                                                                         \
  struct EnumTraits<::ctx::engine::Enum> {                                            \
    static constexpr const auto& kStrings = ::ctx::engine::table;                     \
  };                                                                                  \
  }                                                                                   \
  namespace ctx::engine {                                                             \
  inline void to_json(core::Json& json, Enum value) {                                 \
    json = std::string(core::to_string(value));                                       \
  }                                                                                   \
  inline void from_json(const core::Json& json, Enum& value) {                        \
    if (!json.is_string()) {                                                          \
      throw core::JsonFieldError(core::JsonFieldError::Reason::kWrongType, "",        \
                                 std::string(table.what) + " must be a string");      \
    }                                                                                 \
    value = core::parse_enum<Enum>(json.get_ref<const std::string&>());               \
  }

// A capability runtime record's installation lifecycle.
enum class Installation { kAbsent, kInstalled };
inline constexpr core::EnumStrings<Installation, 2> kInstallationStrings{
    "installation", {Installation::kAbsent, Installation::kInstalled}, {"absent", "installed"}};
CTX_ENGINE_ENUM_STRINGS(Installation, kInstallationStrings)

// A capability runtime record's activation lifecycle.
enum class Activation { kInactive, kActive };
inline constexpr core::EnumStrings<Activation, 2> kActivationStrings{
    "activation", {Activation::kInactive, Activation::kActive}, {"inactive", "active"}};
CTX_ENGINE_ENUM_STRINGS(Activation, kActivationStrings)

// A privacy label's persistence classification and retention class (spec §1.2); the journal
// stores both with every record.
enum class PrivacyClass { kPublic, kInternal, kPrivate, kConfidential, kRestricted };
enum class Retention { kEphemeral, kSession, kWorkspace, kLocal, kPersistent, kAggregate };
inline constexpr core::EnumStrings<PrivacyClass, 5> kPrivacyClassStrings{
    "privacy classification",
    {PrivacyClass::kPublic, PrivacyClass::kInternal, PrivacyClass::kPrivate,
     PrivacyClass::kConfidential, PrivacyClass::kRestricted},
    {"public", "internal", "private", "confidential", "restricted"}};
inline constexpr core::EnumStrings<Retention, 6> kRetentionStrings{
    "retention class",
    {Retention::kEphemeral, Retention::kSession, Retention::kWorkspace, Retention::kLocal,
     Retention::kPersistent, Retention::kAggregate},
    {"ephemeral", "session", "workspace", "local", "persistent", "aggregate"}};
CTX_ENGINE_ENUM_STRINGS(PrivacyClass, kPrivacyClassStrings)
CTX_ENGINE_ENUM_STRINGS(Retention, kRetentionStrings)

// What a pending action does once its receipt arrives.
enum class Effect { kInstall, kActivate, kRollbackActivate, kDeactivate, kPrepare, kPromptContext };
inline constexpr core::EnumStrings<Effect, 6> kEffectStrings{
    "effect",
    {Effect::kInstall, Effect::kActivate, Effect::kRollbackActivate, Effect::kDeactivate,
     Effect::kPrepare, Effect::kPromptContext},
    {"install", "activate", "rollback-activate", "deactivate", "prepare", "prompt-context"}};
CTX_ENGINE_ENUM_STRINGS(Effect, kEffectStrings)

enum class SessionStatus { kActive, kEnded };
inline constexpr core::EnumStrings<SessionStatus, 2> kSessionStatusStrings{
    "session status", {SessionStatus::kActive, SessionStatus::kEnded}, {"active", "ended"}};
CTX_ENGINE_ENUM_STRINGS(SessionStatus, kSessionStatusStrings)

// What the host lets the engine do.
enum class HostLevel {
  kQueryOnly,
  kObserving,
  kActivating,
  kManaging,
  kPromptContextActivate,
  kPromptContextExperiment
};
inline constexpr core::EnumStrings<HostLevel, 6> kHostLevelStrings{
    "host level",
    {HostLevel::kQueryOnly, HostLevel::kObserving, HostLevel::kActivating, HostLevel::kManaging,
     HostLevel::kPromptContextActivate, HostLevel::kPromptContextExperiment},
    {"query-only", "observing", "activating", "managing", "prompt-context-activate",
     "prompt-context-experiment"}};
CTX_ENGINE_ENUM_STRINGS(HostLevel, kHostLevelStrings)

// Evidence: how far a capability was exposed, and what its invocation did.
enum class Exposure { kUnexposed, kPrepared, kSubmitted };
inline constexpr core::EnumStrings<Exposure, 3> kExposureStrings{
    "exposure",
    {Exposure::kUnexposed, Exposure::kPrepared, Exposure::kSubmitted},
    {"unexposed", "prepared", "submitted"}};
CTX_ENGINE_ENUM_STRINGS(Exposure, kExposureStrings)

enum class Invocation { kNotInvoked, kInvokedFailed, kInvokedSucceeded };
inline constexpr core::EnumStrings<Invocation, 3> kInvocationStrings{
    "invocation",
    {Invocation::kNotInvoked, Invocation::kInvokedFailed, Invocation::kInvokedSucceeded},
    {"not-invoked", "invoked-failed", "invoked-succeeded"}};
CTX_ENGINE_ENUM_STRINGS(Invocation, kInvocationStrings)

// A ToolCallObserved payload's "outcome" spells the invocation it observed.
inline constexpr core::EnumStrings<Invocation, 2> kToolCallOutcomeStrings{
    "tool call outcome", {Invocation::kInvokedFailed, Invocation::kInvokedSucceeded},
    {"failed", "succeeded"}};

// How a plan row can be acted on: loaded as is, installed first, or only advised.
enum class Actionability { kLoad, kInstall, kManual };
inline constexpr core::EnumStrings<Actionability, 3> kActionabilityStrings{
    "actionability",
    {Actionability::kLoad, Actionability::kInstall, Actionability::kManual},
    {"load", "install", "manual"}};
CTX_ENGINE_ENUM_STRINGS(Actionability, kActionabilityStrings)

// A retrieval candidate's state (spec §1.8): a superset of Actionability. Only load, install and
// manual candidates are presentable; the others are recorded but never planned.
enum class CandidateActionability { kLoad, kInstall, kManual, kUnavailable, kBlocked, kNone };
inline constexpr core::EnumStrings<CandidateActionability, 6> kCandidateActionabilityStrings{
    "candidate actionability",
    {CandidateActionability::kLoad, CandidateActionability::kInstall,
     CandidateActionability::kManual, CandidateActionability::kUnavailable,
     CandidateActionability::kBlocked, CandidateActionability::kNone},
    {"load", "install", "manual", "unavailable", "blocked", "none"}};
CTX_ENGINE_ENUM_STRINGS(CandidateActionability, kCandidateActionabilityStrings)

// The Actionability a presentable candidate state shares its spelling with, or nullopt for
// unavailable, blocked and none.
constexpr std::optional<Actionability> presentable(CandidateActionability state) noexcept {
  return find_enum<Actionability>(to_string(state));
}

enum class PlanStatus { kReady, kAbstained, kDegraded };
inline constexpr core::EnumStrings<PlanStatus, 3> kPlanStatusStrings{
    "plan status",
    {PlanStatus::kReady, PlanStatus::kAbstained, PlanStatus::kDegraded},
    {"ready", "abstained", "degraded"}};
CTX_ENGINE_ENUM_STRINGS(PlanStatus, kPlanStatusStrings)

// Why a plan has no rows: an abstained plan's limit-zero, no-feasible-capability or
// below-net-benefit (each with its benefit audit), or a degraded plan's catalog-unavailable or
// planner-failed (no audit). Persisted as the plan's and benefit result's "abstention_code".
enum class AbstentionCode {
  kLimitZero,
  kNoFeasibleCapability,
  kBelowNetBenefit,
  kCatalogUnavailable,
  kPlannerFailed
};
inline constexpr core::EnumStrings<AbstentionCode, 5> kAbstentionCodeStrings{
    "abstention code",
    {AbstentionCode::kLimitZero, AbstentionCode::kNoFeasibleCapability,
     AbstentionCode::kBelowNetBenefit, AbstentionCode::kCatalogUnavailable,
     AbstentionCode::kPlannerFailed},
    {"limit-zero", "no-feasible-capability", "below-net-benefit", "catalog-unavailable",
     "planner-failed"}};
CTX_ENGINE_ENUM_STRINGS(AbstentionCode, kAbstentionCodeStrings)

// The status of a plan abstaining with `code`: kAbstained (a policy decision, audited) or
// kDegraded (the planner could not decide).
constexpr PlanStatus plan_status_of(AbstentionCode code) noexcept {
  switch (code) {
    case AbstentionCode::kCatalogUnavailable:
    case AbstentionCode::kPlannerFailed:
      return PlanStatus::kDegraded;
    case AbstentionCode::kLimitZero:
    case AbstentionCode::kNoFeasibleCapability:
    case AbstentionCode::kBelowNetBenefit:
      break;
  }
  return PlanStatus::kAbstained;
}

// A committed plan row's benefit tier (load/install rows are executable, manual advisory).
enum class BenefitTier { kExecutable, kAdvisory };
inline constexpr core::EnumStrings<BenefitTier, 2> kBenefitTierStrings{
    "benefit tier", {BenefitTier::kExecutable, BenefitTier::kAdvisory}, {"executable", "advisory"}};
CTX_ENGINE_ENUM_STRINGS(BenefitTier, kBenefitTierStrings)

// A benefit candidate's host availability (spec §8.5), and its assessment's tier before
// selection: a BenefitTier or ineligible.
enum class Availability { kExecutable, kAdvisory, kUnsupported };
enum class AssessmentTier { kExecutable, kAdvisory, kIneligible };
inline constexpr core::EnumStrings<Availability, 3> kAvailabilityStrings{
    "availability",
    {Availability::kExecutable, Availability::kAdvisory, Availability::kUnsupported},
    {"executable", "advisory", "unsupported"}};
inline constexpr core::EnumStrings<AssessmentTier, 3> kAssessmentTierStrings{
    "assessment tier",
    {AssessmentTier::kExecutable, AssessmentTier::kAdvisory, AssessmentTier::kIneligible},
    {"executable", "advisory", "ineligible"}};
CTX_ENGINE_ENUM_STRINGS(Availability, kAvailabilityStrings)
CTX_ENGINE_ENUM_STRINGS(AssessmentTier, kAssessmentTierStrings)

// The declared capability kinds; a harness is never installed.
enum class CapabilityKind { kSkill, kAgent, kMcpServer, kHarness };
inline constexpr core::EnumStrings<CapabilityKind, 4> kCapabilityKindStrings{
    "capability kind",
    {CapabilityKind::kSkill, CapabilityKind::kAgent, CapabilityKind::kMcpServer,
     CapabilityKind::kHarness},
    {"skill", "agent", "mcp-server", "harness"}};
CTX_ENGINE_ENUM_STRINGS(CapabilityKind, kCapabilityKindStrings)

// Where journal-authorized material comes from.
enum class MaterialOrigin { kCatalog, kInstalled };
inline constexpr core::EnumStrings<MaterialOrigin, 2> kMaterialOriginStrings{
    "material origin", {MaterialOrigin::kCatalog, MaterialOrigin::kInstalled},
    {"catalog", "installed"}};
CTX_ENGINE_ENUM_STRINGS(MaterialOrigin, kMaterialOriginStrings)

// An install plan descriptor's target scope and rollback strategy: one declared value each.
enum class TargetScope { kUser };
enum class RollbackStrategy { kAtomicRestore };
inline constexpr core::EnumStrings<TargetScope, 1> kTargetScopeStrings{
    "target scope", {TargetScope::kUser}, {"user"}};
inline constexpr core::EnumStrings<RollbackStrategy, 1> kRollbackStrategyStrings{
    "rollback strategy", {RollbackStrategy::kAtomicRestore}, {"atomic-restore"}};
CTX_ENGINE_ENUM_STRINGS(TargetScope, kTargetScopeStrings)
CTX_ENGINE_ENUM_STRINGS(RollbackStrategy, kRollbackStrategyStrings)

// A kind's install consent mode.
enum class ConsentMode { kPreapprovedAuto, kAskEachTime };
inline constexpr core::EnumStrings<ConsentMode, 2> kConsentModeStrings{
    "consent mode", {ConsentMode::kPreapprovedAuto, ConsentMode::kAskEachTime},
    {"preapproved-auto", "ask-each-time"}};
CTX_ENGINE_ENUM_STRINGS(ConsentMode, kConsentModeStrings)

// A human's (or policy's) install decision, and what a UserDecision rests on: a verified
// interactive assertion or the preapproval policy.
enum class Decision { kGranted, kDenied };
enum class DecisionBasis { kInteractive, kPreapprovedPolicy };
inline constexpr core::EnumStrings<Decision, 2> kDecisionStrings{
    "decision", {Decision::kGranted, Decision::kDenied}, {"granted", "denied"}};
inline constexpr core::EnumStrings<DecisionBasis, 2> kDecisionBasisStrings{
    "decision basis", {DecisionBasis::kInteractive, DecisionBasis::kPreapprovedPolicy},
    {"interactive", "preapproved-policy"}};
CTX_ENGINE_ENUM_STRINGS(Decision, kDecisionStrings)
CTX_ENGINE_ENUM_STRINGS(DecisionBasis, kDecisionBasisStrings)

// The result an installer or host reports for an effect.
enum class Outcome { kApplied, kFailed, kIndeterminate };
inline constexpr core::EnumStrings<Outcome, 3> kOutcomeStrings{
    "outcome", {Outcome::kApplied, Outcome::kFailed, Outcome::kIndeterminate},
    {"applied", "failed", "indeterminate"}};
CTX_ENGINE_ENUM_STRINGS(Outcome, kOutcomeStrings)

// What an installer's reconcile reply says of one capability's install or activation slot
// ("install_state" / "activation_state"); the state a host reports (or an action expects)
// once an effect applied.
enum class SlotState { kApplied, kAbsent, kIndeterminate };
enum class HostState { kActive, kInactive, kPrepared, kInstalled, kPromptContextPrepared };
inline constexpr core::EnumStrings<SlotState, 3> kSlotStateStrings{
    "slot state", {SlotState::kApplied, SlotState::kAbsent, SlotState::kIndeterminate},
    {"applied", "absent", "indeterminate"}};
inline constexpr core::EnumStrings<HostState, 5> kHostStateStrings{
    "host state",
    {HostState::kActive, HostState::kInactive, HostState::kPrepared, HostState::kInstalled,
     HostState::kPromptContextPrepared},
    {"active", "inactive", "prepared", "installed", "prompt-context-prepared"}};
CTX_ENGINE_ENUM_STRINGS(SlotState, kSlotStateStrings)
CTX_ENGINE_ENUM_STRINGS(HostState, kHostStateStrings)

// Event kinds (§1.3).
enum class EventKind {
  kSessionStarted,
  kWorkspaceObserved,
  kIntentObserved,
  kDevelopmentObserved,
  kTurnStarting,
  kProviderSubmissionObserved,
  kToolCallObserved,
  kValidationObserved,
  kUserDecision,
  kActionApplied,
  kActionFailed,
  kActionExpired,
  kInstallConsentExpired,
  kReassessmentRequested,
  kTurnEnded,
  kSessionEnded
};
inline constexpr core::EnumStrings<EventKind, 16> kEventKindStrings{
    "event kind",
    {EventKind::kSessionStarted, EventKind::kWorkspaceObserved, EventKind::kIntentObserved,
     EventKind::kDevelopmentObserved, EventKind::kTurnStarting,
     EventKind::kProviderSubmissionObserved, EventKind::kToolCallObserved,
     EventKind::kValidationObserved, EventKind::kUserDecision, EventKind::kActionApplied,
     EventKind::kActionFailed, EventKind::kActionExpired, EventKind::kInstallConsentExpired,
     EventKind::kReassessmentRequested, EventKind::kTurnEnded, EventKind::kSessionEnded},
    {"SessionStarted", "WorkspaceObserved", "IntentObserved", "DevelopmentObserved",
     "TurnStarting", "ProviderSubmissionObserved", "ToolCallObserved", "ValidationObserved",
     "UserDecision", "ActionApplied", "ActionFailed", "ActionExpired", "InstallConsentExpired",
     "ReassessmentRequested", "TurnEnded", "SessionEnded"}};
CTX_ENGINE_ENUM_STRINGS(EventKind, kEventKindStrings)

// Why an ActionExpired receipt retired its action (payload "reason").
enum class ExpiryReason { kExpired };
inline constexpr core::EnumStrings<ExpiryReason, 1> kExpiryReasonStrings{
    "expiry reason", {ExpiryReason::kExpired}, {"expired"}};
CTX_ENGINE_ENUM_STRINGS(ExpiryReason, kExpiryReasonStrings)

// Host action kinds (§1.4).
enum class ActionKind {
  kPresentBundle,
  kRequestConsent,
  kInstallCapability,
  kActivateCapability,
  kPrepareExposure,
  kPreparePromptContext,
  kDeactivateCapability,
  kUninstallCapability,
  kNotify,
  kNoChange
};
inline constexpr core::EnumStrings<ActionKind, 10> kActionKindStrings{
    "action kind",
    {ActionKind::kPresentBundle, ActionKind::kRequestConsent, ActionKind::kInstallCapability,
     ActionKind::kActivateCapability, ActionKind::kPrepareExposure,
     ActionKind::kPreparePromptContext, ActionKind::kDeactivateCapability,
     ActionKind::kUninstallCapability, ActionKind::kNotify, ActionKind::kNoChange},
    {"PresentBundle", "RequestConsent", "InstallCapability", "ActivateCapability",
     "PrepareExposure", "PreparePromptContext", "DeactivateCapability", "UninstallCapability",
     "Notify", "NoChange"}};
CTX_ENGINE_ENUM_STRINGS(ActionKind, kActionKindStrings)

#undef CTX_ENGINE_ENUM_STRINGS

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_VOCABULARY_HPP_
