// Activation execution through the ActivationPort (issue 6 items 7, 8, 9, 10): what the installer
// observed is recorded as such, recovery asks reconcile, a crash at every named crash point (in
// process through SimulatedCrash, and as a real SIGKILL in a forked child) recovers to exactly
// one outcome, a reserved decision guard is settled after a crash between commit and settlement,
// and a composition destroyed in a forked child leaves the inherited SQLite handles alone.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/runtime/composition.hpp"
#include "host/runtime/crash_point.hpp"
#include "tests/support/engine/pending_activation.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/raw_sqlite.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
namespace t = ::ctx::testing;
using Script = t::FakeActivation::Script;

ActivationExecutionReport execute(t::ActivationFixture& fixture) {
  const auto& pending = *fixture.pending;
  return fixture.composition->execute_activation(pending.activation, pending.binding,
                                                 t::host_digest(pending.session_started),
                                                 t::activation_observation());
}

std::int64_t count_where(const fs::path& journal, const std::string& table,
                         const std::string& where) {
  return t::journal::raw_count(journal, table + " WHERE " + where);
}

// Exactly one outcome for the pending activation: one claim, one outcome, one settlement, one
// ActionApplied receipt, and the capability active in the journal state.
void expect_exactly_one_outcome(const fs::path& journal, t::ActivationFixture& fixture) {
  const std::string action = "action_id = '" + fixture.pending->activation.action_id() + "'";
  EXPECT_EQ(count_where(journal, "engine_activation_claims", action), 1);
  EXPECT_EQ(count_where(journal, "engine_activation_outcomes", action), 1);
  EXPECT_EQ(count_where(journal, "engine_activation_claim_settlements", action), 1);
  EXPECT_EQ(count_where(journal, "engine_journal", "event_id LIKE 'ctx-activation-receipt-%'"), 1);
  const auto status =
      fixture.owner->engine.activation_execution_status(fixture.pending->activation);
  EXPECT_TRUE(status.claimed && status.outcome_recorded && status.settled);
  const auto head = fixture.composition->snapshot(fixture.pending->intent_observed.scope());
  ASSERT_TRUE(head.state.has_value());
  EXPECT_EQ(head.state->active_capability_ids(), std::vector<std::string>{"skill:installed"});
}

void expect_report(const ActivationExecutionReport& report, engine::Outcome outcome, bool settled,
                   bool claim_was_new) {
  EXPECT_EQ(report.outcome, outcome);
  EXPECT_EQ(report.settled, settled);
  EXPECT_EQ(report.claim_was_new, claim_was_new);
}

fs::path journal_of(const t::TempDir& tmp, const std::string& suffix) {
  return t::seed_journal_path(tmp.path(), suffix);
}

// ---- what the installer observed -----------------------------------------------------------

// One pending activation per test, with the FakeActivation double behind the composition.
class ActivationExecution : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = t::pending_activation_composition(tmp_.path(), "observed");
    head_ = revision();
  }
  void TearDown() override { fixture_.composition->close(); }

  engine::Revision revision() {
    return fixture_.composition->snapshot(fixture_.pending->intent_observed.scope()).revision;
  }
  ActivationExecutionReport run(Script script) {
    fixture_.activation->set_script(script);
    return execute(fixture_);
  }
  // Nothing beyond the claim: no outcome, no settlement, no receipt, journal head unchanged.
  void expect_claim_only() {
    const fs::path journal = journal_of(tmp_, "observed");
    const std::string action = "action_id = '" + fixture_.pending->activation.action_id() + "'";
    EXPECT_EQ(count_where(journal, "engine_activation_claims", action), 1);
    EXPECT_EQ(count_where(journal, "engine_activation_outcomes", action), 0);
    EXPECT_EQ(count_where(journal, "engine_activation_claim_settlements", action), 0);
    EXPECT_EQ(revision(), head_);
  }
  void expect_exactly_one() { expect_exactly_one_outcome(journal_of(tmp_, "observed"), fixture_); }
  t::FakeActivation& driver() { return *fixture_.activation; }

  t::TempDir tmp_;
  t::ActivationFixture fixture_;
  engine::Revision head_ = 0;
};

TEST_F(ActivationExecution, AppliedObservationIsRecordedWithTheInstallersVerification) {
  const auto report = run(Script::kApply);
  expect_report(report, engine::Outcome::kApplied, true, true);
  ASSERT_TRUE(report.verification_digest.has_value());
  EXPECT_NE(*report.verification_digest, t::activation_observation());  // binds the installer's
  const auto material = fixture_.pending->activation.payload().at("material_identity");
  EXPECT_EQ(report.observed_material_identity_digest,
            material.at("identity_digest").get<std::string>());
  EXPECT_EQ(driver().activate_calls(), 1);
  EXPECT_EQ(driver().reconcile_calls(), 0);  // a fresh claim was never acted on
  expect_exactly_one();
}

TEST_F(ActivationExecution, FailedObservationIsRecordedAsFailedAndRecoveredThroughReconcile) {
  const auto failed = run(Script::kFail);
  expect_report(failed, engine::Outcome::kFailed, false, true);
  EXPECT_FALSE(failed.verification_digest.has_value());
  EXPECT_FALSE(failed.transition.has_value());
  expect_claim_only();
  // The driver recovers: the next call asks reconcile (not active), re-activates and records.
  expect_report(run(Script::kApply), engine::Outcome::kApplied, true, false);
  EXPECT_EQ(driver().reconcile_calls(), 1);
  EXPECT_EQ(driver().activate_calls(), 2);
  expect_exactly_one();
}

TEST_F(ActivationExecution, IndeterminateObservationIsRecordedAsSuchAndReconcileSettlesIt) {
  // The driver activated but its reply was lost.
  expect_report(run(Script::kApplyReportIndeterminate), engine::Outcome::kIndeterminate, false,
                true);
  expect_claim_only();
  // While reconcile cannot tell either, nothing is recorded and nothing is re-activated.
  driver().set_reconcile_indeterminate(true);
  EXPECT_EQ(execute(fixture_).outcome, engine::Outcome::kIndeterminate);
  EXPECT_EQ(driver().activate_calls(), 1);
  expect_claim_only();
  // Reconcile sees the exact material active: applied without activating again.
  driver().set_reconcile_indeterminate(false);
  expect_report(execute(fixture_), engine::Outcome::kApplied, true, false);
  EXPECT_EQ(driver().activate_calls(), 1);
  EXPECT_EQ(driver().reconcile_calls(), 2);
  expect_exactly_one();
}

TEST_F(ActivationExecution, OtherMaterialOrAnUnreachableDriverIsNeverApplied) {
  const auto conflict = run(Script::kApplyOtherMaterial);
  EXPECT_EQ(conflict.outcome, engine::Outcome::kIndeterminate);
  EXPECT_NE(conflict.observed_material_identity_digest,
            fixture_.pending->activation.payload().at("material_identity").at("identity_digest"));
  // Reconcile reports the other material (not the authorised one: "not active"), and the
  // re-activation cannot reach the driver.
  EXPECT_EQ(run(Script::kThrow).outcome, engine::Outcome::kIndeterminate);
  expect_claim_only();
}

// ---- a crash at every named point ------------------------------------------------------------

// A host decision guard double that remembers reservations and settlements by event id. Its
// settlement is idempotent, as the guard contract requires.
class RecordingDecisionGuard {
 public:
  InteractiveInstallDecisionGuard port() {
    return [this](const engine::InteractiveInstallDecisionReservation& reservation) {
      {
        std::lock_guard lock(mutex_);
        ++reservations_[reservation.event_id];
      }
      return std::function<void()>([this, id = reservation.event_id] {
        std::lock_guard lock(mutex_);
        settled_.insert(id);
        ++settle_calls_;
      });
    };
  }
  std::set<std::string> settled() const {
    std::lock_guard lock(mutex_);
    return settled_;
  }
  int reservations(const std::string& event_id) const {
    std::lock_guard lock(mutex_);
    const auto it = reservations_.find(event_id);
    return it == reservations_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> reservations_;
  std::set<std::string> settled_;
  int settle_calls_ = 0;
};

class CrashAtNamedPoint : public ::testing::TestWithParam<std::string_view> {};

// The interactive grant crashes between its commit and the guard's settlement; retrying the
// identical decision settles the reservation once and returns the committed transition.
void crash_and_recover_decision_settlement(const t::TempDir& tmp) {
  RecordingDecisionGuard guard;
  t::ActivationOptions options;
  options.decision_guard = guard.port();
  options.drive = false;
  auto fixture = t::pending_activation_composition(tmp.path(), "settle", std::move(options));
  ::ctx::testing::ScopedClose scope(*fixture.composition);
  const auto requested = ::ctx::testing::request_install_consent(*fixture.composition, "settle");
  const auto grant = ::ctx::testing::interactive_grant(requested, "settle");
  {
    CrashPointArmed crash(crash_points::kBeforeDecisionSettlement);
    EXPECT_THROW(fixture.composition->process(grant), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  const auto scope_ref = requested.intent_observed.scope();
  EXPECT_EQ(fixture.composition->snapshot(scope_ref).revision, 4);  // the decision committed
  EXPECT_TRUE(guard.settled().empty());                              // but was not settled
  const auto retried = fixture.composition->process(grant);
  EXPECT_EQ(guard.settled(), std::set<std::string>{grant.event_id()});
  EXPECT_EQ(retried.actions().at(0).action_kind(), engine::ActionKind::kInstallCapability);
  EXPECT_EQ(fixture.composition->process(grant), retried);  // idempotent: same settlement
  EXPECT_EQ(guard.settled(), std::set<std::string>{grant.event_id()});
  EXPECT_EQ(guard.reservations(grant.event_id()), 3);
  EXPECT_EQ(fixture.composition->snapshot(scope_ref).revision, 4);
  EXPECT_EQ(count_where(journal_of(tmp, "settle"), "engine_journal",
                        "event_id = '" + grant.event_id() + "'"),
            1);
}

TEST_P(CrashAtNamedPoint, InProcessCrashRecoversToExactlyOneOutcome) {
  t::TempDir tmp;
  if (GetParam() == crash_points::kBeforeDecisionSettlement) {
    crash_and_recover_decision_settlement(tmp);
    return;
  }
  auto fixture = t::pending_activation_composition(tmp.path(), "crash");
  ::ctx::testing::ScopedClose scope(*fixture.composition);
  ASSERT_TRUE(t::crash_execute_activation(*fixture.composition, *fixture.pending, GetParam()));
  const auto report = execute(fixture);
  expect_report(report, engine::Outcome::kApplied, true, false);
  // A receipt committed before the crash is not committed again.
  EXPECT_EQ(report.transition.has_value(), GetParam() != crash_points::kAfterActivationReceipt);
  expect_exactly_one_outcome(journal_of(tmp, "crash"), fixture);
  EXPECT_EQ(execute(fixture).transition.has_value(), false);  // and a further retry is a no-op
  expect_exactly_one_outcome(journal_of(tmp, "crash"), fixture);
}

// The same crash as a real process death: a forked child opens its own composition on the same
// files, arms the point in kill mode and is SIGKILLed there; the parent recovers.
TEST_P(CrashAtNamedPoint, SigkilledChildRecoversToExactlyOneOutcome) {
  t::TempDir tmp;
  const std::string suffix = "kill";
  t::ActivationOptions options;
  std::optional<::ctx::testing::ConsentRequested> requested;
  const bool decision = GetParam() == crash_points::kBeforeDecisionSettlement;
  RecordingDecisionGuard guard;
  options.decision_guard = guard.port();
  options.drive = !decision;
  std::optional<::ctx::testing::PendingActivation> pending;
  {
    auto fixture = t::pending_activation_composition(tmp.path(), suffix, std::move(options));
    if (decision) requested = ::ctx::testing::request_install_consent(*fixture.composition, suffix);
    pending = fixture.pending;
    fixture.composition->close();
  }  // no SQLite connection is open across the fork
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RecordingDecisionGuard child_guard;
    t::ActivationOptions child_options;
    child_options.decision_guard = child_guard.port();
    child_options.drive = false;
    auto fixture = t::pending_activation_composition(tmp.path(), suffix, std::move(child_options));
    CrashPointArmed crash(GetParam(), 0, CrashMode::kKill);
    if (decision) {
      fixture.composition->process(::ctx::testing::interactive_grant(*requested, suffix));
    } else {
      fixture.pending = pending;
      execute(fixture);
    }
    ::_exit(3);  // not reached when the point killed us
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  t::ActivationOptions recovery;
  recovery.decision_guard = guard.port();
  recovery.drive = false;
  auto fixture = t::pending_activation_composition(tmp.path(), suffix, std::move(recovery));
  ::ctx::testing::ScopedClose scope(*fixture.composition);
  if (decision) {
    const auto grant = ::ctx::testing::interactive_grant(*requested, suffix);
    EXPECT_EQ(fixture.composition->snapshot(grant.scope()).revision, 4);
    EXPECT_TRUE(guard.settled().empty());
    EXPECT_EQ(fixture.composition->process(grant).actions().at(0).action_kind(),
              engine::ActionKind::kInstallCapability);
    EXPECT_EQ(guard.settled(), std::set<std::string>{grant.event_id()});
    EXPECT_EQ(fixture.composition->snapshot(grant.scope()).revision, 4);
    return;
  }
  fixture.pending = pending;
  expect_report(execute(fixture), engine::Outcome::kApplied, true, false);
  expect_exactly_one_outcome(journal_of(tmp, suffix), fixture);
}

INSTANTIATE_TEST_SUITE_P(EveryNamedPoint, CrashAtNamedPoint,
                         ::testing::ValuesIn(crash_points::kAll),
                         [](const ::testing::TestParamInfo<std::string_view>& info) {
                           std::string name;
                           for (char c : info.param) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

// ---- fork --------------------------------------------------------------------------------------

// Open descriptors of this process that name `path`.
int descriptors_naming(const fs::path& path) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = fs::read_symlink(entry.path(), error);
    if (!error && target == fs::canonical(path)) ++count;
  }
  return count;
}

TEST(CompositionFork, DestroyedInAForkedChildLeavesTheInheritedSqliteHandlesAlone) {
  t::TempDir tmp;
  auto fixture = t::pending_activation_composition(tmp.path(), "fork");
  const fs::path journal = journal_of(tmp, "fork");
  const fs::path audit = tmp.path() / "managed-fork-audit.sqlite3";
  const int journal_fds = descriptors_naming(journal);
  ASSERT_GT(journal_fds, 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    try {
      fixture.composition->snapshot(fixture.pending->intent_observed.scope());
      ++failures;  // a forked child must not use the composition
    } catch (const FailedPrecondition&) {
    }
    const int audit_fds = descriptors_naming(audit);
    fixture.composition.reset();  // destroyed in the child
    if (descriptors_naming(journal) != journal_fds) ++failures;
    if (descriptors_naming(audit) != audit_fds) ++failures;
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child closed inherited handles or used them";
  // The parent's composition and files are intact and keep working.
  ::ctx::testing::ScopedClose scope(*fixture.composition);
  EXPECT_EQ(execute(fixture).outcome, engine::Outcome::kApplied);
  expect_exactly_one_outcome(journal, fixture);
}

}  // namespace
}  // namespace ctx::runtime
