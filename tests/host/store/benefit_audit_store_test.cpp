#include "host/store/benefit_audit_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/engine/planning/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::store {
namespace {

namespace planning = engine::planning;
namespace fs = std::filesystem;

std::string digest_of(const std::string& text) { return core::sha256_hex(text); }

planning::BenefitCandidate facts(const std::string& id) {
  planning::BenefitCandidate c;
  c.capability_id = id;
  c.source_digest = digest_of("source:" + id);
  c.resource_profile_digest = digest_of("profile:" + id);
  c.availability = engine::Availability::kAdvisory;
  c.expected_task_benefit_ppm = 800'000;
  c.relevance_ppm = 900'000;
  c.trust_ppm = 1'000'000;
  c.costs = planning::ResourceCosts{};
  c.evidence.capability_id = id;
  c.evidence.kind = engine::parse_enum<engine::CapabilityKind>(id.substr(0, id.find(':')));
  c.evidence.source_digest = c.source_digest;
  c.evidence.evidence_window_digest = digest_of("window:" + id);
  c.source_trusted = c.security_approved = c.permissions_allowed = c.credentials_available = true;
  return c;
}

planning::BenefitSelectionResult result(std::int64_t limit = 5) {
  planning::NetBenefitPolicyConfig config;
  config.calibration_digest = digest_of("calibration");
  config.minimum_relevance_ppm = 1;
  return planning::NetBenefitPolicy(config).select(
      {facts("agent:reviewer"), facts("skill:lint"), facts("mcp-server:docs")}, limit);
}

class BenefitAuditStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/ctx-audit-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ / "state" / "audit.sqlite3";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs `sql` on the store file through a second, ordinary connection.
  void tamper(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }
  std::int64_t row_count() {
    sqlite3* db = nullptr;
    sqlite3_open(path_.c_str(), &db);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM benefit_audit_results", -1, &stmt, nullptr);
    sqlite3_step(stmt);
    const std::int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
  }
  fs::path dir_;
  fs::path path_;
};

TEST_F(BenefitAuditStoreTest, StoresOnceAndLoadsTheExactResult) {
  const auto store = SqliteBenefitAuditStore::open(path_);
  const auto value = result();
  EXPECT_EQ(store->store(value), value.result_digest());
  EXPECT_EQ(store->store(value), value.result_digest());  // identical retry: no new row
  EXPECT_EQ(row_count(), 1);
  EXPECT_TRUE(store->load(value.result_digest()) == value);
  const auto zero = result(0);
  EXPECT_EQ(store->store(zero), zero.result_digest());
  EXPECT_EQ(row_count(), 2);
  CTX_EXPECT_THROW(store->load(digest_of("absent")), NotFound, "no benefit result");
}

TEST_F(BenefitAuditStoreTest, FilesArePrivateAndTheSchemaIsTheOneTable) {
  SqliteBenefitAuditStore::open(path_)->store(result());
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(path_.parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Reopening an existing store validates and keeps it.
  const auto reopened = SqliteBenefitAuditStore::open(path_);
  EXPECT_EQ(reopened->load(result().result_digest()).result_digest(), result().result_digest());
}

TEST_F(BenefitAuditStoreTest, SameDigestWithOtherBytesIsACollision) {
  const auto value = result();
  {
    const auto store = SqliteBenefitAuditStore::open(path_);
  }
  const std::string other = "{\"forged\":true}";
  tamper("INSERT INTO benefit_audit_results VALUES('" + value.result_digest() + "', CAST('" +
         other + "' AS BLOB), " + std::to_string(other.size()) + ", '" + digest_of(other) + "')");
  const auto store = SqliteBenefitAuditStore::open(path_);
  CTX_EXPECT_THROW(store->store(value), planning::BenefitAuditDigestCollision,
                   "already bound to different bytes");
  EXPECT_EQ(row_count(), 1);
}

TEST_F(BenefitAuditStoreTest, CorruptedRowsAreDetectedOnReadAndOnRetry) {
  const auto value = result();
  const auto store = SqliteBenefitAuditStore::open(path_);
  store->store(value);
  const std::string where = " WHERE result_digest = '" + value.result_digest() + "'";
  tamper("UPDATE benefit_audit_results SET byte_length = 1" + where);
  CTX_EXPECT_THROW(store->load(value.result_digest()), planning::BenefitAuditCorruption,
                   "byte length");
  CTX_EXPECT_THROW(store->store(value), planning::BenefitAuditCorruption, "byte length");
  tamper("UPDATE benefit_audit_results SET byte_length = length(result_json), content_digest = '" +
         digest_of("x") + "'" + where);
  CTX_EXPECT_THROW(store->load(value.result_digest()), planning::BenefitAuditCorruption,
                   "content digest");
  // Bytes that are self-consistent but not a valid result bound to this digest.
  const std::string other = result(2).to_json();
  tamper("UPDATE benefit_audit_results SET result_json = CAST('" + other +
         "' AS BLOB), byte_length = " + std::to_string(other.size()) + ", content_digest = '" +
         digest_of(other) + "'" + where);
  CTX_EXPECT_THROW(store->load(value.result_digest()), planning::BenefitAuditCorruption,
                   "wrong digest");
  tamper("UPDATE benefit_audit_results SET result_json = 'text, not a blob'" + where);
  CTX_EXPECT_THROW(store->load(value.result_digest()), planning::BenefitAuditCorruption,
                   "byte string");
}

TEST_F(BenefitAuditStoreTest, ForeignSchemaObjectsAreCorruption) {
  { SqliteBenefitAuditStore::open(path_); }
  tamper("CREATE INDEX sneaky ON benefit_audit_results(content_digest)");
  CTX_EXPECT_THROW(SqliteBenefitAuditStore::open(path_), planning::BenefitAuditCorruption,
                   "objects are invalid");
}

TEST_F(BenefitAuditStoreTest, ANewerSchemaVersionIsNamedAndNothingIsWritten) {
  const auto value = result();
  { SqliteBenefitAuditStore::open(path_)->store(value); }
  tamper("PRAGMA user_version = 5");
  CTX_EXPECT_THROW(SqliteBenefitAuditStore::open(path_), planning::BenefitAuditStoreUnavailable,
                   "benefit audit store has newer schema version 5 (this build reads up to 1)");
  EXPECT_EQ(row_count(), 1);
  tamper("PRAGMA user_version = 1");
  EXPECT_TRUE(SqliteBenefitAuditStore::open(path_)->load(value.result_digest()) == value);
}

TEST_F(BenefitAuditStoreTest, OperationalFailuresAreUnavailable) {
  fs::create_directories(dir_ / "blocked");
  const fs::path not_a_dir = dir_ / "blocked" / "file";
  std::ofstream(not_a_dir) << "x";
  CTX_EXPECT_THROW(SqliteBenefitAuditStore::open(not_a_dir / "audit.sqlite3"),
                   planning::BenefitAuditStoreUnavailable, "benefit audit store");
  fs::create_directories(path_.parent_path());
  ::chmod(path_.parent_path().c_str(), 0700);
  std::ofstream(path_) << "";
  ::chmod(path_.c_str(), 0644);
  CTX_EXPECT_THROW(SqliteBenefitAuditStore::open(path_), planning::BenefitAuditStoreUnavailable,
                   "owner-private");
  ::chmod(path_.c_str(), 0600);
  std::ofstream(path_) << "this is not a database, just some bytes long enough to be read........";
  CTX_EXPECT_THROW(SqliteBenefitAuditStore::open(path_), planning::BenefitAuditCorruption,
                   "benefit audit database");
}

}  // namespace
}  // namespace ctx::store
