// The engine::ConsentStore contract as a typed GoogleTest suite: what the consent broker relies
// on (the identity row, whole challenge rows by id and digest, uniqueness, the nonce history by
// sequence, removal with the history, the oldest-first listings, and transactions that are all or
// nothing). Instantiate it with a factory type providing
// `static std::shared_ptr<engine::ConsentStore> make(const std::filesystem::path& dir)`; every
// implementation (store::SqliteConsentStore, testing::MemConsentStore) must pass it. Row
// authentication and the file format are the SQLite store's own tests.
#ifndef CTX_TESTS_SUPPORT_CONSENT_CONSENT_STORE_CONTRACT_HPP_
#define CTX_TESTS_SUPPORT_CONSENT_CONSENT_STORE_CONTRACT_HPP_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/consent_store.hpp"
#include "host/engine/journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::testing::consent {

using engine::ConsentChallengeRow;
using engine::ConsentIdentityRow;
using engine::ConsentNonceRow;
using engine::ConsentState;

inline std::string hex(const std::string& label) { return core::sha256_hex(label); }

// A pending row for challenge `name` created at `created_at`.
inline ConsentChallengeRow pending_row(const std::string& name,
                                       const std::string& created_at = "2026-08-03T12:00:00Z") {
  ConsentChallengeRow row;
  row.challenge_id = "challenge-" + name;
  row.challenge_digest = hex("digest:" + name);
  row.challenge_json = R"({"challenge":")" + name + R"("})";
  row.state = ConsentState::kPending;
  row.created_at = created_at;
  return row;
}

// A row with every column set (a settled grant).
inline ConsentChallengeRow settled_row(const std::string& name) {
  ConsentChallengeRow row = pending_row(name);
  row.state = ConsentState::kSettled;
  row.decision = engine::Decision::kGranted;
  row.principal_digest = hex("principal");
  row.authenticator_id = "authenticator";
  row.audience = "audience";
  row.assertion_nonce_digest = hex("nonce:" + name);
  row.assertion_nonce_count = 1;
  row.decision_issued_at = "2026-08-03T12:00:00Z";
  row.decision_expires_at = "2026-08-03T12:30:00Z";
  row.decision_recorded_at = "2026-08-03T12:00:01Z";
  row.reservation_event_id = "event-" + name;
  row.reservation_event_content_digest = hex("event:" + name);
  row.reserved_at = "2026-08-03T12:00:02Z";
  row.settled_at = "2026-08-03T12:00:03Z";
  row.expired_at = "2026-08-03T12:40:00Z";
  return row;
}

template <typename Factory>
class ConsentStoreContractTest : public ::testing::Test {
 protected:
  engine::ConsentStore& store() {
    if (!store_) store_ = Factory::make(dir_.path());
    return *store_;
  }
  // Commits `row` in one transaction.
  void put(const ConsentChallengeRow& row) {
    const auto txn = store().begin();
    txn->insert_challenge(row);
    txn->commit();
  }
  std::optional<ConsentChallengeRow> get(const std::string& id) {
    return store().begin()->challenge_by_id(id);
  }

 private:
  TempDir dir_;
  std::shared_ptr<engine::ConsentStore> store_;
};

TYPED_TEST_SUITE_P(ConsentStoreContractTest);

TYPED_TEST_P(ConsentStoreContractTest, IdentityIsAbsentUntilWrittenAndIsReplacedWhole) {
  EXPECT_FALSE(this->store().begin()->identity().has_value());
  {
    const auto txn = this->store().begin();
    txn->write_identity({"audience-a", std::nullopt});
    txn->commit();
  }
  EXPECT_EQ(this->store().begin()->identity(), (ConsentIdentityRow{"audience-a", std::nullopt}));
  {
    const auto txn = this->store().begin(engine::ConsentCommitSync::kRelaxed);
    txn->write_identity({"audience-a", "2026-08-03T12:00:00Z"});
    txn->commit();
  }
  EXPECT_EQ(this->store().begin()->identity(),
            (ConsentIdentityRow{"audience-a", "2026-08-03T12:00:00Z"}));
}

TYPED_TEST_P(ConsentStoreContractTest, ChallengeRowsRoundTripWholeByIdAndByDigest) {
  const ConsentChallengeRow pending = pending_row("a");
  const ConsentChallengeRow settled = settled_row("b");
  this->put(pending);
  this->put(settled);
  const auto txn = this->store().begin();
  EXPECT_EQ(txn->challenge_by_id(pending.challenge_id), pending);
  EXPECT_EQ(txn->challenge_by_id(settled.challenge_id), settled);
  EXPECT_EQ(txn->challenge_by_digest(settled.challenge_digest), settled);
  EXPECT_FALSE(txn->challenge_by_id("challenge-none").has_value());
  EXPECT_FALSE(txn->challenge_by_digest(hex("none")).has_value());
  EXPECT_EQ(txn->challenge_count(), 2U);
  // An update replaces every column, nulls included.
  ConsentChallengeRow reopened = settled;
  reopened.state = ConsentState::kReauthRequired;
  reopened.reservation_event_id.reset();
  reopened.reservation_event_content_digest.reset();
  reopened.reserved_at.reset();
  reopened.settled_at.reset();
  reopened.expired_at.reset();
  txn->update_challenge(reopened);
  EXPECT_EQ(txn->challenge_by_id(settled.challenge_id), reopened);  // reads see own writes
  txn->commit();
  EXPECT_EQ(this->get(settled.challenge_id), reopened);
}

TYPED_TEST_P(ConsentStoreContractTest, AnUncommittedTransactionChangesNothing) {
  this->put(pending_row("kept"));
  {
    const auto txn = this->store().begin();
    txn->write_identity({"audience-a", std::nullopt});
    txn->insert_challenge(pending_row("dropped"));
    txn->insert_nonce({hex("nonce-dropped"), "challenge-kept", 1, "2026-08-03T12:00:00Z"});
    ConsentChallengeRow changed = pending_row("kept");
    changed.state = ConsentState::kExpired;
    changed.expired_at = "2026-08-03T13:00:00Z";
    txn->update_challenge(changed);
    txn->remove_challenge("challenge-kept");
  }  // destroyed without commit()
  const auto txn = this->store().begin();
  EXPECT_FALSE(txn->identity().has_value());
  EXPECT_FALSE(txn->challenge_by_id("challenge-dropped").has_value());
  EXPECT_EQ(txn->challenge_by_id("challenge-kept"), pending_row("kept"));
  EXPECT_FALSE(txn->nonce_used(hex("nonce-dropped")));
  EXPECT_EQ(txn->challenge_count(), 1U);
}

TYPED_TEST_P(ConsentStoreContractTest, ADuplicateIdOrDigestOrAnUnknownRowIsNotWritten) {
  this->put(pending_row("a"));
  ConsentChallengeRow same_id = pending_row("b");
  same_id.challenge_id = "challenge-a";
  ConsentChallengeRow same_digest = pending_row("c");
  same_digest.challenge_digest = hex("digest:a");
  const auto txn = this->store().begin();
  CTX_EXPECT_THROW(txn->insert_challenge(same_id), engine::ConsentBrokerConflict, "not written");
  CTX_EXPECT_THROW(txn->insert_challenge(same_digest), engine::ConsentBrokerConflict,
                   "not written");
  CTX_EXPECT_THROW(txn->update_challenge(pending_row("unknown")), engine::ConsentBrokerConflict,
                   "not written");
  EXPECT_EQ(txn->challenge_count(), 1U);
  EXPECT_EQ(txn->challenge_by_id("challenge-a"), pending_row("a"));
}

TYPED_TEST_P(ConsentStoreContractTest, NonceHistoryIsPerChallengeBySequenceAndGloballyUnique) {
  this->put(pending_row("a"));
  this->put(pending_row("b"));
  const ConsentNonceRow second{hex("n2"), "challenge-a", 2, "2026-08-03T12:05:00Z"};
  const ConsentNonceRow first{hex("n1"), "challenge-a", 1, "2026-08-03T12:00:00Z"};
  const ConsentNonceRow other{hex("n3"), "challenge-b", 1, "2026-08-03T12:01:00Z"};
  {
    const auto txn = this->store().begin();
    txn->insert_nonce(second);
    txn->insert_nonce(first);
    txn->insert_nonce(other);
    txn->commit();
  }
  const auto txn = this->store().begin();
  EXPECT_EQ(txn->nonces_of("challenge-a"), (std::vector<ConsentNonceRow>{first, second}));
  EXPECT_EQ(txn->nonces_of("challenge-b"), (std::vector<ConsentNonceRow>{other}));
  EXPECT_TRUE(txn->nonces_of("challenge-none").empty());
  EXPECT_TRUE(txn->nonce_used(hex("n3")));
  EXPECT_FALSE(txn->nonce_used(hex("n4")));
  // The digest is global; (challenge, sequence) is unique; a nonce needs its challenge.
  CTX_EXPECT_THROW(txn->insert_nonce({hex("n1"), "challenge-b", 2, "2026-08-03T12:06:00Z"}),
                   engine::ConsentBrokerConflict, "not written");
  CTX_EXPECT_THROW(txn->insert_nonce({hex("n5"), "challenge-a", 2, "2026-08-03T12:06:00Z"}),
                   engine::ConsentBrokerConflict, "not written");
  EXPECT_THROW(txn->insert_nonce({hex("n6"), "challenge-none", 1, "2026-08-03T12:06:00Z"}),
               engine::EngineStoreError);
  EXPECT_EQ(txn->nonces_of("challenge-b"), (std::vector<ConsentNonceRow>{other}));
}

TYPED_TEST_P(ConsentStoreContractTest, RemovingAChallengeRemovesItsNonceHistoryOnly) {
  this->put(pending_row("a"));
  this->put(pending_row("b"));
  {
    const auto txn = this->store().begin();
    txn->insert_nonce({hex("na"), "challenge-a", 1, "2026-08-03T12:00:00Z"});
    txn->insert_nonce({hex("nb"), "challenge-b", 1, "2026-08-03T12:00:00Z"});
    txn->commit();
  }
  {
    const auto txn = this->store().begin();
    txn->remove_challenge("challenge-a");
    txn->remove_challenge("challenge-none");
    txn->commit();
  }
  const auto txn = this->store().begin();
  EXPECT_FALSE(txn->challenge_by_id("challenge-a").has_value());
  EXPECT_FALSE(txn->nonce_used(hex("na")));
  EXPECT_TRUE(txn->nonces_of("challenge-a").empty());
  EXPECT_TRUE(txn->nonce_used(hex("nb")));
  EXPECT_EQ(txn->challenge_count(), 1U);
  // The removed id and digest may be published again.
  txn->insert_challenge(pending_row("a"));
  EXPECT_EQ(txn->challenge_count(), 2U);
}

TYPED_TEST_P(ConsentStoreContractTest, ListingsAreOldestFirstByCreationThenId) {
  ConsentChallengeRow reserved = settled_row("r");
  reserved.state = ConsentState::kReserved;
  reserved.created_at = "2026-08-03T11:00:00Z";
  ConsentChallengeRow reauth = settled_row("q");
  reauth.state = ConsentState::kReauthRequired;
  reauth.created_at = "2026-08-03T12:00:00Z";
  ConsentChallengeRow expired = pending_row("e", "2026-08-03T11:30:00Z");
  expired.state = ConsentState::kExpired;
  expired.expired_at = "2026-08-03T13:00:00Z";
  for (const auto& row :
       {pending_row("z", "2026-08-03T12:00:00Z"), pending_row("a", "2026-08-03T12:00:00Z"),
        pending_row("late", "2026-08-03T12:10:00Z"), reserved, reauth, expired, settled_row("s")}) {
    this->put(row);
  }
  const auto txn = this->store().begin();
  EXPECT_EQ(
      txn->awaiting_decision_ids(),
      (std::vector<std::string>{"challenge-a", "challenge-q", "challenge-z", "challenge-late"}));
  EXPECT_EQ(txn->oldest_unreserved_ids(100),
            (std::vector<std::string>{"challenge-e", "challenge-a", "challenge-q", "challenge-s",
                                      "challenge-z", "challenge-late"}));
  EXPECT_EQ(txn->oldest_unreserved_ids(2),
            (std::vector<std::string>{"challenge-e", "challenge-a"}));
}

REGISTER_TYPED_TEST_SUITE_P(ConsentStoreContractTest,
                            IdentityIsAbsentUntilWrittenAndIsReplacedWhole,
                            ChallengeRowsRoundTripWholeByIdAndByDigest,
                            AnUncommittedTransactionChangesNothing,
                            ADuplicateIdOrDigestOrAnUnknownRowIsNotWritten,
                            NonceHistoryIsPerChallengeBySequenceAndGloballyUnique,
                            RemovingAChallengeRemovesItsNonceHistoryOnly,
                            ListingsAreOldestFirstByCreationThenId);

}  // namespace ctx::testing::consent

#endif  // CTX_TESTS_SUPPORT_CONSENT_CONSENT_STORE_CONTRACT_HPP_
