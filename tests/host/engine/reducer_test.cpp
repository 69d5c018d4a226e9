// The pure v3 reducer along the seed paths: plan commit (global bound), desired update →
// RequestConsent, UserDecision → InstallCapability, install receipt → ActivateCapability,
// activation receipt, abstaining re-plan → DeactivateCapability, session end, expiry, stale
// consent refresh, and the §2.3 identifiers.
#include "host/engine/reducer.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "host/engine/errors.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;

const std::string kInstalled = "skill:installed";

class ReducerLifecycle : public ::testing::Test {
 protected:
  Reduction step(const EngineEvent& e, std::optional<Json> decision = std::nullopt) {
    auto out = reduce_v3(state_ ? &*state_ : nullptr, ReducerEvent{e, std::move(decision)});
    state_ = out.state;
    // Persisted form round-trips byte-identically.
    EXPECT_EQ(EngineState::from_json_text(out.state.to_json_text()).to_json_text(),
              out.state.to_json_text());
    EXPECT_EQ(Transition::from_json_text(out.transition.to_json_text()), out.transition);
    return out;
  }

  void start(const std::string& level = "managing") {
    step(event("SessionStarted", 0, "event-start", {{"host_level", level}}));
  }

  Reduction plan(std::vector<Json> rows, std::int64_t revision = 1,
                 const std::string& id = "event-intent") {
    return step(event("IntentObserved", revision, id), ready_decision(std::move(rows)));
  }

  Json desired_row(const std::string& id, const std::string& actionability,
                   const std::string& lease) {
    const auto row = plan_row(id, actionability);
    return {{"actionability", actionability},
            {"capability_id", id},
            {"install_descriptor_digest", row["install_descriptor_digest"]},
            {"install_plan_digest", row["install_plan_digest"]},
            {"kind", kind_of(id)},
            {"lease_id", lease},
            {"source_digest", row["catalog_entry_digest"]}};
  }

  Reduction desire(std::vector<Json> rows, std::int64_t revision,
                   const std::string& id = "event-desired") {
    return step(
        event("ReassessmentRequested", revision, id,
              {{"owner_id", "owner-1"},
               {"policy_snapshot_digest", InstallConsentPolicy::safe_default().policy_digest()},
               {"desired_capabilities", rows}}));
  }

  EngineEvent decision_event(const HostAction& request, std::int64_t revision,
                             const std::string& decision = "granted",
                             const std::string& at = kNow) {
    auto f = event_fields("UserDecision", revision, "event-decision-" + decision,
                          {{"consent_id", *request.consent_id()},
                           {"decision", decision},
                           {"decision_basis", "interactive"},
                           {"policy_snapshot_digest", request.payload()["policy_snapshot_digest"]},
                           {"requested_action_id", request.payload()["requested_action_id"]},
                           {"requested_action_kind", request.payload()["requested_action_kind"]},
                           {"requested_action_content_digest",
                            request.payload()["requested_action_content_digest"]},
                           {"requested_action_precondition_revision",
                            request.payload()["requested_action_precondition_revision"]}});
    f.occurred_at = at;
    return EngineEvent::create(f);
  }

  static Json receipt_identity(const HostAction& a) {
    return {{"action_id", a.action_id()},
            {"action_kind", a.action_kind()},
            {"action_content_digest", a.content_digest()},
            {"action_precondition_revision", a.precondition_revision()}};
  }

  EngineEvent install_receipt(const HostAction& install, std::int64_t revision) {
    auto payload = receipt_identity(install);
    const auto& p = install.payload();
    payload["verification"] = {{"schema", kInstallReceiptSchemaV3},
                               {"host_state", "installed"},
                               {"capability_id", *install.entity_id()},
                               {"capability_kind", p["capability_kind"]},
                               {"catalog_identity", p["catalog_identity"]},
                               {"material_identity", p["result_material"]},
                               {"install_plan_descriptor", p["install_plan_descriptor"]},
                               {"installer_digest", p["installer_digest"]},
                               {"policy_snapshot_digest", p["policy_snapshot_digest"]}};
    return event("ActionApplied", revision, "event-install-applied", payload);
  }

  EngineEvent material_receipt(const HostAction& action, std::int64_t revision,
                               const std::string& id) {
    auto payload = receipt_identity(action);
    const auto& p = action.payload();
    payload["verification"] = {{"schema", kMaterialReceiptSchemaV3},
                               {"host_state", action.verification()["expected_state"]},
                               {"capability_id", *action.entity_id()},
                               {"capability_kind", p["capability_kind"]},
                               {"catalog_identity", p["catalog_identity"]},
                               {"material_identity", p["material_identity"]},
                               {"authorized_material", p["authorized_material"]}};
    return event("ActionApplied", revision, id, payload);
  }

  // Revisions 1..4: start, plan (install row), desired → consent, grant → install.
  HostAction run_to_install() {
    start();
    plan({plan_row(kInstalled, "install")});
    auto desired = desire({desired_row(kInstalled, "install", "lease-1")}, 2);
    EXPECT_EQ(desired.transition.actions().size(), 1u);
    const auto request = desired.transition.actions().at(0);
    auto granted = step(decision_event(request, 3));
    EXPECT_EQ(granted.transition.actions().size(), 1u);
    return granted.transition.actions().at(0);
  }

  std::optional<EngineState> state_;
};

TEST_F(ReducerLifecycle, SessionStartedCreatesRevisionOne) {
  CTX_EXPECT_THROW(reduce_v3(nullptr, ReducerEvent{event("TurnEnded", 0, "e")}), InvalidEventError,
                   "SessionStarted must be the first event");
  CTX_EXPECT_THROW(reduce_v3(nullptr, ReducerEvent{event("SessionStarted", 2, "e",
                                                         {{"host_level", "managing"}})}),
                   RevisionConflictError, "expected revision 0, received 2");
  const auto out = reduce_v3(nullptr, ReducerEvent{event("SessionStarted", 0, "e")});
  EXPECT_EQ(out.state.revision(), 1);
  EXPECT_EQ(out.state.host_level(), HostLevel::kQueryOnly);
  EXPECT_EQ(out.transition.from_revision(), 0);
  EXPECT_EQ(out.transition.to_revision(), 1);
  EXPECT_TRUE(out.transition.actions().empty());
}

TEST_F(ReducerLifecycle, CommonPreconditions) {
  start();
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{event("TurnEnded", 3, "e")}),
                   RevisionConflictError, "expected revision 1, received 3");
  CTX_EXPECT_THROW(
      reduce_v3(&*state_, ReducerEvent{event("TurnEnded", 1, "e", Json::object(), "other")}),
      InvalidEventError, "does not match the current-work session scope");
  auto f = event_fields("TurnEnded", 1, "e");
  f.host_descriptor_digest = sha("other-host");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(f)}), InvalidEventError,
                   "host descriptor changed");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{event("SessionStarted", 1, "e")}),
                   InvalidEventError, "session is already started");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{event("IntentObserved", 1, "e")}),
                   InvalidEventError, "planning event is missing its durable decision");
  CTX_EXPECT_THROW(
      reduce_v3(&*state_, ReducerEvent{event("TurnEnded", 1, "e"), abstained_limit_zero()}),
      InvalidEventError, "decision is not valid for this event kind");
}

TEST_F(ReducerLifecycle, ReadyPlanPresentsRowsInCanonicalOrder) {
  start();
  const auto out = plan({plan_row("agent:installer", "install"), plan_row("skill:loaded", "load"),
                         plan_row("harness:manual-runner", "manual"),
                         plan_row("mcp-server:manual-docs", "manual")});
  ASSERT_EQ(out.transition.actions().size(), 1u);
  const auto& present = out.transition.actions()[0];
  EXPECT_EQ(present.action_kind(), ActionKind::kPresentBundle);
  EXPECT_EQ(present.precondition_revision(), 2);
  EXPECT_EQ(present.payload()["capabilities"].size(), 4u);
  const auto& plan = *out.state.committed_plan();
  EXPECT_EQ(present.payload()["plan_digest"], plan.decision_digest());
  EXPECT_EQ(plan.plan_id(), "plan-one");
  EXPECT_EQ(plan.catalog_snapshot_id(), catalog_snapshot());
  // Manual rows get no runtime record; they form the manual bundle.
  EXPECT_EQ(out.state.capabilities().size(), 2u);
  EXPECT_EQ(out.state.last_manual_bundle(),
            (std::vector<std::string>{"harness:manual-runner", "mcp-server:manual-docs"}));
  EXPECT_EQ(out.state.capability("skill:loaded")->installation, Installation::kInstalled);
  EXPECT_EQ(out.state.capability("agent:installer")->installation, Installation::kAbsent);
  // §2.3: PresentBundle ordinal = actions already in the transition (0), "session".
  EXPECT_EQ(present.action_id(),
            "action-" + sha("ctx-engine-action-v1:" +
                            event("IntentObserved", 1, "event-intent").content_digest() +
                            ":PresentBundle:session:0"));
}

TEST_F(ReducerLifecycle, PlanIsGloballyBoundedToFiveRowsAndCanonicalOrder) {
  start();
  std::vector<Json> six;
  for (const char* id : {"agent:reviewer", "harness:python-runner", "mcp-server:docs", "skill:lint",
                         "skill:test", "skill:types"}) {
    six.push_back(plan_row(id, "manual"));
  }
  CTX_EXPECT_THROW(plan(six), StateValidationError, "more than five capabilities");
  std::vector<Json> unordered = {plan_row("skill:b", "load"), plan_row("skill:a", "load")};
  CTX_EXPECT_THROW(plan(unordered), StateValidationError, "canonical order");
  six.pop_back();
  const auto out = plan(six);
  EXPECT_EQ(out.state.committed_plan()->capabilities().size(), 5u);
}

TEST_F(ReducerLifecycle, AbstainedAndDegradedPlans) {
  start();
  auto abstained = step(event("IntentObserved", 1, "event-intent"), abstained_limit_zero());
  EXPECT_TRUE(abstained.transition.actions().empty());
  EXPECT_EQ(abstained.transition.diagnostics(), (std::vector<Json>{{{"code", "limit-zero"}}}));
  EXPECT_EQ(abstained.state.committed_plan()->status(), PlanStatus::kAbstained);
  auto f = event_fields("DevelopmentObserved", 2, "event-dev");
  f.correlation_id = "plan-degraded";
  auto degraded_out = step(EngineEvent::create(f), degraded());
  EXPECT_EQ(degraded_out.transition.diagnostics(),
            (std::vector<Json>{{{"code", "planner-failed"}}}));
  EXPECT_EQ(degraded_out.state.committed_plan()->status(), PlanStatus::kDegraded);
}

TEST_F(ReducerLifecycle, FullInstallActivateDeactivateLifecycle) {
  const auto install = run_to_install();
  EXPECT_EQ(install.action_kind(), ActionKind::kInstallCapability);
  EXPECT_EQ(install.precondition_revision(), 4);
  EXPECT_EQ(*install.expires_at(), "2026-08-02T13:00:00Z");
  EXPECT_EQ(install.payload()["installer_digest"],
            sha("ctx-install-plan-executor-v1:typed-plan-only:no-raw-command"));
  EXPECT_EQ(state_->pending_effects().size(), 1u);

  auto installed = step(install_receipt(install, 4));
  ASSERT_EQ(installed.transition.actions().size(), 1u);
  const auto activate = installed.transition.actions()[0];
  EXPECT_EQ(activate.action_kind(), ActionKind::kActivateCapability);
  EXPECT_EQ(*activate.lease_id(), "lease-1");
  const auto* cap = installed.state.capability(kInstalled);
  EXPECT_EQ(cap->installation, Installation::kInstalled);
  const auto& lineage = *cap->current_authorized_material->installed_material_lineage();
  EXPECT_EQ(lineage.install_action_content_digest(), install.content_digest());
  EXPECT_EQ(lineage.install_receipt_content_digest(),
            install_receipt(install, 4).content_digest());

  auto activated = step(material_receipt(activate, 5, "event-activation-applied"));
  EXPECT_TRUE(activated.transition.actions().empty());
  EXPECT_EQ(activated.state.capability(kInstalled)->activation, Activation::kActive);
  EXPECT_EQ(activated.state.active_capability_ids(), std::vector<std::string>{kInstalled});

  auto f = event_fields("DevelopmentObserved", 6, "event-dev-later");
  f.correlation_id = "plan-later";
  auto replanned = step(EngineEvent::create(f), abstained_limit_zero());
  ASSERT_EQ(replanned.transition.actions().size(), 1u);
  const auto deactivate = replanned.transition.actions()[0];
  EXPECT_EQ(deactivate.action_kind(), ActionKind::kDeactivateCapability);
  EXPECT_EQ(*deactivate.lease_id(), "lease-1");
  EXPECT_EQ(replanned.transition.diagnostics().back(), (Json{{"code", "limit-zero"}}));

  auto deactivated = step(material_receipt(deactivate, 7, "event-deactivation-applied"));
  EXPECT_TRUE(deactivated.state.capabilities().empty());  // pruned: unselected and inactive
}

// HostAction::create decodes each v3 capability payload once; the typed view is the payload
// (its to_json is the same bytes) and survives a round trip through the journal's JSON.
TEST_F(ReducerLifecycle, TypedPayloadsAreTheDecodedPayloads) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto offered = desire({desired_row(kInstalled, "install", "lease-1")}, 2);
  const HostAction request = offered.transition.actions().at(0);
  ASSERT_NE(request.consent_request(), nullptr);
  EXPECT_EQ(request.install_payload(), nullptr);
  EXPECT_EQ(request.material_payload(), nullptr);
  const ConsentRequestBinding& asked = *request.consent_request();
  EXPECT_EQ(asked.requested_action_id, request.payload()["requested_action_id"]);
  EXPECT_EQ(asked.requested_action_content_digest,
            request.payload()["requested_action_content_digest"]);
  EXPECT_EQ(asked.requested_action_precondition_revision, 4);
  const HostAction& pending = offered.state.pending_consents().at(0).install_action;
  ASSERT_NE(pending.install_payload(), nullptr);
  EXPECT_EQ(asked.install.to_json(), pending.payload());
  EXPECT_EQ(asked.requested_action_content_digest, pending.content_digest());

  const auto install = step(decision_event(request, 3)).transition.actions().at(0);
  ASSERT_NE(install.install_payload(), nullptr);
  EXPECT_EQ(install, pending);
  EXPECT_EQ(install.material_payload(), nullptr);
  EXPECT_EQ(install.install_payload()->to_json(), install.payload());
  EXPECT_EQ(install.install_payload()->result_material.capability_id(), kInstalled);
  const HostAction reread = HostAction::from_json_text(install.to_json_text());
  ASSERT_NE(reread.install_payload(), nullptr);
  EXPECT_EQ(reread.install_payload()->install_plan_descriptor,
            install.install_payload()->install_plan_descriptor);

  const auto activate = step(install_receipt(install, 4)).transition.actions().at(0);
  ASSERT_NE(activate.material_payload(), nullptr);
  EXPECT_EQ(activate.install_payload(), nullptr);
  EXPECT_EQ(activate.material_payload()->to_json(), activate.payload());
  EXPECT_EQ(activate.material_payload()->material_identity,
            install.install_payload()->result_material);

  // A payload that does not decode is refused when the action is made, naming the field.
  HostAction::Fields broken = install.fields();
  broken.payload["result_material"]["content_bytes"] = 7;
  EXPECT_THROW(HostAction::create(broken), ProtocolValidationError);
}

TEST_F(ReducerLifecycle, ConsentIdsFollowTheOfferingEvent) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto desired_event = event(
      "ReassessmentRequested", 2, "event-desired",
      {{"owner_id", "owner-1"},
       {"policy_snapshot_digest", InstallConsentPolicy::safe_default().policy_digest()},
       {"desired_capabilities", Json::array({desired_row(kInstalled, "install", "lease-1")})}});
  const auto out = step(desired_event);
  const auto& request = out.transition.actions().at(0);
  const auto e = desired_event.content_digest();
  EXPECT_EQ(request.action_kind(), ActionKind::kRequestConsent);
  EXPECT_EQ(request.precondition_revision(), 3);
  EXPECT_EQ(*request.consent_id(),
            "consent-" + sha("ctx-engine-consent-v1:" + e + ":" + kInstalled));
  EXPECT_EQ(request.action_id(), reducer_action_id(e, "RequestConsent", kInstalled, 0));
  EXPECT_EQ(request.payload()["requested_action_id"],
            reducer_action_id(e, "InstallCapability", kInstalled, 0));
  EXPECT_EQ(request.payload()["requested_action_precondition_revision"], 4);
  EXPECT_EQ(request.payload()["schema"], "ctx.install-consent-request-v3");
  const auto& consent = out.state.pending_consents().at(0);
  EXPECT_EQ(consent.install_action.content_digest(),
            request.payload()["requested_action_content_digest"]);
}

TEST_F(ReducerLifecycle, NonPlanningEventWhileConsentPendingReoffersConsent) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto first = desire({desired_row(kInstalled, "install", "lease-1")}, 2);
  const auto old_consent = *first.transition.actions()[0].consent_id();
  const auto out = step(event("ProviderSubmissionObserved", 3, "event-submission",
                              {{"capabilities", Json::array()}}));
  ASSERT_EQ(out.transition.actions().size(), 1u);
  EXPECT_EQ(out.transition.actions()[0].action_kind(), ActionKind::kRequestConsent);
  EXPECT_NE(*out.transition.actions()[0].consent_id(), old_consent);
  EXPECT_EQ(out.state.pending_consents().size(), 1u);
  // The retired consent is no longer accepted.
  auto stale = decision_event(first.transition.actions()[0], 3).fields();
  stale.expected_revision = 4;
  stale.payload["requested_action_precondition_revision"] = 5;
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(stale)}),
                   InvalidEventError, "unknown or completed consent");
}

TEST_F(ReducerLifecycle, PlanningEventWithPendingConsentIsRefused) {
  start();
  plan({plan_row(kInstalled, "install")});
  desire({desired_row(kInstalled, "install", "lease-1")}, 2);
  auto f = event_fields("DevelopmentObserved", 3, "event-dev");
  f.correlation_id = "plan-two";
  CTX_EXPECT_THROW(
      reduce_v3(&*state_, ReducerEvent{EngineEvent::create(f),
                                       ready_decision({plan_row(kInstalled, "install")})}),
      InvalidEventError, "cannot replace pending schema-v3 authority");
}

TEST_F(ReducerLifecycle, DeniedOrLateDecisionBlocksTheDescriptor) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto request =
      desire({desired_row(kInstalled, "install", "lease-1")}, 2).transition.actions()[0];
  auto denied = step(decision_event(request, 3, "denied"));
  EXPECT_TRUE(denied.transition.actions().empty());
  EXPECT_EQ(denied.transition.diagnostics()[0],
            (Json{{"capability_id", kInstalled}, {"code", "install_consent_denied"}}));
  EXPECT_EQ(denied.state.fields().blocked_install_descriptor_digests,
            std::vector<std::string>{install_descriptor(kInstalled).descriptor_digest()});
}

TEST_F(ReducerLifecycle, DecisionAtExpiryCountsAsExpired) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto request =
      desire({desired_row(kInstalled, "install", "lease-1")}, 2).transition.actions()[0];
  auto late = step(decision_event(request, 3, "granted", "2026-08-02T13:00:00Z"));
  EXPECT_TRUE(late.transition.actions().empty());
  EXPECT_EQ(late.transition.diagnostics()[0]["code"], "install_consent_expired");
}

TEST_F(ReducerLifecycle, DecisionMustMatchTheRequestedInstall) {
  start();
  plan({plan_row(kInstalled, "install")});
  const auto request =
      desire({desired_row(kInstalled, "install", "lease-1")}, 2).transition.actions()[0];
  auto f = decision_event(request, 3).fields();
  f.payload["requested_action_content_digest"] = sha("other");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(f)}), InvalidEventError,
                   "does not match the exact requested install");
  f = decision_event(request, 3).fields();
  f.payload.erase("decision_basis");
  f.payload.erase("policy_snapshot_digest");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(f)}), InvalidEventError,
                   "exact decision provenance");
}

TEST_F(ReducerLifecycle, ExpiredInstallRetiresOnlyTheAuthority) {
  const auto install = run_to_install();
  auto payload = receipt_identity(install);
  payload["reason"] = "expired";
  auto out = step(event("ActionExpired", 4, "event-install-expired", payload));
  EXPECT_TRUE(out.transition.actions().empty());
  EXPECT_TRUE(out.transition.diagnostics().empty());
  EXPECT_TRUE(out.state.pending_effects().empty());
  EXPECT_TRUE(out.state.fields().blocked_install_descriptor_digests.empty());
}

TEST_F(ReducerLifecycle, FailedInstallBlocksDescriptor) {
  const auto install = run_to_install();
  auto payload = receipt_identity(install);
  payload["error"] = {{"code", "redacted-host-failure"}};
  auto out = step(event("ActionFailed", 4, "event-install-failed", payload));
  EXPECT_EQ(out.state.fields().blocked_install_descriptor_digests.size(), 1u);
  EXPECT_TRUE(out.transition.actions().empty());
}

TEST_F(ReducerLifecycle, ReceiptMustByteMatchThePendingAction) {
  const auto install = run_to_install();
  auto receipt = install_receipt(install, 4).fields();
  receipt.payload["verification"]["policy_snapshot_digest"] = sha("other-policy");
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(receipt)}),
                   InvalidEventError, "does not byte-match");
  receipt = install_receipt(install, 4).fields();
  receipt.payload["action_id"] = "action-unknown";
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(receipt)}),
                   InvalidEventError, "unknown or completed action");
  receipt = install_receipt(install, 4).fields();
  receipt.scope = scope().with_exposure("exposure-child", "child", std::nullopt);
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{EngineEvent::create(receipt)}),
                   InvalidEventError, "receipt scope does not match");
}

TEST_F(ReducerLifecycle, LoadRowsActivateDirectlyAndTurnStartingPrepares) {
  start();
  plan({plan_row("skill:a", "load"), plan_row("skill:b", "load")});
  auto desired = desire(
      {desired_row("skill:a", "load", "lease-a"), desired_row("skill:b", "load", "lease-b")}, 2);
  ASSERT_EQ(desired.transition.actions().size(), 2u);
  const auto e = state_->fields().pending_effects[0].action;
  // Ordinals are the running count of actions in the pass.
  EXPECT_EQ(
      desired.transition.actions()[1].action_id(),
      reducer_action_id(
          event(
              "ReassessmentRequested", 2, "event-desired",
              {{"owner_id", "owner-1"},
               {"policy_snapshot_digest", InstallConsentPolicy::safe_default().policy_digest()},
               {"desired_capabilities", Json::array({desired_row("skill:a", "load", "lease-a"),
                                                     desired_row("skill:b", "load", "lease-b")})}})
              .content_digest(),
          "ActivateCapability", "skill:b", 1));
  step(material_receipt(desired.transition.actions()[0], 3, "event-a-active"));
  step(material_receipt(desired.transition.actions()[1], 4, "event-b-active"));
  auto turn = step(event("TurnStarting", 5, "event-turn"));
  ASSERT_EQ(turn.transition.actions().size(), 2u);
  EXPECT_EQ(turn.transition.actions()[0].action_kind(), ActionKind::kPrepareExposure);
  auto prepared = step(material_receipt(turn.transition.actions()[0], 6, "event-a-prepared"));
  EXPECT_EQ(prepared.state.evidence().at(0).exposure, Exposure::kPrepared);
}

TEST_F(ReducerLifecycle, SessionEndDeactivatesOnePerTransition) {
  start();
  plan({plan_row("skill:a", "load"), plan_row("skill:b", "load")});
  auto desired = desire(
      {desired_row("skill:a", "load", "lease-a"), desired_row("skill:b", "load", "lease-b")}, 2);
  step(material_receipt(desired.transition.actions()[0], 3, "event-a-active"));
  step(material_receipt(desired.transition.actions()[1], 4, "event-b-active"));
  auto ended = step(event("SessionEnded", 5, "event-end"));
  ASSERT_EQ(ended.transition.actions().size(), 1u);
  EXPECT_EQ(ended.transition.actions()[0].action_kind(), ActionKind::kDeactivateCapability);
  EXPECT_EQ(ended.state.session_status(), SessionStatus::kEnded);
  CTX_EXPECT_THROW(reduce_v3(&*state_, ReducerEvent{event("TurnEnded", 6, "e")}), InvalidEventError,
                   "session has ended");
  auto next = step(material_receipt(ended.transition.actions()[0], 6, "event-a-inactive"));
  ASSERT_EQ(next.transition.actions().size(), 1u);
  EXPECT_EQ(*next.transition.actions()[0].entity_id(), "skill:b");
  // A failed deactivation is blocked, then an explicit retry re-runs cleanup.
  auto payload = receipt_identity(next.transition.actions()[0]);
  payload["error"] = {{"code", "redacted-host-failure"}};
  auto failed = step(event("ActionFailed", 7, "event-b-failed", payload));
  EXPECT_TRUE(failed.transition.actions().empty());
  auto retry = step(event("ReassessmentRequested", 8, "event-retry",
                          {{"retry_failed_deactivations", Json::array({"skill:b"})}}));
  ASSERT_EQ(retry.transition.actions().size(), 1u);
  EXPECT_EQ(retry.transition.diagnostics().back()["code"], "terminal_cleanup_retry_requested");
}

TEST_F(ReducerLifecycle, DesiredUpdateValidation) {
  start();
  plan({plan_row(kInstalled, "install")});
  auto bad = desired_row(kInstalled, "install", "lease-1");
  bad["source_digest"] = sha("substituted");
  CTX_EXPECT_THROW(desire({bad}, 2), InvalidEventError, "does not match committed identity");
  CTX_EXPECT_THROW(desire({desired_row("skill:other", "load", "l")}, 2), InvalidEventError,
                   "was not in the committed plan");
  CTX_EXPECT_THROW(
      desire({desired_row(kInstalled, "install", "l"), desired_row(kInstalled, "install", "l")}, 2),
      InvalidEventError, "duplicate lease_id");
}

TEST_F(ReducerLifecycle, QueryOnlyHostGetsDiagnosticInsteadOfActions) {
  start("query-only");
  plan({plan_row("skill:a", "load")});
  auto out = desire({desired_row("skill:a", "load", "lease-a")}, 2);
  EXPECT_TRUE(out.transition.actions().empty());
  EXPECT_EQ(out.transition.diagnostics()[0]["code"], "host_activation_unsupported");
}

TEST_F(ReducerLifecycle, ReductionIsDeterministic) {
  start();
  const auto e = event("IntentObserved", 1, "event-intent");
  const auto a =
      reduce_v3(&*state_, ReducerEvent{e, ready_decision({plan_row("skill:a", "load")})});
  const auto b =
      reduce_v3(&*state_, ReducerEvent{e, ready_decision({plan_row("skill:a", "load")})});
  EXPECT_EQ(a.state.to_json_text(), b.state.to_json_text());
  EXPECT_EQ(a.transition.to_json_text(), b.transition.to_json_text());
}

}  // namespace
}  // namespace ctx::engine

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;

TEST_F(ReducerLifecycle, InstalledCapabilityPromotesToLoadKeepingItsActivation) {
  const auto install = run_to_install();
  const auto activate = step(install_receipt(install, 4)).transition.actions().at(0);
  step(material_receipt(activate, 5, "event-activation-applied"));
  const auto* installed = state_->capability(kInstalled);
  // The catalog now offers the installed material as a load row with the same source.
  const auto lineage = *installed->current_authorized_material->installed_material_lineage();
  const auto identity = install_result(kInstalled);
  const auto descriptor = MaterialDescriptor::create(
      kInstalled, CapabilityKind::kSkill, Actionability::kLoad, identity.content_sha256(),
      identity.content_bytes(), 16, sha("material-snapshot"), identity.identity_digest());
  const auto material =
      AuthorizedMaterial::from_catalog(lineage.catalog_identity_digest(), descriptor);
  auto row = plan_row(kInstalled, "install");
  row["actionability"] = "load";
  row["authority"] = {{"material", material.to_json()}, {"type", "load"}};
  row["install_descriptor_digest"] = nullptr;
  row["install_plan_digest"] = nullptr;
  auto f = event_fields("DevelopmentObserved", 6, "event-dev-promote");
  f.correlation_id = "plan-promote";
  auto promoted = step(EngineEvent::create(f), ready_decision({row}));
  const auto* cap = promoted.state.capability(kInstalled);
  EXPECT_EQ(cap->activation, Activation::kActive);
  EXPECT_TRUE(cap->selection.is_load());
  EXPECT_EQ(cap->current_authorized_material->origin(), MaterialOrigin::kCatalog);
  // A changed selection is presented again (only identical active rows are "retained").
  ASSERT_EQ(promoted.transition.actions().size(), 1u);
  EXPECT_EQ(promoted.transition.actions()[0].action_kind(), ActionKind::kPresentBundle);
}

}  // namespace
}  // namespace ctx::engine
