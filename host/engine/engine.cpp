#include "host/engine/engine.hpp"

#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/lru_map.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/reducer.hpp"

namespace ctx::engine {
namespace {

Transition stored_transition(const JournalRecord& record) {
  return Transition::from_json_text(record.transition_json);
}

// Replays one stored record on top of `previous`, demanding a byte-identical transition.
EngineState replay_record(const EngineState* previous, const JournalRecord& record) {
  if (record.reducer_version != kReducerV3) {
    throw UnsupportedReducerVersionError(
        "no exact reducer is registered for the requested version");
  }
  std::optional<ReplayInput> input;
  try {
    input = ReplayInput::from_json_text(record.replay_json);
  } catch (const InvalidArgument&) {
    throw ReplayDivergenceError(record.revision, "record-binding");
  }
  const auto& event = input->reducer_event;
  if (input->reducer_version != record.reducer_version ||
      input->source_event_content_digest != record.event_content_digest ||
      event.event_id() != record.event_id || event.expected_revision() != record.revision - 1 ||
      !(event.scope().stream_id() == record.stream) ||
      event.privacy().classification() != record.privacy_classification ||
      event.privacy().retention() != record.retention_class) {
    throw ReplayDivergenceError(record.revision, "record-binding");
  }
  std::optional<Json> decision;
  if (input->decision_surrogate) decision = input->decision_surrogate->value();
  std::optional<Reduction> reduction;
  try {
    reduction.emplace(reduce_v3(previous, ReducerEvent{event, std::move(decision)}));
  } catch (const InvalidArgument&) {
    throw ReplayDivergenceError(record.revision, "reducer");
  }
  if (reduction->transition.to_json_text() != record.transition_json) {
    throw ReplayDivergenceError(record.revision, "transition");
  }
  return std::move(reduction->state);
}

bool is_v3_material(const HostAction& action) { return action.material_payload() != nullptr; }

const PendingConsent* find_consent(const EngineState& state, const Json& consent_id) {
  for (const auto& c : state.pending_consents()) {
    if (consent_id == c.consent_id) return &c;
  }
  return nullptr;
}

// True when payload[key] is the persisted spelling of `kind`.
bool spells_action_kind(const Json& payload, const char* key, ActionKind kind) {
  const auto it = payload.find(key);
  return it != payload.end() && it->is_string() &&
         find_enum<ActionKind>(it->get_ref<const std::string&>()) == kind;
}

bool consent_matches(const EngineEvent& event, const HostAction& install) {
  const Json& p = event.payload();
  return event.scope() == install.scope() &&
         p.value("requested_action_id", Json()) == install.action_id() &&
         spells_action_kind(p, "requested_action_kind", install.action_kind()) &&
         p.value("requested_action_content_digest", Json()) == install.content_digest() &&
         p.value("requested_action_precondition_revision", Json()) ==
             install.precondition_revision() &&
         p.value("policy_snapshot_digest", Json()) ==
             install.install_payload()->policy_snapshot_digest;
}

// The exact decision an interactive UserDecision `event` asserts about its pending `install`.
InteractiveInstallDecisionReservation reservation_of(const EngineEvent& event,
                                                     const std::string& source_digest,
                                                     const HostAction& install) {
  const Json& payload = event.payload();
  return InteractiveInstallDecisionReservation{
      event.scope(),          event.event_id(),        source_digest,
      payload.at("consent_id"), payload.at("decision").get<Decision>(),
      payload.at("policy_snapshot_digest"), install.action_id(), install.action_kind(),
      install.content_digest(),
      install.precondition_revision(), *install.expires_at()};
}

core::Timestamp at(const std::optional<std::string>& text) {
  return core::parse_rfc3339(text.value_or(""));
}

}  // namespace

// ---- ReducerReplayer -------------------------------------------------------------------------

std::string ReducerReplayer::apply(const JournalRecord& record) {
  EngineState next = replay_record(state_ ? &*state_ : nullptr, record);
  std::string text = next.to_json_text();
  state_.emplace(std::move(next));
  return text;
}

// ---- Decoded head states ----------------------------------------------------------------------

namespace {

// Head states this process decoded, by state digest, least recently used evicted first, bounded
// by count and bytes (a state above a quarter of the budget is not kept). A stored state whose
// canonical text equals a remembered one byte for byte is that state: decoding and re-encoding it
// again could only reproduce it.
class DecodedStates {
 public:
  std::shared_ptr<const EngineState> find(const std::string& digest, std::string_view text) {
    std::lock_guard lock(mutex_);
    const Entry* entry = entries_.find(digest);
    if (entry == nullptr || entry->text != text) return nullptr;
    return entry->state;
  }

  void remember(const std::string& digest, std::string_view text,
                std::shared_ptr<const EngineState> state) {
    std::lock_guard lock(mutex_);
    entries_.put(digest, Entry{std::string(text), std::move(state)}, text.size());
  }

 private:
  struct Entry {
    std::string text;
    std::shared_ptr<const EngineState> state;
  };
  static constexpr std::size_t kMaxBytes = 32u << 20;

  std::mutex mutex_;
  core::LruMap<std::string, Entry> entries_{core::LruBounds{
      .max_entries = 128, .max_bytes = kMaxBytes, .max_entry_bytes = kMaxBytes / 4}};
};

DecodedStates& decoded_states() {
  static DecodedStates* states = new DecodedStates();  // never destroyed (exit-safe)
  return *states;
}

// What authorises one event (§5 steps 5–6): the settlement guard its append carries, the
// one-shot reservation of an interactive install decision, and whether a current policy
// preapproved it.
struct Authority {
  std::optional<SettlementGuard> append_guard;
  std::optional<InteractiveInstallDecisionReservation> reservation;
  bool guard_used = false;
  bool preapproved = false;
};

// An install decision for a pending consent: unexpired by the trusted clock, and granted either
// by the current preapproval policy (its guard holding that policy) or through the host's
// one-shot interactive guard. Errors: CtxEngineError naming what does not hold.
void authorize_decision(const EngineState& state, const EngineEvent& event,
                        const std::string& source_digest, const EnginePorts& ports,
                        core::Timestamp now, Authority& out) {
  const Json& payload = event.payload();
  const PendingConsent* consent = find_consent(state, payload.at("consent_id"));
  if (!consent || !consent_matches(event, consent->install_action)) {
    throw CtxEngineError("install decision does not match an exact pending consent");
  }
  const HostAction& install = consent->install_action;
  // check_user_decision (at ingress) admitted only declared spellings.
  const DecisionBasis basis = payload.at("decision_basis").get<DecisionBasis>();
  if (now >= at(install.expires_at())) {
    throw CtxEngineError("install decision has expired according to trusted clock");
  }
  if (basis == DecisionBasis::kPreapprovedPolicy) {
    if (payload.at("decision").get<Decision>() != Decision::kGranted) {
      throw CtxEngineError("preapproved install policy decisions may only grant");
    }
    const auto& policy_guard = ports.preapproved_install_policy_guard;
    if (!policy_guard.hold || !policy_guard.assert_current) {
      throw CtxEngineError("preapproved install requires an authoritative current-policy guard");
    }
    const std::string digest = payload.at("policy_snapshot_digest");
    const auto policy = policy_guard.hold(digest);
    const InstallPlanDescriptor& descriptor = install.install_payload()->install_plan_descriptor;
    const bool by_policy = policy && policy->policy_digest() == digest &&
                           route_install_authorization(*policy, descriptor).decision_basis ==
                               DecisionBasis::kPreapprovedPolicy;
    const bool by_approval = policy && policy->policy_digest() == digest && policy_guard.approved &&
                             policy_guard.approved(descriptor, digest);
    if (!by_policy && !by_approval) {
      throw CtxEngineError("preapproved install is not authorized by current policy");
    }
    out.preapproved = true;
  } else if (!ports.interactive_install_decision_guard) {
    throw CtxEngineError(
        "interactive install decision requires a host-authenticated one-shot guard");
  }
  if (!out.preapproved) out.reservation = reservation_of(event, source_digest, install);
}

// A consent expiry names its exact pending consent, which the trusted clock says has expired.
void check_consent_expiry(const EngineState& state, const EngineEvent& event, core::Timestamp now) {
  const Json& payload = event.payload();
  const PendingConsent* consent = find_consent(state, payload.at("consent_id"));
  if (!consent || !consent_matches(event, consent->install_action) ||
      payload.at("install_expires_at") != *consent->install_action.expires_at()) {
    throw CtxEngineError("install consent expiry does not match an exact pending consent");
  }
  if (now < at(consent->install_action.expires_at())) {
    throw CtxEngineError("install consent has not expired according to trusted clock");
  }
}

// An expiry of a pending install or activation: exactly that action, expired by the trusted
// clock (with a claim store, its append settles the claim as expired).
void authorize_action_expiry(const HostAction& action, bool install, const Json& payload,
                             bool has_claims, core::Timestamp now, Authority& out) {
  const Json expected = {{"action_content_digest", action.content_digest()},
                         {"action_id", action.action_id()},
                         {"action_kind", action.action_kind()},
                         {"action_precondition_revision", action.precondition_revision()},
                         {"reason", "expired"}};
  if (payload != expected) {
    throw CtxEngineError("action expiry does not match the exact pending action");
  }
  if (now < at(action.expires_at())) {
    throw CtxEngineError(install ? "install action has not expired according to trusted clock"
                                 : "activation action has not expired according to trusted clock");
  }
  if (has_claims) {
    out.append_guard = SettlementGuard{
        install ? ExecutionAuthority::kInstall : ExecutionAuthority::kActivation,
        action.action_id(), action.content_digest(), GuardMode::kExpired, std::nullopt};
  }
}

// A receipt of a pending install or (v3) activation: an expiry (above), or an applied/failed
// receipt that carries the verified execution outcome's guard for exactly that action.
// Errors: Install/ActivationExecutionOutcomeRequired without it.
void authorize_receipt(const EngineState& state, const EngineEvent& event,
                       const std::optional<SettlementGuard>& supplied, bool has_claims,
                       core::Timestamp now, Authority& out) {
  const Json& payload = event.payload();
  const PendingEffect* pending = state.pending_effect(payload.at("action_id").get<std::string>());
  const bool install = pending && pending->effect == Effect::kInstall;
  const bool activation = pending &&
                          pending->action.action_kind() == ActionKind::kActivateCapability &&
                          is_v3_material(pending->action);
  if (!pending || (!install && !activation)) return;
  const HostAction& action = pending->action;
  if (event.event_kind() == EventKind::kActionExpired &&
      (install || (activation && pending->effect == Effect::kActivate))) {
    authorize_action_expiry(action, install, payload, has_claims, now, out);
    return;
  }
  const auto authority = install ? ExecutionAuthority::kInstall : ExecutionAuthority::kActivation;
  const auto mode =
      event.event_kind() == EventKind::kActionApplied ? GuardMode::kApplied : GuardMode::kFailed;
  const bool ok =
      supplied && supplied->authority == authority && supplied->action_id == action.action_id() &&
      supplied->action_content_digest == action.content_digest() && supplied->mode == mode &&
      supplied->execution_outcome_digest &&
      (install || (mode == GuardMode::kApplied && pending->effect == Effect::kActivate));
  if (!ok) {
    if (install) {
      throw InstallExecutionOutcomeRequired("install action " + action.action_id() +
                                            " has no verified execution outcome");
    }
    throw ActivationExecutionOutcomeRequired("activation action " + action.action_id() +
                                             " has no verified execution outcome");
  }
  out.append_guard = supplied;
  out.guard_used = true;
}

// The authority of `event` on `state` (nullptr: a new stream). A supplied execution guard must be
// used by a receipt of its pending action. Errors: as the steps above; CtxEngineError for an
// unused guard.
Authority classify_authority(const EngineState* state, const EngineEvent& event,
                             const std::string& source_digest,
                             const std::optional<SettlementGuard>& supplied,
                             const EnginePorts& ports, bool has_claims, core::Timestamp now) {
  Authority out;
  if (state && event.event_kind() == EventKind::kUserDecision &&
      event.payload().contains("decision_basis")) {
    authorize_decision(*state, event, source_digest, ports, now, out);
  } else if (state && event.event_kind() == EventKind::kInstallConsentExpired) {
    check_consent_expiry(*state, event, now);
  } else if (state && is_receipt_kind(event.event_kind())) {
    authorize_receipt(*state, event, supplied, has_claims, now, out);
  }
  if (supplied && !out.guard_used) {
    throw CtxEngineError("execution guard does not match the pending action of this receipt");
  }
  return out;
}

// Holds the guards a decision's commit needs, just before it: the interactive decision's one-shot
// reservation (its settle function returned; empty without one), and a preapproved decision's
// policy still current.
std::function<void()> hold_decision_guards(const Authority& authority, const EnginePorts& ports) {
  std::function<void()> settle;
  if (authority.reservation) {
    try {
      settle = ports.interactive_install_decision_guard(*authority.reservation);
    } catch (const std::exception&) {
      throw CtxEngineError("interactive install decision guard is unavailable");
    }
  }
  if (authority.preapproved) {
    try {
      ports.preapproved_install_policy_guard.assert_current();
    } catch (const std::exception&) {
      throw CtxEngineError("preapproved install policy is no longer authoritative");
    }
  }
  return settle;
}

}  // namespace

// ---- Engine ---------------------------------------------------------------------------------

Engine::Engine(JournalStore& journal, ClaimStore* claims, const core::Clock& clock,
               EnginePorts ports, EngineOptions options)
    : journal_(journal),
      claims_(claims),
      clock_(clock),
      ports_(std::move(ports)),
      options_(options),
      streams_(options.stream_cache_capacity) {
  if (options_.stream_cache_capacity < 1) {
    throw InvalidArgument("stream_cache_capacity must be at least 1");
  }
}

ClaimStore& Engine::claims() const {
  if (!claims_) throw CtxEngineError("engine has no claim store for execution authority");
  return *claims_;
}

EngineSnapshot Engine::snapshot(const StreamId& stream) {
  std::lock_guard lock(mutex_);
  return snapshot_locked(stream);
}

EngineSnapshot Engine::snapshot_locked(const StreamId& stream) {
  return snapshot_at(stream, journal_.head(stream));
}

void Engine::remember(Cached entry) {
  const std::string key = entry.stream_key;
  streams_.put(key, std::move(entry));
}

// `head` was just read from the journal: a cached state of exactly that head is reused;
// otherwise the stored latest state is loaded (O(1) in stream length) and checked.
EngineSnapshot Engine::snapshot_at(const StreamId& stream, const JournalHead& head) {
  const std::string& key = stream.stream_key();
  if (head.revision == 0) return EngineSnapshot{stream, 0, std::nullopt, std::nullopt};
  if (const Cached* found = streams_.find(key)) {
    const Cached& cached = *found;
    if (cached.revision == head.revision && head.record_digest == cached.record_digest) {
      return EngineSnapshot{stream, cached.revision, SharedState(cached.state),
                            cached.record_digest};
    }
  }
  std::optional<JournalLatest> latest = journal_.latest(stream);
  if (!latest) throw JournalCorruption("stream head has no stored state");
  std::shared_ptr<const EngineState> state =
      decoded_states().find(latest->state.digest(), latest->state.text());
  if (!state) {
    try {
      state =
          std::make_shared<const EngineState>(EngineState::from_json_text(latest->state.text()));
    } catch (const Error& e) {
      throw JournalCorruption("stream head state does not decode: " + std::string(e.what()));
    }
    if (state->to_json_text() != latest->state.text()) {
      throw JournalCorruption("stream head state does not belong to its head");
    }
    decoded_states().remember(latest->state.digest(), latest->state.text(), state);
  }
  if (state->revision() != latest->revision || !(state->scope().stream_id() == stream)) {
    throw JournalCorruption("stream head state does not belong to its head");
  }
  remember(Cached{key, latest->revision, latest->record_digest, state});
  return EngineSnapshot{stream, latest->revision, SharedState(std::move(state)),
                        latest->record_digest};
}

Transition Engine::process(const EngineEvent& event) {
  std::lock_guard lock(mutex_);
  return process_locked(event, std::nullopt);
}

Transition Engine::process_install_receipt(const EngineEvent& receipt,
                                           const SettlementGuard& guard) {
  if (guard.authority != ExecutionAuthority::kInstall) {
    throw InvalidArgument("install receipt requires an install settlement guard");
  }
  std::lock_guard lock(mutex_);
  return process_locked(receipt, guard);
}

Transition Engine::process_activation_receipt(const EngineEvent& receipt,
                                              const SettlementGuard& guard) {
  if (guard.authority != ExecutionAuthority::kActivation) {
    throw InvalidArgument("activation receipt requires an activation settlement guard");
  }
  std::lock_guard lock(mutex_);
  return process_locked(receipt, guard);
}

Transition Engine::process_locked(const EngineEvent& ingress,
                                  const std::optional<SettlementGuard>& supplied) {
  const PreflightedEvent pre = preflight_event(ingress);
  const StreamId stream = ingress.scope().stream_id();
  const auto& source_digest = pre.source_event_content_digest;

  // Identical retry / collision, before any revision check or planning.
  const JournalLookup lookup = journal_.lookup(stream, ingress.event_id());
  if (const auto& found = lookup.existing) {
    if (found->event_content_digest == source_digest) {
      settle_committed_decision(pre.reducer_event, source_digest, *found);
      return stored_transition(*found);
    }
    throw EventIdCollision(ingress.event_id(), found->event_content_digest, source_digest);
  }
  const JournalHead& head = lookup.head;
  if (head.revision != ingress.expected_revision()) {
    throw RevisionConflict(ingress.expected_revision(), head.revision);
  }
  const EngineSnapshot snap = snapshot_at(stream, head);
  if (snap.revision != ingress.expected_revision()) {
    throw RevisionConflict(ingress.expected_revision(), snap.revision);
  }
  const EngineState* state = snap.state ? &*snap.state : nullptr;
  const EngineEvent& event = pre.reducer_event;
  const core::Timestamp now = clock_.now();

  // Authority classification (§5 step 5–6).
  const Authority authority =
      classify_authority(state, event, source_digest, supplied, ports_, claims_ != nullptr, now);

  // Prepare (normalise + plan), reduce, commit.
  const ReplayInput input = prepare_replay_input(pre, state, &ports_.observation_normalizer,
                                                 &ports_.decision_planner);
  std::optional<Json> decision;
  if (input.decision_surrogate) decision = input.decision_surrogate->value();
  Reduction reduction = reduce_v3(state, ReducerEvent{input.reducer_event, std::move(decision)});

  JournalAppend request{
      stream,
      ingress.expected_revision(),
      ingress.event_id(),
      source_digest,
      std::string(kReducerV3),
      CanonicalText::adopt(input.to_json_text()),
      TransitionText{CanonicalText::adopt(reduction.transition.to_json_text()),
                     reduction.transition.event_id(), reduction.transition.to_revision(),
                     reduction.transition.scope().same_session(ingress.scope())
                         ? stream
                         : reduction.transition.scope().stream_id()},
      CanonicalText::adopt(reduction.state.to_json_text()),
      event.privacy().classification(),
      event.privacy().retention(),
      authority.append_guard};

  const std::function<void()> settle = hold_decision_guards(authority, ports_);
  // The identical decision committed (by this call or a concurrent identical one): settle.
  const auto settle_committed = [&settle] {
    if (!settle) return;
    try {
      settle();
    } catch (const std::exception&) {
      throw CtxEngineError("interactive install decision guard settlement failed");
    }
  };
  std::optional<JournalCommit> appended;
  try {
    appended.emplace(journal_.append(request));
  } catch (const RevisionConflict&) {
    if (auto found = journal_.find(stream, ingress.event_id());
        found && found->event_content_digest == source_digest) {
      settle_committed();
      return stored_transition(*found);
    }
    throw;
  }
  const JournalCommit& commit = *appended;
  if (commit.replayed) {
    settle_committed();
    return stored_transition(commit.record);
  }
  if (commit.record.transition_digest != request.transition.text.digest() ||
      commit.record.result_state_digest != request.result_state.digest() ||
      commit.record.revision != ingress.expected_revision() + 1) {
    throw ReplayDivergenceError(commit.record.revision, "commit-result");
  }
  remember(Cached{stream.stream_key(), commit.record.revision, commit.record.record_digest,
                  std::make_shared<const EngineState>(std::move(reduction.state))});
  settle_committed();
  return std::move(reduction.transition);
}

void Engine::settle_committed_decision(const EngineEvent& event, const std::string& source_digest,
                                       const JournalRecord& record) {
  const Json& payload = event.payload();
  if (event.event_kind() != EventKind::kUserDecision ||
      !payload.contains("decision_basis") ||
      payload.at("decision_basis").get<DecisionBasis>() != DecisionBasis::kInteractive ||
      !ports_.interactive_install_decision_guard || record.revision < 2) {
    return;
  }
  // The reservation names the consent's install action as it was pending before the decision:
  // the state just before this record, replayed (a rare retry path; the stream stores only its
  // head state).
  std::optional<EngineState> prior;
  for (const auto& earlier : journal_.read(record.stream, 0)) {
    if (earlier.revision >= record.revision) break;
    prior = replay_record(prior ? &*prior : nullptr, earlier);
  }
  const PendingConsent* consent =
      prior ? find_consent(*prior, payload.at("consent_id")) : nullptr;
  if (!consent || !consent->install_action.expires_at()) {
    throw ReplayDivergenceError(record.revision, "decision-reservation");
  }
  const auto reservation = reservation_of(event, source_digest, consent->install_action);
  try {
    const auto settle = ports_.interactive_install_decision_guard(reservation);
    if (settle) settle();
  } catch (const std::exception&) {
    throw CtxEngineError("interactive install decision guard settlement failed");
  }
}

// ---- host authority -------------------------------------------------------------------------

const PendingEffect& Engine::exact_pending(const EngineSnapshot& snap, const HostAction& action,
                                           const char* refusal) const {
  if (!snap.state) throw CtxEngineError(refusal);
  const PendingEffect* pending = snap.state->pending_effect(action.action_id());
  if (!pending || !(pending->action == action)) {
    throw CtxEngineError(refusal);
  }
  return *pending;
}

ActionClaim Engine::authorize_install(const HostAction& action, const PlanCapabilityV3& selection,
                                      const InstallPlanDescriptor& descriptor,
                                      const std::string& expected_catalog_snapshot_digest,
                                      const std::string& expected_policy_digest,
                                      const InstallExecutionBinding& binding) {
  static constexpr const char* kRefusal =
      "install action is not the exact pending journal authority";
  std::lock_guard lock(mutex_);
  const auto snap = snapshot_locked(action.scope().stream_id());
  const PendingEffect& pending = exact_pending(snap, action, kRefusal);
  if (pending.effect != Effect::kInstall ||
      action.action_kind() != ActionKind::kInstallCapability) {
    throw CtxEngineError(kRefusal);
  }
  if (!selection.is_install()) {
    throw CtxEngineError("legacy selections cannot authorize physical installation");
  }
  const CapabilityStateV3* capability = snap.state->capability(action.entity_id().value_or(""));
  if (!capability || !(capability->selection == selection) ||
      !(descriptor == *selection.install_descriptor()) ||
      action.catalog_snapshot_id() != expected_catalog_snapshot_digest ||
      action.install_payload()->policy_snapshot_digest != expected_policy_digest ||
      snap.state->install_policy_snapshot_digest() != expected_policy_digest) {
    throw CtxEngineError(kRefusal);
  }
  // The binding names the driver by its plugin identity digest (captured by the runtime when
  // the decision was committed); the payload's installer_digest names the typed-plan executor.
  if (binding.driver_id() != descriptor.installer_id()) {
    throw InvalidArgument("execution binding does not name the install descriptor's driver");
  }
  const std::string action_json = action.to_json_text();
  const std::string authorization = core::canonical_digest(
      Json{{"action", {{"content_digest", action.content_digest()}, {"json", action_json}}},
           {"catalog_snapshot_digest", expected_catalog_snapshot_digest},
           {"descriptor", descriptor.to_json()},
           {"policy_snapshot_digest", expected_policy_digest},
           {"schema", "ctx.install-action-authorization-v1"},
           {"selection", selection.to_json()}});
  return claims().claim_install(ClaimRequest{snap.stream_id, snap.revision, *snap.record_digest,
                                             action_json, authorization, binding.to_json_text(),
                                             binding.binding_digest(), std::nullopt});
}

ActionClaim Engine::authorize_activation(const HostAction& action,
                                         const InstallExecutionBinding& binding,
                                         const std::string& expected_host_descriptor_digest) {
  static constexpr const char* kRefusal =
      "activation action is not exact pending journal authority";
  std::lock_guard lock(mutex_);
  const auto snap = snapshot_locked(action.scope().stream_id());
  const PendingEffect& pending = exact_pending(snap, action, kRefusal);
  if (pending.effect != Effect::kActivate || !is_v3_material(action)) {
    throw CtxEngineError(kRefusal);
  }
  const CapabilityStateV3* capability = snap.state->capability(action.entity_id().value_or(""));
  if (!capability || !capability->installed() || capability->active() ||
      snap.state->host_descriptor_digest() != expected_host_descriptor_digest) {
    throw CtxEngineError(kRefusal);
  }
  std::optional<std::string> installed_by;
  if (const auto& current = capability->current_authorized_material;
      current && current->installed_material_lineage()) {
    installed_by = current->installed_material_lineage()->install_action_content_digest();
  }
  const std::string action_json = action.to_json_text();
  const std::string authorization = identity_digest_of(
      Json{{"action_content_digest", action.content_digest()},
           {"action_json", action_json},
           {"execution_binding_digest", binding.binding_digest()},
           {"host_descriptor_digest", expected_host_descriptor_digest},
           {"schema", "ctx.activation-action-authorization-v1"}});
  return claims().claim_activation(ClaimRequest{snap.stream_id, snap.revision,
                                                *snap.record_digest, action_json, authorization,
                                                binding.to_json_text(), binding.binding_digest(),
                                                installed_by});
}

SettlementGuard Engine::record_install_outcome(const HostAction& action,
                                               const InstallExecutionBinding& binding,
                                               InstallOutcome outcome,
                                               std::optional<std::string> observed,
                                               const std::string& verification_digest) {
  std::lock_guard lock(mutex_);
  std::optional<std::string> expected;
  if (const InstallBinding* install = action.install_payload()) {
    expected = install->result_material.identity_digest();
  }
  return claims()
      .record_install_outcome(InstallOutcomeRequest{action.scope().stream_id(),
                                                    action.to_json_text(), binding.binding_digest(),
                                                    outcome, std::move(observed),
                                                    verification_digest, expected})
      .settlement_guard();
}

SettlementGuard Engine::record_activation_outcome(const HostAction& action,
                                                  const InstallExecutionBinding& binding,
                                                  const std::string& observed,
                                                  const std::string& verification_digest) {
  std::lock_guard lock(mutex_);
  return claims()
      .record_activation_outcome(ActivationOutcomeRequest{action.scope().stream_id(),
                                                          action.to_json_text(),
                                                          binding.binding_digest(), observed,
                                                          verification_digest})
      .settlement_guard();
}

InstallExecutionStatus Engine::install_execution_status(const HostAction& action) const {
  return claims().install_execution_status(action.scope().stream_id(), action.action_id());
}

ActivationExecutionStatus Engine::activation_execution_status(const HostAction& action) const {
  return claims().activation_execution_status(action.scope().stream_id(), action.action_id());
}

}  // namespace ctx::engine
