// The JournalStore contract suite, run against the SQLite store and the in-memory fake.
#include <gtest/gtest.h>

#include <memory>

#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/journal/journal_store_contract.hpp"
#include "tests/support/journal/mem_journal_store.hpp"

namespace ctx::testing::journal {
namespace {

struct SqliteFactory {
  static std::unique_ptr<engine::JournalStore> make(const std::filesystem::path& dir) {
    static const core::SystemClock clock;
    return std::make_unique<store::SqliteJournalStore>(dir / "journal.sqlite3", clock);
  }
};

struct MemFactory {
  static std::unique_ptr<engine::JournalStore> make(const std::filesystem::path&) {
    return std::make_unique<MemJournalStore>();
  }
};

using Implementations = ::testing::Types<SqliteFactory, MemFactory>;
INSTANTIATE_TYPED_TEST_SUITE_P(Stores, JournalStoreContractTest, Implementations);

}  // namespace
}  // namespace ctx::testing::journal
