#include "host/engine/reducer.hpp"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <utility>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/reducer_parts.hpp"

namespace ctx::engine {
namespace {

using namespace reducer_parts;  // NOLINT(google-build-using-namespace): the reducer's own parts

// ---- receipts (§3.7) ------------------------------------------------------------------------

PendingEffect receipt_pending(const W& w, const EngineEvent& event) {
  const Json& payload = event.payload();
  const std::string action_id = text(payload, "action_id", "action_id");
  const PendingEffect* found = nullptr;
  for (const auto& p : w.pending_effects) {
    if (p.action.action_id() == action_id) found = &p;
  }
  if (!found) invalid("receipt references unknown or completed action '" + action_id + "'");
  const HostAction& action = found->action;
  if (!(event.scope() == action.scope())) {
    invalid("receipt scope does not match pending action scope");
  }
  if (!payload.at("action_kind").is_string() ||
      find_enum<ActionKind>(payload.at("action_kind").get_ref<const std::string&>()) !=
          action.action_kind()) {
    invalid("receipt action_kind does not match pending action");
  }
  if (payload.at("action_content_digest") != action.content_digest()) {
    invalid("receipt action_content_digest does not match pending action");
  }
  if (payload.at("action_precondition_revision") != action.precondition_revision()) {
    invalid("receipt action_precondition_revision does not match pending action");
  }
  if (event.event_kind() != EventKind::kActionApplied) return *found;
  const Json& verification = payload.at("verification");
  if (verification.value("host_state", Json()) !=
      action.verification().value("expected_state", Json())) {
    invalid("receipt verification contradicts the requested physical state");
  }
  Json expected;
  const Json& ap = action.payload();
  const ActionKind kind = action.action_kind();
  if (kind == ActionKind::kInstallCapability) {
    expected = {{"capability_id", *action.entity_id()},
                {"capability_kind", ap.at("capability_kind")},
                {"catalog_identity", ap.at("catalog_identity")},
                {"host_state", "installed"},
                {"install_plan_descriptor", ap.at("install_plan_descriptor")},
                {"installer_digest", ap.at("installer_digest")},
                {"material_identity", ap.at("result_material")},
                {"policy_snapshot_digest", ap.at("policy_snapshot_digest")},
                {"schema", kInstallReceiptSchemaV3}};
  } else if (kind == ActionKind::kActivateCapability || kind == ActionKind::kPrepareExposure ||
             kind == ActionKind::kDeactivateCapability) {
    expected = {{"authorized_material", ap.at("authorized_material")},
                {"capability_id", *action.entity_id()},
                {"capability_kind", ap.at("capability_kind")},
                {"catalog_identity", ap.at("catalog_identity")},
                {"host_state", action.verification().at("expected_state")},
                {"material_identity", ap.at("material_identity")},
                {"schema", kMaterialReceiptSchemaV3}};
  } else {
    invalid("schema-v3 receipt action kind is unsupported");
  }
  if (verification != expected) {
    invalid("schema-v3 receipt does not byte-match the exact pending action authority");
  }
  return *found;
}

void apply_receipt(W& w, const PendingEffect& pending, const EngineEvent& event) {
  remove_pending(w, pending.action.action_id());
  const std::string id = pending.action.entity_id().value_or("");
  auto* c = find_cap(w, id);
  if (!c) invalid("schema-v3 receipt references missing runtime capability");
  if (pending.effect == Effect::kInstall) {
    if (!c->selection.is_install()) {
      invalid("schema-v3 install receipt lacks committed install authority");
    }
    const auto lineage = InstalledMaterialLineage::create(
        c->capability_id(), c->kind(), c->selection.catalog_identity().identity_digest(),
        c->material_identity.identity_digest(),
        c->selection.install_descriptor()->descriptor_digest(), pending.action.content_digest(),
        event.content_digest());
    c->installation = Installation::kInstalled;
    c->current_authorized_material = AuthorizedMaterial::from_installed(lineage);
    return;
  }
  if (pending.effect == Effect::kActivate || pending.effect == Effect::kRollbackActivate) {
    c->activation = Activation::kActive;
    c->activation_lease_id = pending.action.lease_id();
    if (pending.rollback_capability_id) {
      if (auto* rollback = find_cap(w, *pending.rollback_capability_id)) {
        CapabilityStateV3 cleared = *rollback;
        cleared.rollback_held = false;
        cleared.rollback_owner_id.reset();
        replace_or_prune(w, cleared);
      }
    }
    if (pending.effect == Effect::kRollbackActivate) {
      erase_value(w.rollback_requested_capability_ids, id);
    }
    return;
  }
  if (pending.effect == Effect::kDeactivate) {
    CapabilityStateV3 deactivated = *c;
    deactivated.activation = Activation::kInactive;
    deactivated.activation_lease_id.reset();
    replace_or_prune(w, deactivated);
    return;
  }
  if (pending.effect == Effect::kPrepare) {
    auto evidence = evidence_for(w, pending.action.scope().exposure_id(), id);
    if (evidence.exposure == Exposure::kUnexposed) {
      evidence.source_digest = c->source_digest();
      evidence.exposure = Exposure::kPrepared;
      replace_evidence(w, evidence);
    }
    return;
  }
  invalid("schema-v3 pending effect is unsupported");
}

void fail_receipt(W& w, const PendingEffect& pending) {
  remove_pending(w, pending.action.action_id());
  if (pending.effect == Effect::kPromptContext) return;
  const std::string id = pending.action.entity_id().value_or("");
  if (pending.effect == Effect::kInstall) {
    insert_sorted(w.blocked_install_descriptor_digests,
                  pending.action.install_payload()->install_plan_descriptor.descriptor_digest());
  } else if (pending.effect == Effect::kActivate) {
    insert_sorted(w.blocked_capability_ids, id);
    if (pending.rollback_capability_id && w.session_status != SessionStatus::kEnded) {
      insert_sorted(w.rollback_requested_capability_ids, *pending.rollback_capability_id);
    }
  } else if (pending.effect == Effect::kDeactivate) {
    if (auto* c = find_cap(w, id)) {
      c->rollback_held = false;
      c->rollback_owner_id.reset();
    }
    insert_sorted(w.blocked_deactivation_ids, id);
  } else if (pending.effect == Effect::kRollbackActivate) {
    erase_value(w.rollback_requested_capability_ids, id);
  }
}

// ---- other handlers -------------------------------------------------------------------------

Out handle_decision(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const Json& payload = event.payload();
  if (keys_of(payload) != std::set<std::string>{"consent_id", "decision", "decision_basis",
                                                "policy_snapshot_digest", "requested_action_id",
                                                "requested_action_kind",
                                                "requested_action_content_digest",
                                                "requested_action_precondition_revision"}) {
    invalid("v3 UserDecision requires exact decision provenance and action identity");
  }
  const std::string consent_id = text(payload, "consent_id", "consent_id");
  const auto it = std::find_if(w.pending_consents.begin(), w.pending_consents.end(),
                               [&](const PendingConsent& p) { return p.consent_id == consent_id; });
  if (it == w.pending_consents.end()) {
    invalid("UserDecision references unknown or completed consent");
  }
  const HostAction install = it->install_action;
  if (!(event.scope() == install.scope())) {
    invalid("UserDecision scope does not match pending consent");
  }
  if (payload.at("requested_action_id") != install.action_id() ||
      !same_action_kind(payload.at("requested_action_kind"), install) ||
      payload.at("requested_action_content_digest") != install.content_digest() ||
      payload.at("requested_action_precondition_revision") != install.precondition_revision()) {
    invalid("UserDecision does not match the exact requested install");
  }
  if (payload.at("policy_snapshot_digest") != install.install_payload()->policy_snapshot_digest) {
    invalid("UserDecision policy snapshot does not match pending install");
  }
  if (install.precondition_revision() != b.revision()) {
    invalid("UserDecision was not the immediate next committed revision");
  }
  w.pending_consents.erase(it);
  const bool expired =
      core::parse_rfc3339(event.occurred_at()) >= core::parse_rfc3339(*install.expires_at());
  if (find_enum<Decision>(text(payload, "decision", "decision")) == Decision::kDenied || expired) {
    insert_sorted(w.blocked_install_descriptor_digests,
                  install.install_payload()->install_plan_descriptor.descriptor_digest());
    Out out = reconcile(w, b);
    out.diagnostics.insert(
        out.diagnostics.begin(),
        Json{{"capability_id", *install.entity_id()},
             {"code", expired ? "install_consent_expired" : "install_consent_denied"}});
    return out;
  }
  with_pending(w, install, Effect::kInstall);
  return Out{{install}, {}};
}

Out handle_consent_expiry(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const Json& payload = event.payload();
  const std::string consent_id = text(payload, "consent_id", "consent_id");
  const auto it = std::find_if(w.pending_consents.begin(), w.pending_consents.end(),
                               [&](const PendingConsent& p) { return p.consent_id == consent_id; });
  if (it == w.pending_consents.end()) {
    invalid("InstallConsentExpired references unknown or completed consent");
  }
  const HostAction install = it->install_action;
  if (!(event.scope() == install.scope()) ||
      payload.at("policy_snapshot_digest") != install.install_payload()->policy_snapshot_digest ||
      payload.at("requested_action_id") != install.action_id() ||
      !same_action_kind(payload.at("requested_action_kind"), install) ||
      payload.at("requested_action_content_digest") != install.content_digest() ||
      payload.at("requested_action_precondition_revision") != install.precondition_revision() ||
      payload.at("install_expires_at") != *install.expires_at()) {
    invalid("InstallConsentExpired does not match the exact pending consent");
  }
  if (install.precondition_revision() != b.revision()) {
    invalid("InstallConsentExpired does not match the exact pending consent revision");
  }
  w.pending_consents.erase(it);
  return Out{{},
             {Json{{"capability_id", *install.entity_id()},
                   {"code", "install_consent_expired"},
                   {"consent_id", consent_id}}}};
}

Out prepare_exposure(W& w, const Builder& b) {
  Out out;
  const auto& exposure = b.event().scope().exposure_id();
  if (w.host_level != HostLevel::kActivating && w.host_level != HostLevel::kManaging) {
    out.diagnostics.push_back(
        {{"code", "host_activation_unsupported"}, {"host_level", to_string(w.host_level)}});
    return out;
  }
  for (std::size_t i = 0; i < w.capabilities.size(); ++i) {
    const auto& c = w.capabilities[i];
    const bool leased = std::any_of(c.leases.begin(), c.leases.end(),
                                    [&](const LeaseRef& l) { return l.exposure_id == exposure; });
    const bool pending = std::any_of(
        w.pending_effects.begin(), w.pending_effects.end(),
        [&](const PendingEffect& p) { return p.action.entity_id() == c.capability_id(); });
    if (!c.active() || !leased ||
        evidence_for(w, exposure, c.capability_id()).exposure != Exposure::kUnexposed || pending) {
      continue;
    }
    auto action = b.material(
        ActionKind::kPrepareExposure, c, static_cast<std::int64_t>(out.actions.size()),
        c.activation_lease_id.value_or("exposure:" + exposure + ":" + c.capability_id()));
    with_pending(w, action, Effect::kPrepare);
    out.actions.push_back(std::move(action));
  }
  return out;
}

Out observe_submission(W& w, const EngineEvent& event) {
  Out out;
  const Json& rows = array_of(event.payload(), "capabilities", "capabilities");
  std::size_t index = 0;
  for (const auto& item : rows) {
    const std::string at = "capabilities[" + std::to_string(index++) + "]";
    if (!item.is_object()) invalid(at + " must be an object");
    const std::string id = text(item, "capability_id", at + ".capability_id");
    const std::string source = text(item, "source_digest", at + ".source_digest");
    const auto* c = find_cap(w, id);
    if (!c || c->source_digest() != source) {
      out.diagnostics.push_back({{"capability_id", id}, {"code", "source_digest_mismatch"}});
      continue;
    }
    auto evidence = evidence_for(w, event.scope().exposure_id(), id);
    evidence.source_digest = source;
    evidence.exposure = Exposure::kSubmitted;
    replace_evidence(w, evidence);
  }
  return out;
}

Out observe_invocation(W& w, const EngineEvent& event) {
  const Json& payload = event.payload();
  const std::string id = text(payload, "capability_id", "capability_id");
  const std::string source = text(payload, "source_digest", "source_digest");
  const Json outcome = payload.value("outcome", Json());
  const std::optional<Invocation> invocation =
      outcome.is_string() ? kToolCallOutcomeStrings.find(outcome.get_ref<const std::string&>())
                          : std::nullopt;
  if (!invocation) invalid("outcome must be 'failed' or 'succeeded'");
  const auto* c = find_cap(w, id);
  if (!c || c->source_digest() != source) {
    return Out{{}, {Json{{"capability_id", id}, {"code", "source_digest_mismatch"}}}};
  }
  auto evidence = evidence_for(w, event.scope().exposure_id(), id);
  evidence.source_digest = source;
  evidence.invocation = *invocation;
  replace_evidence(w, evidence);
  return {};
}

Out retry_terminal_cleanup(W& w, const Builder& b) {
  const Json& payload = b.event().payload();
  if (keys_of(payload) != std::set<std::string>{"retry_failed_deactivations"}) {
    invalid("ended-session ReassessmentRequested must contain only retry_failed_deactivations");
  }
  std::vector<std::string> values;
  std::size_t index = 0;
  for (const auto& item :
       array_of(payload, "retry_failed_deactivations", "retry_failed_deactivations")) {
    const std::string at = "retry_failed_deactivations[" + std::to_string(index++) + "]";
    if (!item.is_string() || !is_trimmed_string(item.get_ref<const std::string&>())) {
      invalid(at + " must be a non-empty trimmed string");
    }
    values.push_back(item.get<std::string>());
  }
  const std::set<std::string> unique(values.begin(), values.end());
  if (values.empty() || values.size() > kMaxActiveCapabilities || unique.size() != values.size()) {
    invalid("retry_failed_deactivations must contain one to five unique IDs");
  }
  for (const auto& id : values) {
    const auto* c = find_cap(w, id);
    if (!contains(w.blocked_deactivation_ids, id) || !c || !c->active()) {
      invalid("terminal cleanup retry must target blocked active capabilities");
    }
  }
  for (const auto& id : values) {
    erase_value(w.blocked_deactivation_ids, id);
    erase_value(w.terminal_cleanup_notified_ids, id);
  }
  Out out = reconcile(w, b);
  out.diagnostics.push_back(
      {{"capability_ids", values}, {"code", "terminal_cleanup_retry_requested"}});
  return out;
}

Out refresh_stale_consent(W& w, const Builder& b, bool had_consent, Out out) {
  if (!had_consent || w.session_status == SessionStatus::kEnded || !w.pending_consents.empty()) {
    return out;
  }
  Out more = reconcile(w, b);
  out.actions.insert(out.actions.end(), more.actions.begin(), more.actions.end());
  out.diagnostics.insert(out.diagnostics.end(), more.diagnostics.begin(), more.diagnostics.end());
  return out;
}

Out handle_event(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const EventKind kind = event.event_kind();
  if (kind == EventKind::kUserDecision) return handle_decision(w, b);
  if (kind == EventKind::kInstallConsentExpired) return handle_consent_expiry(w, b);
  const bool had_consent = !w.pending_consents.empty();
  if (had_consent && !is_planning_kind(kind)) w.pending_consents.clear();
  if (kind == EventKind::kReassessmentRequested) {
    if (w.session_status != SessionStatus::kEnded) {
      update_desired(w, event);
      return reconcile(w, b);
    }
    return retry_terminal_cleanup(w, b);
  }
  if (is_receipt_kind(kind)) {
    const PendingEffect pending = receipt_pending(w, event);
    if (kind == EventKind::kActionApplied) {
      apply_receipt(w, pending, event);
    } else if (kind == EventKind::kActionExpired &&
               (pending.effect == Effect::kInstall ||
                (pending.effect == Effect::kActivate &&
                 pending.action.material_payload() != nullptr))) {
      remove_pending(w, pending.action.action_id());
      if (pending.effect == Effect::kActivate && pending.rollback_capability_id &&
          w.session_status != SessionStatus::kEnded) {
        insert_sorted(w.rollback_requested_capability_ids, *pending.rollback_capability_id);
      }
      return {};
    } else {
      fail_receipt(w, pending);
    }
    if (pending.effect == Effect::kPromptContext) {
      return refresh_stale_consent(w, b, had_consent, {});
    }
    return reconcile(w, b);
  }
  if (kind == EventKind::kProviderSubmissionObserved) {
    return refresh_stale_consent(w, b, had_consent, observe_submission(w, event));
  }
  if (kind == EventKind::kToolCallObserved) {
    return refresh_stale_consent(w, b, had_consent, observe_invocation(w, event));
  }
  if (kind == EventKind::kTurnStarting) {
    return refresh_stale_consent(w, b, had_consent, prepare_exposure(w, b));
  }
  if (kind == EventKind::kSessionEnded) {
    std::set<std::string> retained;
    for (const auto& p : w.pending_effects) {
      if (p.effect == Effect::kActivate && p.rollback_capability_id) {
        retained.insert(*p.rollback_capability_id);
      }
    }
    for (auto& c : w.capabilities) {
      c.leases.clear();
      if (!retained.count(c.capability_id())) {
        c.rollback_held = false;
        c.rollback_owner_id.reset();
      }
    }
    w.session_status = SessionStatus::kEnded;
    w.blocked_deactivation_ids.clear();
    w.rollback_requested_capability_ids.clear();
    return reconcile(w, b);
  }
  if (!had_consent || is_planning_kind(kind) || w.session_status == SessionStatus::kEnded ||
      !w.pending_consents.empty()) {
    return {};
  }
  return reconcile(w, b);
}

}  // namespace

std::string reducer_action_id(std::string_view digest, std::string_view kind,
                              std::string_view capability_id, std::int64_t ordinal) {
  std::string material = "ctx-engine-action-v1:";
  material.append(digest).append(":").append(kind).append(":");
  material.append(capability_id.empty() ? std::string_view("session") : capability_id);
  material.append(":").append(std::to_string(ordinal));
  return "action-" + core::sha256_hex(material);
}

std::string reducer_consent_id(std::string_view digest, std::string_view capability_id) {
  std::string material = "ctx-engine-consent-v1:";
  material.append(digest).append(":").append(capability_id);
  return "consent-" + core::sha256_hex(material);
}

namespace {

// The first event of a stream: SessionStarted at revision 0, naming its host.
Reduction start_session(const EngineEvent& event) {
  if (event.event_kind() != EventKind::kSessionStarted) {
    invalid("SessionStarted must be the first event");
  }
  if (event.expected_revision() != 0) throw RevisionConflictError(0, event.expected_revision());
  if (!event.host_descriptor_digest()) invalid("SessionStarted requires host_descriptor_digest");
  const Json level = event.payload().value("host_level", Json("query-only"));
  const auto host_level =
      level.is_string() ? find_enum<HostLevel>(level.get_ref<const std::string&>()) : std::nullopt;
  if (!host_level) invalid("unknown host_level " + level.dump());
  if (!is_digest(*event.host_descriptor_digest())) {
    invalid("host_descriptor_digest must be a lowercase SHA-256 digest");
  }
  auto next = EngineStateInternal::from_reducer(
      W{.revision = 1,
        .scope = event.scope(),
        .host_level = *host_level,
        .host_descriptor_digest = *event.host_descriptor_digest()});
  return Reduction{std::move(next),
                   Transition::create(event.event_id(), event.scope(), 0, 1, {}, {})};
}

// A later event belongs to this session at its revision, and to a session that accepts it.
void check_session_event(const EngineState& state, const EngineEvent& event) {
  if (event.expected_revision() != state.revision()) {
    throw RevisionConflictError(state.revision(), event.expected_revision());
  }
  if (!event.scope().same_session(state.scope())) {
    invalid("event scope does not match the current-work session scope");
  }
  if (event.host_descriptor_digest() &&
      *event.host_descriptor_digest() != state.host_descriptor_digest()) {
    invalid("host descriptor changed within a current-work session");
  }
  if (event.event_kind() == EventKind::kSessionStarted) invalid("session is already started");
  if (state.session_status() == SessionStatus::kEnded && !is_receipt_kind(event.event_kind()) &&
      event.event_kind() != EventKind::kReassessmentRequested) {
    invalid("session has ended; only pending receipts or explicit cleanup recovery are accepted");
  }
}

// A planning event commits its durable decision as the session's plan: a degraded plan changes
// nothing else; another reconciles the lifecycle, and a ready one presents the rows that are not
// already active as selected.
void commit_decision(const EngineState& state, const EngineEvent& event, const Json& decision,
                     const Builder& builder, W& w, Out& out) {
  if (!event.correlation_id()) invalid("correlation_id must be a non-empty trimmed string");
  if (!event.catalog_snapshot_digest() || !is_digest(*event.catalog_snapshot_digest())) {
    invalid("catalog_snapshot_digest must be a lowercase SHA-256 digest");
  }
  const auto plan = CommittedPlanV3::from_decision(*event.correlation_id(),
                                                   *event.catalog_snapshot_digest(), decision);
  std::set<std::string> retained_active;
  for (const auto& row : plan.capabilities()) {
    const auto* c = state.capability(row.capability_id());
    if (c && c->active() && c->selection == row) retained_active.insert(row.capability_id());
  }
  if (plan.status() == PlanStatus::kDegraded) {
    const W before = w;
    commit_plan(w, plan);
    CTX_CHECK(w.capabilities == before.capabilities &&
              w.pending_effects == before.pending_effects &&
              w.pending_consents == before.pending_consents && w.evidence == before.evidence &&
              w.blocked_capability_ids == before.blocked_capability_ids &&
              w.blocked_install_descriptor_digests == before.blocked_install_descriptor_digests &&
              w.install_policy_snapshot_digest == before.install_policy_snapshot_digest);
    out.diagnostics.push_back({{"code", *plan.abstention_code()}});
    return;
  }
  commit_plan(w, plan);
  Out lifecycle = reconcile(w, builder);
  out.actions.insert(out.actions.end(), lifecycle.actions.begin(), lifecycle.actions.end());
  out.diagnostics.insert(out.diagnostics.end(), lifecycle.diagnostics.begin(),
                         lifecycle.diagnostics.end());
  if (plan.status() != PlanStatus::kReady) {
    out.diagnostics.push_back({{"code", *plan.abstention_code()}});
    return;
  }
  Json rows = Json::array();
  for (const auto& row : plan.capabilities()) {
    if (!retained_active.count(row.capability_id())) rows.push_back(row.to_json());
  }
  if (!rows.empty()) {
    out.actions.push_back(builder.present_bundle(
        static_cast<std::int64_t>(out.actions.size()),
        Json{{"capabilities", rows}, {"plan_digest", plan.decision_digest()}}));
  }
}

}  // namespace

Reduction reduce_v3(const EngineState* state, const ReducerEvent& input) {
  const EngineEvent& event = input.event;
  const bool planning = is_planning_kind(event.event_kind());
  if (input.decision && !planning) invalid("decision is not valid for this event kind");
  if (planning && !input.decision) invalid("planning event is missing its durable decision");
  if (!state) return start_session(event);
  check_session_event(*state, event);

  const std::int64_t revision = state->revision() + 1;
  const Builder builder(event, revision);
  W w = state->fields();
  Out out = handle_event(w, builder);
  if (planning) commit_decision(*state, event, *input.decision, builder, w, out);

  w.revision = revision;
  CTX_CHECK(active_count(w) <= kMaxActiveCapabilities);
  auto next = EngineStateInternal::from_reducer(std::move(w));
  auto transition = Transition::create(event.event_id(), event.scope(), state->revision(), revision,
                                       std::move(out.actions), std::move(out.diagnostics));
  return Reduction{std::move(next), std::move(transition)};
}

}  // namespace ctx::engine
