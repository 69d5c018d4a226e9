// resolve_consent / recover_consent of the managed query service (runtime spec §3.14–§3.21): a
// signed human decision is checked without any broker lookup first (codec, audience, trusted
// verifier), then against the exact journal authority and the current install target before it
// is authenticated (so drift never burns an assertion), committed through the broker's one-shot
// guard, and a grant installs through the composition's captured actuator. Recovery never
// authenticates: it reconciles the broker with the journal and finishes, retires or expires
// exactly once.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/reducer.hpp"
#include "host/engine/replay.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/service/consent_publication.hpp"
#include "host/runtime/service/consent_resolution_crash_points.hpp"
#include "host/runtime/service/interactive_guard_slot.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime {

using core::Json;

// ---------------------------------------------------------------------------------------------
// Result

std::ostream& operator<<(std::ostream& out, ManagedConsentOutcome outcome) {
  return out << to_string(outcome);
}

ManagedConsentResolutionResult ManagedConsentResolutionResult::create(
    std::string challenge_digest, std::string capability_id, engine::CapabilityKind kind,
    ManagedConsentOutcome outcome, std::string reason_code,
    std::optional<ManagedConsentChallengeProjection> next_challenge,
    std::vector<ManagedActionSummary> actions, std::int64_t journal_revision,
    std::string journal_record_digest) {
  if (!core::is_sha256_hex(challenge_digest) || !core::is_sha256_hex(journal_record_digest)) {
    throw ManagedQueryServiceError("managed consent result requires exact digests");
  }
  if (!engine::is_opaque_token(capability_id) || !engine::is_opaque_token(reason_code)) {
    throw ManagedQueryServiceError("managed consent result requires token identities");
  }
  if (journal_revision < 1 || actions.size() > kMaxManagedActionSummaries) {
    throw ManagedQueryServiceError("managed consent result journal head is invalid");
  }
  const bool prompts = outcome == ManagedConsentOutcome::kConsentRequired ||
                       outcome == ManagedConsentOutcome::kReauthenticationRequired;
  if (next_challenge.has_value() != prompts) {
    throw ManagedQueryServiceError(
        "managed consent result carries a next challenge exactly when a human must decide");
  }
  if (next_challenge &&
      (next_challenge->capability_id() != capability_id || next_challenge->kind() != kind ||
       (outcome == ManagedConsentOutcome::kReauthenticationRequired &&
        next_challenge->challenge_digest() != challenge_digest))) {
    throw ManagedQueryServiceError(
        "managed consent next challenge must keep the capability, kind and reauthenticated "
        "challenge");
  }
  ManagedConsentResolutionResult result;
  result.challenge_digest_ = std::move(challenge_digest);
  result.capability_id_ = std::move(capability_id);
  result.kind_ = kind;
  result.outcome_ = outcome;
  result.reason_code_ = std::move(reason_code);
  if (next_challenge) result.next_challenge_.emplace(std::move(*next_challenge));
  result.actions_ = std::move(actions);
  result.journal_revision_ = journal_revision;
  result.journal_record_digest_ = std::move(journal_record_digest);
  return result;
}

std::ostream& operator<<(std::ostream& out, const ManagedConsentResolutionResult& value) {
  return out << "ManagedConsentResolutionResult(challenge_digest='" << value.challenge_digest_
             << "', outcome='" << to_string(value.outcome_) << "', reason_code='"
             << value.reason_code_ << "')";
}

// ---------------------------------------------------------------------------------------------
// Resolution

namespace {

bool pending_effect(const engine::EngineState& state, const std::string& action_id) {
  return state.pending_effect(action_id) != nullptr;
}

// The exact state after `revision` of `stream`, replayed from the verified journal records
// through the reducer (each transition must reproduce byte for byte).
engine::EngineState state_at(const store::SqliteJournalStore& journal,
                             const engine::StreamId& stream, engine::Revision revision) {
  std::optional<engine::EngineState> state;
  for (const auto& record : journal.read(stream, 0)) {
    if (record.revision > revision) break;
    const auto input = engine::ReplayInput::from_json_text(record.replay_json);
    std::optional<Json> decision;
    if (input.decision_surrogate) decision = input.decision_surrogate->value();
    auto reduction = engine::reduce_v3(state ? &*state : nullptr,
                                       engine::ReducerEvent{input.reducer_event, decision});
    if (reduction.transition.to_json_text() != record.transition_json) {
      throw ManagedQueryServiceError("managed consent journal does not replay exactly");
    }
    state.emplace(std::move(reduction.state));
  }
  if (!state || state->revision() != revision) {
    throw ManagedQueryHeadDriftError("managed consent head is not in the journal");
  }
  return std::move(*state);
}

// The head committed plan must still be the owner's (§3.17 step 1).
void require_exact_plan(const EngineSnapshot& snapshot, const ManagedQueryRecord& owner) {
  const auto& plan = snapshot.state ? snapshot.state->committed_plan() : std::nullopt;
  if (!plan || std::optional<std::string>(plan->plan_id()) != owner.plan_id() ||
      std::optional<std::string>(plan->decision_digest()) != owner.decision_digest() ||
      plan->catalog_snapshot_id() != owner.planning_environment_digest()) {
    throw ManagedDesiredSetSupersededError(
        "managed consent's parent plan is no longer authoritative");
  }
}

// The projection of one broker challenge (§3.1): five fields.
struct ConsentOwner {
  ManagedQueryRecord query;
  ManagedDesiredSetRecord desired;
  std::shared_ptr<const ManagedQueryInput> input;
};

// What the journal says about one consent now (§3.17).
struct ConsentContext {
  EngineSnapshot current;
  engine::JournalRecord consent_head;
  engine::PendingConsent pending;
  engine::HostAction request;
  engine::PlanCapabilityV3 selection;
  std::optional<engine::InstallExecutionBinding> binding;

  bool same_authority(const ConsentContext& other) const {
    return current.revision == other.current.revision &&
           current.record_digest == other.current.record_digest &&
           consent_head == other.consent_head && pending == other.pending &&
           request == other.request && binding == other.binding;
  }
  const engine::HostAction& install() const noexcept { return pending.install_action; }
};

struct ContextRequirements {
  const InstallConsentPolicy* policy = nullptr;  // require_current_policy
  bool resolve_binding = false;
  bool require_pending_head = false;
};

// The journal as the broker's evidence provider (§5.5): is our decision event committed, or is
// the stream still exactly at the consent head?
class JournalDecisionEvidence final : public DecisionEvidencePort {
 public:
  JournalDecisionEvidence(const store::SqliteJournalStore& journal, engine::StreamId stream,
                          engine::JournalRecord consent_head, engine::EngineEvent decision)
      : journal_(journal),
        stream_(std::move(stream)),
        consent_head_(std::move(consent_head)),
        decision_(std::move(decision)) {}

  EvidenceAnswer evidence(const ConsentRecord&) override {
    try {
      const store::SqliteJournalStore& journal = journal_;
      if (auto found = journal.find(stream_, decision_.event_id())) {
        if (found->event_content_digest != decision_.content_digest() ||
            found->revision != consent_head_.revision + 1) {
          return {JournalEvidence::kEventCollision, {}, {}};
        }
        return {JournalEvidence::kCommitted, found->event_id, found->event_content_digest};
      }
      const auto head = journal.head(stream_);
      if (head.revision == consent_head_.revision &&
          head.record_digest == std::optional<std::string>(consent_head_.record_digest)) {
        return {JournalEvidence::kAbsentAtExpectedHead, {}, {}};
      }
      return {JournalEvidence::kHeadAdvanced, {}, {}};
    } catch (const engine::JournalCorruption&) {
      return {JournalEvidence::kCorrupt, {}, {}};
    } catch (const engine::EventIdCollision&) {
      return {JournalEvidence::kEventCollision, {}, {}};
    } catch (const std::exception&) {
      return {JournalEvidence::kUnavailable, {}, {}};
    }
  }

 private:
  const store::SqliteJournalStore& journal_;
  engine::StreamId stream_;
  engine::JournalRecord consent_head_;
  engine::EngineEvent decision_;
};

// The broker's one-shot guard of one authenticated decision as the composition's interactive
// guard: armed in the service's guard slot only after authentication, so a decision cannot be
// committed before (§3.14 step 11).
// `settled` receives the record settle() committed.
InteractiveInstallDecisionGuard armed_guard(
    std::shared_ptr<ConsentDecisionGuard> armed,
    std::shared_ptr<std::optional<ConsentRecord>> settled) {
  return [guard = std::move(armed), settled = std::move(settled)](
             const engine::InteractiveInstallDecisionReservation& r) {
    guard->reserve(ConsentReservation{r.event_id, r.event_content_digest, r.consent_id,
                                      r.decision, r.policy_snapshot_digest,
                                      r.requested_action_id, r.requested_action_kind,
                                      r.requested_action_content_digest,
                                      r.requested_action_precondition_revision,
                                      r.install_expires_at});
    return std::function<void()>([guard, settled] { *settled = guard->settle(); });
  };
}

}  // namespace

// The consent half of ManagedQueryService (a friend): §3.14–§3.21 over its captured
// authorities.
class ConsentResolution {
 public:
  explicit ConsentResolution(ManagedQueryService& service)
      : service_(service), options_(service.options_), clock_(service.clock()) {}

  ManagedConsentResolutionResult resolve(std::string_view payload);
  ManagedConsentResolutionResult recover(const std::string& challenge_digest);

 private:
  ConsentBrokerPort& broker() const {
    if (!options_.consent_broker) {
      throw ManagedQueryServiceError(
          "managed consent resolution requires captured broker authorities");
    }
    return *options_.consent_broker;
  }

  ConsentPublicationIdentity publication_identity() const {
    return ConsentPublicationIdentity{broker().audience(),
                                      options_.consent_workspace_identity_digest,
                                      options_.consent_release_root_digest};
  }

  std::unique_ptr<EngineComposition> open(const ConsentOwner& owner, bool include_actuators,
                                          InteractiveInstallDecisionGuard guard) const {
    return open_managed_engine_composition(
        *options_.registry, owner.input->artifact_handle(),
        detail::composition_options(options_, std::move(guard), include_actuators));
  }

  // The binding the configured installer actuator would execute `descriptor` under now (the
  // same authority publication bound the challenge to). Errors: InstallActuatorError ("no
  // physical installation actuator", "root changed").
  engine::InstallExecutionBinding current_binding(
      const engine::InstallPlanDescriptor& descriptor) const {
    if (!options_.install_actuators) {
      throw InstallActuatorError("managed install consent has no physical installation actuator");
    }
    return options_.install_actuators->binding(descriptor);
  }

  std::optional<InstallPolicyStore> policy_store() const {
    if (!options_.policy_store_root) return std::nullopt;
    return InstallPolicyStore(*options_.policy_store_root);
  }

  ConsentOwner owner_of(const ConsentChallenge& challenge) const;
  ConsentContext context(EngineComposition& composition, const ConsentOwner& owner,
                         const ConsentChallenge& challenge, ContextRequirements needs) const;
  ConsentContext recheck(EngineComposition& composition, const ConsentOwner& owner,
                         const ConsentChallenge& challenge, ContextRequirements needs,
                         const ConsentContext& before) const;
  engine::EngineEvent decision_event(const ConsentRecord& record, const ConsentContext& context,
                                     const ConsentOwner& owner) const;
  ManagedConsentResolutionResult result(const ConsentChallenge& challenge,
                                        ManagedConsentOutcome outcome, std::string reason,
                                        bool with_next_challenge,
                                        const engine::Transition* committed = nullptr) const;
  ManagedConsentResolutionResult finish(EngineComposition& composition,
                                        const ConsentRecord& record, const ConsentOwner& owner,
                                        const ConsentContext& context,
                                        const engine::Transition* decision = nullptr) const;
  std::optional<ManagedConsentResolutionResult> retire_if_expired(
      EngineComposition& composition, const ConsentRecord& record, const ConsentOwner& owner,
      const ConsentContext& context) const;
  ManagedConsentResolutionResult expire(EngineComposition& composition,
                                        const ConsentRecord& record, const ConsentOwner& owner,
                                        const ConsentContext& context) const;

  ManagedQueryService& service_;
  const ManagedQueryServiceOptions& options_;
  const core::Clock& clock_;
};

// §3.16: the planned query that owns the challenge's scope and plan, and its latest desired set.
ConsentOwner ConsentResolution::owner_of(const ConsentChallenge& challenge) const {
  const auto& fields = challenge.fields();
  const auto scope = engine::ScopeRef::from_json(fields.scope);
  auto& store = *options_.query_store;
  auto query = store.find_planned_by_scope_and_plan(scope, fields.plan_id);
  if (!query) throw ManagedQueryServiceError("install consent has no exact managed query owner");
  if (!query->planned() || !query->decision_digest()) {
    throw ManagedQueryServiceError("install consent owner is not an exactly planned query");
  }
  auto desired = store.find_latest_desired_set(query->query_ref());
  if (!desired || !desired->committed() || desired->query_ref() != query->query_ref() ||
      std::optional<std::string>(desired->plan_id()) != query->plan_id()) {
    throw ManagedQuerySupersededError("install consent's desired choice was replaced");
  }
  auto input = service_.input_of(*query);
  return ConsentOwner{std::move(*query), std::move(*desired), std::move(input)};
}

// §3.17: the consent's exact journal authority, re-derived now.
ConsentContext ConsentResolution::context(EngineComposition& composition,
                                          const ConsentOwner& owner,
                                          const ConsentChallenge& challenge,
                                          ContextRequirements needs) const {
  const auto& f = challenge.fields();
  const auto scope = engine::ScopeRef::from_json(f.scope);
  const auto stream = scope.stream_id();
  auto current = composition.snapshot(scope);
  require_exact_plan(current, owner.query);
  const auto& desired_ids = owner.desired.capability_ids();
  if (std::find(desired_ids.begin(), desired_ids.end(), f.capability_id) == desired_ids.end()) {
    throw ManagedDesiredSetSupersededError("install consent capability is no longer desired");
  }
  const engine::Revision head_revision = f.requested_action_precondition_revision - 1;
  if (head_revision < 1 || head_revision > current.revision) {
    throw ManagedQueryHeadDriftError("install consent head is not in the managed journal");
  }
  store::SqliteJournalStore& journal = service_.journal_reader();
  auto records = journal.read(stream, head_revision - 1);
  if (records.empty() || records.front().revision != head_revision) {
    throw ManagedQueryHeadDriftError("install consent head is not in the managed journal");
  }
  engine::JournalRecord consent_head = std::move(records.front());
  const engine::EngineState state =
      head_revision == current.revision && current.state
          ? *current.state
          : state_at(journal, stream, head_revision);
  if (!(state.scope() == scope) || !state.committed_plan() ||
      state.committed_plan()->plan_id() != f.plan_id) {
    throw ManagedQueryHeadDriftError("install consent head does not hold the challenge's plan");
  }
  const auto& consents = state.pending_consents();
  if (consents.size() != 1 || consents.front().consent_id != f.challenge_id ||
      consents.front().install_action.action_id() != f.requested_action_id ||
      consents.front().install_action.content_digest() != f.requested_action_content_digest ||
      consents.front().install_action.precondition_revision() !=
          f.requested_action_precondition_revision) {
    throw ManagedQueryHeadDriftError(
        "install consent head does not hold exactly the challenge's pending consent");
  }
  const engine::PendingConsent pending = consents.front();
  const auto* capability = state.capability(f.capability_id);
  if (capability == nullptr || !capability->selection.is_install() ||
      !capability->selection.install_descriptor()) {
    throw ManagedQueryHeadDriftError("install consent capability has no exact install authority");
  }
  const auto transition = engine::Transition::from_json_text(consent_head.transition_json);
  auto request = consent_request_for(transition, pending);
  if (!request) {
    throw ManagedQueryHeadDriftError("install consent head did not request this consent");
  }
  const auto& descriptor = *capability->selection.install_descriptor();
  if (needs.policy != nullptr) {
    const auto route =
        route_install_authorization(*needs.policy, f.kind, descriptor.permission_expansion(),
                                    descriptor.credential_requirement());
    if (needs.policy->policy_digest() != f.policy_snapshot_digest || !route.interactive) {
      throw ManagedQueryHeadDriftError("install policy changed after consent publication");
    }
  }
  std::optional<engine::InstallExecutionBinding> binding;
  engine::InstallExecutionBinding derivation_binding = engine::InstallExecutionBinding::create(
      descriptor.installer_id(), pending.install_action.install_payload()->installer_digest,
      std::string(64, '0'), std::string(64, '0'));
  if (needs.resolve_binding) {
    binding.emplace(current_binding(descriptor));
    derivation_binding = *binding;
  }
  auto derived = derive_install_consent_challenge(state, pending, *request, derivation_binding,
                                                  publication_identity())
                     .fields();
  if (!binding) derived.execution_binding_digest = f.execution_binding_digest;
  const auto rederived = ConsentChallenge::create(std::move(derived));
  if (!(rederived == challenge)) {
    throw ManagedQueryHeadDriftError(
        binding ? "current install target no longer matches consent"
                : "install consent challenge no longer matches its exact journal authority");
  }
  if (needs.require_pending_head) {
    const auto& now = current.state;
    if (current.revision != consent_head.revision ||
        current.record_digest != std::optional<std::string>(consent_head.record_digest) || !now ||
        now->pending_consents().size() != 1 ||
        !(now->pending_consents().front() == pending)) {
      throw ManagedQueryHeadDriftError(
          "install consent is no longer the current pending journal head");
    }
  }
  return ConsentContext{std::move(current), std::move(consent_head), pending, std::move(*request),
                        capability->selection, std::move(binding)};
}

// context() again, after authentication. When the stream's head is still exactly `before`'s
// (revision and record digest: the journal is append-only and digest-chained, so the same head
// means the same records, state, pending consent and request, and so the same derivation), only
// what lives outside the journal is re-derived: the current install binding, which must equal
// `before`'s ("current install target no longer matches consent", as context() says when the
// re-derived challenge differs). Any other head: context() in full.
ConsentContext ConsentResolution::recheck(EngineComposition& composition,
                                          const ConsentOwner& owner,
                                          const ConsentChallenge& challenge,
                                          ContextRequirements needs,
                                          const ConsentContext& before) const {
  const auto scope = engine::ScopeRef::from_json(challenge.fields().scope);
  auto current = composition.snapshot(scope);
  if (!needs.resolve_binding || !before.binding || current.revision != before.current.revision ||
      current.record_digest != before.current.record_digest) {
    return context(composition, owner, challenge, needs);
  }
  auto binding = current_binding(*before.selection.install_descriptor());
  if (!(binding == *before.binding)) {
    throw ManagedQueryHeadDriftError("current install target no longer matches consent");
  }
  ConsentContext out = before;
  out.current = std::move(current);
  out.binding.emplace(std::move(binding));
  return out;
}

// §3.15: the interactive decision event of a decision-ready (or settled) broker record.
engine::EngineEvent ConsentResolution::decision_event(const ConsentRecord& record,
                                                      const ConsentContext& context,
                                                      const ConsentOwner& owner) const {
  if (!record.decision || !record.principal_digest || !record.authenticator_id ||
      !record.audience || !record.assertion_nonce_digest || !record.decision_issued_at ||
      !record.decision_expires_at) {
    throw ManagedQueryServiceError("install consent broker record carries no exact decision");
  }
  const auto& f = record.challenge.fields();
  const auto& install = context.install();
  const auto& desired = owner.desired;
  const Json payload = {
      {"consent_id", context.pending.consent_id},
      {"decision", *record.decision},
      {"decision_basis", "interactive"},
      {"policy_snapshot_digest", install.install_payload()->policy_snapshot_digest},
      {"requested_action_content_digest", install.content_digest()},
      {"requested_action_id", install.action_id()},
      {"requested_action_kind", install.action_kind()},
      {"requested_action_precondition_revision", install.precondition_revision()}};
  const std::string digest = core::canonical_digest(
      {{"assertion_nonce_digest", *record.assertion_nonce_digest},
       {"audience", *record.audience},
       {"authenticator_id", *record.authenticator_id},
       {"binding_digest", f.execution_binding_digest},
       {"challenge_digest", record.challenge.digest()},
       {"decision_expires_at", *record.decision_expires_at},
       {"decision_issued_at", *record.decision_issued_at},
       {"desired_event_content_digest", desired.event().content_digest()},
       {"desired_event_id", desired.event().event_id()},
       {"desired_journal_record_digest", *desired.journal_record_digest()},
       {"desired_journal_revision", *desired.journal_revision()},
       {"desired_set_ref", desired.desired_set_ref()},
       {"head_event_id", context.consent_head.event_id},
       {"head_record_digest", context.consent_head.record_digest},
       {"head_revision", context.consent_head.revision},
       {"install_action_content_digest", install.content_digest()},
       {"install_action_id", install.action_id()},
       {"payload", payload},
       {"principal_digest", *record.principal_digest},
       {"request_action_content_digest", context.request.content_digest()},
       {"request_action_id", context.request.action_id()},
       {"schema", "ctx.managed-interactive-install-decision.v1"}},
      core::Encoding::kAscii);
  engine::EngineEvent::Fields fields = desired.event().fields();
  fields.event_id = "ctx-interactive-install:" + digest;
  fields.kind = "UserDecision";
  fields.expected_revision = context.consent_head.revision;
  fields.occurred_at = *record.decision_issued_at;
  fields.payload = payload;
  fields.causation_id = context.request.action_id();
  return engine::EngineEvent::create(std::move(fields));
}

// A result for `challenge` at the current head of its stream. `committed`, when given, is a
// transition this call committed on that stream: when the head is still its revision, the head
// record is that transition's, and its actions are taken from it instead of re-parsed.
ManagedConsentResolutionResult ConsentResolution::result(
    const ConsentChallenge& challenge, ManagedConsentOutcome outcome, std::string reason,
    bool with_next_challenge, const engine::Transition* committed) const {
  const auto& f = challenge.fields();
  const auto stream = engine::ScopeRef::from_json(f.scope).stream_id();
  store::SqliteJournalStore& journal = service_.journal_reader();
  const auto head = journal.head(stream);
  if (head.revision < 1 || !head.record_digest) {
    throw ManagedQueryServiceError("managed consent stream has no journal head");
  }
  std::optional<ManagedConsentChallengeProjection> next;
  if (with_next_challenge) {
    next.emplace(ManagedConsentChallengeProjection::of(challenge));
  }
  if (committed != nullptr && committed->to_revision() == head.revision) {
    return ManagedConsentResolutionResult::create(
        challenge.digest(), f.capability_id, f.kind, outcome, std::move(reason), std::move(next),
        ManagedActionSummary::of_all(committed->actions()), head.revision, *head.record_digest);
  }
  auto tail = journal.read(stream, head.revision - 1);
  if (tail.size() != 1) throw ManagedQueryHeadDriftError("managed consent stream head moved");
  const auto transition = engine::Transition::from_json_text(tail.front().transition_json);
  return ManagedConsentResolutionResult::create(challenge.digest(), f.capability_id, f.kind,
                                                outcome, std::move(reason), std::move(next),
                                                ManagedActionSummary::of_all(transition.actions()),
                                                tail.front().revision, tail.front().record_digest);
}

// §3.19: retires a granted install that expired before any claim (ActionExpired, once).
std::optional<ManagedConsentResolutionResult> ConsentResolution::retire_if_expired(
    EngineComposition& composition, const ConsentRecord& record, const ConsentOwner& owner,
    const ConsentContext& context) const {
  const auto& install = context.install();
  const auto& challenge = record.challenge;
  if (install.expires_at() != std::optional<std::string>(challenge.fields().expires_at)) {
    throw ManagedQueryServiceError("install action expiry does not match its consent challenge");
  }
  const Json payload = {{"action_content_digest", install.content_digest()},
                        {"action_id", install.action_id()},
                        {"action_kind", install.action_kind()},
                        {"action_precondition_revision", install.precondition_revision()},
                        {"reason", "expired"}};
  const std::string digest = core::canonical_digest(
      {{"challenge_digest", challenge.digest()},
       {"decision_event_id", owner.desired.event().event_id()},
       {"install_action_content_digest", install.content_digest()},
       {"payload", payload},
       {"schema", "ctx.managed-install-action-expiry.v1"}},
      core::Encoding::kAscii);
  engine::EngineEvent::Fields fields = owner.desired.event().fields();
  fields.event_id = "ctx-install-action-expired:" + digest;
  fields.kind = "ActionExpired";
  fields.expected_revision = install.precondition_revision();
  fields.occurred_at = *install.expires_at();
  fields.payload = payload;
  fields.causation_id = install.action_id();
  const auto event = engine::EngineEvent::create(std::move(fields));
  const auto scope = install.scope();
  {
    store::SqliteJournalStore& journal = service_.journal_reader();
    if (auto found = journal.find(scope.stream_id(), event.event_id())) {
      if (found->event_content_digest != event.content_digest() ||
          found->revision != install.precondition_revision() + 1) {
        return result(challenge, ManagedConsentOutcome::kQuarantined, "journal-event-collision",
                      false);
      }
      return result(challenge, ManagedConsentOutcome::kExpired,
                    "install-approval-expired-before-claim", false);
    }
  }
  if (clock_.now() < core::parse_rfc3339(*install.expires_at())) return std::nullopt;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto head = composition.snapshot(scope);
    if (!head.state || !pending_effect(*head.state, install.action_id())) return std::nullopt;
    if (head.revision != install.precondition_revision()) {
      return result(challenge, ManagedConsentOutcome::kQuarantined,
                    "expired-install-head-is-ambiguous", false);
    }
    try {
      composition.process(event);
    } catch (const engine::InstallActionAlreadyClaimed&) {
      return std::nullopt;  // claimed before its expiry: reconcile the driver instead
    } catch (const engine::EventIdCollision&) {
      return result(challenge, ManagedConsentOutcome::kQuarantined, "journal-event-collision",
                    false);
    } catch (const engine::RevisionConflict&) {
      continue;
    }
    crash_point(consent_crash_points::kAfterExpiryCommit);
    return result(challenge, ManagedConsentOutcome::kExpired,
                  "install-approval-expired-before-claim", false);
  }
  throw ManagedQueryHeadDriftError("managed install expiry lost its journal head");
}

// §3.21: commits InstallConsentExpired for a pending consent whose challenge expired.
ManagedConsentResolutionResult ConsentResolution::expire(EngineComposition& composition,
                                                         const ConsentRecord& record,
                                                         const ConsentOwner& owner,
                                                         const ConsentContext& context) const {
  const auto& challenge = record.challenge;
  const auto& install = context.install();
  const Json payload = {
      {"consent_id", context.pending.consent_id},
      {"install_expires_at", *install.expires_at()},
      {"policy_snapshot_digest", install.install_payload()->policy_snapshot_digest},
      {"requested_action_content_digest", install.content_digest()},
      {"requested_action_id", install.action_id()},
      {"requested_action_kind", install.action_kind()},
      {"requested_action_precondition_revision", install.precondition_revision()}};
  const auto& head = context.consent_head;
  const std::string digest = core::canonical_digest(
      {{"challenge_digest", challenge.digest()},
       {"consent_head_event_id", head.event_id},
       {"consent_head_record_digest", head.record_digest},
       {"consent_head_revision", head.revision},
       {"payload", payload},
       {"schema", "ctx.managed-install-consent-expiry.v1"}},
      core::Encoding::kAscii);
  engine::EngineEvent::Fields fields = owner.desired.event().fields();
  fields.event_id = "ctx-install-consent-expired:" + digest;
  fields.kind = "InstallConsentExpired";
  fields.expected_revision = head.revision;
  fields.occurred_at = challenge.fields().expires_at;
  fields.payload = payload;
  fields.causation_id = context.request.action_id();
  const auto event = engine::EngineEvent::create(std::move(fields));
  const auto scope = install.scope();
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto now = composition.snapshot(scope);
    if (now.revision != head.revision) break;
    try {
      composition.process(event);
      crash_point(consent_crash_points::kAfterExpiryCommit);
    } catch (const engine::EventIdCollision&) {
      return result(challenge, ManagedConsentOutcome::kQuarantined, "journal-event-collision",
                    false);
    } catch (const engine::RevisionConflict&) {
      continue;
    }
    break;
  }
  store::SqliteJournalStore& journal = service_.journal_reader();
  auto next = journal.read(scope.stream_id(), head.revision);
  if (!next.empty() && next.front().event_id == event.event_id()) {
    if (next.front().event_content_digest != event.content_digest()) {
      return result(challenge, ManagedConsentOutcome::kQuarantined, "journal-event-collision",
                    false);
    }
    const auto transition = engine::Transition::from_json_text(next.front().transition_json);
    const auto after = composition.snapshot(scope);
    if (!transition.actions().empty() || !after.state ||
        std::any_of(after.state->pending_consents().begin(),
                    after.state->pending_consents().end(),
                    [&](const auto& c) { return c.consent_id == context.pending.consent_id; })) {
      throw ManagedQueryServiceError("install consent expiry did not retire exactly its consent");
    }
    return result(challenge, ManagedConsentOutcome::kExpired, "install-consent-challenge-expired",
                  false);
  }
  const auto now = composition.snapshot(scope);
  const bool still_pending =
      now.state && std::any_of(now.state->pending_consents().begin(),
                               now.state->pending_consents().end(), [&](const auto& c) {
                                 return c.install_action.action_id() == install.action_id();
                               });
  if (still_pending) {
    return result(challenge, ManagedConsentOutcome::kQuarantined,
                  "expired-consent-head-is-ambiguous", false);
  }
  return result(challenge, ManagedConsentOutcome::kSuperseded,
                "expired-consent-authority-was-refreshed", false);
}

// §3.18: the decision is committed and settled; execute a granted install, then classify.
// `decision`, when given, is the decision's transition this call committed (resolve()); without
// it (recovery) the decision is read back from the journal.
ManagedConsentResolutionResult ConsentResolution::finish(EngineComposition& composition,
                                                         const ConsentRecord& record,
                                                         const ConsentOwner& owner,
                                                         const ConsentContext& context,
                                                         const engine::Transition* decision) const {
  const auto& challenge = record.challenge;
  const auto event = decision_event(record, context, owner);
  if (record.state != ConsentState::kSettled || record.reservation_event_id != event.event_id() ||
      record.reservation_event_content_digest != event.content_digest()) {
    throw ManagedQueryServiceError("install consent broker is not settled by its decision event");
  }
  const auto& install = context.install();
  const auto scope = install.scope();
  if (decision != nullptr) {
    // Committed by this call through the journal, which refuses the event id with other content
    // (EventIdCollision): its transition names the event and the revision it was committed at.
    if (decision->event_id() != event.event_id() ||
        decision->to_revision() != install.precondition_revision()) {
      throw ManagedQueryServiceError("install consent decision is not its exact journal record");
    }
  } else {
    store::SqliteJournalStore& journal = service_.journal_reader();
    auto committed = journal.read(scope.stream_id(), install.precondition_revision() - 1);
    if (committed.empty() || committed.front().revision != install.precondition_revision() ||
        committed.front().event_id != event.event_id() ||
        committed.front().event_content_digest != event.content_digest()) {
      throw ManagedQueryServiceError("install consent decision is not its exact journal record");
    }
  }
  auto now = composition.snapshot(scope);
  require_exact_plan(now, owner.query);
  if (*record.decision == engine::Decision::kDenied) {
    if (pending_effect(*now.state, install.action_id())) {
      throw ManagedQueryServiceError("denied install consent left its install pending");
    }
    return result(challenge, ManagedConsentOutcome::kDenied, "human-denied-install", false,
                  decision);
  }
  std::optional<engine::Transition> installed_now;  // the receipt this call committed
  if (pending_effect(*now.state, install.action_id())) {
    if (now.state->pending_effects().size() != 1) {
      throw ManagedQueryServiceError("managed install effects must remain globally serialized");
    }
    if (auto retired = retire_if_expired(composition, record, owner, context)) {
      return std::move(*retired);
    }
    const auto binding = current_binding(*context.selection.install_descriptor());
    if (binding.binding_digest() != challenge.fields().execution_binding_digest ||
        (context.binding && !(binding == *context.binding))) {
      throw ManagedQueryHeadDriftError("current install target no longer matches consent");
    }
    auto report = composition.execute_install(install, context.selection, binding,
                                              install.install_payload()->policy_snapshot_digest);
    if (report.execution_binding_digest != binding.binding_digest()) {
      throw ManagedQueryServiceError("install report does not name the captured actuator");
    }
    if (report.outcome == engine::Outcome::kIndeterminate) {
      return result(challenge, ManagedConsentOutcome::kInstallIndeterminate,
                    "physical-install-outcome-indeterminate", false);
    }
    installed_now = std::move(report.transition);
    now = composition.snapshot(scope);
  }
  const engine::Transition* last = installed_now ? &*installed_now : decision;
  const auto* capability = now.state->capability(challenge.fields().capability_id);
  const auto& blocked = now.state->fields().blocked_install_descriptor_digests;
  const bool descriptor_blocked = std::find(blocked.begin(), blocked.end(),
                                            challenge.fields().descriptor_digest) != blocked.end();
  if (capability != nullptr && capability->installed()) {
    return capability->active()
               ? result(challenge, ManagedConsentOutcome::kQuarantined,
                        "installed-capability-is-already-active", false, last)
               : result(challenge, ManagedConsentOutcome::kInstalledInactive,
                        "physical-install-applied", false, last);
  }
  if (descriptor_blocked && (capability == nullptr || !capability->installed())) {
    return result(challenge, ManagedConsentOutcome::kInstallFailed, "physical-install-failed",
                  false, last);
  }
  throw ManagedQueryServiceError("granted install consent left no classifiable install state");
}

// §3.14.
ManagedConsentResolutionResult ConsentResolution::resolve(std::string_view payload) {
  const SignedAssertion assertion = decode_signed_assertion(payload);
  ConsentBrokerPort& consent = broker();
  if (assertion.audience() != consent.audience()) {
    throw ManagedQueryServiceError(
        "signed human decision names another audience than the consent broker");
  }
  if (!options_.verifier_registry) {
    throw ManagedQueryServiceError(
        "managed consent resolution requires trusted verifier authorities");
  }
  options_.verifier_registry->resolve(verifier_key_of(assertion));  // before any broker lookup

  ManagedQueryService::Operation op(service_);
  op.lifecycle();
  const ConsentRecord published = consent.status_by_challenge_digest(assertion.challenge_digest());
  if (published.state != ConsentState::kPending &&
      published.state != ConsentState::kReauthRequired) {
    throw ManagedQueryServiceError(
        "install consent challenge is not awaiting fresh authentication; recover it first");
  }
  const ConsentChallenge& challenge = published.challenge;
  const ConsentOwner owner = owner_of(challenge);
  const auto policies = policy_store();
  if (!policies) {
    throw ManagedQueryServiceError("signed install consent requires a persisted install policy");
  }
  // The policy is read once, under its lock, which is held for the rest of the resolution: every
  // writer (InstallPolicyStore::persist) takes the same lock, so it cannot change before the
  // hold ends and is not re-read.
  const auto held = [&] {
    try {
      return policies->hold(challenge.fields().policy_snapshot_digest);
    } catch (const InstallPolicyMissing&) {
      throw ManagedQueryServiceError(
          "signed install consent requires a persisted install policy");
    } catch (const InstallPolicyChanged&) {
      throw ManagedQueryHeadDriftError("install policy changed before human authentication");
    }
  }();
  // The service's kept composition (with the captured actuator), whose interactive guard refuses
  // every decision until the broker's guard of the one authenticated below is armed.
  EngineComposition& composition = op.composition(owner.input->artifact_handle());
  detail::InteractiveGuardSlot::Scope guard(*service_.interactive_guard_);  // set with a broker
  const ContextRequirements needs{&held.policy(), true, true};
  const ConsentContext before = context(composition, owner, challenge, needs);
  const VerifiedHumanDecision decision =
      consent.authenticate(challenge, payload, *options_.verifier_registry);
  const ConsentContext after = recheck(composition, owner, challenge, needs, before);
  if (!after.same_authority(before)) {
    throw ManagedQueryHeadDriftError(
        "install consent authority changed after human authentication");
  }
  auto settlement = std::make_shared<std::optional<ConsentRecord>>();
  guard.arm(armed_guard(std::make_shared<ConsentDecisionGuard>(
                            consent.interactive_guard(decision, after.binding->binding_digest())),
                        settlement));
  crash_point(consent_crash_points::kAfterAuthentication);
  // The decision-ready record authenticate() just committed: the published challenge with the
  // verified decision (nothing else here wrote the broker since; the guard's reservation
  // re-checks the stored decision against it in its own transaction).
  ConsentRecord decided = published;
  decided.state = ConsentState::kDecisionReady;
  decided.decision = decision.decision;
  decided.principal_digest = decision.principal_digest;
  decided.authenticator_id = decision.authenticator_id;
  decided.audience = decision.audience;
  decided.assertion_nonce_digest = decision.nonce_digest;
  decided.decision_issued_at = decision.issued_at;
  decided.decision_expires_at = decision.expires_at;
  const auto event = decision_event(decided, after, owner);
  const auto transition = composition.process(event);
  guard.disarm();
  const bool granted = decision.decision == engine::Decision::kGranted;
  const bool exact =
      granted ? transition.actions().size() == 1 && transition.actions().front() == after.install()
              : std::none_of(transition.actions().begin(), transition.actions().end(),
                             [](const auto& a) {
                               return a.action_kind() == engine::ActionKind::kInstallCapability;
                             });
  if (transition.event_id() != event.event_id() || !exact) {
    throw ManagedQueryServiceError("interactive install decision transition is not exact");
  }
  // The record the guard's settlement committed; read back only when the guard did not settle
  // in this call (the journal found the decision already committed).
  const ConsentRecord settled =
      *settlement ? **settlement : consent.status(challenge.challenge_id());
  if (settled.state != ConsentState::kSettled) {
    throw ManagedQueryServiceError("install consent broker did not settle its decision");
  }
  crash_point(consent_crash_points::kAfterDecisionCommit);
  return finish(composition, settled, owner, after, &transition);
}

// §3.20.
ManagedConsentResolutionResult ConsentResolution::recover(const std::string& challenge_digest) {
  if (!core::is_sha256_hex(challenge_digest)) {
    throw InvalidArgument("challenge_digest must be a lowercase SHA-256 digest");
  }
  ManagedQueryService::Operation op(service_);
  op.lifecycle();
  ConsentBrokerPort& consent = broker();
  const ConsentRecord record = consent.status_by_challenge_digest(challenge_digest);
  const ConsentChallenge& challenge = record.challenge;
  const bool authority_free = record.state != ConsentState::kPending;
  std::optional<ConsentOwner> owner;
  std::optional<InstallConsentPolicy> policy;
  std::unique_ptr<EngineComposition> composition;
  std::optional<ConsentContext> ctx;
  try {
    owner.emplace(owner_of(challenge));
    if (!authority_free) {
      const auto policies = policy_store();
      policy = policies ? policies->load() : InstallConsentPolicy::safe_default();
    }
    composition = open(*owner, !authority_free, {});
    ctx.emplace(context(*composition, *owner, challenge,
                        ContextRequirements{policy ? &*policy : nullptr, !authority_free,
                                            !authority_free}));
  } catch (const ManagedQuerySupersededError&) {
    return result(challenge, ManagedConsentOutcome::kSuperseded,
                  "desired-install-authority-was-replaced", false);
  }
  if (!authority_free) {
    return result(challenge, ManagedConsentOutcome::kConsentRequired,
                  "fresh-human-decision-required", true);
  }
  if (!record.decision) {
    if (record.state == ConsentState::kExpired) return expire(*composition, record, *owner, *ctx);
    throw ManagedQueryServiceError("install consent broker record has no recoverable decision");
  }
  const auto event = decision_event(record, *ctx, *owner);
  JournalDecisionEvidence evidence(service_.journal_reader(), ctx->install().scope().stream_id(),
                                   ctx->consent_head, event);
  const ConsentReconciliation report = consent.reconcile(challenge.challenge_id(), evidence);
  switch (report.outcome) {
    case ReconcileOutcome::kQuarantined:
      return result(challenge, ManagedConsentOutcome::kQuarantined,
                    "journal-" + std::string(core::to_string(report.journal_status)),
                    false);
    case ReconcileOutcome::kExpired:
      return expire(*composition, report.record, *owner, *ctx);
    case ReconcileOutcome::kReauthRequired: {
      const auto now = composition->snapshot(ctx->install().scope());
      if (now.revision != ctx->consent_head.revision ||
          now.record_digest != std::optional<std::string>(ctx->consent_head.record_digest)) {
        throw ManagedQueryHeadDriftError(
            "install consent is no longer the current pending journal head");
      }
      return result(challenge, ManagedConsentOutcome::kReauthenticationRequired,
                    "fresh-human-reauthentication-required", true);
    }
    case ReconcileOutcome::kSettled:
      break;
  }
  if (*report.record.decision == engine::Decision::kDenied) {
    return finish(*composition, report.record, *owner, *ctx);
  }
  if (auto retired = retire_if_expired(*composition, report.record, *owner, *ctx)) {
    return std::move(*retired);
  }
  const auto head = composition->snapshot(ctx->install().scope());
  if (!head.state || !pending_effect(*head.state, ctx->install().action_id())) {
    return finish(*composition, report.record, *owner, *ctx);
  }
  composition->close();
  composition = open(*owner, true, {});
  const ConsentContext executing =
      context(*composition, *owner, challenge, ContextRequirements{nullptr, true, false});
  return finish(*composition, report.record, *owner, executing);
}

// ---------------------------------------------------------------------------------------------
// Service entry points

ManagedConsentResolutionResult ManagedQueryService::resolve_consent(
    std::string_view assertion_payload) {
  if (::getpid() != owner_pid_) {
    throw ManagedQueryServiceError("managed query service cannot be used from a forked process");
  }
  return ConsentResolution(*this).resolve(assertion_payload);
}

ManagedConsentResolutionResult ManagedQueryService::recover_consent(
    const std::string& challenge_digest) {
  if (::getpid() != owner_pid_) {
    throw ManagedQueryServiceError("managed query service cannot be used from a forked process");
  }
  return ConsentResolution(*this).recover(challenge_digest);
}

}  // namespace ctx::runtime
