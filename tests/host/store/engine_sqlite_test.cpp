// engine::Engine on the durable SqliteJournalStore (integration): the consent → install →
// activation lifecycle with real claims, outcomes and settlements in SQLite; a fresh engine on a
// reopened file resumes from the durable state; two engines on one file race for one head.
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "host/engine/engine.hpp"
#include "host/engine/errors.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/journal_fixtures.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;
using ctx::testing::journal::ManualClock;
using ctx::testing::journal::TempDir;

Json observation_ref(const std::string& opaque) {
  return {{"observation_ref",
           {{"content_digest", sha("work:" + opaque)},
            {"opaque_id", opaque},
            {"provider_id", "managed-query-test"}}}};
}

EnginePorts ports(const std::vector<Json>& rows) {
  EnginePorts p;
  p.observation_normalizer = [](const ObservationReference&, const EngineState*) {
    return StructuredSurrogate::create("ctx.observation.current-work", 1,
                                       {{"active_capability_ids", Json::array()},
                                        {"baseline_capability_ids", Json::array()},
                                        {"languages", Json::array({"python"})},
                                        {"rejected_capability_ids", Json::array()},
                                        {"requested_limit", 5},
                                        {"signals", Json::array({"python"})}});
  };
  p.decision_planner = [rows](const StructuredSurrogate&, const PlanningContext&,
                              const EngineState*) {
    return StructuredSurrogate::create("ctx.decision.capability-plan", 3, ready_decision(rows));
  };
  p.interactive_install_decision_guard = [](const InteractiveInstallDecisionReservation&) {
    return std::function<void()>([] {});
  };
  return p;
}

Json desired_payload(const std::string& id) {
  const auto row = plan_row(id, "install");
  return {{"desired_capabilities",
           Json::array({{{"actionability", "install"},
                         {"capability_id", id},
                         {"install_descriptor_digest", row["install_descriptor_digest"]},
                         {"install_plan_digest", row["install_plan_digest"]},
                         {"kind", kind_of(id)},
                         {"lease_id", "lease-1"},
                         {"source_digest", row["catalog_entry_digest"]}}})},
          {"owner_id", "owner-1"},
          {"policy_snapshot_digest", InstallConsentPolicy::safe_default().policy_digest()}};
}

EngineEvent event_at(const std::string& kind, std::int64_t revision, const std::string& id,
                     Json payload, const std::string& occurred_at) {
  auto f = event_fields(kind, revision, id, std::move(payload));
  f.occurred_at = occurred_at;
  return EngineEvent::create(std::move(f));
}

class EngineOnSqlite : public ::testing::Test {
 protected:
  EngineOnSqlite() : clock_("2026-08-02T12:01:00Z") {}
  std::filesystem::path path() const { return dir_.path() / "journal.sqlite3"; }

  const std::string kId = "skill:installed";
  TempDir dir_;
  ManualClock clock_;
};

TEST_F(EngineOnSqlite, InstallAndActivationSettleDurablyAndSurviveReopen) {
  HostAction install = HostAction::create(HostAction::Fields{
      .action_id = "placeholder", .kind = "NoChange", .scope = scope()});
  HostAction activation = install;
  InstallExecutionBinding binding = InstallExecutionBinding::create(
      install_descriptor(kId).installer_id(), sha("placeholder"), sha("host"), sha("target"));
  {
    store::SqliteJournalStore store(path(), clock_);
    Engine engine(store, &store, clock_, ports({plan_row(kId, "install")}));
    engine.process(event("SessionStarted", 0, "event-start", {{"host_level", "managing"}}));
    engine.process(event("IntentObserved", 1, "event-intent", observation_ref("observation-one")));
    const auto request =
        engine.process(event("ReassessmentRequested", 2, "event-desired", desired_payload(kId)))
            .actions()
            .at(0);
    install = engine.process(event("UserDecision", 3, "event-granted", decision_payload(request)))
                  .actions()
                  .at(0);
    ASSERT_EQ(install.action_kind(), ActionKind::kInstallCapability);
    binding = InstallExecutionBinding::create(install_descriptor(kId).installer_id(),
                                              install.payload()["installer_digest"], sha("host"),
                                              sha("target"));
    const auto row =
        engine.snapshot(scope().stream_id()).state->committed_plan()->capabilities().at(0);
    engine.authorize_install(install, row, install_descriptor(kId), catalog_snapshot(),
                             InstallConsentPolicy::safe_default().policy_digest(), binding);
    CTX_EXPECT_THROW(
        engine.authorize_install(install, row, install_descriptor(kId), catalog_snapshot(),
                                 InstallConsentPolicy::safe_default().policy_digest(), binding),
        InstallActionAlreadyClaimed, "has already been claimed");
  }  // "crash" after the claim: the engine and its store go away

  store::SqliteJournalStore store(path(), clock_);
  Engine engine(store, &store, clock_, ports({plan_row(kId, "install")}));
  auto status = engine.install_execution_status(install);
  EXPECT_TRUE(status.claimed);
  EXPECT_FALSE(status.outcome_recorded);
  const auto guard = engine.record_install_outcome(install, binding, InstallOutcome::kApplied,
                                                   install_result(kId).identity_digest(),
                                                   sha("install-verification"));
  const auto observed = *engine.install_execution_status(install).observed_at;
  const auto installed = engine.process_install_receipt(
      event_at("ActionApplied", 4, "ctx-install-receipt-" + *guard.execution_outcome_digest,
               receipt(install, install_verification(install)), observed),
      guard);
  ASSERT_EQ(installed.actions().size(), 1u);
  activation = installed.actions()[0];
  EXPECT_EQ(activation.action_kind(), ActionKind::kActivateCapability);
  EXPECT_TRUE(engine.install_execution_status(install).settled);

  clock_.advance_seconds(1);
  engine.authorize_activation(activation, binding, host_digest());
  clock_.advance_seconds(1);
  const auto activation_guard = engine.record_activation_outcome(
      activation, binding, activation.payload()["material_identity"]["identity_digest"],
      sha("activation-verification"));
  const auto activated_at = *engine.activation_execution_status(activation).observed_at;
  const auto activated = engine.process_activation_receipt(
      event_at("ActionApplied", 5, "ctx-activation-receipt-" +
                                       *activation_guard.execution_outcome_digest,
               receipt(activation, material_verification(activation)), activated_at),
      activation_guard);
  EXPECT_TRUE(activated.actions().empty());
  EXPECT_TRUE(engine.activation_execution_status(activation).settled);
  EXPECT_EQ(engine.snapshot(scope().stream_id()).state->capability(kId)->activation,
            engine::Activation::kActive);
  store.verify();

  // A fresh engine on a fresh connection replays the durable journal to the same head.
  store::SqliteJournalStore reopened(path(), clock_);
  Engine fresh(reopened, &reopened, clock_, ports({plan_row(kId, "install")}));
  EXPECT_EQ(fresh.snapshot(scope().stream_id()), engine.snapshot(scope().stream_id()));
  EXPECT_TRUE(fresh.activation_execution_status(activation).settled);
}

TEST_F(EngineOnSqlite, TwoEnginesOnOneFileRaceForOneHead) {
  {
    store::SqliteJournalStore store(path(), clock_);
    Engine engine(store, &store, clock_, ports({plan_row("skill:test", "manual")}));
    engine.process(event("SessionStarted", 0, "event-start", {{"host_level", "managing"}}));
  }
  std::barrier sync(2);
  std::atomic<int> wins{0}, conflicts{0};
  auto racer = [&](const std::string& id) {
    store::SqliteJournalStore store(path(), clock_);
    Engine engine(store, &store, clock_, ports({plan_row("skill:test", "manual")}));
    engine.snapshot(scope().stream_id());
    sync.arrive_and_wait();
    try {
      engine.process(event("IntentObserved", 1, id, observation_ref(id)));
      ++wins;
    } catch (const RevisionConflict& conflict) {
      EXPECT_EQ(conflict.expected(), 1);
      EXPECT_EQ(conflict.actual(), 2);
      ++conflicts;
    }
  };
  std::thread a(racer, "race-a"), b(racer, "race-b");
  a.join();
  b.join();
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(conflicts, 1);
  store::SqliteJournalStore store(path(), clock_);
  EXPECT_EQ(store.head(scope().stream_id()).revision, 2);
  store.verify();
}

}  // namespace
}  // namespace ctx::engine
