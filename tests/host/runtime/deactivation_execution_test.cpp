// Deactivation execution through the ActivationPort (EngineComposition::execute_deactivation): a
// plan that dropped an active capability asks to deactivate it; what the installer observed is
// journaled as such — applied (inactive), failed (ActionFailed, the engine blocks it) or
// indeterminate (nothing committed, a later call tries again) — and a settled one is never
// executed twice. Process kills at its crash points: tests/host/app/state_service_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "host/runtime/composition.hpp"
#include "tests/support/engine/fake_activation.hpp"
#include "tests/support/engine/managed_query_seed_support.hpp"
#include "tests/support/engine/pending_activation.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/raw_sqlite.hpp"

namespace ctx::runtime {
namespace {

namespace t = ::ctx::testing;
using Script = t::FakeActivation::Script;

constexpr const char* kCapability = "skill:installed";

// One session whose installed skill is active and whose next plan dropped it: the composition,
// its fake installer and the pending DeactivateCapability.
class DeactivationExecution : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string snapshot = t::digest("deactivation-installation");
    const auto bundle = t::install_bundle(kCapability, snapshot);
    auto initial = t::normalizer(5);
    auto abstaining = t::normalizer(0);
    t::CompositionArgs args;
    args.candidates = {t::candidate(kCapability, "install", snapshot)};
    args.install_authority = std::make_shared<t::InstallAuthority>(
        snapshot, std::map<std::string, std::optional<engine::InstallPlanningBundle>>{
                      {kCapability, bundle}});
    args.facts = std::make_shared<t::Facts>();
    args.observation_normalizer = [=](const engine::ObservationReference& reference,
                                      const engine::EngineState* state) {
      return reference.opaque_id == "observation-deactivation-later" ? abstaining(reference, state)
                                                                      : initial(reference, state);
    };
    args.interactive_install_decision_guard = true;
    args.trusted_clock = true;
    args.suffix = "deactivation";
    args.activation_port = driver_;
    composition_ = t::open_composition(tmp_.path(), std::move(args));
    owner_ = t::open_journal_owner(tmp_.path(), "deactivation");
    auto pending =
        t::drive_to_pending_activation(*composition_, owner_->engine, "deactivation", bundle);
    scope_ = pending.intent_observed.scope();
    activation_.emplace(pending.activation);
    const auto applied =
        composition_->execute_activation(pending.activation, pending.binding,
                                         t::host_digest(pending.session_started),
                                         t::activation_observation());
    ASSERT_EQ(applied.outcome, engine::Outcome::kApplied);
    const auto later = t::development_event(pending.intent_observed, 6, "deactivation-later");
    const auto shifted = composition_->advance_managed_query(pending.session_started, later);
    ASSERT_EQ(shifted.transition().actions().size(), 1u);
    deactivation_.emplace(shifted.transition().actions().front());
    ASSERT_EQ(deactivation_->action_kind(), engine::ActionKind::kDeactivateCapability);
    head_ = revision();
  }
  void TearDown() override { composition_->close(); }

  engine::Revision revision() { return composition_->snapshot(*scope_).revision; }
  engine::EngineState state() { return *composition_->snapshot(*scope_).state; }
  bool pending() {
    const auto s = state();
    return s.pending_effect(deactivation_->action_id()) != nullptr;
  }
  long receipts() {
    return t::journal::raw_count(
        t::seed_journal_path(tmp_.path(), "deactivation"),
        "engine_journal WHERE event_id LIKE 'ctx-deactivation-receipt-%'");
  }
  DeactivationExecutionReport run(Script script) {
    driver_->set_deactivate_script(script);
    return composition_->execute_deactivation(*deactivation_);
  }

  t::TempDir tmp_;
  std::shared_ptr<t::FakeActivation> driver_ = std::make_shared<t::FakeActivation>();
  std::unique_ptr<EngineComposition> composition_;
  std::unique_ptr<t::JournalOwner> owner_;
  std::optional<engine::ScopeRef> scope_;
  std::optional<engine::HostAction> deactivation_;
  std::optional<engine::HostAction> activation_;
  engine::Revision head_ = 0;
};

TEST_F(DeactivationExecution, AppliedIsOneReceiptAndTheCapabilityIsInactive) {
  ASSERT_TRUE(driver_->active(kCapability).has_value());
  const auto report = run(Script::kApply);
  EXPECT_EQ(report.outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(report.settled);
  ASSERT_TRUE(report.transition.has_value());
  EXPECT_FALSE(driver_->active(kCapability).has_value());
  EXPECT_EQ(revision(), head_ + 1);
  EXPECT_EQ(receipts(), 1);
  EXPECT_FALSE(pending());
  EXPECT_TRUE(state().active_capability_ids().empty());
  // Settled: a re-run reports it without calling the installer or committing anything.
  const auto again = run(Script::kFail);
  EXPECT_EQ(again.outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(again.settled);
  EXPECT_FALSE(again.transition.has_value());
  EXPECT_EQ(driver_->deactivate_calls(), 1);
  EXPECT_EQ(revision(), head_ + 1);
}

TEST_F(DeactivationExecution, AFailureIsJournaledAndTheEngineBlocksThatDeactivation) {
  const auto report = run(Script::kFail);
  EXPECT_EQ(report.outcome, engine::Outcome::kFailed);
  EXPECT_TRUE(report.settled);
  EXPECT_EQ(receipts(), 1);
  EXPECT_FALSE(pending());
  const engine::EngineState after = state();
  const auto& blocked = after.fields().blocked_deactivation_ids;
  EXPECT_NE(std::find(blocked.begin(), blocked.end(), kCapability), blocked.end());
  EXPECT_EQ(after.active_capability_ids(), std::vector<std::string>{kCapability});
  const auto again = run(Script::kApply);
  EXPECT_EQ(again.outcome, engine::Outcome::kFailed);
  EXPECT_FALSE(again.transition.has_value());
  EXPECT_EQ(driver_->deactivate_calls(), 1);
}

TEST_F(DeactivationExecution, AnIndeterminateOrUnreachableInstallerCommitsNothing) {
  for (const Script script : {Script::kIndeterminate, Script::kThrow}) {
    const auto report = run(script);
    EXPECT_EQ(report.outcome, engine::Outcome::kIndeterminate);
    EXPECT_FALSE(report.settled);
    EXPECT_FALSE(report.transition.has_value());
    EXPECT_EQ(revision(), head_);
    EXPECT_TRUE(pending());
  }
  EXPECT_EQ(run(Script::kApply).outcome, engine::Outcome::kApplied);  // a later call settles it
  EXPECT_EQ(receipts(), 1);
}

// Any other action kind is refused before the installer is called or anything is committed.
TEST_F(DeactivationExecution, AnotherActionKindIsRefused) {
  CTX_EXPECT_THROW(composition_->execute_deactivation(*activation_), ActivationExecutionError,
                   "exact schema-v3 deactivation action");
  EXPECT_EQ(driver_->deactivate_calls(), 0);
  EXPECT_EQ(revision(), head_);
  EXPECT_TRUE(pending());
}

}  // namespace
}  // namespace ctx::runtime
