// store::SqliteConsentStore's own tests: the file format the consent broker has always written
// (schema version 1, the three tables, each row's tag HMAC-SHA256 under the installation key over
// its canonical JSON in its frozen domain), and fail-closed reads of rows changed behind its back
// (ConsentBrokerCorruption, nothing written).
#include "host/store/sqlite_consent_store.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "tests/support/consent/consent_store_contract.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/journal/raw_sqlite.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::store {
namespace {

using ::ctx::testing::TempDir;
using ::ctx::testing::consent::settled_row;
using ::ctx::testing::journal::raw_exec;
using ::ctx::testing::journal::raw_text;
using engine::ConsentBrokerCorruption;

const std::string kKey(32, 'k');

std::string tag(std::string_view domain, const core::Json& columns) {
  return core::hmac_sha256_hex(
      kKey, std::string(domain) + std::string(1, '\0') + core::canonical_json(columns));
}

class SqliteConsentStoreTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "consent.sqlite3"; }
  std::unique_ptr<SqliteConsentStore> open(const std::string& key = kKey) {
    return std::make_unique<SqliteConsentStore>(path(), key);
  }
  // One identity row, one settled challenge row and its nonce, committed.
  void write_rows() {
    auto store = open();
    const auto txn = store->begin();
    txn->write_identity({"audience-a", "2026-08-03T12:00:05Z"});
    txn->insert_challenge(settled_row("a"));
    txn->insert_nonce({core::sha256_hex("nonce:a"), "challenge-a", 1, "2026-08-03T12:00:01Z"});
    txn->commit();
  }
  std::string bytes() const { return ::ctx::testing::read_database(path()); }

 private:
  TempDir dir_;
};

TEST_F(SqliteConsentStoreTest, RowsAreStoredInTheBrokersFormatAndKeyedTags) {
  write_rows();
  EXPECT_EQ(raw_text(path(), "PRAGMA user_version"), "1");
  EXPECT_EQ(raw_text(path(), "SELECT sql FROM sqlite_master WHERE name = 'consent_challenges'"),
            "CREATE TABLE consent_challenges (challenge_id TEXT PRIMARY KEY, "
            "challenge_digest TEXT NOT NULL UNIQUE, challenge_json TEXT NOT NULL, state TEXT NOT "
            "NULL, created_at TEXT NOT NULL, decision TEXT, principal_digest TEXT, "
            "authenticator_id TEXT, audience TEXT, assertion_nonce_digest TEXT, "
            "assertion_nonce_count INTEGER NOT NULL, decision_issued_at TEXT, "
            "decision_expires_at TEXT, decision_recorded_at TEXT, reservation_event_id TEXT, "
            "reservation_event_content_digest TEXT, reservation_token_digest TEXT, reserved_at "
            "TEXT, settled_at TEXT, expired_at TEXT, row_hmac TEXT NOT NULL) WITHOUT ROWID");
  const std::string key_check = core::hmac_sha256_hex(
      kKey, std::string("ctx.consent-broker-installation-key-v1") + std::string(1, '\0'));
  EXPECT_EQ(raw_text(path(), "SELECT key_check FROM consent_broker_identity"), key_check);
  EXPECT_EQ(raw_text(path(), "SELECT row_hmac FROM consent_broker_identity"),
            tag("ctx.consent-broker-identity-row-v1",
                {{"audience", "audience-a"},
                 {"key_check", key_check},
                 {"trusted_time_high_water", "2026-08-03T12:00:05Z"}}));
  EXPECT_EQ(
      raw_text(path(), "SELECT row_hmac FROM consent_assertion_nonces"),
      tag("ctx.consent-assertion-nonce-row-v1", {{"challenge_id", "challenge-a"},
                                                 {"nonce_digest", core::sha256_hex("nonce:a")},
                                                 {"recorded_at", "2026-08-03T12:00:01Z"},
                                                 {"sequence", 1}}));
  const auto row = settled_row("a");
  EXPECT_EQ(raw_text(path(), "SELECT state || ' ' || decision FROM consent_challenges"),
            "settled granted");
  EXPECT_EQ(raw_text(path(), "SELECT row_hmac FROM consent_challenges"),
            tag("ctx.consent-challenge-row-v1",
                {{"assertion_nonce_count", 1},
                 {"assertion_nonce_digest", *row.assertion_nonce_digest},
                 {"audience", "audience"},
                 {"authenticator_id", "authenticator"},
                 {"challenge_digest", row.challenge_digest},
                 {"challenge_id", row.challenge_id},
                 {"challenge_json", row.challenge_json},
                 {"created_at", row.created_at},
                 {"decision", "granted"},
                 {"decision_expires_at", *row.decision_expires_at},
                 {"decision_issued_at", *row.decision_issued_at},
                 {"decision_recorded_at", *row.decision_recorded_at},
                 {"expired_at", *row.expired_at},
                 {"principal_digest", *row.principal_digest},
                 {"reservation_event_content_digest", *row.reservation_event_content_digest},
                 {"reservation_event_id", *row.reservation_event_id},
                 {"reservation_token_digest", nullptr},
                 {"reserved_at", *row.reserved_at},
                 {"settled_at", *row.settled_at},
                 {"state", "settled"}}));
  // Reopened, the same rows read back.
  auto store = open();
  const auto txn = store->begin();
  EXPECT_EQ(txn->challenge_by_id("challenge-a"), row);
  EXPECT_EQ(txn->identity(), (engine::ConsentIdentityRow{"audience-a", "2026-08-03T12:00:05Z"}));
}

TEST_F(SqliteConsentStoreTest, EachTamperedRowFailsClosedAndNothingIsWritten) {
  const struct {
    const char* sql;
    const char* what;
  } cases[] = {
      {"UPDATE consent_challenges SET created_at = '2026-08-03T11:00:00Z'", "challenge row"},
      {"UPDATE consent_challenges SET state = 'Pending'", "challenge state"},
      {"UPDATE consent_challenges SET decision = 'maybe'", "challenge lifecycle"},
      {"UPDATE consent_challenges SET assertion_nonce_count = 'one'", "challenge row"},
      {"UPDATE consent_assertion_nonces SET recorded_at = '2026-08-03T12:00:09Z'", "nonce history"},
      {"UPDATE consent_broker_identity SET trusted_time_high_water = '2030-01-01T00:00:00Z'",
       "identity row"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    std::filesystem::remove(path());
    write_rows();
    raw_exec(path(), c.sql);
    auto store = open();
    const std::string before = bytes();
    const auto txn = store->begin();
    CTX_EXPECT_THROW(
        {
          (void)txn->identity();
          (void)txn->challenge_by_id("challenge-a");
          (void)txn->nonces_of("challenge-a");
        },
        ConsentBrokerCorruption,
        std::string("consent broker ") + c.what + " authentication failed");
    EXPECT_EQ(bytes(), before);
  }
  std::filesystem::remove(path());
  write_rows();
  auto other = open(std::string(32, 'o'));
  CTX_EXPECT_THROW((void)other->begin()->identity(), ConsentBrokerCorruption,
                   "installation key authentication failed");
}

// The store remembers the rows it wrote or authenticated; a change another connection makes to
// such a row while the store stays open is still caught.
TEST_F(SqliteConsentStoreTest, ARowChangedUnderAnOpenStoreIsStillCorruption) {
  auto store = open();
  {
    const auto txn = store->begin();
    txn->insert_challenge(settled_row("a"));
    txn->commit();
  }
  ASSERT_EQ(store->begin()->challenge_by_id("challenge-a"), settled_row("a"));
  raw_exec(path(), "UPDATE consent_challenges SET settled_at = '2026-08-03T12:00:04Z'");
  CTX_EXPECT_THROW((void)store->begin()->challenge_by_id("challenge-a"), ConsentBrokerCorruption,
                   "challenge row authentication failed");
}

TEST_F(SqliteConsentStoreTest, RefusesARelativePathOrAShortKeyBeforeTouchingAFile) {
  CTX_EXPECT_THROW(SqliteConsentStore("consent.sqlite3", kKey), InvalidArgument, "absolute");
  CTX_EXPECT_THROW(SqliteConsentStore(path(), std::string(31, 'k')), InvalidArgument, "32 bytes");
  EXPECT_FALSE(std::filesystem::exists(path()));
}

}  // namespace
}  // namespace ctx::store
