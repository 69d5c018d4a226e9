// The engine::ConsentStore contract suite, run against the SQLite store and the in-memory fake.
#include "tests/support/consent/consent_store_contract.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "host/store/sqlite_consent_store.hpp"
#include "tests/support/consent/mem_consent_store.hpp"

namespace ctx::testing::consent {
namespace {

struct SqliteFactory {
  static std::shared_ptr<engine::ConsentStore> make(const std::filesystem::path& dir) {
    return std::make_shared<store::SqliteConsentStore>(dir / "consent.sqlite3",
                                                       std::string(32, 'k'));
  }
};

struct MemFactory {
  static std::shared_ptr<engine::ConsentStore> make(const std::filesystem::path& dir) {
    return std::make_shared<MemConsentStore>(dir / "consent.mem");
  }
};

using Implementations = ::testing::Types<SqliteFactory, MemFactory>;
INSTANTIATE_TYPED_TEST_SUITE_P(ConsentStores, ConsentStoreContractTest, Implementations);

}  // namespace
}  // namespace ctx::testing::consent
