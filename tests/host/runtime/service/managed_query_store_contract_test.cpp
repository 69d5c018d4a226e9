// The engine::ManagedQueryStore contract suite, run against the SQLite store and the in-memory
// fake. (Here, not in tests/host/store: its events come from the service seeds' setup, which
// needs the runtime.)
#include "tests/support/managed_query/managed_query_store_contract.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <type_traits>

#include "host/store/sqlite_managed_query_store.hpp"
#include "tests/support/managed_query/mem_managed_query_store.hpp"

namespace ctx::testing::managed_query {
namespace {

struct SqliteFactory {
  static std::shared_ptr<engine::ManagedQueryStore> make(const std::filesystem::path& dir) {
    return store::open_managed_query_store(dir / "queries.sqlite3", service::store_key());
  }
};

struct MemFactory {
  static std::shared_ptr<engine::ManagedQueryStore> make(const std::filesystem::path& dir) {
    return std::make_shared<MemManagedQueryStore>(dir / "queries.mem");
  }
};

// Records are issued by stores only: their constructors need a ManagedRecordKey, which only
// ManagedQueryStore (for its implementations) can make; they are movable, never copied.
static_assert(!std::is_default_constructible_v<engine::ManagedRecordKey>);
static_assert(
    !std::is_constructible_v<engine::ManagedQueryRecord, engine::ManagedQueryRecord::Fields>);
static_assert(!std::is_constructible_v<engine::ManagedDesiredSetRecord,
                                       engine::ManagedDesiredSetRecord::Fields>);
static_assert(!std::is_copy_constructible_v<engine::ManagedQueryRecord>);
static_assert(!std::is_copy_assignable_v<engine::ManagedDesiredSetRecord>);
static_assert(std::is_nothrow_move_constructible_v<engine::ManagedQueryRecord>);

using Implementations = ::testing::Types<SqliteFactory, MemFactory>;
INSTANTIATE_TYPED_TEST_SUITE_P(ManagedQueryStores, ManagedQueryStoreContractTest, Implementations);

}  // namespace
}  // namespace ctx::testing::managed_query
