#include "host/runtime/activation_execution.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime::detail {

LockSlot execution_lock_slot(const std::filesystem::path& journal_path,
                             const engine::HostAction& action) {
  const core::Json key = {{"action_id", action.action_id()},
                          {"schema", "ctx.install-execution-lock-v1"},
                          {"stream_key", action.scope().stream_id().stream_key()}};
  return {journal_path.parent_path() / "install-execution.lock", core::canonical_digest(key)};
}

namespace {

constexpr int kSettlementAttempts = 3;
constexpr std::chrono::milliseconds kExecutionLockTimeout{30'000};

engine::MaterialIdentity authorized_material(
    const engine::HostAction& action,
    engine::ActionKind kind = engine::ActionKind::kActivateCapability) {
  if (action.action_kind() != kind || action.material_payload() == nullptr) {
    throw ActivationExecutionError(kind == engine::ActionKind::kActivateCapability
                                       ? "execution requires an exact schema-v3 activation action"
                                       : "execution requires an exact schema-v3 deactivation action");
  }
  return action.material_payload()->material_identity;
}

// The installer's observation, or indeterminate when the driver cannot be called at all.
// SimulatedCrash is no ctx::Error and passes through.
engine::ActivationObservation observe(engine::ActivationPort& port,
                                      const engine::ActivationRequest& request,
                                      bool claim_was_new) {
  try {
    // A claim this call created has never been acted on; any other claim may have been (a
    // crashed or competing owner): ask what is on disk first, then (re)activate only when the
    // installer verifies the material is not active. Activation is idempotent and the execution
    // lock excludes a live competing executor, so re-activating is safe.
    if (!claim_was_new) {
      auto reconciled = port.reconcile(request);
      if (reconciled.result != engine::ActivationResult::kFailed) return reconciled;
    }
    return port.activate(request);
  } catch (const Error&) {
    return engine::ActivationObservation{engine::ActivationResult::kIndeterminate, std::nullopt,
                                         std::nullopt, "installer could not be called"};
  }
}

engine::SettlementGuard stored_guard(const engine::HostAction& action,
                                     const engine::ActivationExecutionStatus& status) {
  if (!status.outcome_digest) {
    throw ActivationExecutionError("recorded activation outcome has no digest");
  }
  return engine::SettlementGuard{engine::ExecutionAuthority::kActivation, action.action_id(),
                                 action.content_digest(), engine::GuardMode::kApplied,
                                 status.outcome_digest};
}

// The ActionApplied receipt of a material action (activate or deactivate) with material-receipt
// v3 verification, or with `applied` false the ActionFailed one (its error code is redacted by
// the engine's ingress anyway).
engine::EngineEvent receipt_event(const engine::HostAction& action, std::string event_id,
                                  engine::Revision head, const std::string& occurred_at,
                                  bool applied = true) {
  core::Json body = {{"action_id", action.action_id()},
                     {"action_kind", action.action_kind()},
                     {"action_content_digest", action.content_digest()},
                     {"action_precondition_revision", action.precondition_revision()}};
  if (applied) {
    const engine::MaterialBinding& material = *action.material_payload();
    body["verification"] = {{"schema", engine::kMaterialReceiptSchemaV3},
                            {"host_state", action.verification().at("expected_state")},
                            {"capability_id", action.entity_id().value_or("")},
                            {"capability_kind", material.capability_kind()},
                            {"catalog_identity", material.catalog_identity.to_json()},
                            {"material_identity", material.material_identity.to_json()},
                            {"authorized_material", material.authorized_material.to_json()}};
  } else {
    body["error"] = {{"code", "redacted-host-failure"}};
  }
  engine::EngineEvent::Fields receipt{.event_id = std::move(event_id),
                                      .kind = applied ? "ActionApplied" : "ActionFailed",
                                      .scope = action.scope(),
                                      .expected_revision = head,
                                      .occurred_at = occurred_at,
                                      .payload = std::move(body),
                                      .privacy = action.privacy(),
                                      .correlation_id = action.plan_id(),
                                      .causation_id = action.action_id()};
  return engine::EngineEvent::create(std::move(receipt));
}

// The pending deactivation `action` names, exactly, at `head`; null when it is not pending.
const engine::PendingEffect* pending_deactivation(const engine::EngineSnapshot& head,
                                                  const engine::HostAction& action) {
  if (!head.state) return nullptr;
  const engine::PendingEffect* pending = head.state->pending_effect(action.action_id());
  if (pending == nullptr || pending->effect != engine::Effect::kDeactivate ||
      !(pending->action == action)) {
    return nullptr;
  }
  return pending;
}

}  // namespace

namespace {

// The action's durable activation claim, bound to `binding` (this call's or another owner's).
engine::ActivationExecutionStatus claim_activation(const ActivationActuators& actuators,
                                                   const engine::HostAction& action,
                                                   const engine::InstallExecutionBinding& binding,
                                                   std::string_view expected_host_descriptor_digest,
                                                   ActivationExecutionReport& report) {
  engine::Engine& engine = actuators.engine;
  if (actuators.activation == nullptr) {
    throw ActivationExecutionError("composition has no activation actuator");
  }
  try {
    engine.authorize_activation(action, binding, std::string(expected_host_descriptor_digest));
    report.claim_was_new = true;
  } catch (const engine::ActivationActionAlreadyClaimed&) {
    report.claim_was_new = false;  // another owner claimed it first: continue from its claim
  }
  crash_point(crash_points::kAfterActivationClaim);
  auto status = engine.activation_execution_status(action);
  if (!status.claimed || status.execution_binding_digest != binding.binding_digest()) {
    throw ActivationExecutionError("activation claim was not durably bound");
  }
  return status;
}

// Asks the activation port and records an applied outcome for the exact authorised material;
// nullopt (the report says failed or indeterminate) when there is nothing to record.
std::optional<engine::SettlementGuard> record_activation(
    const ActivationActuators& actuators, const engine::HostAction& action,
    const engine::InstallExecutionBinding& binding, const engine::MaterialIdentity& material,
    const std::string& caller_verification, ActivationExecutionReport& report) {
  if (actuators.activation == nullptr) {
    throw ActivationExecutionError("composition has no activation actuator");
  }
  const auto observation =
      observe(*actuators.activation, engine::ActivationRequest{material}, report.claim_was_new);
  report.observed_material_identity_digest = observation.observed_material_identity_digest;
  if (observation.result == engine::ActivationResult::kFailed) {
    report.outcome = engine::Outcome::kFailed;
    return std::nullopt;
  }
  // Applied counts only for the exact authorised material with a verification digest; any
  // other material active is a conflict nobody may certify.
  if (observation.result != engine::ActivationResult::kApplied ||
      observation.observed_material_identity_digest != material.identity_digest() ||
      !observation.verification_digest) {
    report.outcome = engine::Outcome::kIndeterminate;
    return std::nullopt;
  }
  const std::string verification = engine::identity_digest_of(
      core::Json{{"caller_verification_digest", caller_verification},
                 {"installer_verification_digest", *observation.verification_digest},
                 {"observed_material_identity_digest", material.identity_digest()},
                 {"schema", kActivationVerificationSchema}});
  auto guard = actuators.engine.record_activation_outcome(action, binding,
                                                          material.identity_digest(), verification);
  report.verification_digest = verification;
  crash_point(crash_points::kAfterActivationOutcome);
  return guard;
}

// Settles the recorded outcome with its receipt (or finds another owner settled it), re-reading
// the head when it moved.
void settle_activation(engine::Engine& engine, const engine::HostAction& action,
                       const engine::SettlementGuard& guard, ActivationExecutionReport& report) {
  const auto observed_at = engine.activation_execution_status(action).observed_at;
  if (!observed_at) {
    throw ActivationExecutionError("durable activation outcome has no observation time");
  }
  for (int attempt = 0; attempt < kSettlementAttempts; ++attempt) {
    if (engine.activation_execution_status(action).settled) {
      report.settled = true;
      return;
    }
    const auto head = engine.snapshot(action.scope().stream_id());
    try {
      auto transition = engine.process_activation_receipt(
          receipt_event(action, "ctx-activation-receipt-" + *guard.execution_outcome_digest,
                        head.revision, *observed_at),
          guard);
      crash_point(crash_points::kAfterActivationReceipt);
      report.settled = true;
      report.transition = std::move(transition);
      return;
    } catch (const engine::RevisionConflict&) {
      continue;  // the head moved under us: re-read and settle again
    }
  }
  throw ActivationExecutionError("activation receipt settlement remained contended");
}

}  // namespace

ActivationExecutionReport execute_activation(const ActivationActuators& actuators,
                                             const engine::HostAction& action,
                                             const engine::InstallExecutionBinding& binding,
                                             std::string_view expected_host_descriptor_digest,
                                             std::string_view verification_digest) {
  engine::Engine& engine = actuators.engine;
  const engine::MaterialIdentity material = authorized_material(action);
  const std::string caller_verification(verification_digest);
  if (!engine::is_digest(caller_verification)) {
    throw ActivationExecutionError("verification_digest must be a lowercase sha-256 digest");
  }
  ExclusiveFileLock execution_lock(execution_lock_slot(actuators.journal_path, action),
                                   kExecutionLockTimeout);

  ActivationExecutionReport report{engine::Outcome::kApplied, false, false,
                                   binding.binding_digest(),
                                   std::nullopt, material.identity_digest(), std::nullopt};

  auto status = engine.activation_execution_status(action);
  if (status.claimed && status.execution_binding_digest != binding.binding_digest()) {
    throw ActivationExecutionError("durable activation claim names a different target");
  }
  if (status.settled) {
    if (!status.outcome_digest) {
      throw ActivationExecutionError("settled activation has no durable outcome");
    }
    report.settled = true;
    return report;
  }
  if (!status.claimed) {
    status = claim_activation(actuators, action, binding, expected_host_descriptor_digest, report);
  }
  engine::SettlementGuard guard;
  if (status.outcome_recorded) {
    guard = stored_guard(action, status);
  } else {
    auto recorded =
        record_activation(actuators, action, binding, material, caller_verification, report);
    if (!recorded) return report;
    guard = std::move(*recorded);
  }
  report.observed_material_identity_digest = material.identity_digest();
  settle_activation(engine, action, guard, report);
  return report;
}

DeactivationExecutionReport execute_deactivation(const ActivationActuators& actuators,
                                                 const core::Clock& clock,
                                                 const engine::HostAction& action,
                                                 DeactivationMode mode) {
  engine::Engine& engine = actuators.engine;
  const engine::MaterialIdentity material =
      authorized_material(action, engine::ActionKind::kDeactivateCapability);
  ExclusiveFileLock execution_lock(execution_lock_slot(actuators.journal_path, action),
                                   kExecutionLockTimeout);
  DeactivationExecutionReport report;
  // Settled already (by an earlier call, perhaps one that crashed after its receipt): what the
  // journal says, with nothing called and nothing committed.
  const auto settled = [&](const engine::EngineSnapshot& head) {
    report.settled = true;
    const std::string id = action.entity_id().value_or("");
    const auto& blocked = head.state->fields().blocked_deactivation_ids;
    report.outcome = std::find(blocked.begin(), blocked.end(), id) != blocked.end()
                         ? engine::Outcome::kFailed
                         : engine::Outcome::kApplied;
    return report;
  };
  auto head = engine.snapshot(action.scope().stream_id());
  if (pending_deactivation(head, action) == nullptr) {
    if (!head.state) throw ActivationExecutionError("deactivation action has no journal stream");
    return settled(head);
  }
  // Deactivation is idempotent (an inactive capability deactivates as applied), and the
  // execution lock excludes a live competing executor: a retry after a crash simply asks again.
  engine::ActivationObservation observation;
  observation.result = engine::ActivationResult::kApplied;
  if (mode == DeactivationMode::kInstaller) {
    if (actuators.activation == nullptr) {
      throw ActivationExecutionError("composition has no activation actuator");
    }
    try {
      observation = actuators.activation->deactivate(engine::ActivationRequest{material});
    } catch (const Error&) {
      observation.result = engine::ActivationResult::kIndeterminate;
    }
  }
  if (observation.result == engine::ActivationResult::kIndeterminate) return report;
  const bool applied = observation.result == engine::ActivationResult::kApplied;
  crash_point(crash_points::kAfterDeactivation);
  const std::string event_id =
      "ctx-deactivation-receipt-" +
      engine::identity_digest_of(core::Json{{"action_content_digest", action.content_digest()},
                                            {"outcome", applied ? "applied" : "failed"},
                                            {"schema", "ctx.deactivation-receipt-v1"}});
  const std::string occurred_at = core::format_rfc3339(clock.now());
  for (int attempt = 0; attempt < kSettlementAttempts; ++attempt) {
    if (attempt > 0) head = engine.snapshot(action.scope().stream_id());
    if (pending_deactivation(head, action) == nullptr) return settled(head);
    try {
      report.transition =
          engine.process(receipt_event(action, event_id, head.revision, occurred_at, applied));
      crash_point(crash_points::kAfterDeactivationReceipt);
      report.settled = true;
      report.outcome = applied ? engine::Outcome::kApplied : engine::Outcome::kFailed;
      return report;
    } catch (const engine::RevisionConflict&) {
      continue;  // the head moved under us: re-read and settle again
    }
  }
  throw ActivationExecutionError("deactivation receipt settlement remained contended");
}

}  // namespace ctx::runtime::detail
