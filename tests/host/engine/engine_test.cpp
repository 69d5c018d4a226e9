// engine::Engine (spec §5): idempotent retries, collisions, stale heads, planner-free replays,
// replay divergence, privacy refusals, a two-engine race, the consent → install → activation
// authority path with claims, outcomes, permits and settlement guards, and trusted-clock expiry.
#include "host/engine/engine.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

#include "host/engine/errors.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/host/engine/fake_claim_journal.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/counting_journal_store.hpp"
#include "tests/support/journal/mem_journal_store.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;

Json observation_ref(const std::string& opaque) {
  return {{"observation_ref",
           {{"content_digest", sha("work:" + opaque)},
            {"opaque_id", opaque},
            {"provider_id", "managed-query-test"}}}};
}

StructuredSurrogate current_work(int limit) {
  return StructuredSurrogate::create("ctx.observation.current-work", 1,
                                     {{"active_capability_ids", Json::array()},
                                      {"baseline_capability_ids", Json::array()},
                                      {"languages", Json::array({"python"})},
                                      {"rejected_capability_ids", Json::array()},
                                      {"requested_limit", limit},
                                      {"signals", Json::array({"python"})}});
}

// Planner double: ready with `rows` when the observation asks for a limit, else limit-zero.
struct PlannerDouble {
  std::vector<Json> rows;
  std::atomic<int> calls{0};
  DecisionPlanner port() {
    return [this](const StructuredSurrogate& observation, const PlanningContext& context,
                  const EngineState*) {
      ++calls;
      EXPECT_EQ(context.planner_version, "ctx-managed-query-planner-v3");
      const bool zero = observation.value()["requested_limit"] == 0;
      return StructuredSurrogate::create("ctx.decision.capability-plan", 3,
                                         zero ? abstained_limit_zero() : ready_decision(rows));
    };
  }
};

ObservationNormalizer normalizer() {
  return [](const ObservationReference& ref, const EngineState*) {
    return current_work(ref.opaque_id.find("later") != std::string::npos ? 0 : 5);
  };
}

class EngineTest : public ::testing::Test {
 protected:
  EngineTest() : clock_("2026-08-02T12:01:00Z"), journal_(clock_) {}

  Engine make_engine(bool with_guard = true) {
    EnginePorts ports{normalizer(), planner_.port(), {}};
    if (with_guard) {
      ports.interactive_install_decision_guard =
          [this](const InteractiveInstallDecisionReservation& r) {
            reservations_.push_back(r.consent_id);
            return std::function<void()>([this] { ++settled_; });
          };
    }
    return Engine(journal_, &journal_, clock_, std::move(ports));
  }

  EngineEvent start_event() {
    return event("SessionStarted", 0, "event-start", {{"host_level", "managing"}});
  }
  EngineEvent intent_event() {
    return event("IntentObserved", 1, "event-intent", observation_ref("observation-one"));
  }

  FakeClock clock_;
  FakeClaimJournal journal_;
  PlannerDouble planner_;
  std::vector<std::string> reservations_;
  int settled_ = 0;
};

TEST_F(EngineTest, CommitsPlansAndRetriesIdenticallyWithoutPlanning) {
  planner_.rows = {plan_row("skill:test", "manual")};
  auto engine = make_engine();
  EXPECT_EQ(engine.snapshot(scope().stream_id()).revision, 0);
  EXPECT_EQ(engine.process(start_event()).to_revision(), 1);
  const auto planned = engine.process(intent_event());
  EXPECT_EQ(planned.to_revision(), 2);
  ASSERT_EQ(planned.actions().size(), 1u);
  EXPECT_EQ(planned.actions()[0].action_kind(), ActionKind::kPresentBundle);
  EXPECT_EQ(planner_.calls, 1);
  const auto snapshot = engine.snapshot(scope().stream_id());
  EXPECT_EQ(snapshot.revision, 2);
  EXPECT_EQ(snapshot.state->committed_plan()->plan_id(), "plan-one");
  EXPECT_EQ(snapshot.state->last_manual_bundle(), std::vector<std::string>{"skill:test"});

  EXPECT_EQ(engine.process(intent_event()), planned);
  EXPECT_EQ(engine.process(start_event()).to_revision(), 1);
  EXPECT_EQ(planner_.calls, 1);
  EXPECT_EQ(engine.snapshot(scope().stream_id()), snapshot);

  // A fresh engine resumes the same head from the stored latest state.
  auto fresh = make_engine();
  EXPECT_EQ(fresh.snapshot(scope().stream_id()), snapshot);
  EXPECT_EQ(fresh.process(intent_event()), planned);
  EXPECT_EQ(planner_.calls, 1);
}

TEST_F(EngineTest, ChangedContentUnderTheSameIdCollides) {
  planner_.rows = {plan_row("skill:test", "manual")};
  auto engine = make_engine();
  engine.process(start_event());
  engine.process(intent_event());
  const auto before = engine.snapshot(scope().stream_id());
  CTX_EXPECT_THROW(
      engine.process(event("SessionStarted", 0, "event-start", {{"host_level", "activating"}})),
      EventIdCollision, "already bound to different content");
  CTX_EXPECT_THROW(engine.process(event("IntentObserved", 1, "event-intent",
                                        observation_ref("observation-other"))),
                   EventIdCollision, "event-intent");
  // The same id in another stream collides too.
  CTX_EXPECT_THROW(engine.process(event("SessionStarted", 0, "event-start",
                                        {{"host_level", "managing"}}, "two")),
                   EventIdCollision, "already bound");
  EXPECT_EQ(engine.snapshot(scope().stream_id()), before);
  EXPECT_EQ(planner_.calls, 1);
}

TEST_F(EngineTest, StaleHeadIsARevisionConflictBeforePlanning) {
  planner_.rows = {plan_row("skill:test", "manual")};
  auto engine = make_engine();
  engine.process(start_event());
  engine.process(intent_event());
  engine.process(event("TurnEnded", 2, "event-turnended"));
  auto f = event_fields("DevelopmentObserved", 2, "event-development",
                        observation_ref("observation-dev"));
  f.correlation_id = "plan-dev";
  const auto before = engine.snapshot(scope().stream_id());
  try {
    engine.process(EngineEvent::create(f));
    FAIL() << "expected RevisionConflict";
  } catch (const RevisionConflict& conflict) {
    EXPECT_EQ(conflict.expected(), 2);
    EXPECT_EQ(conflict.actual(), 3);
    EXPECT_EQ(conflict.code(), ErrorCode::kAborted);
  }
  EXPECT_EQ(engine.snapshot(scope().stream_id()), before);
  EXPECT_EQ(planner_.calls, 1);
}

TEST_F(EngineTest, PreflightRefusesUnsafeEventsWithoutTouchingTheJournal) {
  auto engine = make_engine();
  engine.process(start_event());
  auto f = event_fields("TurnEnded", 1, "event-ephemeral");
  f.privacy = PrivacyLabel::create("private", "ephemeral");
  CTX_EXPECT_THROW(engine.process(EngineEvent::create(f)), ReplayPrivacyError,
                   "retention is not safe for authoritative replay");
  Json payload = observation_ref("observation-one");
  payload["prompt"] = "raw text";
  CTX_EXPECT_THROW(engine.process(event("IntentObserved", 1, "event-leaky", payload)),
                   ReplayPrivacyError,
                   "observation payload must contain only an opaque observation reference");
  CTX_EXPECT_THROW(engine.process(event("TurnEnded", 1, "event with space")), ReplayPrivacyError,
                   "event_id must be an opaque safe token");
  CTX_EXPECT_THROW(engine.process(event("TurnEnded", 1, "event-x", {{"a", 1}})),
                   ReplayValidationError, "payload must be empty");
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 1);
}

TEST_F(EngineTest, NormalizerAndPlannerFailuresAreTyped) {
  auto failing = Engine(
      journal_, &journal_, clock_,
      EnginePorts{[](const ObservationReference&, const EngineState*) -> StructuredSurrogate {
                    throw std::runtime_error("/secret/path");
                  },
                  planner_.port(),
                  {}});
  failing.process(start_event());
  CTX_EXPECT_THROW(failing.process(intent_event()), ReplayValidationError,
                   "typed observation normalization failed");
  auto unapproved = Engine(
      journal_, &journal_, clock_,
      EnginePorts{[](const ObservationReference&, const EngineState*) {
                    return StructuredSurrogate::create("ctx.observation.raw", 1, {{"x", "y"}});
                  },
                  planner_.port(),
                  {}});
  CTX_EXPECT_THROW(unapproved.process(intent_event()), ReplayPrivacyError, "not approved");
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 1);
}

TEST_F(EngineTest, ABusyStoreBehindAPortStaysRetryableThroughTheReplayBoundary) {
  planner_.rows = {plan_row("skill:test", "manual")};
  int busy_left = 1;
  auto busy_planner = [&](const StructuredSurrogate& o, const PlanningContext& c,
                          const EngineState* s) -> StructuredSurrogate {
    if (busy_left-- > 0) throw StoreBusy("sqlite step failed: database is locked");
    return planner_.port()(o, c, s);
  };
  int normalizer_busy = 1;
  auto busy_normalizer = [&](const ObservationReference& ref, const EngineState* s) {
    if (normalizer_busy-- > 0) throw StoreBusy("sqlite step failed: database is locked");
    return normalizer()(ref, s);
  };
  Engine engine(journal_, &journal_, clock_, EnginePorts{busy_normalizer, busy_planner, {}});
  engine.process(start_event());
  CTX_EXPECT_THROW(engine.process(intent_event()), StoreBusy, "database is locked");
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 1);
  CTX_EXPECT_THROW(engine.process(intent_event()), StoreBusy, "database is locked");
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 1);
  // The retry after the store frees up commits.
  EXPECT_EQ(engine.process(intent_event()).to_revision(), 2);
}

TEST_F(EngineTest, TheStreamCacheIsBoundedAndEvictedStreamsResume) {
  ctx::testing::journal::CountingJournalStore counting(journal_);
  Engine engine(counting, nullptr, clock_, EnginePorts{normalizer(), planner_.port(), {}},
                EngineOptions{.stream_cache_capacity = 2});
  auto on = [](const std::string& session, const std::string& kind, std::int64_t revision) {
    auto f = event_fields(kind, revision, session + "-" + std::to_string(revision),
                          kind == "SessionStarted" ? Json{{"host_level", "managing"}}
                                                   : Json::object());
    f.scope = ScopeRef::create("tenant-1", "workspace-1", "repository-1", session, "exposure-1",
                               "host-1");
    return EngineEvent::create(std::move(f));
  };
  const std::vector<std::string> sessions = {"s-1", "s-2", "s-3", "s-4", "s-5"};
  for (const auto& s : sessions) engine.process(on(s, "SessionStarted", 0));
  EXPECT_EQ(counting.latests, 0);  // every head it committed was cached
  for (int round = 1; round <= 3; ++round) {
    for (const auto& s : sessions) {
      EXPECT_EQ(engine.process(on(s, "TurnEnded", round)).to_revision(), round + 1);
    }
  }
  // Five streams through two slots: each event finds its stream evicted and resumes it from
  // the stored state — it never fails, and it never replays.
  EXPECT_EQ(counting.latests, 15);
  EXPECT_EQ(counting.reads, 0);
  // A warm stream is served from the cache; two snapshots share one immutable state.
  const auto a = engine.snapshot(on("s-5", "TurnEnded", 0).scope().stream_id());
  const auto b = engine.snapshot(on("s-5", "TurnEnded", 0).scope().stream_id());
  EXPECT_EQ(counting.latests, 15);
  EXPECT_EQ(a.state.shared(), b.state.shared());
  EXPECT_EQ(a.revision, 4);
  CTX_EXPECT_THROW(Engine(journal_, nullptr, clock_, EnginePorts{}, EngineOptions{0}),
                   InvalidArgument, "stream_cache_capacity");
}

// Lies about the stored latest state (canonical, but not this head's): the engine must notice.
class TamperingJournal final : public JournalStore {
 public:
  explicit TamperingJournal(JournalStore& inner) : inner_(inner) {}
  JournalCommit append(const JournalAppend& r) override { return inner_.append(r); }
  JournalHead head(const StreamId& s) const override { return inner_.head(s); }
  std::optional<JournalLatest> latest(const StreamId& s) const override {
    auto latest = inner_.latest(s);
    if (latest) latest->state = CanonicalText::encode(Json{{"revision", latest->revision}});
    return latest;
  }
  std::vector<JournalRecord> read(const StreamId& s, Revision after) const override {
    return inner_.read(s, after);
  }
  std::optional<JournalRecord> find(const StreamId& s, std::string_view id) const override {
    return inner_.find(s, id);
  }

 private:
  JournalStore& inner_;
};

TEST_F(EngineTest, ALyingStoredStateIsJournalCorruption) {
  auto engine = make_engine();
  engine.process(start_event());
  TamperingJournal tampering(journal_);
  Engine reader(tampering, nullptr, clock_, EnginePorts{normalizer(), planner_.port(), {}});
  CTX_EXPECT_THROW(reader.snapshot(scope().stream_id()), JournalCorruption,
                   "stream head state does not decode");
}

TEST_F(EngineTest, TwoEnginesRacingForOneHeadCommitExactlyOnce) {
  planner_.rows = {plan_row("skill:test", "manual")};
  ctx::testing::MemJournalStore shared;
  std::barrier sync(2);
  ObservationNormalizer racing = [&](const ObservationReference& ref, const EngineState*) {
    if (ref.opaque_id.find("race") != std::string::npos) sync.arrive_and_wait();
    return current_work(5);
  };
  Engine first(shared, nullptr, clock_, EnginePorts{racing, planner_.port(), {}});
  Engine second(shared, nullptr, clock_, EnginePorts{racing, planner_.port(), {}});
  first.process(start_event());
  first.process(intent_event());
  std::atomic<int> wins{0}, conflicts{0};
  auto attempt = [&](Engine& engine, const std::string& name) {
    auto f = event_fields("DevelopmentObserved", 2, "event-" + name,
                          observation_ref("observation-" + name));
    f.correlation_id = "plan-" + name;
    try {
      engine.process(EngineEvent::create(f));
      ++wins;
    } catch (const RevisionConflict& conflict) {
      EXPECT_EQ(conflict.expected(), 2);
      EXPECT_EQ(conflict.actual(), 3);
      ++conflicts;
    }
  };
  std::thread a([&] { attempt(first, "race-first"); });
  std::thread b([&] { attempt(second, "race-second"); });
  a.join();
  b.join();
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(conflicts, 1);
  EXPECT_EQ(first.snapshot(scope().stream_id()).revision, 3);
  EXPECT_EQ(first.snapshot(scope().stream_id()), second.snapshot(scope().stream_id()));
}

// ---- the authority path ----

Json desired_payload(
    const std::string& id, const std::string& lease,
    const std::string& policy = InstallConsentPolicy::safe_default().policy_digest()) {
  const auto row = plan_row(id, "install");
  return {{"desired_capabilities",
           Json::array({{{"actionability", "install"},
                         {"capability_id", id},
                         {"install_descriptor_digest", row["install_descriptor_digest"]},
                         {"install_plan_digest", row["install_plan_digest"]},
                         {"kind", kind_of(id)},
                         {"lease_id", lease},
                         {"source_digest", row["catalog_entry_digest"]}}})},
          {"owner_id", "owner-1"},
          {"policy_snapshot_digest", policy}};
}

class EngineAuthority : public EngineTest {
 protected:
  const std::string kId = "skill:installed";

  // Revisions 1..4: start, plan, desired → RequestConsent, interactive grant → Install.
  HostAction to_install(Engine& engine) {
    planner_.rows = {plan_row(kId, "install")};
    engine.process(start_event());
    engine.process(intent_event());
    const auto desired = engine.process(
        event("ReassessmentRequested", 2, "event-desired", desired_payload(kId, "lease-1")));
    EXPECT_EQ(desired.actions().at(0).action_kind(), ActionKind::kRequestConsent);
    request_ = desired.actions().at(0);
    const auto granted =
        engine.process(event("UserDecision", 3, "event-granted", decision_payload(request_)));
    EXPECT_EQ(granted.actions().at(0).action_kind(), ActionKind::kInstallCapability);
    return granted.actions().at(0);
  }

  InstallExecutionBinding binding(const HostAction& install) {
    return InstallExecutionBinding::create(install_descriptor(kId).installer_id(),
                                           install.payload()["installer_digest"], sha("host"),
                                           sha("target"));
  }

  HostAction request_ = HostAction::create(HostAction::Fields{
      .action_id = "placeholder", .kind = "NoChange", .scope = scope()});
};

TEST_F(EngineAuthority, ConsentInstallActivationAndRePlanLifecycle) {
  auto engine = make_engine();
  const auto install = to_install(engine);
  EXPECT_EQ(reservations_, std::vector<std::string>{*request_.consent_id()});
  EXPECT_EQ(settled_, 1);

  const auto receipt_event = event("ActionApplied", 4, "event-install-applied",
                                   receipt(install, install_verification(install)));
  CTX_EXPECT_THROW(engine.process(receipt_event), InstallExecutionOutcomeRequired,
                   "has no verified execution outcome");

  const auto snap = engine.snapshot(scope().stream_id());
  const auto& row = snap.state->committed_plan()->capabilities().at(0);
  const auto b = binding(install);
  CTX_EXPECT_THROW(
      engine.authorize_install(install, row, install_descriptor(kId), sha("other-catalog"),
                               InstallConsentPolicy::safe_default().policy_digest(), b),
      CtxEngineError, "not the exact pending journal authority");
  const auto claim =
      engine.authorize_install(install, row, install_descriptor(kId), catalog_snapshot(),
                               InstallConsentPolicy::safe_default().policy_digest(), b);
  EXPECT_EQ(claim.action_id, install.action_id());
  EXPECT_TRUE(engine.install_execution_status(install).claimed);
  EXPECT_FALSE(engine.install_execution_status(install).outcome_recorded);

  // An outcome for another binding than the claim's is refused; the claim's binding records it.
  const auto other =
      InstallExecutionBinding::create(b.driver_id(), b.driver_digest(), sha("h2"), sha("t2"));
  CTX_EXPECT_THROW(engine.record_install_outcome(install, other, InstallOutcome::kApplied,
                                                 install_result(kId).identity_digest(), sha("v")),
                   InstallExecutionOutcomeConflict, "binding");
  const auto guard = engine.record_install_outcome(
      install, b, InstallOutcome::kApplied, install_result(kId).identity_digest(), sha("v"));
  EXPECT_TRUE(engine.install_execution_status(install).outcome_recorded);

  const auto installed = engine.process_install_receipt(receipt_event, guard);
  ASSERT_EQ(installed.actions().size(), 1u);
  const auto activation = installed.actions()[0];
  EXPECT_EQ(activation.action_kind(), ActionKind::kActivateCapability);
  EXPECT_TRUE(engine.install_execution_status(install).settled);
  EXPECT_EQ(engine.process(receipt_event), installed);  // identical retry, no new row
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 5);

  CTX_EXPECT_THROW(engine.authorize_activation(activation, b, sha("other-host")), CtxEngineError,
                   "activation action is not exact pending journal authority");
  engine.authorize_activation(activation, b, host_digest());
  CTX_EXPECT_THROW(engine.authorize_activation(activation, b, host_digest()),
                   ActivationActionAlreadyClaimed, "is already claimed");
  const auto activation_guard = engine.record_activation_outcome(
      activation, b, activation.payload()["material_identity"]["identity_digest"], sha("observed"));
  const auto activated = engine.process_activation_receipt(
      event("ActionApplied", 5, "event-activation-applied",
            receipt(activation, material_verification(activation))),
      activation_guard);
  EXPECT_TRUE(activated.actions().empty());
  EXPECT_TRUE(engine.activation_execution_status(activation).settled);
  EXPECT_EQ(engine.snapshot(scope().stream_id()).state->capability(kId)->activation,
            Activation::kActive);

  auto later = event_fields("DevelopmentObserved", 6, "event-development-later",
                            observation_ref("observation-later"));
  later.correlation_id = "plan-later";
  const auto replanned = engine.process(EngineEvent::create(later));
  ASSERT_EQ(replanned.actions().size(), 1u);
  EXPECT_EQ(replanned.actions()[0].action_kind(), ActionKind::kDeactivateCapability);
  const int calls = planner_.calls;
  EXPECT_EQ(engine.process(EngineEvent::create(later)), replanned);
  EXPECT_EQ(planner_.calls, calls);
}

// The texts journaled and kept by values are composed, not encoded from JSON: through a whole
// install lifecycle each equals what the canonical encoder makes of the value.
TEST_F(EngineAuthority, ComposedTextsEqualTheCanonicalEncoding) {
  auto engine = make_engine();
  const auto install = to_install(engine);
  EXPECT_EQ(install.to_json_text(), core::canonical_json(install.to_json()));
  EXPECT_EQ(request_.to_json_text(), core::canonical_json(request_.to_json()));
  const auto snap = engine.snapshot(scope().stream_id());
  ASSERT_TRUE(snap.state);
  EXPECT_FALSE(snap.state->pending_effects().empty());
  EXPECT_TRUE(snap.state->committed_plan().has_value());
  EXPECT_EQ(snap.state->to_json_text(), core::canonical_json(snap.state->to_json()));
  const auto records = journal_.read(scope().stream_id(), 0);
  ASSERT_EQ(records.size(), 4u);
  for (const auto& record : records) {
    const auto input = ReplayInput::from_json_text(record.replay_json);
    EXPECT_EQ(input.to_json_text(), core::canonical_json(input.to_json()));
    EXPECT_EQ(input.reducer_event.to_json_text(),
              core::canonical_json(input.reducer_event.to_json()));
    const auto transition = Transition::from_json_text(record.transition_json);
    EXPECT_EQ(transition.to_json_text(), core::canonical_json(transition.to_json()));
    EXPECT_EQ(transition.to_json_text(), record.transition_json);
    EXPECT_EQ(
        record.record_digest,
        core::canonical_digest(Json{
            {"event_content_digest", record.event_content_digest},
            {"event_id", record.event_id},
            {"previous_record_digest",
             record.previous_record_digest ? Json(*record.previous_record_digest) : Json(nullptr)},
            {"privacy_classification", record.privacy_classification},
            {"reducer_version", record.reducer_version},
            {"replay_digest", record.replay_digest},
            {"retention_class", record.retention_class},
            {"result_state_digest", record.result_state_digest},
            {"revision", record.revision},
            {"stream_key", record.stream.stream_key()},
            {"transition_digest", record.transition_digest}}));
  }
  EXPECT_EQ(scope().stream_id().stream_key(),
            core::canonical_json(Json{{"repository_id", "repository-1"},
                                      {"session_id", "session-one"},
                                      {"tenant_id", "tenant-1"},
                                      {"workspace_id", "workspace-1"}}));
}

TEST_F(EngineAuthority, InteractiveDecisionNeedsTheHostGuard) {
  auto engine = make_engine(false);
  planner_.rows = {plan_row(kId, "install")};
  engine.process(start_event());
  engine.process(intent_event());
  const auto request = engine
                           .process(event("ReassessmentRequested", 2, "event-desired",
                                          desired_payload(kId, "lease-1")))
                           .actions()
                           .at(0);
  CTX_EXPECT_THROW(
      engine.process(event("UserDecision", 3, "event-granted", decision_payload(request))),
      CtxEngineError, "interactive install decision requires a host-authenticated one-shot guard");
  CTX_EXPECT_THROW(engine.process(event("UserDecision", 3, "event-auto",
                                        decision_payload(request, "preapproved-policy"))),
                   CtxEngineError,
                   "preapproved install requires an authoritative current-policy guard");
  auto wrong = decision_payload(request);
  wrong["consent_id"] = "consent-unknown";
  CTX_EXPECT_THROW(engine.process(event("UserDecision", 3, "event-wrong", wrong)), CtxEngineError,
                   "does not match an exact pending consent");
  clock_.set("2026-08-02T13:00:00Z");
  auto guarded = make_engine();
  CTX_EXPECT_THROW(
      guarded.process(event("UserDecision", 3, "event-late", decision_payload(request))),
      CtxEngineError, "install decision has expired according to trusted clock");
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 3);
}

TEST_F(EngineAuthority, UnclaimedInstallExpiresOnlyAfterTrustedExpiry) {
  auto engine = make_engine();
  const auto install = to_install(engine);
  const Json expired = {{"action_content_digest", install.content_digest()},
                        {"action_id", install.action_id()},
                        {"action_kind", install.action_kind()},
                        {"action_precondition_revision", install.precondition_revision()},
                        {"reason", "expired"}};
  CTX_EXPECT_THROW(engine.process(event("ActionExpired", 4, "event-expired", expired)),
                   CtxEngineError, "install action has not expired according to trusted clock");
  clock_.set("2026-08-02T13:00:00Z");  // one hour after the decision event
  const auto out = engine.process(event("ActionExpired", 4, "event-expired", expired));
  EXPECT_TRUE(out.actions().empty());
  EXPECT_TRUE(engine.snapshot(scope().stream_id()).state->pending_effects().empty());
}

TEST_F(EngineAuthority, ClaimedInstallCannotExpireAsUnclaimed) {
  auto engine = make_engine();
  const auto install = to_install(engine);
  const auto row =
      engine.snapshot(scope().stream_id()).state->committed_plan()->capabilities().at(0);
  engine.authorize_install(install, row, install_descriptor(kId), catalog_snapshot(),
                           InstallConsentPolicy::safe_default().policy_digest(), binding(install));
  clock_.set("2026-08-02T13:00:00Z");
  const Json expired = {{"action_content_digest", install.content_digest()},
                        {"action_id", install.action_id()},
                        {"action_kind", install.action_kind()},
                        {"action_precondition_revision", install.precondition_revision()},
                        {"reason", "expired"}};
  EXPECT_THROW(engine.process(event("ActionExpired", 4, "event-expired", expired)),
               InstallActionAlreadyClaimed);
  EXPECT_EQ(journal_.head(scope().stream_id()).revision, 4);
}

TEST_F(EngineAuthority, PreapprovedGrantNeedsTheCurrentPolicyToRouteItAutomatically) {
  const auto auto_policy =
      InstallConsentPolicy::create("preapproved-auto", "ask-each-time", "ask-each-time");
  std::optional<InstallConsentPolicy> current = auto_policy;
  bool still_current = true;
  EnginePorts ports{normalizer(), planner_.port(), {}, {}};
  ports.preapproved_install_policy_guard = {
      [&](const std::string& digest) -> std::optional<InstallConsentPolicy> {
        if (current && current->policy_digest() == digest) return current;
        return std::nullopt;
      },
      [&] {
        if (!still_current) throw std::runtime_error("policy changed");
      }};
  Engine engine(journal_, &journal_, clock_, std::move(ports));
  planner_.rows = {plan_row(kId, "install")};
  engine.process(start_event());
  engine.process(intent_event());
  const auto request =
      engine
          .process(event("ReassessmentRequested", 2, "event-desired",
                         desired_payload(kId, "lease-1", auto_policy.policy_digest())))
          .actions()
          .at(0);
  auto denied = decision_payload(request, "preapproved-policy");
  denied["decision"] = "denied";
  CTX_EXPECT_THROW(engine.process(event("UserDecision", 3, "event-auto-denied", denied)),
                   CtxEngineError, "preapproved install policy decisions may only grant");
  still_current = false;
  CTX_EXPECT_THROW(engine.process(event("UserDecision", 3, "event-auto",
                                        decision_payload(request, "preapproved-policy"))),
                   CtxEngineError, "no longer authoritative");
  current = InstallConsentPolicy::safe_default();
  still_current = true;
  CTX_EXPECT_THROW(engine.process(event("UserDecision", 3, "event-auto",
                                        decision_payload(request, "preapproved-policy"))),
                   CtxEngineError, "preapproved install is not authorized by current policy");
  current = auto_policy;
  const auto granted = engine.process(
      event("UserDecision", 3, "event-auto", decision_payload(request, "preapproved-policy")));
  EXPECT_EQ(granted.actions().at(0).action_kind(), ActionKind::kInstallCapability);
}

}  // namespace
}  // namespace ctx::engine
