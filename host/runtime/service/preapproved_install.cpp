#include "host/runtime/service/preapproved_install.hpp"

#include <algorithm>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/replay.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/errors.hpp"

namespace ctx::runtime::detail {
namespace {

using core::Json;

constexpr int kExpiryAttempts = 3;

const engine::CommittedPlanV3& exact_plan(const EngineSnapshot& snapshot,
                                          const ManagedQueryRecord& parent) {
  if (!snapshot.state || !snapshot.state->committed_plan() ||
      std::optional<std::string>(snapshot.state->committed_plan()->plan_id()) != parent.plan_id() ||
      std::optional<std::string>(snapshot.state->committed_plan()->decision_digest()) !=
          parent.decision_digest()) {
    throw ManagedDesiredSetSupersededError(
        "managed desired choice's parent plan is no longer authoritative");
  }
  return *snapshot.state->committed_plan();
}

engine::JournalRecord record_at(EngineComposition& composition, const engine::ScopeRef& scope,
                                engine::Revision revision) {
  auto record = composition.journal_record(scope, revision);
  if (!record) throw ManagedQueryHeadDriftError("managed install authority record is absent");
  return std::move(*record);
}

engine::Transition transition_of(const engine::JournalRecord& record) {
  return engine::Transition::from_json_text(record.transition_json);
}

// The transition at `revision` (the head): what this composition just committed there, or the
// journal's record.
engine::Transition head_transition(EngineComposition& composition, const engine::ScopeRef& scope,
                                   engine::Revision revision) {
  auto transition = composition.transition_at(scope, revision);
  if (!transition) throw ManagedQueryHeadDriftError("managed install authority record is absent");
  return std::move(*transition);
}

// The RequestConsent of `transition` that offers exactly `install` under `consent_id`.
const engine::HostAction* find_request(const engine::Transition& transition,
                                       const std::string& consent_id,
                                       const engine::HostAction& install) {
  const auto found = engine::consent_requests_offering(transition, consent_id, install);
  if (found.size() > 1) throw ManagedQueryServiceError("managed consent request is ambiguous");
  return found.empty() ? nullptr : found.front();
}

// The committed-plan row an install action of the desired set installs.
const engine::PlanCapabilityV3& selection_for(const engine::CommittedPlanV3& plan,
                                              const ManagedDesiredSetRecord& desired,
                                              const engine::HostAction& install) {
  const auto& ids = desired.capability_ids();
  const std::string id = install.entity_id().value_or("");
  const auto* row = plan.find(id);
  if (std::find(ids.begin(), ids.end(), id) == ids.end() || row == nullptr ||
      !row->is_install() || install.action_kind() != engine::ActionKind::kInstallCapability ||
      !(install.scope() == desired.event().scope()) ||
      install.plan_id() != std::optional<std::string>(plan.plan_id()) ||
      install.source_digest() != std::optional<std::string>(row->source_digest())) {
    throw ManagedQueryServiceError(
        "managed install action is not an installable capability of the desired set");
  }
  return *row;
}

// §3.10.1: the automatic decision that grants `install` through `request`, committed to the
// exact execution binding it captured.
engine::EngineEvent automatic_decision(const ManagedDesiredSetRecord& desired,
                                       const engine::JournalRecord& consent_head,
                                       const engine::HostAction& request,
                                       const engine::HostAction& install,
                                       const engine::InstallExecutionBinding& binding) {
  const engine::ConsentRequestBinding& r = *request.consent_request();
  const Json payload = {
      {"consent_id", *request.consent_id()},
      {"decision", "granted"},
      {"decision_basis", "preapproved-policy"},
      {"policy_snapshot_digest", r.install.policy_snapshot_digest},
      {"requested_action_id", r.requested_action_id},
      {"requested_action_kind", engine::ActionKind::kInstallCapability},
      {"requested_action_content_digest", r.requested_action_content_digest},
      {"requested_action_precondition_revision", r.requested_action_precondition_revision}};
  const auto& event = desired.event();
  const std::string digest = core::canonical_digest(
      {{"binding_digest", binding.binding_digest()},
       {"desired_event_content_digest", event.content_digest()},
       {"desired_event_id", event.event_id()},
       {"desired_journal_record_digest", *desired.journal_record_digest()},
       {"desired_journal_revision", *desired.journal_revision()},
       {"desired_set_ref", desired.desired_set_ref()},
       {"head_event_id", consent_head.event_id},
       {"head_record_digest", consent_head.record_digest},
       {"head_revision", consent_head.revision},
       {"install_action_content_digest", install.content_digest()},
       {"install_action_id", install.action_id()},
       {"install_action_precondition_revision", install.precondition_revision()},
       {"payload", payload},
       {"request_action_content_digest", request.content_digest()},
       {"request_action_id", request.action_id()},
       {"schema", "ctx.managed-auto-install-decision.v1"}},
      core::Encoding::kAscii);
  engine::EngineEvent::Fields fields = event.fields();
  fields.event_id = "ctx-auto-install:" + digest;
  fields.kind = "UserDecision";
  fields.expected_revision = consent_head.revision;
  fields.payload = payload;
  fields.causation_id = request.action_id();
  return engine::EngineEvent::create(std::move(fields));
}

// §3.10.3: the grant of a pending install must be the automatic decision this service would
// commit now with the currently resolved binding, byte for byte.
void verify_committed_grant(EngineComposition& composition, const ManagedDesiredSetRecord& desired,
                            const engine::HostAction& install,
                            const engine::InstallExecutionBinding& binding) {
  const auto& scope = install.scope();
  const auto decision = record_at(composition, scope, install.precondition_revision());
  const auto committed = engine::ReplayInput::from_json_text(decision.replay_json).reducer_event;
  if (committed.event_kind() != engine::EventKind::kUserDecision) {
    throw ManagedQueryServiceError("managed install action has no committed install decision");
  }
  const Json basis = committed.payload().value("decision_basis", Json());
  if (!basis.is_string() || engine::find_enum<engine::DecisionBasis>(basis.get<std::string>()) !=
                                engine::DecisionBasis::kPreapprovedPolicy) {
    throw ManagedQueryServiceError(
        "managed desired retry cannot execute an interactive install decision");
  }
  const auto consent_head = record_at(composition, scope, install.precondition_revision() - 1);
  const auto consent_transition = transition_of(consent_head);
  const auto* request = find_request(consent_transition,
                                     committed.payload().value("consent_id", ""), install);
  if (request == nullptr) {
    throw ManagedQueryServiceError("managed install decision has no exact consent request");
  }
  const auto derived = automatic_decision(desired, consent_head, *request, install, binding);
  if (derived.event_id() != decision.event_id ||
      derived.content_digest() != decision.event_content_digest) {
    throw ManagedQueryServiceError(
        "managed install decision was committed for another captured actuator");
  }
}

// §3.10.2: retires a pending install whose approval expired before any claim; true when it is
// (now or already) retired.
bool retire_if_expired_unclaimed(EngineComposition& composition,
                                 const DesiredInstallContext& context,
                                 const engine::HostAction& install) {
  const auto& desired = context.desired;
  const Json payload = {{"action_id", install.action_id()},
                        {"action_kind", install.action_kind()},
                        {"action_content_digest", install.content_digest()},
                        {"action_precondition_revision", install.precondition_revision()},
                        {"reason", "expired"}};
  engine::EngineEvent::Fields fields = desired.event().fields();
  fields.event_id = "ctx-automatic-install-action-expired:" +
                    core::canonical_digest(
                        {{"desired_set_ref", desired.desired_set_ref()},
                         {"install_action_content_digest", install.content_digest()},
                         {"payload", payload},
                         {"schema", "ctx.managed-automatic-install-action-expiry.v1"}},
                        core::Encoding::kAscii);
  fields.kind = "ActionExpired";
  fields.expected_revision = install.precondition_revision();
  fields.occurred_at = install.expires_at().value_or("");
  fields.payload = payload;
  fields.causation_id = install.action_id();
  const auto expiry = engine::EngineEvent::create(std::move(fields));
  const auto& scope = install.scope();
  if (auto next = composition.journal_record(scope, install.precondition_revision() + 1)) {
    return next->event_id == expiry.event_id();
  }
  if (!install.expires_at() || composition.install_execution_status(install).claimed ||
      context.clock.now() < core::parse_rfc3339(*install.expires_at())) {
    return false;
  }
  for (int attempt = 0; attempt < kExpiryAttempts; ++attempt) {
    const auto head = composition.snapshot(scope);
    if (head.revision != install.precondition_revision()) {
      throw ManagedQueryHeadDriftError("managed stream head moved before install expiry");
    }
    try {
      const auto transition = composition.process(expiry);
      for (const auto& action : transition.actions()) {
        if (action.action_id() == install.action_id()) {
          throw ManagedQueryServiceError("expired install action was emitted again");
        }
      }
      return true;
    } catch (const engine::InstallActionAlreadyClaimed&) {
      return false;
    } catch (const engine::RevisionConflict&) {
      continue;
    }
  }
  throw ManagedQueryHeadDriftError("managed install expiry remained contended");
}

const engine::HostAction* pending_install(const engine::EngineState& state) {
  const engine::HostAction* found = nullptr;
  for (const auto& pending : state.pending_effects()) {
    if (pending.effect == engine::Effect::kInstall) found = &pending.action;
  }
  return found;
}

// One iteration of §3.10: the install action to execute (granting it first when the policy
// preapproves it) and its binding, or nullopt to stop (nothing automatic is left, or an expired
// unclaimed install was retired).
struct NextInstall {
  engine::HostAction action;
  const engine::PlanCapabilityV3* selection;
  engine::InstallExecutionBinding binding;
};

std::optional<NextInstall> next_install(EngineComposition& composition,
                                        const DesiredInstallContext& context,
                                        const engine::CommittedPlanV3& plan) {
  const auto& scope = context.desired.event().scope();
  const auto head = composition.snapshot(scope);
  if (!head.state) return std::nullopt;
  const auto& state = *head.state;
  if (!state.pending_effects().empty()) {
    const engine::HostAction* install = pending_install(state);
    if (install == nullptr) return std::nullopt;
    if (state.pending_effects().size() != 1) {
      throw ManagedQueryServiceError("managed install effects must remain globally serialized");
    }
    const auto& selection = selection_for(plan, context.desired, *install);
    if (retire_if_expired_unclaimed(composition, context, *install)) return std::nullopt;
    auto binding = composition.resolve_install_execution_binding(*install, selection);
    return NextInstall{*install, &selection, std::move(binding)};
  }
  if (state.pending_consents().empty()) return std::nullopt;
  if (state.pending_consents().size() != 1) {
    throw ManagedQueryServiceError("managed install consents must remain globally serialized");
  }
  const auto& consent = state.pending_consents().front();
  const auto consent_transition = head_transition(composition, scope, head.revision);
  const auto* request =
      find_request(consent_transition, consent.consent_id, consent.install_action);
  if (request == nullptr) return std::nullopt;  // not offered by the head: nothing automatic
  const InstallConsentPolicy policy = current_install_policy(context.policy_store_root);
  if (request->consent_request()->install.policy_snapshot_digest != policy.policy_digest()) {
    return std::nullopt;
  }
  const auto& selection = selection_for(plan, context.desired, consent.install_action);
  const auto& descriptor = *selection.install_descriptor();
  if (route_install_authorization(policy, descriptor.kind(), descriptor.permission_expansion(),
                                  descriptor.credential_requirement())
          .interactive &&
      !approves_install(context.approvals, descriptor, policy.policy_digest())) {
    return std::nullopt;  // a human decides: the consent is published instead
  }
  if (!context.policy_store_root ||
      !InstallPolicyStore(*context.policy_store_root).has_persisted()) {
    throw ManagedQueryServiceError(
        "automatic installation requires an explicitly persisted policy");
  }
  auto binding = composition.resolve_install_execution_binding(consent.install_action, selection);
  const auto unchanged = composition.snapshot(scope);
  if (unchanged.revision != head.revision || unchanged.record_digest != head.record_digest) {
    throw ManagedQueryHeadDriftError("managed stream head changed during install binding");
  }
  const auto consent_head = record_at(composition, scope, head.revision);
  const auto decision =
      automatic_decision(context.desired, consent_head, *request, consent.install_action, binding);
  const auto granted = composition.process(decision);
  if (granted.actions().size() != 1 ||
      !(granted.actions().front() == consent.install_action)) {
    throw ManagedQueryServiceError("automatic install grant did not release its exact action");
  }
  crash_point(crash_points::kAfterInstallDecision);
  return NextInstall{consent.install_action, &selection, std::move(binding)};
}

}  // namespace

InstallConsentPolicy current_install_policy(const std::optional<std::filesystem::path>& root) {
  if (!root) return InstallConsentPolicy::safe_default();
  return InstallPolicyStore(*root).load();
}

bool consent_pending_under(const engine::EngineState& state, const std::string& policy_digest) {
  return std::any_of(state.pending_consents().begin(), state.pending_consents().end(),
                     [&](const engine::PendingConsent& consent) {
                       return consent.install_action.install_payload()->policy_snapshot_digest ==
                              policy_digest;
                     });
}

bool install_policy_drifted(const EngineSnapshot& head, const std::string& current_policy_digest) {
  return head.state && !head.state->pending_consents().empty() &&
         !consent_pending_under(*head.state, current_policy_digest);
}

DesiredProgress progress_desired_installs(EngineComposition& composition,
                                          const DesiredInstallContext& context) {
  const auto& scope = context.desired.event().scope();
  DesiredProgress progress{composition.snapshot(scope), {}, {}, false};
  const auto& plan = exact_plan(progress.head, context.parent);
  progress.policy_drift = install_policy_drifted(
      progress.head, current_install_policy(context.policy_store_root).policy_digest());
  if (!progress.policy_drift) {
    for (std::size_t i = 0; i < context.desired.capability_ids().size(); ++i) {
      auto next = next_install(composition, context, plan);
      if (!next) break;
      if (next->binding.driver_id() != next->selection->install_descriptor()->installer_id()) {
        throw ManagedQueryServiceError("managed install binding does not name its installer");
      }
      verify_committed_grant(composition, context.desired, next->action, next->binding);
      const auto policy = next->action.install_payload()->policy_snapshot_digest;
      std::optional<InstallExecutionReport> report;
      try {
        report.emplace(
            composition.execute_install(next->action, *next->selection, next->binding, policy));
      } catch (const engine::InstallActionClaimExpired&) {
        if (retire_if_expired_unclaimed(composition, context, next->action)) break;
        throw;
      }
      if (report->execution_binding_digest != next->binding.binding_digest()) {
        throw ManagedQueryServiceError("managed install report names another binding");
      }
      if (report->outcome == engine::Outcome::kIndeterminate) {
        if (report->settled) throw ManagedQueryServiceError("indeterminate install was settled");
        progress.indeterminate_ids.push_back(next->action.entity_id().value_or(""));
        break;
      }
      if (!report->settled) throw ManagedQueryServiceError("managed install was not settled");
      crash_point(crash_points::kAfterInstallSettlement);
    }
    progress.head = composition.snapshot(scope);
    exact_plan(progress.head, context.parent);
    progress.policy_drift = install_policy_drifted(
        progress.head, current_install_policy(context.policy_store_root).policy_digest());
  }
  if (progress.head.revision > 0) {
    progress.head_actions = head_transition(composition, scope, progress.head.revision).actions();
  }
  return progress;
}

}  // namespace ctx::runtime::detail
