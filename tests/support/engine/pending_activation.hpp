// The lifecycle prefix of seed 000's activation tests (the seeds' _pending_activation_composition):
// plan one install row, desire it, grant consent interactively, install through another owner of
// the journal and stop at the pending ActivateCapability. Split into steps so crash tests can
// stop at the consent grant. Header-only; uses gtest assertions.
#ifndef CTX_TESTS_SUPPORT_ENGINE_PENDING_ACTIVATION_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_PENDING_ACTIVATION_HPP_

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "host/runtime/composition.hpp"
#include "host/runtime/crash_point.hpp"
#include "tests/support/engine/fake_activation.hpp"
#include "tests/support/engine/faulty_claim_store.hpp"
#include "tests/support/engine/managed_query_seed_support.hpp"

namespace ctx::testing {

// The planned session with one install row whose consent the engine has requested (revision 3).
struct ConsentRequested {
  engine::EngineEvent session_started;
  engine::EngineEvent intent_observed;
  engine::PlanCapabilityV3 capability;
  engine::HostAction request;  // RequestConsent
  std::string policy_digest;
};

struct PendingActivation {
  engine::EngineEvent session_started;
  engine::EngineEvent intent_observed;
  engine::HostAction activation;
  engine::InstallExecutionBinding binding;
};

// The ReassessmentRequested at revision 2 desiring `capability` (owner and lease from `suffix`).
inline engine::EngineEvent desire_event(const engine::EngineEvent& intent_observed,
                                        const engine::PlanCapabilityV3& capability,
                                        const std::string& policy_digest,
                                        const std::string& suffix) {
  const core::Json row = {
      {"capability_id", capability.capability_id()},
      {"source_digest", capability.source_digest()},
      {"kind", capability.kind()},
      {"actionability", capability.actionability()},
      {"install_descriptor_digest", optional_json(capability.install_descriptor_digest())},
      {"install_plan_digest", optional_json(capability.install_plan_digest())},
      {"lease_id", "lease-" + suffix}};
  return replace_event(intent_observed, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-" + suffix + "-desired";
    f.kind = "ReassessmentRequested";
    f.expected_revision = 2;
    f.payload = {{"owner_id", "owner-" + suffix},
                 {"policy_snapshot_digest", policy_digest},
                 {"desired_capabilities", core::Json::array({row})}};
  });
}

inline ConsentRequested request_install_consent(runtime::EngineComposition& composition,
                                                const std::string& suffix) {
  auto events = managed_events(composition, suffix);
  auto session_started = events.first;
  auto intent_observed = events.second;
  composition.advance_managed_query(session_started, intent_observed);
  auto snapshot = composition.snapshot(intent_observed.scope());
  EXPECT_TRUE(snapshot.state.has_value());
  const auto& committed = snapshot.state->committed_plan();
  EXPECT_TRUE(committed.has_value());
  const auto& capability = committed->capabilities().at(0);
  const std::string policy_digest = engine::InstallConsentPolicy::safe_default().policy_digest();
  auto desired =
      composition.process(desire_event(intent_observed, capability, policy_digest, suffix));

  const auto request = desired.actions().at(0);
  EXPECT_EQ(request.action_kind(), engine::ActionKind::kRequestConsent);
  return ConsentRequested{session_started, intent_observed, capability, request, policy_digest};
}

// The interactive UserDecision granting `requested` at revision 3.
inline engine::EngineEvent interactive_grant(const ConsentRequested& requested,
                                             const std::string& suffix) {
  const auto& request = requested.request;
  return replace_event(requested.intent_observed, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-" + suffix + "-consent-granted";
    f.kind = "UserDecision";
    f.expected_revision = 3;
    f.payload = {{"consent_id", *request.consent_id()},
                 {"decision", "granted"},
                 {"decision_basis", "interactive"},
                 {"policy_snapshot_digest", requested.policy_digest},
                 {"requested_action_id", request.payload().at("requested_action_id")},
                 {"requested_action_kind", request.payload().at("requested_action_kind")},
                 {"requested_action_content_digest",
                  request.payload().at("requested_action_content_digest")},
                 {"requested_action_precondition_revision",
                  request.payload().at("requested_action_precondition_revision")}};
  });
}

// The body of the seeds' _pending_activation_composition (and of the lifecycle test): request and
// grant consent through `composition`, install through the exact settlement entry points of
// `engine` (another owner of the composition's journal: the seeds' exact coordinator settlement
// seam) and stop at the pending ActivateCapability.
inline PendingActivation drive_to_pending_activation(runtime::EngineComposition& composition,
                                                     engine::Engine& engine,
                                                     const std::string& suffix,
                                                     const engine::InstallPlanningBundle& bundle) {
  const ConsentRequested requested = request_install_consent(composition, suffix);
  const auto& intent_observed = requested.intent_observed;
  auto granted = composition.process(interactive_grant(requested, suffix));
  const auto install = granted.actions().at(0);
  EXPECT_EQ(install.action_kind(), engine::ActionKind::kInstallCapability);
  auto binding = engine::InstallExecutionBinding::create(
      bundle.descriptor().installer_id(),
      install.payload().at("installer_digest").get<std::string>(), digest("managed-query-host"),
      digest("managed-query-target"));
  engine.authorize_install(install, requested.capability, bundle.descriptor(),
                           composition.catalog_snapshot_digest(), requested.policy_digest, binding);
  auto install_guard = engine.record_install_outcome(
      install, binding, engine::InstallOutcome::kApplied,
      bundle.result_material().identity_digest(), digest("managed-query-install-observation"));
  auto install_status = engine.install_execution_status(install);
  EXPECT_TRUE(install_status.observed_at.has_value());
  auto install_receipt = replace_event(intent_observed, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-" + suffix + "-install-applied";
    f.kind = "ActionApplied";
    f.expected_revision = 4;
    f.occurred_at = *install_status.observed_at;
    f.payload = {{"action_id", install.action_id()},
                 {"action_kind", install.action_kind()},
                 {"action_content_digest", install.content_digest()},
                 {"action_precondition_revision", install.precondition_revision()},
                 {"verification",
                  {{"schema", engine::kInstallReceiptSchemaV3},
                   {"host_state", "installed"},
                   {"capability_id", *install.entity_id()},
                   {"capability_kind", install.payload().at("capability_kind")},
                   {"catalog_identity", install.payload().at("catalog_identity")},
                   {"material_identity", install.payload().at("result_material")},
                   {"install_plan_descriptor", install.payload().at("install_plan_descriptor")},
                   {"installer_digest", install.payload().at("installer_digest")},
                   {"policy_snapshot_digest", install.payload().at("policy_snapshot_digest")}}}};
  });
  auto installed = engine.process_install_receipt(install_receipt, install_guard);
  auto activation = installed.actions().at(0);
  EXPECT_EQ(activation.action_kind(), engine::ActionKind::kActivateCapability);
  return PendingActivation{requested.session_started, intent_observed, activation, binding};
}

// How pending_activation_composition wires the composition.
struct ActivationOptions {
  bool faulty_claims = false;  // wrap the composition's claim port in a FaultyClaimStore
  std::shared_ptr<engine::ActivationPort> activation;  // null: the fixture's FakeActivation
  std::optional<engine::InstallPlanningBundle> bundle;  // null: the seeds' install_bundle
  runtime::InteractiveInstallDecisionGuard decision_guard;  // null: the seeds' nullcontext
  bool drive = true;  // false: open only (the caller drives)
};

// The seeds' _pending_activation_composition(tmp_path, suffix=...): the composition, the second
// journal owner that installs the skill, the activation double and the pending activation.
struct ActivationFixture {
  std::shared_ptr<FakeActivation> activation = std::make_shared<FakeActivation>();
  std::shared_ptr<FaultyClaimStore> claims;
  std::unique_ptr<runtime::EngineComposition> composition;
  std::unique_ptr<JournalOwner> owner;
  std::optional<engine::InstallPlanningBundle> bundle;
  std::optional<PendingActivation> pending;
};

inline ActivationFixture pending_activation_composition(const std::filesystem::path& tmp,
                                                        const std::string& suffix,
                                                        ActivationOptions options = {}) {
  const std::string capability_id = "skill:installed";
  const std::string installation_snapshot = digest(suffix + "-installation");
  ActivationFixture fixture;
  fixture.bundle =
      options.bundle ? *options.bundle : install_bundle(capability_id, installation_snapshot);
  CompositionArgs args;
  args.candidates = {candidate(capability_id, "install", installation_snapshot)};
  planning::CapabilityCandidate& row = args.candidates.front();
  row.install_descriptor_digest = fixture.bundle->descriptor().descriptor_digest();
  row.install_plan_digest = fixture.bundle->descriptor().plan_digest();
  args.install_authority = std::make_shared<InstallAuthority>(
      installation_snapshot, std::map<std::string, std::optional<engine::InstallPlanningBundle>>{
                                 {capability_id, *fixture.bundle}});
  args.facts = std::make_shared<Facts>();
  args.observation_normalizer = normalizer(5);
  args.interactive_install_decision_guard = true;
  args.decision_guard = std::move(options.decision_guard);
  args.trusted_clock = true;
  args.suffix = suffix;
  args.activation_port = options.activation ? options.activation : fixture.activation;
  if (options.faulty_claims) {
    auto journal = open_seed_journal(seed_journal_path(tmp, suffix));
    fixture.claims = std::make_shared<FaultyClaimStore>(journal);
    args.journal_store = journal;
    args.claim_store = fixture.claims;
  }
  fixture.composition = open_composition(tmp, std::move(args));
  fixture.owner = open_journal_owner(tmp, suffix);
  if (options.drive) {
    fixture.pending.emplace(drive_to_pending_activation(*fixture.composition,
                                                        fixture.owner->engine, suffix,
                                                        *fixture.bundle));
  }
  return fixture;
}

inline std::string host_digest(const engine::EngineEvent& event);
inline std::string activation_observation();

// Runs execute_activation of `pending` with `point` armed (CrashMode::kThrow); true when it
// crashed there (SimulatedCrash escaped the call).
inline bool crash_execute_activation(runtime::EngineComposition& composition,
                                     const PendingActivation& pending, std::string_view point) {
  runtime::CrashPointArmed crash(point);
  try {
    composition.execute_activation(pending.activation, pending.binding,
                                   host_digest(pending.session_started), activation_observation());
  } catch (const runtime::SimulatedCrash&) {
    return crash.fired();
  }
  return false;
}

inline std::string activation_observation() {
  return digest("managed-query-activation-observation");
}

inline std::string host_digest(const engine::EngineEvent& event) {
  return event.host_descriptor_digest().value_or("");
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_PENDING_ACTIVATION_HPP_
