// Seed 001 (test_managed_query_service.py): the managed query service's prepare, reopen and
// set_desired seeds, one GoogleTest case per seed test (names from seed-tests.tsv). The
// consent-and-install seeds of the same file belong to the consent piece and are not here.
// Crashes go through the service's named crash points; races run real threads behind a
// std::barrier, and the process-bound seed forks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <list>
#include <set>
#include <sstream>
#include <thread>

#include "host/app/wire.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/runtime/exact_fields.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::read_database;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)
namespace crash = service_crash_points;

template <typename T>
std::string printed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <typename T>
constexpr bool kSealed = !std::is_default_constructible_v<T> && !std::is_copy_constructible_v<T> &&
                         !std::is_copy_assignable_v<T> && !std::is_move_assignable_v<T> &&
                         !std::is_constructible_v<core::Json, const T&>;

template <typename T>
concept HasTransition = requires(const T& r) {
  r.transition();
};
template <typename T>
concept HasArtifact = requires(const T& r) {
  r.artifact();
};
template <typename T>
concept HasPayload = requires(const T& r) {
  r.payload();
};
template <typename T>
concept HasScope = requires(const T& r) {
  r.scope();
};

ManagedQueryRequest query_request(const std::string& label, const std::string& work = "work-one") {
  return ManagedQueryRequest::create(digest(label), work);
}

ManagedDesiredSetRequest desired_request(const std::string& query_ref, const std::string& label,
                                         std::vector<std::string> ids,
                                         std::optional<std::string> previous = std::nullopt) {
  return ManagedDesiredSetRequest::create(query_ref, digest(label), std::move(ids),
                                          std::move(previous));
}

std::vector<std::string> selection_ids(const ManagedQueryServiceResult& result) {
  std::vector<std::string> ids;
  for (const auto& selection : result.prepared().selections()) {
    ids.push_back(selection.capability_id());
  }
  return ids;
}

std::vector<std::string> action_kinds(const std::vector<ManagedActionSummary>& actions) {
  std::vector<std::string> kinds;
  for (const auto& action : actions) kinds.emplace_back(engine::to_string(action.kind()));
  return kinds;
}

// The seeds' development event that replaces plan-initial at revision 2.
std::shared_ptr<const ManagedQueryInput> development_input(const ServiceSetup& setup,
                                                           const std::string& event_id,
                                                           const std::string& plan_id) {
  auto development =
      replace_event(setup.managed_input->decision_event(), [&](engine::EngineEvent::Fields& f) {
        f.event_id = event_id;
        f.kind = "DevelopmentObserved";
        f.expected_revision = 2;
        f.correlation_id = plan_id;
        f.causation_id = setup.managed_input->decision_event().event_id();
      });
  return ManagedQueryInput::create(setup.artifact, setup.managed_input->session_started(),
                                   std::move(development));
}

// ---------------------------------------------------------------------------------------------
// desired sets

TEST(ManagedServiceSeed, service_sets_an_empty_desired_subset_without_replanning) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-empty-query"));
  const auto calls_before = setup.facts->calls();
  const auto request = desired_request(prepared.query_ref(), "desired-empty-choice", {});
  const auto result = setup.service->set_desired(request);
  EXPECT_EQ(result.query_ref(), prepared.query_ref());
  EXPECT_EQ(result.logical_choice_id(), request.logical_choice_id());
  EXPECT_TRUE(result.capability_ids().empty());
  EXPECT_TRUE(result.deferred_capability_ids().empty());
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_EQ(result.reason_code(), std::nullopt);
  EXPECT_EQ(result.plan_id(), prepared.prepared().plan_id());
  EXPECT_EQ(result.decision_digest(), prepared.prepared().decision_digest());
  EXPECT_EQ(result.journal_revision(), 3);
  EXPECT_EQ(result.journal_record_digest().size(), 64u);
  EXPECT_TRUE(result.actions().empty());
  EXPECT_FALSE(result.challenge().has_value());
  EXPECT_EQ(setup.facts->calls(), calls_before);
  const auto stored = setup.store->load_latest_desired_set(prepared.query_ref());
  EXPECT_TRUE(stored.committed());
  EXPECT_EQ(stored.desired_set_ref(), result.desired_set_ref());
  // copy.copy / copy.deepcopy / pickle.dumps of the result and the request -> TypeError.
  static_assert(kSealed<ManagedDesiredSetResult>);
  static_assert(kSealed<ManagedDesiredSetRequest>);
}

TEST(ManagedServiceSeed, desired_request_canonicalizes_committed_plan_order_and_manual_deferral) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 3});
  const auto prepared = setup.service->prepare(query_request("desired-manual-query"));
  const auto plan_order = selection_ids(prepared);
  ASSERT_GE(plan_order.size(), 2u);
  const std::vector<std::string> first_two(plan_order.begin(), plan_order.begin() + 2);
  const std::vector<std::string> requested(first_two.rbegin(), first_two.rend());
  const auto result = setup.service->set_desired(
      desired_request(prepared.query_ref(), "desired-manual-choice", requested));
  EXPECT_EQ(result.capability_ids(), first_two);
  EXPECT_EQ(result.deferred_capability_ids(), first_two);
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kManualDeferred);
  EXPECT_EQ(result.reason_code(), "manual-capability-requires-user-action");
  EXPECT_FALSE(result.challenge().has_value());
}

TEST(ManagedServiceSeed, desired_request_rejects_unsafe_subsets) {
  const std::string query_ref = "mqr_" + std::string(64, 'a');
  // ["skill:test"] (a list, not a tuple) -> TypeError "exact tuple": the request takes exactly
  // one vector of ids; no other container converts.
  static_assert(
      !std::is_invocable_v<decltype(&ManagedDesiredSetRequest::create), std::string, std::string,
                           std::list<std::string>, std::optional<std::string>>);
  static_assert(
      !std::is_invocable_v<decltype(&ManagedDesiredSetRequest::create), std::string, std::string,
                           std::set<std::string>, std::optional<std::string>>);
  CTX_EXPECT_THROW(
      desired_request(query_ref, "unsafe-desired-request", {"skill:test", "skill:test"}),
      InvalidArgument, "unique");
  std::vector<std::string> six;
  for (int index = 0; index < 6; ++index) six.push_back("skill:test-" + std::to_string(index));
  CTX_EXPECT_THROW(desired_request(query_ref, "unsafe-desired-request", six), InvalidArgument,
                   "more than five");
}

TEST(ManagedServiceSeed, service_rejects_unknown_desired_capability_before_durable_mutation) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-unknown-query"));
  CTX_EXPECT_THROW(setup.service->set_desired(desired_request(
                       prepared.query_ref(), "desired-unknown-choice", {"skill:not-in-plan"})),
                   ManagedQueryServiceError, "not contained");
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_desired_sets"), 0);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 2);
}

TEST(ManagedServiceSeed, desired_result_factory_enforces_canonical_bounded_outcome_subsets) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 2});
  const auto prepared = setup.service->prepare(query_request("desired-result-invariant-query"));
  const auto ids = selection_ids(prepared);
  ASSERT_EQ(ids.size(), 2u);
  const auto result = setup.service->set_desired(
      desired_request(prepared.query_ref(), "desired-result-invariant-choice", ids));
  const auto record = setup.store->load_latest_desired_set(prepared.query_ref());
  // The result's actions are summaries; the factory takes the same (none here: manual subset).
  ASSERT_TRUE(result.actions().empty());
  CTX_EXPECT_THROW(
      ManagedDesiredSetResult::create(record, {ids.rbegin(), ids.rend()}, {},
                                      ManagedDesiredStatus::kManualDeferred,
                                      "manual-capability-requires-user-action", {}, std::nullopt),
      ManagedQueryServiceError, "deferred subset");
  CTX_EXPECT_THROW(
      ManagedDesiredSetResult::create(record, {}, {ids[0]}, ManagedDesiredStatus::kReconciled,
                                      std::nullopt, {}, std::nullopt),
      ManagedQueryServiceError, "failed subset");
  CTX_EXPECT_THROW(ManagedDesiredSetResult::create(
                       record, ids, {ids[0], ids[0]}, ManagedDesiredStatus::kManualDeferred,
                       "manual-capability-requires-user-action", {}, std::nullopt),
                   ManagedQueryServiceError, "failed subset");
  CTX_EXPECT_THROW(
      ManagedDesiredSetResult::create(record, ids, {}, ManagedDesiredStatus::kEffectPending,
                                      std::nullopt, {}, std::nullopt),
      ManagedQueryServiceError, "deferred subset");
}

TEST(ManagedServiceSeed, service_accepts_sequential_choices_with_exact_predecessors) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 2});
  const auto prepared = setup.service->prepare(query_request("desired-sequence-query"));
  const auto capability_id = selection_ids(prepared).at(0);
  const auto first_request = desired_request(prepared.query_ref(), "desired-sequence-first", {});
  const auto first = setup.service->set_desired(first_request);
  const auto second = setup.service->set_desired(desired_request(
      prepared.query_ref(), "desired-sequence-second", {capability_id}, first.desired_set_ref()));
  const auto unloaded = setup.service->set_desired(desired_request(
      prepared.query_ref(), "desired-sequence-third", {}, second.desired_set_ref()));
  EXPECT_EQ(first.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_EQ(unloaded.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_EQ(second.status(), ManagedDesiredStatus::kManualDeferred);
  EXPECT_EQ(first.journal_revision(), 3);
  EXPECT_EQ(second.journal_revision(), 4);
  EXPECT_EQ(unloaded.journal_revision(), 5);
  EXPECT_THROW(setup.service->set_desired(first_request), ManagedDesiredSetSupersededError);
  EXPECT_THROW(setup.service->set_desired(
                   desired_request(prepared.query_ref(), "desired-sequence-stale-fourth",
                                   {capability_id}, first.desired_set_ref())),
               ManagedDesiredSetSupersededError);
}

TEST(ManagedServiceSeed, set_desired_recovers_a_reservation_after_process_crash) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-reserve-crash-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-reserve-crash-choice", {});
  {
    CrashPointArmed armed{std::string(crash::kAfterDesiredReservation)};
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
    EXPECT_TRUE(armed.fired());
  }
  const auto pending = setup.store->load_pending_desired_set(seed_scope());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 2);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), pending.desired_set_ref());
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_TRUE(setup.store->load_desired_set(pending.desired_set_ref()).committed());
}

TEST(ManagedServiceSeed, set_desired_recovers_engine_commit_before_store_mark) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-mark-crash-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-mark-crash-choice", {});
  {
    CrashPointArmed armed{std::string(crash::kAfterDesiredCommit)};
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  const auto pending = setup.store->load_pending_desired_set(seed_scope());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), pending.desired_set_ref());
  EXPECT_EQ(recovered.journal_revision(), 3);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
}

TEST(ManagedServiceSeed, set_desired_recovers_after_store_mark_before_result) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-result-crash-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-result-crash-choice", {});
  {
    CrashPointArmed armed{std::string(crash::kAfterDesiredMark)};
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  const auto committed = setup.store->load_latest_desired_set(prepared.query_ref());
  EXPECT_TRUE(committed.committed());
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), committed.desired_set_ref());
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kReconciled);
}

TEST(ManagedServiceSeed, pending_desired_blocks_a_replacement_plan_before_registration) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-block-plan-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-block-plan-choice", {});
  {
    CrashPointArmed armed{std::string(crash::kAfterDesiredReservation)};
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  setup.inputs->set("work-after-pending-desired",
                    development_input(setup, "event-development-blocked-by-desired",
                                      "plan-after-pending-desired"));
  EXPECT_THROW(setup.service->prepare(
                   query_request("plan-blocked-by-pending-desired", "work-after-pending-desired")),
               ManagedDesiredSetBusyError);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 2);
}

TEST(ManagedServiceSeed, two_services_serialize_competing_first_desired_choices) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-two-service-query"));
  auto peer = setup.open_peer_service();
  const std::array<ManagedDesiredSetRequest, 2> requests = {
      desired_request(prepared.query_ref(), "desired-two-service-a", {}),
      desired_request(prepared.query_ref(), "desired-two-service-b", {})};
  const std::array<ManagedQueryService*, 2> services = {setup.service.get(), peer.get()};
  std::barrier barrier(2);
  std::array<int, 2> outcome{};  // 1 result, 2 superseded, 3 other error
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      barrier.arrive_and_wait();
      try {
        services[i]->set_desired(requests[i]);
        outcome[i] = 1;
      } catch (const ManagedDesiredSetSupersededError&) {
        outcome[i] = 2;
      } catch (...) {
        outcome[i] = 3;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 1), 1);
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 2), 1);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_desired_sets"), 1);
  EXPECT_EQ(sqlite_scalar(setup.store_path,
                          "SELECT count(*) FROM managed_desired_sets WHERE journal_revision IS "
                          "NOT NULL"),
            "1");
}

TEST(ManagedServiceSeed, two_services_converge_on_the_same_logical_desired_choice) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-two-service-same-query"));
  auto peer = setup.open_peer_service();
  const auto request = desired_request(prepared.query_ref(), "desired-two-service-same-choice", {});
  const std::array<ManagedQueryService*, 2> services = {setup.service.get(), peer.get()};
  std::barrier barrier(2);
  std::array<std::optional<ManagedDesiredSetResult>, 2> results;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      barrier.arrive_and_wait();
      results[i].emplace(services[i]->set_desired(request));
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(results[0] && results[1]);
  EXPECT_EQ(results[0]->desired_set_ref(), results[1]->desired_set_ref());
  EXPECT_EQ(results[0]->journal_record_digest(), results[1]->journal_record_digest());
  EXPECT_EQ(results[0]->actions(), results[1]->actions());
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_desired_sets"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
}

TEST(ManagedServiceSeed, two_services_serialize_replacement_planning_against_desired_choice) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-plan-race-query"));
  setup.inputs->set(
      "work-racing-desired",
      development_input(setup, "event-development-racing-desired", "plan-racing-desired"));
  auto peer = setup.open_peer_service();
  std::barrier barrier(2);
  bool desired_ok = false;
  bool planning_ok = false;
  std::thread desired([&] {
    barrier.arrive_and_wait();
    try {
      setup.service->set_desired(
          desired_request(prepared.query_ref(), "desired-plan-race-choice", {}));
      desired_ok = true;
    } catch (const Error&) {
    }
  });
  std::thread planning([&] {
    barrier.arrive_and_wait();
    try {
      peer->prepare(query_request("replacement-plan-racing-desired", "work-racing-desired"));
      planning_ok = true;
    } catch (const Error&) {
    }
  });
  desired.join();
  planning.join();
  EXPECT_EQ(int(desired_ok) + int(planning_ok), 1);
  const auto rows =
      sqlite_scalar(setup.store_path,
                    "SELECT count(*) || ',' || count(journal_revision) FROM managed_desired_sets");
  EXPECT_THAT(rows, ::testing::AnyOf("0,0", "1,1"));
}

TEST(ManagedServiceSeed,
     set_desired_fails_typed_when_a_nonservice_writer_steals_reserved_revision) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(query_request("desired-stolen-head-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-stolen-head-choice", {});
  {
    CrashPointArmed armed{std::string(crash::kAfterDesiredReservation)};
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  const auto pending = setup.store->load_pending_desired_set(seed_scope());
  {
    auto composition = setup.open_composition();
    composition->process(replace_event(pending.event(), [](engine::EngineEvent::Fields& f) {
      f.event_id = "event-nonservice-stolen-desired-revision";
    }));
    composition->close();
  }
  CTX_EXPECT_THROW(setup.service->set_desired(request), ManagedDesiredSetConflictError,
                   "another event");
  const auto still_pending = setup.store->load_pending_desired_set(seed_scope());
  EXPECT_EQ(still_pending.desired_set_ref(), pending.desired_set_ref());
  EXPECT_FALSE(still_pending.committed());
}

// ---------------------------------------------------------------------------------------------
// prepare / reopen

TEST(ManagedServiceSeed, service_prepares_one_bounded_ready_or_abstained_result) {
  for (const int requested_limit : {0, 1, 5}) {
    SCOPED_TRACE(requested_limit);
    TempDir tmp;
    auto setup = make_setup(tmp.path(), {.requested_limit = requested_limit});
    const auto result = setup.service->prepare(query_request("logical-query"));
    const auto record = setup.store->load(result.query_ref());
    EXPECT_TRUE(record.planned());
    EXPECT_EQ(result.prepared().plan_id(), "plan-initial");
    EXPECT_EQ(record.plan_id(), "plan-initial");
    EXPECT_EQ(result.prepared().selections().size(), static_cast<std::size_t>(requested_limit));
    EXPECT_LE(result.prepared().selections().size(), 5u);
    EXPECT_EQ(result.prepared().status(),
              requested_limit == 0 ? engine::PlanStatus::kAbstained : engine::PlanStatus::kReady);
    if (requested_limit) {
      EXPECT_EQ(action_kinds(result.actions()), std::vector<std::string>{"PresentBundle"});
    } else {
      EXPECT_TRUE(result.actions().empty());
    }
    // Summaries expose exactly action_id, kind and entity_id (accessors, object and wire form);
    // the result is not copyable.
    static_assert(ActionSummaryAccessors<ManagedActionSummary> &&
                  kHoldsExactly<ManagedActionSummary, ActionSummaryFields>);
    const auto wire_actions = managed_result_json(result).at("actions");
    ASSERT_EQ(wire_actions.size(), result.actions().size());
    for (const auto& summary : wire_actions) {
      EXPECT_EQ(keys_of(summary), (std::set<std::string>{"action_id", "entity_id", "kind"}));
    }
    static_assert(kSealed<ManagedActionSummary>);
    static_assert(kSealed<ManagedQueryServiceResult>);
  }
}

TEST(ManagedServiceSeed, service_exact_prepare_retry_and_reopen_plan_only_once) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto request = query_request("retry-query");
  const auto first = setup.service->prepare(request);
  const auto planned_calls = setup.facts->calls();
  const auto retried = setup.service->prepare(request);
  const auto reopened = setup.service->reopen(first.query_ref());
  EXPECT_EQ(setup.facts->calls(), planned_calls);
  EXPECT_EQ(first.query_ref(), retried.query_ref());
  EXPECT_EQ(first.query_ref(), reopened.query_ref());
  EXPECT_EQ(first.prepared().decision_digest(), retried.prepared().decision_digest());
  EXPECT_EQ(first.prepared().decision_digest(), reopened.prepared().decision_digest());
  EXPECT_EQ(first.actions(), retried.actions());
  EXPECT_EQ(first.actions(), reopened.actions());
}

TEST(ManagedServiceSeed, service_reopen_converges_after_each_pre_mark_crash) {
  for (const std::string crash_point : {"registered", "revision-one", "committed"}) {
    SCOPED_TRACE(crash_point);
    TempDir tmp;
    auto setup = make_setup(tmp.path());
    const auto record = setup.register_query(digest("crash:" + crash_point));
    if (crash_point != "registered") {
      auto composition = setup.open_composition();
      if (crash_point == "revision-one") {
        composition->process(setup.managed_input->session_started());
      } else {
        composition->advance_managed_query(setup.managed_input->session_started(),
                                           setup.managed_input->decision_event());
      }
      composition->close();
    }
    const auto calls_before_reopen = setup.facts->calls();
    const auto result = setup.service->reopen(record.query_ref());
    const auto planned = setup.store->load(record.query_ref());
    EXPECT_TRUE(planned.planned());
    EXPECT_EQ(std::optional<std::string>(result.prepared().plan_id()), planned.plan_id());
    if (crash_point == "committed") {
      EXPECT_EQ(setup.facts->calls(), calls_before_reopen);
    } else {
      EXPECT_GT(setup.facts->calls().size(), calls_before_reopen.size());
    }
  }
}

// The same convergence through the service's own crash points in prepare.
class ManagedServicePrepareCrash : public ::testing::TestWithParam<std::string_view> {};

TEST_P(ManagedServicePrepareCrash, prepare_recovers_from_each_crash_point) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto request = query_request("prepare-crash");
  {
    CrashPointArmed armed{std::string(GetParam())};
    EXPECT_THROW(setup.service->prepare(request), SimulatedCrash);
    EXPECT_TRUE(armed.fired());
  }
  const auto recovered = setup.service->prepare(request);
  const auto reopened = setup.service->reopen(recovered.query_ref());
  EXPECT_TRUE(setup.store->load(recovered.query_ref()).planned());
  EXPECT_EQ(recovered.prepared().decision_digest(), reopened.prepared().decision_digest());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 2);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
}

INSTANTIATE_TEST_SUITE_P(ManagedService, ManagedServicePrepareCrash,
                         ::testing::Values(crash::kAfterRegistration, crash::kAfterPlanCommit,
                                           crash::kAfterPlanMark));

TEST(ManagedServiceSeed, service_concurrent_same_request_converges_to_one_plan) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  std::vector<std::optional<ManagedQueryServiceResult>> results(8);
  std::barrier barrier(4);
  std::vector<std::thread> workers;
  for (int worker = 0; worker < 4; ++worker) {
    workers.emplace_back([&, worker] {
      barrier.arrive_and_wait();
      for (int i = worker; i < 8; i += 4) {
        results[i].emplace(setup.service->prepare(query_request("concurrent-query")));
      }
    });
  }
  for (auto& worker : workers) worker.join();
  std::set<std::string> refs;
  std::set<std::string> digests;
  for (const auto& result : results) {
    ASSERT_TRUE(result);
    refs.insert(result->query_ref());
    digests.insert(result->prepared().decision_digest());
  }
  EXPECT_EQ(refs.size(), 1u);
  EXPECT_EQ(digests.size(), 1u);
  const auto planning_calls = setup.facts->calls();
  setup.service->reopen(results[0]->query_ref());
  EXPECT_EQ(setup.facts->calls(), planning_calls);
  EXPECT_EQ(std::set<std::string>(planning_calls.begin(), planning_calls.end()),
            (std::set<std::string>{"agent:reviewer", "harness:python-runner", "mcp-server:docs",
                                   "skill:lint", "skill:test", "skill:types"}));
}

TEST(ManagedServiceSeed, service_concurrent_distinct_logical_ids_reject_one_before_new_planning) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const std::array<std::string, 2> labels = {"concurrent-left", "concurrent-right"};
  std::array<int, 2> outcome{};  // 1 result, 2 store conflict, 3 other
  std::barrier barrier(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      barrier.arrive_and_wait();
      try {
        setup.service->prepare(query_request(labels[i]));
        outcome[i] = 1;
      } catch (const ManagedQueryStoreConflict&) {
        outcome[i] = 2;
      } catch (...) {
        outcome[i] = 3;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 1), 1);
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), 2), 1);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
}

TEST(ManagedServiceSeed, service_rejects_distinct_event_reusing_scope_and_plan_before_mutation) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  setup.service->prepare(query_request("scope-plan-owner"));
  auto distinct =
      replace_event(setup.managed_input->decision_event(), [](engine::EngineEvent::Fields& f) {
        f.event_id = "event-distinct-same-plan";
        f.causation_id = "cause-distinct-same-plan";
      });
  setup.inputs->set(
      "same-plan-distinct-event",
      ManagedQueryInput::create(setup.artifact, setup.managed_input->session_started(), distinct));
  const auto calls_before = setup.facts->calls();
  const auto journal_before = read_database(setup.journal_path);
  CTX_EXPECT_THROW(
      setup.service->prepare(query_request("scope-plan-substitute", "same-plan-distinct-event")),
      ManagedQueryStoreConflict, "another logical identity");
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_EQ(read_database(setup.journal_path), journal_before);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
}

TEST(ManagedServiceSeed, service_rejects_scope_and_plan_reserved_by_unplanned_registration) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto owner = setup.register_query(digest("unplanned-scope-plan-owner"));
  auto started =
      replace_event(setup.managed_input->session_started(), [](engine::EngineEvent::Fields& f) {
        f.event_id = "event-unplanned-substitute-started";
        f.causation_id = "cause-unplanned-substitute-started";
      });
  auto decision =
      replace_event(setup.managed_input->decision_event(), [&](engine::EngineEvent::Fields& f) {
        f.event_id = "event-unplanned-substitute-decision";
        f.causation_id = started.event_id();
      });
  setup.inputs->set("unplanned-same-plan-distinct-event",
                    ManagedQueryInput::create(setup.artifact, started, decision));
  const auto store_before = read_database(setup.store_path);
  CTX_EXPECT_THROW(setup.service->prepare(query_request("unplanned-scope-plan-substitute",
                                                        "unplanned-same-plan-distinct-event")),
                   ManagedQueryStoreConflict, "scope and plan");
  EXPECT_FALSE(owner.planned());
  EXPECT_TRUE(setup.facts->calls().empty());
  EXPECT_FALSE(std::filesystem::exists(setup.journal_path));
  EXPECT_FALSE(std::filesystem::exists(setup.audit_path));
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
  EXPECT_EQ(read_database(setup.store_path), store_before);
}

TEST(ManagedServiceSeed, service_is_host_neutral_for_equivalent_codex_and_claude_refs) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  setup.inputs->set("codex-turn", setup.managed_input);
  setup.inputs->set("claude-hook", setup.managed_input);
  const auto codex = setup.service->prepare(query_request("host-neutral-query", "codex-turn"));
  const auto claude = setup.service->prepare(query_request("host-neutral-query", "claude-hook"));
  EXPECT_EQ(codex.query_ref(), claude.query_ref());
  EXPECT_EQ(codex.prepared().decision_digest(), claude.prepared().decision_digest());
  EXPECT_EQ(codex.actions(), claude.actions());
  const auto calls = setup.facts->calls();
  for (const auto& id : std::set<std::string>(calls.begin(), calls.end())) {
    EXPECT_EQ(std::count(calls.begin(), calls.end(), id), 2) << id;
  }
}

TEST(ManagedServiceSeed, service_rejects_foreign_registry_handle_before_persistence) {
  TempDir tmp;
  auto owned = make_setup(tmp.path() / "owned");
  auto foreign = make_setup(tmp.path() / "foreign");
  owned.inputs->set("foreign-work", foreign.managed_input);
  CTX_EXPECT_THROW(owned.service->prepare(query_request("foreign-query", "foreign-work")),
                   ManagedQueryServiceError, "not issued");
  EXPECT_EQ(sqlite_count(owned.store_path, "managed_queries"), 0);
  EXPECT_FALSE(std::filesystem::exists(owned.journal_path));
}

TEST(ManagedServiceSeed, service_fails_closed_when_captured_authority_drifts) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  setup.facts->set_benefit_facts_snapshot_digest(digest("drifted-facts"));
  CTX_EXPECT_THROW(setup.service->prepare(query_request("drift-query")), InvalidArgument,
                   "snapshot does not match");
  EXPECT_FALSE(std::filesystem::exists(setup.journal_path));
  EXPECT_FALSE(std::filesystem::exists(setup.audit_path));
}

TEST(ManagedServiceSeed, service_factory_rejects_output_path_aliases_before_use) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  {
    auto options = setup.service_options();
    options.journal_path = setup.store_path;
    CTX_EXPECT_THROW(open_managed_query_service(std::move(options)), InvalidArgument,
                     "must be distinct");
  }
  // The same alias through a symbolic link and through a hard link.
  const auto link = setup.tmp / "private" / "journal-symlink.sqlite3";
  std::filesystem::create_symlink(setup.store_path, link);
  {
    auto options = setup.service_options();
    options.journal_path = link;
    CTX_EXPECT_THROW(open_managed_query_service(std::move(options)), InvalidArgument,
                     "must be distinct");
  }
  std::filesystem::create_directories(setup.tmp / "audit-dir");
  std::filesystem::permissions(setup.tmp / "audit-dir", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  {
    auto options = setup.service_options();
    options.benefit_audit_path = setup.tmp / "audit-dir" / ".." / "private" / "queries.sqlite3";
    CTX_EXPECT_THROW(open_managed_query_service(std::move(options)), InvalidArgument,
                     "must be distinct");
  }
  const auto audit = setup.tmp / "private" / "audit-target.sqlite3";
  { std::ofstream(audit) << "x"; }
  const auto hard = setup.tmp / "private" / "audit-hardlink.sqlite3";
  std::filesystem::create_hard_link(audit, hard);
  {
    auto options = setup.service_options();
    options.benefit_audit_path = audit;
    options.journal_path = hard;
    CTX_EXPECT_THROW(open_managed_query_service(std::move(options)), InvalidArgument,
                     "must be distinct");
  }
  {
    auto options = setup.service_options();
    options.journal_path = "relative-journal.sqlite3";
    CTX_EXPECT_THROW(open_managed_query_service(std::move(options)), InvalidArgument,
                     "absolute Path");
  }
  EXPECT_FALSE(std::filesystem::exists(setup.journal_path));
  EXPECT_FALSE(std::filesystem::exists(setup.audit_path));
}

TEST(ManagedServiceSeed, service_rejects_malformed_or_corrupt_references) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto result = setup.service->prepare(query_request("corrupt-query"));
  CTX_EXPECT_THROW(setup.service->reopen("../../private/queries.sqlite3"), InvalidArgument,
                   "opaque managed-query reference");
  sqlite_scalar(setup.store_path, "UPDATE managed_queries SET decision_digest = '" +
                                      digest("substituted") + "' WHERE query_ref = '" +
                                      result.query_ref() + "'");
  const auto tampered = read_database(setup.store_path);
  CTX_EXPECT_THROW(setup.service->reopen(result.query_ref()), ManagedQueryStoreCorruption,
                   "authentication failed");
  EXPECT_EQ(read_database(setup.store_path), tampered);
  // A well-formed reference the store never issued, and a row under another installation key.
  CTX_EXPECT_THROW(setup.service->reopen("mqr_" + std::string(64, '0')), ManagedQueryStoreNotFound,
                   "unavailable");
  std::string other_key(32, '\x07');
  CTX_EXPECT_THROW(store::open_managed_query_store(setup.store_path, other_key),
                   ManagedQueryStoreCorruption, "authentication failed");
}

TEST(ManagedServiceSeed, service_public_surface_and_result_do_not_leak_authority_or_content) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  CTX_EXPECT_THROW(ManagedQueryRequest::create(digest("privacy-query"),
                                               (tmp.path() / "raw prompt and secret").string()),
                   InvalidArgument, "opaque token");
  // An unknown keyword (raw_prompt=...) -> TypeError: the factory takes exactly two inputs.
  static_assert(!std::is_invocable_v<decltype(&ManagedQueryRequest::create), std::string,
                                     std::string, std::string>);
  const auto result = setup.service->prepare(query_request("privacy-query"));
  // No transition or artifact accessor on the result.
  static_assert(!HasTransition<ManagedQueryServiceResult>);
  static_assert(!HasArtifact<ManagedQueryServiceResult>);
  const auto representation = printed(result);
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr(tmp.path().string())));
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr("work-one")));
  EXPECT_THAT(printed(query_request("privacy-query")),
              ::testing::Not(::testing::HasSubstr("work-one")));
  static_assert(!HasPayload<ManagedActionSummary>);
  static_assert(!HasScope<ManagedActionSummary>);
  // Every action is exactly {action_id, entity_id, kind}.
  static_assert(ActionSummaryAccessors<ManagedActionSummary> &&
                kHoldsExactly<ManagedActionSummary, ActionSummaryFields>);
  for (const auto& action : managed_result_json(result).at("actions")) {
    EXPECT_EQ(keys_of(action), (std::set<std::string>{"action_id", "entity_id", "kind"}));
  }
}

TEST(ManagedServiceSeed, service_close_is_idempotent_and_fails_closed) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  setup.service->close();
  setup.service->close();
  EXPECT_TRUE(setup.service->closed());
  CTX_EXPECT_THROW(setup.service->prepare(query_request("closed-query")), ManagedQueryServiceError,
                   "closed");
  CTX_EXPECT_THROW(setup.service->reopen("mqr_" + std::string(64, '0')), ManagedQueryServiceError,
                   "closed");
}

TEST(ManagedServiceSeed, service_is_process_bound) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string outcome;
    try {
      setup.service->prepare(query_request("forked-query"));
      outcome = "allowed";
    } catch (const std::exception& error) {
      outcome = std::string(error.what()).find("forked process") != std::string::npos
                    ? "blocked"
                    : "wrong-error";
    }
    [[maybe_unused]] auto written = ::write(fds[1], outcome.data(), outcome.size());
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  char buffer[32] = {};
  const auto n = ::read(fds[0], buffer, sizeof(buffer));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0), "blocked");
  EXPECT_FALSE(std::filesystem::exists(setup.journal_path));
}

TEST(ManagedServiceSeed, service_reports_old_plan_as_superseded_without_reranking) {
  TempDir tmp;
  // The seed's _setup always has the consent store whose challenges it counts.
  auto setup = make_setup(tmp.path(), {.consent_authorities = true});
  const auto first = setup.service->prepare(query_request("first-plan"));
  const auto replacement_artifact =
      setup.registry->ingest_graph_store(reingest(setup, surrogate(0)));
  const auto& original = setup.managed_input->decision_event();
  auto development = replace_event(original, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-development-observed";
    f.kind = "DevelopmentObserved";
    f.expected_revision = 2;
    f.payload = observation_payload(*replacement_artifact);
    f.correlation_id = "plan-replacement";
    f.causation_id = original.event_id();
    f.work_signature = digest("replacement-work");
    f.random_seed = 1;
  });
  setup.inputs->set(
      "work-replacement",
      ManagedQueryInput::create(replacement_artifact, setup.managed_input->session_started(),
                                std::move(development)));
  const auto replacement =
      setup.service->prepare(query_request("replacement-plan", "work-replacement"));
  const auto calls_after_replacement = setup.facts->calls();
  CTX_EXPECT_THROW(setup.service->reopen(first.query_ref()), ManagedQuerySupersededError,
                   "superseded");
  EXPECT_EQ(replacement.prepared().plan_id(), "plan-replacement");
  EXPECT_EQ(replacement.prepared().status(), engine::PlanStatus::kAbstained);
  EXPECT_FALSE(replacement.challenge().has_value());
  EXPECT_EQ(setup.facts->calls(), calls_after_replacement);
  EXPECT_EQ(sqlite_count(setup.consent->consent_store_path, "consent_challenges"), 0);
}

}  // namespace
}  // namespace ctx::runtime
