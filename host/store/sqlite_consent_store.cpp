#include "host/store/sqlite_consent_store.hpp"

#include <exception>
#include <initializer_list>
#include <optional>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/file_policy.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {
namespace {

using core::Json;
using engine::ConsentBrokerConflict;
using engine::ConsentBrokerCorruption;
using engine::ConsentChallengeRow;
using engine::ConsentIdentityRow;
using engine::ConsentNonceRow;
using Opt = std::optional<std::string>;

// Keyed-row domains (store::KeyedRows tags HMAC(key, domain ‖ 0x00 ‖ bytes)). Frozen: the tags of
// existing files are computed under them.
constexpr std::string_view kKeyCheckDomain = "ctx.consent-broker-installation-key-v1";
constexpr std::string_view kIdentityRowDomain = "ctx.consent-broker-identity-row-v1";
constexpr std::string_view kChallengeRowDomain = "ctx.consent-challenge-row-v1";
constexpr std::string_view kNonceRowDomain = "ctx.consent-assertion-nonce-row-v1";

constexpr std::string_view kVersion1[] = {
    "CREATE TABLE consent_broker_identity (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), "
    "audience TEXT NOT NULL, trusted_time_high_water TEXT, key_check TEXT NOT NULL, "
    "row_hmac TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE consent_challenges (challenge_id TEXT PRIMARY KEY, "
    "challenge_digest TEXT NOT NULL UNIQUE, challenge_json TEXT NOT NULL, state TEXT NOT NULL, "
    "created_at TEXT NOT NULL, decision TEXT, principal_digest TEXT, authenticator_id TEXT, "
    "audience TEXT, assertion_nonce_digest TEXT, assertion_nonce_count INTEGER NOT NULL, "
    "decision_issued_at TEXT, decision_expires_at TEXT, decision_recorded_at TEXT, "
    "reservation_event_id TEXT, reservation_event_content_digest TEXT, "
    "reservation_token_digest TEXT, reserved_at TEXT, settled_at TEXT, expired_at TEXT, "
    "row_hmac TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE consent_assertion_nonces (nonce_digest TEXT PRIMARY KEY, "
    "challenge_id TEXT NOT NULL REFERENCES consent_challenges(challenge_id), "
    "sequence INTEGER NOT NULL, recorded_at TEXT NOT NULL, row_hmac TEXT NOT NULL, "
    "UNIQUE (challenge_id, sequence)) WITHOUT ROWID",
};
constexpr Migration kMigrations[] = {{1, kVersion1}};

#define CTX_CONSENT_CHALLENGE_COLUMNS                                                      \
  "challenge_id, challenge_digest, challenge_json, state, created_at, decision, "          \
  "principal_digest, authenticator_id, audience, assertion_nonce_digest, "                 \
  "assertion_nonce_count, decision_issued_at, decision_expires_at, decision_recorded_at, " \
  "reservation_event_id, reservation_event_content_digest, reservation_token_digest, "     \
  "reserved_at, settled_at, expired_at, row_hmac"

constexpr char kSelectById[] =
    "SELECT " CTX_CONSENT_CHALLENGE_COLUMNS " FROM consent_challenges WHERE challenge_id = ?1";
constexpr char kSelectByDigest[] =
    "SELECT " CTX_CONSENT_CHALLENGE_COLUMNS " FROM consent_challenges WHERE challenge_digest = ?1";
constexpr char kInsertChallenge[] =
    "INSERT INTO consent_challenges (" CTX_CONSENT_CHALLENGE_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
    "?19, ?20, ?21) ON CONFLICT DO NOTHING";
constexpr char kUpdateChallenge[] =
    "UPDATE consent_challenges SET challenge_digest = ?2, challenge_json = ?3, state = ?4, "
    "created_at = ?5, decision = ?6, principal_digest = ?7, authenticator_id = ?8, "
    "audience = ?9, assertion_nonce_digest = ?10, assertion_nonce_count = ?11, "
    "decision_issued_at = ?12, decision_expires_at = ?13, decision_recorded_at = ?14, "
    "reservation_event_id = ?15, reservation_event_content_digest = ?16, "
    "reservation_token_digest = ?17, reserved_at = ?18, settled_at = ?19, expired_at = ?20, "
    "row_hmac = ?21 WHERE challenge_id = ?1";
#undef CTX_CONSENT_CHALLENGE_COLUMNS

[[noreturn]] void corrupt(std::string_view what) {
  throw ConsentBrokerCorruption("consent broker " + std::string(what) + " authentication failed");
}

Json opt_json(const Opt& value) { return value ? Json(*value) : Json(nullptr); }
Opt decision_text(const std::optional<engine::Decision>& value) {
  return value ? Opt(engine::to_string(*value)) : std::nullopt;
}

// The columns a challenge row's tag covers, as the canonical JSON object it is computed over.
Json challenge_columns(const ConsentChallengeRow& r) {
  return Json{{"assertion_nonce_count", r.assertion_nonce_count},
              {"assertion_nonce_digest", opt_json(r.assertion_nonce_digest)},
              {"audience", opt_json(r.audience)},
              {"authenticator_id", opt_json(r.authenticator_id)},
              {"challenge_digest", r.challenge_digest},
              {"challenge_id", r.challenge_id},
              {"challenge_json", r.challenge_json},
              {"created_at", r.created_at},
              {"decision", opt_json(decision_text(r.decision))},
              {"decision_expires_at", opt_json(r.decision_expires_at)},
              {"decision_issued_at", opt_json(r.decision_issued_at)},
              {"decision_recorded_at", opt_json(r.decision_recorded_at)},
              {"expired_at", opt_json(r.expired_at)},
              {"principal_digest", opt_json(r.principal_digest)},
              {"reservation_event_content_digest", opt_json(r.reservation_event_content_digest)},
              {"reservation_event_id", opt_json(r.reservation_event_id)},
              {"reservation_token_digest", opt_json(r.reservation_token_digest)},
              {"reserved_at", opt_json(r.reserved_at)},
              {"settled_at", opt_json(r.settled_at)},
              {"state", core::to_string(r.state)}};
}

// The values challenge_columns() holds, each length-prefixed (a null as "-"), then `row_hmac`: two
// rows with equal images have equal columns and the same stored tag.
std::string challenge_image(const ConsentChallengeRow& r, std::string_view row_hmac) {
  std::string out;
  const auto put = [&out](const std::optional<std::string_view>& value) {
    if (!value) {
      out += '-';
      return;
    }
    out += std::to_string(value->size());
    out += ':';
    out.append(*value);
  };
  const auto opt = [](const Opt& value) -> std::optional<std::string_view> {
    return value ? std::optional<std::string_view>(*value) : std::nullopt;
  };
  using View = std::optional<std::string_view>;
  const Opt decision = decision_text(r.decision);
  const std::string count = std::to_string(r.assertion_nonce_count);
  for (const auto& value : {View(count),
                            opt(r.assertion_nonce_digest),
                            opt(r.audience),
                            opt(r.authenticator_id),
                            View(r.challenge_digest),
                            View(r.challenge_id),
                            View(r.challenge_json),
                            View(r.created_at),
                            opt(decision),
                            opt(r.decision_expires_at),
                            opt(r.decision_issued_at),
                            opt(r.decision_recorded_at),
                            opt(r.expired_at),
                            opt(r.principal_digest),
                            opt(r.reservation_event_content_digest),
                            opt(r.reservation_event_id),
                            opt(r.reservation_token_digest),
                            opt(r.reserved_at),
                            opt(r.settled_at),
                            View(core::to_string(r.state)),
                            View(row_hmac)}) {
    put(value);
  }
  return out;
}

Json nonce_columns(const ConsentNonceRow& n) {
  return Json{{"challenge_id", n.challenge_id},
              {"nonce_digest", n.nonce_digest},
              {"recorded_at", n.recorded_at},
              {"sequence", n.sequence}};
}

Json identity_columns(const ConsentIdentityRow& row, std::string_view key_check) {
  return Json{{"audience", row.audience},
              {"key_check", key_check},
              {"trusted_time_high_water", opt_json(row.trusted_time_high_water)}};
}

// synchronous = NORMAL for the life of this object (outside any transaction), FULL again after.
class RelaxedSync {
 public:
  explicit RelaxedSync(Database& db) : db_(db) { db_.exec("PRAGMA synchronous = NORMAL;"); }
  ~RelaxedSync() {
    try {
      db_.exec("PRAGMA synchronous = FULL;");
    } catch (...) {
      // Setting the pragma does no I/O; should it ever fail, stop rather than keep committing
      // decisions unsynced.
      std::terminate();
    }
  }
  RelaxedSync(const RelaxedSync&) = delete;
  RelaxedSync& operator=(const RelaxedSync&) = delete;

 private:
  Database& db_;
};

}  // namespace

// One BEGIN IMMEDIATE on the store's connection, holding the store's mutex until it ends.
class SqliteConsentStore::Txn final : public engine::ConsentStoreTransaction {
 public:
  Txn(SqliteConsentStore& store, engine::ConsentCommitSync sync)
      : store_(store), lock_(store.mutex_) {
    if (sync == engine::ConsentCommitSync::kRelaxed) relaxed_.emplace(*store_.db_);
    txn_.emplace(*store_.db_, Transaction::Kind::kImmediate);
  }
  ~Txn() override {
    txn_.reset();      // rolls back unless committed
    relaxed_.reset();  // synchronous FULL again
  }

  std::optional<ConsentIdentityRow> identity() override {
    auto select = db().cached(
        "SELECT audience, trusted_time_high_water, key_check, row_hmac FROM "
        "consent_broker_identity WHERE singleton = 1");
    if (!select->step()) return std::nullopt;
    ConsentIdentityRow row{select->text(0), select->optional_text(1)};
    const std::string stored_check = select->text(2);
    if (!core::constant_time_equal(stored_check, store_.key_check_)) corrupt("installation key");
    if (!store_.rows_.authentic(kIdentityRowDomain,
                                core::canonical_json(identity_columns(row, stored_check)),
                                select->text(3))) {
      corrupt("identity row");
    }
    return row;
  }

  void write_identity(const ConsentIdentityRow& row) override {
    auto upsert = db().cached(
        "INSERT INTO consent_broker_identity (singleton, audience, trusted_time_high_water, "
        "key_check, row_hmac) VALUES (1, ?1, ?2, ?3, ?4) ON CONFLICT (singleton) DO UPDATE SET "
        "audience = excluded.audience, trusted_time_high_water = "
        "excluded.trusted_time_high_water, key_check = excluded.key_check, "
        "row_hmac = excluded.row_hmac");
    upsert->bind(1, row.audience)
        .bind_optional(2, row.trusted_time_high_water)
        .bind(3, store_.key_check_)
        .bind(4, store_.rows_.tag(kIdentityRowDomain,
                                  core::canonical_json(identity_columns(row, store_.key_check_))));
    upsert->run();
  }

  std::optional<ConsentChallengeRow> challenge_by_id(std::string_view challenge_id) override {
    auto select = db().cached(kSelectById);
    select->bind(1, challenge_id);
    if (!select->step()) return std::nullopt;
    return decode(*select);
  }

  std::optional<ConsentChallengeRow> challenge_by_digest(
      std::string_view challenge_digest) override {
    auto select = db().cached(kSelectByDigest);
    select->bind(1, challenge_digest);
    if (!select->step()) return std::nullopt;
    return decode(*select);
  }

  std::size_t challenge_count() override {
    auto count = db().cached("SELECT count(*) FROM consent_challenges");
    count->step();
    return static_cast<std::size_t>(count->integer(0));
  }

  std::vector<std::string> oldest_unreserved_ids(std::size_t limit) override {
    // Text order of created_at: within one second a fractional time may sort after a whole one,
    // which only reorders candidates.
    auto select = db().cached(
        "SELECT challenge_id FROM consent_challenges WHERE state <> 'reserved' "
        "ORDER BY created_at, challenge_id LIMIT ?1");
    select->bind(1, static_cast<std::int64_t>(limit));
    std::vector<std::string> ids;
    while (select->step()) ids.push_back(select->text(0));
    return ids;
  }

  std::vector<std::string> awaiting_decision_ids() override {
    auto select = db().cached(
        "SELECT challenge_id FROM consent_challenges WHERE state IN "
        "('pending', 'reauthentication-required') ORDER BY created_at, challenge_id");
    std::vector<std::string> ids;
    while (select->step()) ids.push_back(select->text(0));
    return ids;
  }

  void insert_challenge(const ConsentChallengeRow& row) override { write(row, true); }
  void update_challenge(const ConsentChallengeRow& row) override { write(row, false); }

  void remove_challenge(std::string_view challenge_id) override {
    auto nonces = db().cached("DELETE FROM consent_assertion_nonces WHERE challenge_id = ?1");
    nonces->bind(1, challenge_id);
    nonces->run();
    auto challenge = db().cached("DELETE FROM consent_challenges WHERE challenge_id = ?1");
    challenge->bind(1, challenge_id);
    challenge->run();
    store_.verified_rows_.erase(std::string(challenge_id));
  }

  std::vector<ConsentNonceRow> nonces_of(std::string_view challenge_id) override {
    auto select = db().cached(
        "SELECT nonce_digest, sequence, recorded_at, row_hmac FROM consent_assertion_nonces "
        "WHERE challenge_id = ?1 ORDER BY sequence");
    select->bind(1, challenge_id);
    std::vector<ConsentNonceRow> out;
    while (select->step()) {
      ConsentNonceRow row{select->text(0), std::string(challenge_id), select->integer(1),
                          select->text(2)};
      if (!store_.rows_.authentic(kNonceRowDomain, core::canonical_json(nonce_columns(row)),
                                  select->text(3))) {
        corrupt("nonce history");
      }
      out.push_back(std::move(row));
    }
    return out;
  }

  bool nonce_used(std::string_view nonce_digest) override {
    auto seen = db().cached("SELECT 1 FROM consent_assertion_nonces WHERE nonce_digest = ?1");
    seen->bind(1, nonce_digest);
    return seen->step();
  }

  void insert_nonce(const ConsentNonceRow& row) override {
    auto insert = db().cached(
        "INSERT INTO consent_assertion_nonces (nonce_digest, challenge_id, sequence, "
        "recorded_at, row_hmac) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING");
    insert->bind(1, row.nonce_digest)
        .bind(2, row.challenge_id)
        .bind(3, row.sequence)
        .bind(4, row.recorded_at)
        .bind(5, store_.rows_.tag(kNonceRowDomain, core::canonical_json(nonce_columns(row))));
    insert->run();
    if (db().changes() != 1) throw ConsentBrokerConflict("consent nonce row was not written");
  }

  // Commits, then ends the transaction: synchronous FULL again, the store released.
  void commit() override {
    txn_->commit();
    txn_.reset();
    relaxed_.reset();
    lock_.unlock();
  }

 private:
  Database& db() { return *store_.db_; }

  // The selected row (kSelectById's columns), its spellings parsed and its tag checked (unless
  // this store wrote or authenticated that exact image).
  ConsentChallengeRow decode(const Statement& s) {
    ConsentChallengeRow r;
    r.challenge_id = s.text(0);
    r.challenge_digest = s.text(1);
    r.challenge_json = s.text(2);
    const auto state = core::find_enum<engine::ConsentState>(s.text(3));
    if (!state) corrupt("challenge state");
    r.state = *state;
    r.created_at = s.text(4);
    if (const Opt decision = s.optional_text(5)) {
      const auto typed = engine::find_enum<engine::Decision>(*decision);
      if (!typed) corrupt("challenge lifecycle");
      r.decision = *typed;
    }
    r.principal_digest = s.optional_text(6);
    r.authenticator_id = s.optional_text(7);
    r.audience = s.optional_text(8);
    r.assertion_nonce_digest = s.optional_text(9);
    if (!s.is_integer(10)) corrupt("challenge row");
    r.assertion_nonce_count = s.integer(10);
    r.decision_issued_at = s.optional_text(11);
    r.decision_expires_at = s.optional_text(12);
    r.decision_recorded_at = s.optional_text(13);
    r.reservation_event_id = s.optional_text(14);
    r.reservation_event_content_digest = s.optional_text(15);
    r.reservation_token_digest = s.optional_text(16);
    r.reserved_at = s.optional_text(17);
    r.settled_at = s.optional_text(18);
    r.expired_at = s.optional_text(19);
    const std::string row_hmac = s.text(20);
    std::string image = challenge_image(r, row_hmac);
    const auto known = store_.verified_rows_.find(r.challenge_id);
    if (known == store_.verified_rows_.end() || known->second != image) {
      if (!store_.rows_.authentic(kChallengeRowDomain, core::canonical_json(challenge_columns(r)),
                                  row_hmac)) {
        corrupt("challenge row");
      }
      store_.remember_verified(r.challenge_id, std::move(image));
    }
    return r;
  }

  void write(const ConsentChallengeRow& r, bool insert) {
    const std::string row_hmac =
        store_.rows_.tag(kChallengeRowDomain, core::canonical_json(challenge_columns(r)));
    auto statement = insert ? db().cached(kInsertChallenge) : db().cached(kUpdateChallenge);
    statement->bind(1, r.challenge_id)
        .bind(2, r.challenge_digest)
        .bind(3, r.challenge_json)
        .bind(4, core::to_string(r.state))
        .bind(5, r.created_at)
        .bind_optional(6, decision_text(r.decision))
        .bind_optional(7, r.principal_digest)
        .bind_optional(8, r.authenticator_id)
        .bind_optional(9, r.audience)
        .bind_optional(10, r.assertion_nonce_digest)
        .bind(11, r.assertion_nonce_count)
        .bind_optional(12, r.decision_issued_at)
        .bind_optional(13, r.decision_expires_at)
        .bind_optional(14, r.decision_recorded_at)
        .bind_optional(15, r.reservation_event_id)
        .bind_optional(16, r.reservation_event_content_digest)
        .bind_optional(17, r.reservation_token_digest)
        .bind_optional(18, r.reserved_at)
        .bind_optional(19, r.settled_at)
        .bind_optional(20, r.expired_at)
        .bind(21, row_hmac);
    statement->run();
    if (db().changes() != 1) throw ConsentBrokerConflict("consent challenge row was not written");
    store_.remember_verified(r.challenge_id, challenge_image(r, row_hmac));
  }

  SqliteConsentStore& store_;
  std::unique_lock<std::mutex> lock_;
  std::optional<RelaxedSync> relaxed_;
  std::optional<Transaction> txn_;
};

SqliteConsentStore::SqliteConsentStore(std::filesystem::path path,
                                       std::string_view installation_key, int busy_timeout_ms)
    : path_(std::move(path)), rows_(installation_key) {
  if (!path_.is_absolute()) throw InvalidArgument("consent store path must be absolute");
  if (installation_key.size() != 32) {
    throw InvalidArgument("installation key must be exactly 32 bytes");
  }
  key_check_ = rows_.tag(kKeyCheckDomain, "");
  secure_store_file(path_);
  db_ = std::make_unique<Database>(path_, Database::Mode::kReadWrite, busy_timeout_ms);
  // WAL at synchronous FULL: a commit is durable when it returns (one fsync of the log per
  // commit, where rollback-journal mode needs four), as the journal's commits are.
  db_->exec("PRAGMA trusted_schema = OFF; PRAGMA foreign_keys = ON;");
  db_->use_wal();
  db_->exec("PRAGMA synchronous = FULL;");
  migrate(*db_, "consent store", kMigrations, 1);
  secure_sidecars(path_);
}

SqliteConsentStore::~SqliteConsentStore() = default;

std::unique_ptr<engine::ConsentStoreTransaction> SqliteConsentStore::begin(
    engine::ConsentCommitSync sync) {
  return std::make_unique<Txn>(*this, sync);
}

void SqliteConsentStore::remember_verified(const std::string& challenge_id, std::string image) {
  if (verified_rows_.size() >= 1024 && !verified_rows_.contains(challenge_id)) {
    verified_rows_.clear();
  }
  verified_rows_[challenge_id] = std::move(image);
}

}  // namespace ctx::store
