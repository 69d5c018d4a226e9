// ManagedQueryService through the query store port: the service runs its prepare / set_desired
// lifecycle on testing::MemManagedQueryStore (no store file), and its records are the fake's.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "host/runtime/service/managed_service.hpp"
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

}  // namespace
}  // namespace ctx::runtime
