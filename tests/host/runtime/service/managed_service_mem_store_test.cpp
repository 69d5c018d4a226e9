// ManagedQueryService through the query store port: the service runs its prepare / set_desired
// lifecycle on testing::MemManagedQueryStore (no store file), and its records are the fake's; a
// store failure injected through the port (testing::FaultyManagedQueryStore) at the mark after a
// journal commit reaches the caller typed, and the same request then completes from the journal.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "host/runtime/service/managed_service.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/managed_query/faulty_managed_query_store.hpp"
#include "tests/support/managed_query/mem_managed_query_store.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

TEST(ManagedServiceMemStore, PreparesAndSetsDesiredThroughThePort) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 2});
  const auto mem_path = tmp.path() / "private" / "queries.mem";
  auto store = std::make_shared<::ctx::testing::MemManagedQueryStore>(mem_path);
  setup.store = store;
  setup.service = open_managed_query_service(setup.service_options());

  const auto prepared =
      setup.service->prepare(ManagedQueryRequest::create(digest("mem-query"), "work-one"));
  const auto record = store->load(prepared.query_ref());
  EXPECT_TRUE(record.planned());
  EXPECT_EQ(record.plan_id(), prepared.prepared().plan_id());
  EXPECT_EQ(record.decision_digest(), prepared.prepared().decision_digest());
  // The same request again is the same registration.
  EXPECT_EQ(setup.service->prepare(ManagedQueryRequest::create(digest("mem-query"), "work-one"))
                .query_ref(),
            prepared.query_ref());

  const auto first = setup.service->set_desired(
      ManagedDesiredSetRequest::create(prepared.query_ref(), digest("mem-first"), {}));
  EXPECT_EQ(first.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_EQ(first.journal_revision(), 3);
  const auto capability_id = prepared.prepared().selections().at(0).capability_id();
  const auto second = setup.service->set_desired(ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest("mem-second"), {capability_id}, first.desired_set_ref()));
  EXPECT_EQ(second.status(), ManagedDesiredStatus::kManualDeferred);
  EXPECT_EQ(second.journal_revision(), 4);
  const auto latest = store->load_latest_desired_set(prepared.query_ref());
  EXPECT_TRUE(latest.committed());
  EXPECT_EQ(latest.desired_set_ref(), second.desired_set_ref());
  EXPECT_EQ(latest.capability_ids(), std::vector<std::string>{capability_id});
  EXPECT_FALSE(store->find_pending_desired_set(record.decision_event().scope()).has_value());
  EXPECT_THROW(setup.service->set_desired(
                   ManagedDesiredSetRequest::create(prepared.query_ref(), digest("mem-first"), {})),
               ManagedDesiredSetSupersededError);
  EXPECT_FALSE(std::filesystem::exists(mem_path));
}

// A setup whose service runs on a FaultyManagedQueryStore over a MemManagedQueryStore.
struct FaultySetup {
  explicit FaultySetup(const std::filesystem::path& tmp)
      : setup(make_setup(tmp, {.requested_limit = 1})),
        store(std::make_shared<::ctx::testing::FaultyManagedQueryStore>(
            std::make_shared<::ctx::testing::MemManagedQueryStore>(tmp / "private" /
                                                                   "queries.mem"))) {
    setup.store = store;
    setup.service = open_managed_query_service(setup.service_options());
  }
  ServiceSetup setup;
  std::shared_ptr<::ctx::testing::FaultyManagedQueryStore> store;
};

void fail_busy() { throw ManagedQueryStoreUnavailable("managed query store is busy"); }

TEST(ManagedServiceMemStore, AStoreFailureAtThePlanMarkIsFinishedByTheSameRequest) {
  TempDir tmp;
  FaultySetup f(tmp.path());
  const auto request = ManagedQueryRequest::create(digest("mark-plan-fails"), "work-one");
  f.store->fail_next(::ctx::testing::FaultyManagedQueryStore::Op::kMarkPlanned, fail_busy);
  CTX_EXPECT_THROW(f.setup.service->prepare(request), ManagedQueryStoreUnavailable, "busy");
  EXPECT_EQ(f.store->failures(), 1);
  EXPECT_EQ(sqlite_count(f.setup.journal_path, "engine_journal"), 2);
  const auto prepared = f.setup.service->prepare(request);
  EXPECT_TRUE(f.store->load(prepared.query_ref()).planned());
  EXPECT_EQ(f.store->load(prepared.query_ref()).journal_revision(),
            prepared.prepared().journal_revision());
  EXPECT_EQ(sqlite_count(f.setup.journal_path, "engine_journal"), 2);
}

TEST(ManagedServiceMemStore, AStoreFailureAtTheDesiredMarkIsFinishedByTheSameRequest) {
  TempDir tmp;
  FaultySetup f(tmp.path());
  const auto prepared =
      f.setup.service->prepare(ManagedQueryRequest::create(digest("mark-desired"), "work-one"));
  const auto request =
      ManagedDesiredSetRequest::create(prepared.query_ref(), digest("mark-desired-choice"), {});
  f.store->fail_next(::ctx::testing::FaultyManagedQueryStore::Op::kMarkDesiredSetCommitted,
                     fail_busy);
  CTX_EXPECT_THROW(f.setup.service->set_desired(request), ManagedQueryStoreUnavailable, "busy");
  EXPECT_EQ(f.store->failures(), 1);
  const auto pending = f.store->load_pending_desired_set(seed_scope());
  EXPECT_EQ(sqlite_count(f.setup.journal_path, "engine_journal"), 3);
  const auto recovered = f.setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), pending.desired_set_ref());
  EXPECT_EQ(recovered.journal_revision(), 3);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_TRUE(f.store->load_desired_set(pending.desired_set_ref()).committed());
  EXPECT_EQ(sqlite_count(f.setup.journal_path, "engine_journal"), 3);
}

}  // namespace
}  // namespace ctx::runtime
