#include "host/runtime/consent/consent_broker.hpp"

#include <array>
#include <chrono>
#include <exception>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/file_policy.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
using core::Timestamp;

// Keyed-row domains (store::KeyedRows tags HMAC(key, domain ‖ 0x00 ‖ bytes)).
constexpr std::string_view kKeyCheckDomain = "ctx.consent-broker-installation-key-v1";
constexpr std::string_view kIdentityRowDomain = "ctx.consent-broker-identity-row-v1";
constexpr std::string_view kChallengeRowDomain = "ctx.consent-challenge-row-v1";
constexpr std::string_view kNonceRowDomain = "ctx.consent-assertion-nonce-row-v1";
constexpr std::string_view kSealDomain{"ctx.verified-human-decision-v1\0", 31};

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
constexpr store::Migration kMigrations[] = {{1, kVersion1}};

using Opt = std::optional<std::string>;

Json opt_json(const Opt& value) { return value ? Json(*value) : Json(nullptr); }
Json opt_json(const std::optional<engine::Decision>& value) {
  return value ? Json(*value) : Json(nullptr);
}
Opt opt_text(const std::optional<engine::Decision>& value) {
  return value ? Opt(engine::to_string(*value)) : std::nullopt;
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  core::random_bytes(reinterpret_cast<std::uint8_t*>(out.data()), n);
  return out;
}

std::string now_text(Timestamp t) { return core::format_rfc3339(t); }

[[noreturn]] void corrupt(std::string_view what) {
  throw ConsentBrokerCorruption("consent broker " + std::string(what) + " authentication failed");
}

// A stored state spelling; an unknown one is corruption (the row cannot be trusted).
ConsentState parse_state(std::string_view text) {
  if (const auto state = core::find_enum<ConsentState>(text)) return *state;
  corrupt("challenge state");
}

}  // namespace

// A stored row: the record plus the reservation token digest.
struct ConsentBroker::Row {
  ConsentRecord record;
  Opt reservation_token_digest;

  Json columns() const {
    const ConsentRecord& r = record;
    return Json{{"assertion_nonce_count", r.assertion_nonce_count},
                {"assertion_nonce_digest", opt_json(r.assertion_nonce_digest)},
                {"audience", opt_json(r.audience)},
                {"authenticator_id", opt_json(r.authenticator_id)},
                {"challenge_digest", r.challenge.digest()},
                {"challenge_id", r.challenge.challenge_id()},
                {"challenge_json", r.challenge.json_text()},
                {"created_at", r.created_at},
                {"decision", opt_json(r.decision)},
                {"decision_expires_at", opt_json(r.decision_expires_at)},
                {"decision_issued_at", opt_json(r.decision_issued_at)},
                {"decision_recorded_at", opt_json(r.decision_recorded_at)},
                {"expired_at", opt_json(r.expired_at)},
                {"principal_digest", opt_json(r.principal_digest)},
                {"reservation_event_content_digest", opt_json(r.reservation_event_content_digest)},
                {"reservation_event_id", opt_json(r.reservation_event_id)},
                {"reservation_token_digest", opt_json(reservation_token_digest)},
                {"reserved_at", opt_json(r.reserved_at)},
                {"settled_at", opt_json(r.settled_at)},
                {"state", core::to_string(r.state)}};
  }

  // The values columns() holds, each length-prefixed (a null as "-"), then `row_hmac`: two rows
  // with equal images have equal columns() and the same stored mac.
  std::string image(std::string_view row_hmac) const {
    const ConsentRecord& r = record;
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
    const Opt decision = opt_text(r.decision);
    const std::string count = std::to_string(r.assertion_nonce_count);
    for (const auto& value :
         {std::optional<std::string_view>(count), opt(r.assertion_nonce_digest), opt(r.audience),
          opt(r.authenticator_id), std::optional<std::string_view>(r.challenge.digest()),
          std::optional<std::string_view>(r.challenge.challenge_id()),
          std::optional<std::string_view>(r.challenge.json_text()),
          std::optional<std::string_view>(r.created_at), opt(decision),
          opt(r.decision_expires_at), opt(r.decision_issued_at), opt(r.decision_recorded_at),
          opt(r.expired_at), opt(r.principal_digest), opt(r.reservation_event_content_digest),
          opt(r.reservation_event_id), opt(reservation_token_digest), opt(r.reserved_at),
          opt(r.settled_at), std::optional<std::string_view>(core::to_string(r.state)),
          std::optional<std::string_view>(row_hmac)}) {
      put(value);
    }
    return out;
  }
};

namespace {

// Lifecycle invariants of spec §5.3, checked on every read.
void check_invariants(const ConsentRecord& r, const Opt& token) {
  const bool decided = r.decision.has_value();
  const bool all_decision = r.decision && r.principal_digest && r.authenticator_id &&
                            r.audience && r.assertion_nonce_digest && r.decision_issued_at &&
                            r.decision_expires_at && r.decision_recorded_at;
  const bool any_decision = r.decision || r.principal_digest || r.authenticator_id ||
                            r.audience || r.assertion_nonce_digest || r.decision_issued_at ||
                            r.decision_expires_at || r.decision_recorded_at;
  bool ok = (decided ? all_decision : !any_decision);
  if (decided && r.assertion_nonce_count < 1) ok = false;
  if (r.state == ConsentState::kPending &&
      (decided || r.assertion_nonce_count != 0 || r.reservation_event_id || token)) {
    ok = false;
  }
  if ((r.state == ConsentState::kDecisionReady || r.state == ConsentState::kReserved ||
       r.state == ConsentState::kSettled || r.state == ConsentState::kReauthRequired) &&
      !decided) {
    ok = false;
  }
  if ((r.state == ConsentState::kReserved) != token.has_value()) ok = false;
  if ((r.state == ConsentState::kReserved || r.state == ConsentState::kSettled) !=
      (r.reservation_event_id.has_value() && r.reservation_event_content_digest.has_value())) {
    ok = false;
  }
  if ((r.state == ConsentState::kSettled) != r.settled_at.has_value()) ok = false;
  if ((r.state == ConsentState::kExpired) != r.expired_at.has_value()) ok = false;
  if (!ok) corrupt("challenge lifecycle");
}

}  // namespace

ConsentBroker::ConsentBroker(std::filesystem::path path, std::string installation_key,
                             std::string audience, const core::Clock& clock, Options options)
    : path_(std::move(path)),
      rows_(installation_key),
      audience_(std::move(audience)),
      clock_(clock),
      options_(options),
      instance_key_(random_bytes(32)) {
  if (!path_.is_absolute()) throw InvalidArgument("consent store path must be absolute");
  if (installation_key.size() != 32)
    throw InvalidArgument("installation key must be exactly 32 bytes");
  if (options_.capacity < 1 || options_.capacity > kMaxConsentCapacity) {
    throw InvalidArgument("consent capacity out of range");
  }
  if (!is_consent_token(audience_)) throw InvalidArgument("consent audience must be a token");
  store::secure_store_file(path_);
  db_ = std::make_unique<store::Database>(path_, store::Database::Mode::kReadWrite,
                                          options_.busy_timeout_ms);
  // WAL at synchronous FULL: a commit is durable when it returns (one fsync of the log per
  // commit, where rollback-journal mode needs four), as the journal's commits are.
  db_->exec("PRAGMA trusted_schema = OFF; PRAGMA foreign_keys = ON;");
  db_->use_wal();
  db_->exec("PRAGMA synchronous = FULL;");
  store::migrate(*db_, "consent store", kMigrations, 1);
  store::secure_sidecars(path_);
  const std::string key_check = rows_.tag(kKeyCheckDomain, "");
  store::Transaction txn(*db_, store::Transaction::Kind::kImmediate);
  bool exists = false;
  {
    auto select = db_->cached("SELECT count(*) FROM consent_broker_identity");
    select->step();
    exists = select->integer(0) != 0;
  }
  if (!exists) {
    auto insert = db_->cached(
        "INSERT INTO consent_broker_identity (singleton, audience, trusted_time_high_water, "
        "key_check, row_hmac) VALUES (1, ?1, NULL, ?2, ?3)");
    const Json row{{"audience", audience_}, {"key_check", key_check},
                   {"trusted_time_high_water", nullptr}};
    insert->bind(1, audience_)
        .bind(2, key_check)
        .bind(3, rows_.tag(kIdentityRowDomain, core::canonical_json(row)));
    insert->run();
  } else {
    auto select = db_->cached(
        "SELECT audience, trusted_time_high_water, key_check, row_hmac "
        "FROM consent_broker_identity WHERE singleton = 1");
    if (!select->step()) corrupt("identity row");
    const std::string stored_audience = select->text(0);
    const Opt high_water = select->optional_text(1);
    const std::string stored_check = select->text(2);
    const std::string row_hmac = select->text(3);
    if (!core::constant_time_equal(stored_check, key_check)) corrupt("installation key");
    const Json row{{"audience", stored_audience}, {"key_check", stored_check},
                   {"trusted_time_high_water", opt_json(high_water)}};
    if (!rows_.authentic(kIdentityRowDomain, core::canonical_json(row), row_hmac)) {
      corrupt("identity row");
    }
    if (stored_audience != audience_) {
      throw ConsentBrokerDecisionRejected("consent store belongs to another audience");
    }
  }
  txn.commit();
}

ConsentBroker::~ConsentBroker() = default;

Timestamp ConsentBroker::trusted_now_locked() {
  auto select = db_->cached(
      "SELECT audience, trusted_time_high_water, key_check, row_hmac FROM consent_broker_identity "
      "WHERE singleton = 1");
  if (!select->step()) corrupt("identity row");
  const Opt high_water = select->optional_text(1);
  const Json row{{"audience", select->text(0)}, {"key_check", select->text(2)},
                 {"trusted_time_high_water", opt_json(high_water)}};
  if (!rows_.authentic(kIdentityRowDomain, core::canonical_json(row), select->text(3))) {
    corrupt("identity row");
  }
  Timestamp now = clock_.now();
  if (high_water) {
    try {
      now = std::max(now, core::parse_rfc3339(*high_water));
    } catch (const InvalidArgument&) {
      corrupt("identity row");
    }
  }
  return now;
}

void ConsentBroker::advance_high_water_locked(Timestamp now) {
  const std::string text = now_text(now);
  const std::string key_check = rows_.tag(kKeyCheckDomain, "");
  const Json row{{"audience", audience_}, {"key_check", key_check},
                 {"trusted_time_high_water", text}};
  auto update = db_->cached(
      "UPDATE consent_broker_identity SET trusted_time_high_water = ?1, row_hmac = ?2 "
      "WHERE singleton = 1");
  update->bind(1, text).bind(2, rows_.tag(kIdentityRowDomain, core::canonical_json(row)));
  update->run();
}

void ConsentBroker::remember_verified(const std::string& challenge_id, std::string image) {
  if (verified_rows_.size() >= 1024 && !verified_rows_.contains(challenge_id)) {
    verified_rows_.clear();
  }
  verified_rows_[challenge_id] = std::move(image);
}

std::optional<ConsentBroker::Row> ConsentBroker::load_locked(std::string_view column,
                                                             std::string_view value) {
  static constexpr char kById[] =
      "SELECT challenge_id, challenge_digest, challenge_json, state, created_at, decision, "
      "principal_digest, authenticator_id, audience, assertion_nonce_digest, "
      "assertion_nonce_count, decision_issued_at, decision_expires_at, decision_recorded_at, "
      "reservation_event_id, reservation_event_content_digest, reservation_token_digest, "
      "reserved_at, settled_at, expired_at, row_hmac FROM consent_challenges "
      "WHERE challenge_id = ?1";
  static constexpr char kByDigest[] =
      "SELECT challenge_id, challenge_digest, challenge_json, state, created_at, decision, "
      "principal_digest, authenticator_id, audience, assertion_nonce_digest, "
      "assertion_nonce_count, decision_issued_at, decision_expires_at, decision_recorded_at, "
      "reservation_event_id, reservation_event_content_digest, reservation_token_digest, "
      "reserved_at, settled_at, expired_at, row_hmac FROM consent_challenges "
      "WHERE challenge_digest = ?1";
  std::optional<Row> loaded;
  {
    // The statement is reset (its read ended) before the nonce history is read.
    auto select = column == "challenge_id" ? db_->cached(kById) : db_->cached(kByDigest);
    select->bind(1, value);
    if (!select->step()) return std::nullopt;
    loaded.emplace(decode_row_locked(*select));
  }
  check_nonce_history_locked(loaded->record);
  return loaded;
}

ConsentBroker::Row ConsentBroker::decode_row_locked(const store::Statement& s) {
  const std::string challenge_json = s.text(2);
  const std::string challenge_digest = s.text(1);
  std::optional<ConsentChallenge> challenge;
  if (const auto known = decoded_challenges_.find(challenge_json);
      known != decoded_challenges_.end()) {
    challenge = known->second;
  } else {
    try {
      challenge = ConsentChallenge::from_json_text(challenge_json);
    } catch (const ConsentChallengeError&) {
      corrupt("challenge row");
    }
    if (decoded_challenges_.size() >= 1024) decoded_challenges_.clear();
    decoded_challenges_.emplace(challenge_json, *challenge);
  }
  Row row{ConsentRecord{*challenge}, std::nullopt};
  ConsentRecord& r = row.record;
  r.state = parse_state(s.text(3));
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
  row.reservation_token_digest = s.optional_text(16);
  r.reserved_at = s.optional_text(17);
  r.settled_at = s.optional_text(18);
  r.expired_at = s.optional_text(19);
  const std::string row_hmac = s.text(20);
  if (s.text(0) != challenge->challenge_id() || challenge_digest != challenge->digest()) {
    corrupt("challenge row");
  }
  // A row whose image this broker wrote or verified before needs no second mac.
  std::string image = row.image(row_hmac);
  const auto known = verified_rows_.find(r.challenge.challenge_id());
  if (known == verified_rows_.end() || known->second != image) {
    if (!rows_.authentic(kChallengeRowDomain, core::canonical_json(row.columns()), row_hmac)) {
      corrupt("challenge row");
    }
    remember_verified(r.challenge.challenge_id(), std::move(image));
  }
  check_invariants(r, row.reservation_token_digest);
  return row;
}

void ConsentBroker::check_nonce_history_locked(const ConsentRecord& r) {
  // The nonce history of this challenge: every row authenticated, count and current digest.
  auto nonces = db_->cached(
      "SELECT nonce_digest, sequence, recorded_at, row_hmac FROM consent_assertion_nonces "
      "WHERE challenge_id = ?1 ORDER BY sequence");
  nonces->bind(1, r.challenge.challenge_id());
  std::int64_t count = 0;
  bool current_seen = false;
  while (nonces->step()) {
    ++count;
    const Json nonce_row{{"challenge_id", r.challenge.challenge_id()},
                         {"nonce_digest", nonces->text(0)},
                         {"recorded_at", nonces->text(2)},
                         {"sequence", nonces->integer(1)}};
    if (nonces->integer(1) != count ||
        !rows_.authentic(kNonceRowDomain, core::canonical_json(nonce_row), nonces->text(3))) {
      corrupt("nonce history");
    }
    if (r.assertion_nonce_digest && nonces->text(0) == *r.assertion_nonce_digest) {
      current_seen = true;
    }
  }
  if (count != r.assertion_nonce_count || (r.assertion_nonce_digest && !current_seen)) {
    corrupt("nonce history");
  }
}

void ConsentBroker::write_locked(const Row& row, bool insert) {
  const ConsentRecord& r = row.record;
  const std::string row_hmac = rows_.tag(kChallengeRowDomain, core::canonical_json(row.columns()));
  auto statement =
      insert ? db_->cached(
                   "INSERT INTO consent_challenges (challenge_id, challenge_digest, "
                   "challenge_json, state, created_at, decision, principal_digest, "
                   "authenticator_id, audience, assertion_nonce_digest, assertion_nonce_count, "
                   "decision_issued_at, decision_expires_at, decision_recorded_at, "
                   "reservation_event_id, reservation_event_content_digest, "
                   "reservation_token_digest, reserved_at, settled_at, expired_at, row_hmac) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                   "?16, ?17, ?18, ?19, ?20, ?21)")
             : db_->cached(
                   "UPDATE consent_challenges SET challenge_digest = ?2, challenge_json = ?3, "
                   "state = ?4, created_at = ?5, decision = ?6, principal_digest = ?7, "
                   "authenticator_id = ?8, audience = ?9, assertion_nonce_digest = ?10, "
                   "assertion_nonce_count = ?11, decision_issued_at = ?12, "
                   "decision_expires_at = ?13, decision_recorded_at = ?14, "
                   "reservation_event_id = ?15, reservation_event_content_digest = ?16, "
                   "reservation_token_digest = ?17, reserved_at = ?18, settled_at = ?19, "
                   "expired_at = ?20, row_hmac = ?21 WHERE challenge_id = ?1");
  statement->bind(1, r.challenge.challenge_id())
      .bind(2, r.challenge.digest())
      .bind(3, r.challenge.json_text())
      .bind(4, core::to_string(r.state))
      .bind(5, r.created_at)
      .bind_optional(6, opt_text(r.decision))
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
      .bind_optional(17, row.reservation_token_digest)
      .bind_optional(18, r.reserved_at)
      .bind_optional(19, r.settled_at)
      .bind_optional(20, r.expired_at)
      .bind(21, row_hmac);
  statement->run();
  if (db_->changes() != 1) throw ConsentBrokerConflict("consent challenge row was not written");
  remember_verified(r.challenge.challenge_id(), row.image(row_hmac));
}

ConsentBroker::Row ConsentBroker::apply_expiry_locked(Row row, Timestamp now, bool& changed) {
  ConsentRecord& r = row.record;
  changed = false;
  const bool live = now < r.challenge.expires_at_time();
  if (!live && (r.state == ConsentState::kPending || r.state == ConsentState::kDecisionReady ||
                r.state == ConsentState::kReauthRequired)) {
    r.state = ConsentState::kExpired;
    r.expired_at = now_text(now);
    row.reservation_token_digest.reset();
    changed = true;
  } else if (live && r.decision && r.decision_expires_at &&
             (r.state == ConsentState::kDecisionReady || r.state == ConsentState::kExpired)) {
    Timestamp decision_expires{};
    try {
      decision_expires = core::parse_rfc3339(*r.decision_expires_at);
    } catch (const InvalidArgument&) {
      corrupt("challenge row");
    }
    if (r.state == ConsentState::kExpired || now >= decision_expires) {
      r.state = ConsentState::kReauthRequired;
      r.expired_at.reset();
      r.reservation_event_id.reset();
      r.reservation_event_content_digest.reset();
      r.reserved_at.reset();
      row.reservation_token_digest.reset();
      changed = true;
    }
  }
  return row;
}

std::size_t ConsentBroker::count_locked() {
  auto count = db_->cached("SELECT count(*) FROM consent_challenges");
  count->step();
  return static_cast<std::size_t>(count->integer(0));
}

std::size_t ConsentBroker::retire_locked(Timestamp now) {
  // Oldest first by created_at (text order; within one second a fractional time may sort after
  // a whole one, which only reorders candidates). Reserved rows are never candidates.
  std::vector<std::string> ids;
  {
    auto select = db_->cached(
        "SELECT challenge_id FROM consent_challenges WHERE state <> 'reserved' "
        "ORDER BY created_at, challenge_id LIMIT ?1");
    select->bind(1, static_cast<std::int64_t>(kConsentRetirementCandidates));
    while (select->step()) ids.push_back(select->text(0));
  }
  std::size_t retired = 0;
  for (const auto& id : ids) {
    if (retired == kConsentRetirementBatch) break;
    auto existing = load_locked("challenge_id", id);  // authenticated before it is judged
    if (!existing) continue;
    bool changed = false;
    const Row row = apply_expiry_locked(std::move(*existing), now, changed);
    const ConsentRecord& r = row.record;
    const bool retirable =
        now >= r.challenge.expires_at_time() &&
        (r.state == ConsentState::kSettled || (r.state == ConsentState::kExpired && !r.decision));
    if (!retirable) continue;
    auto nonces = db_->cached("DELETE FROM consent_assertion_nonces WHERE challenge_id = ?1");
    nonces->bind(1, id);
    nonces->run();
    auto challenge = db_->cached("DELETE FROM consent_challenges WHERE challenge_id = ?1");
    challenge->bind(1, id);
    challenge->run();
    verified_rows_.erase(id);
    ++retired;
  }
  // A retired challenge must stay past its expiry for good: trusted time never falls below now.
  if (retired != 0) advance_high_water_locked(now);
  return retired;
}

ConsentRecord ConsentBroker::prepare(const ConsentChallenge& challenge) {
  if (challenge.fields().audience != audience_) {
    throw ConsentBrokerDecisionRejected("install consent challenge names another audience");
  }
  std::lock_guard lock(mutex_);
  store::Transaction txn(*db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = trusted_now_locked();
  if (auto existing = load_locked("challenge_id", challenge.challenge_id())) {
    if (!(existing->record.challenge == challenge)) {
      throw ConsentBrokerConflict("consent challenge id is already bound to another challenge");
    }
    bool changed = false;
    Row row = apply_expiry_locked(std::move(*existing), now, changed);
    if (changed) write_locked(row, false);
    txn.commit();
    return row.record;
  }
  if (load_locked("challenge_digest", challenge.digest())) {
    throw ConsentBrokerConflict("consent challenge digest is already published");
  }
  if (now >= challenge.expires_at_time()) {
    throw ConsentBrokerExpired("install consent challenge has already expired");
  }
  if (count_locked() >= options_.capacity &&
      (retire_locked(now) == 0 || count_locked() >= options_.capacity)) {
    throw ConsentBrokerCapacityExceeded("consent broker capacity is exhausted");
  }
  Row row{ConsentRecord{challenge}, std::nullopt};
  row.record.created_at = now_text(now);
  write_locked(row, true);
  txn.commit();
  return row.record;
}

ConsentRecord ConsentBroker::status_locked(std::string_view column, std::string_view value) {
  store::Transaction txn(*db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = trusted_now_locked();
  auto existing = load_locked(column, value);
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  bool changed = false;
  Row row = apply_expiry_locked(std::move(*existing), now, changed);
  if (changed) write_locked(row, false);
  txn.commit();
  return row.record;
}

ConsentRecord ConsentBroker::status(std::string_view challenge_id) {
  std::lock_guard lock(mutex_);
  return status_locked("challenge_id", challenge_id);
}

ConsentRecord ConsentBroker::status_by_challenge_digest(std::string_view challenge_digest) {
  if (!core::is_sha256_hex(challenge_digest)) {
    throw InvalidArgument("challenge digest must be 64 lower-case hex");
  }
  std::lock_guard lock(mutex_);
  return status_locked("challenge_digest", challenge_digest);
}

std::vector<ConsentRecord> ConsentBroker::awaiting_decision(std::size_t limit) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> ids;
  {
    auto select = db_->cached(
        "SELECT challenge_id FROM consent_challenges WHERE state IN "
        "('pending', 'reauthentication-required') ORDER BY created_at, challenge_id");
    while (select->step()) ids.push_back(select->text(0));
  }
  std::vector<ConsentRecord> out;
  for (const auto& id : ids) {
    if (out.size() >= limit) break;
    ConsentRecord record = status_locked("challenge_id", id);
    if (record.state == ConsentState::kPending || record.state == ConsentState::kReauthRequired) {
      out.push_back(std::move(record));
    }
  }
  return out;
}

std::string ConsentBroker::seal_of(const VerifiedHumanDecision& d) const {
  const Json fields{{"audience", d.audience},         {"authenticator_id", d.authenticator_id},
                    {"challenge_digest", d.challenge_digest},
                    {"challenge_id", d.challenge_id}, {"decision", d.decision},
                    {"expires_at", d.expires_at},     {"issued_at", d.issued_at},
                    {"nonce_digest", d.nonce_digest}, {"principal_digest", d.principal_digest}};
  return core::hmac_sha256_hex(instance_key_, std::string(kSealDomain) +
                                                  core::canonical_json(fields));
}

namespace {

// The signed assertion fits the challenge row `r` at `now`: its challenge, issued no later than
// now, expiring no later than the challenge, and (reauthentication) repeating the recorded
// decision identity. Errors: ConsentBrokerDecisionRejected.
void check_assertion_fits(const SignedAssertion& assertion, const ConsentRecord& r, Timestamp now) {
  if (assertion.challenge_digest() != r.challenge.digest()) {
    throw ConsentBrokerDecisionRejected("signed assertion names another challenge");
  }
  if (assertion.issued_at_time() > now) {
    throw ConsentBrokerDecisionRejected("signed assertion was issued in the future");
  }
  if (assertion.expires_at_time() > r.challenge.expires_at_time()) {
    throw ConsentBrokerDecisionRejected("signed assertion outlives its challenge");
  }
  if (r.state == ConsentState::kReauthRequired) {
    if (*r.decision != assertion.decision() ||
        *r.principal_digest != assertion.principal_digest() ||
        *r.authenticator_id != assertion.authenticator_id() ||
        *r.audience != assertion.audience()) {
      throw ConsentBrokerDecisionRejected(
          "reauthentication must repeat the recorded decision identity");
    }
  }
}

}  // namespace

VerifiedHumanDecision ConsentBroker::authenticate(const ConsentChallenge& current,
                                                  std::string_view wire_payload,
                                                  VerifierDirectory& verifiers) {
  const SignedAssertion assertion = decode_signed_assertion(wire_payload);
  // Refusals that need no broker state come first: nothing is looked up for them.
  if (assertion.audience() != audience_) {
    throw ConsentBrokerAudienceMismatch("signed assertion names another audience");
  }
  const std::shared_ptr<const PinnedVerifier> verifier =
      verifiers.resolve(verifier_key_of(assertion));
  const std::string nonce_digest = core::sha256_hex(assertion.nonce());

  std::lock_guard lock(mutex_);
  store::Transaction txn(*db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = trusted_now_locked();
  auto existing = load_locked("challenge_id", current.challenge_id());
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  if (!(existing->record.challenge == current)) {
    throw ConsentBrokerBindingError(
        "current install target no longer matches the published consent challenge");
  }
  if (existing->record.state == ConsentState::kReserved ||
      existing->record.state == ConsentState::kSettled) {
    throw ConsentBrokerReplay("install consent challenge already carries a decision");
  }
  bool changed = false;
  Row row = apply_expiry_locked(std::move(*existing), now, changed);
  if (row.record.state == ConsentState::kExpired) {
    if (changed) write_locked(row, false);
    txn.commit();
    throw ConsentBrokerExpired("install consent challenge has expired");
  }
  if (row.record.state == ConsentState::kDecisionReady) {
    throw ConsentBrokerReplay("install consent challenge already carries a decision");
  }
  // A decision past its own expiry became reauthentication-required above; that change is
  // written with the new decision below (or re-derived on the next read).
  ConsentRecord& r = row.record;
  check_assertion_fits(assertion, r, now);
  {
    auto seen = db_->cached("SELECT 1 FROM consent_assertion_nonces WHERE nonce_digest = ?1");
    seen->bind(1, nonce_digest);
    if (seen->step()) throw ConsentBrokerReplay("signed assertion nonce was already used");
  }
  if (now >= assertion.expires_at_time()) {
    throw ConsentBrokerExpired("signed assertion has expired");
  }
  if (!verifier->verify(assertion, wire_payload, assertion.signing_bytes())) {
    throw ConsentBrokerDecisionRejected("signed assertion signature was not verified");
  }
  advance_high_water_locked(now);
  const std::string recorded_at = now_text(now);
  r.state = ConsentState::kDecisionReady;
  r.decision = assertion.decision();
  r.principal_digest = assertion.principal_digest();
  r.authenticator_id = assertion.authenticator_id();
  r.audience = assertion.audience();
  r.assertion_nonce_digest = nonce_digest;
  r.assertion_nonce_count += 1;
  r.decision_issued_at = assertion.issued_at();
  r.decision_expires_at = assertion.expires_at();
  r.decision_recorded_at = recorded_at;
  {
    const Json nonce_row{{"challenge_id", r.challenge.challenge_id()},
                         {"nonce_digest", nonce_digest},
                         {"recorded_at", recorded_at},
                         {"sequence", r.assertion_nonce_count}};
    auto insert = db_->cached(
        "INSERT INTO consent_assertion_nonces (nonce_digest, challenge_id, sequence, "
        "recorded_at, row_hmac) VALUES (?1, ?2, ?3, ?4, ?5)");
    insert->bind(1, nonce_digest)
        .bind(2, r.challenge.challenge_id())
        .bind(3, r.assertion_nonce_count)
        .bind(4, recorded_at)
        .bind(5, rows_.tag(kNonceRowDomain, core::canonical_json(nonce_row)));
    insert->run();
  }
  write_locked(row, false);
  txn.commit();
  VerifiedHumanDecision decision{r.challenge.challenge_id(), r.challenge.digest(),
                                 *r.decision,                *r.principal_digest,
                                 *r.authenticator_id,        *r.audience,
                                 nonce_digest,               *r.decision_issued_at,
                                 *r.decision_expires_at,     ""};
  decision.seal = seal_of(decision);
  return decision;
}

// One slot per challenge of the store's `.ctx-consent-reservations` file beside it.
LockSlot ConsentBroker::lease_slot(std::string_view challenge_id) const {
  return {path_.parent_path() / ".ctx-consent-reservations",
          core::sha256_hex(path_.filename().string() + std::string(1, '\0') +
                           std::string(challenge_id))};
}

ConsentBroker::Guard ConsentBroker::interactive_guard(const VerifiedHumanDecision& decision,
                                                      std::string_view binding_digest) {
  if (!core::constant_time_equal(decision.seal, seal_of(decision))) {
    throw ConsentBrokerBindingError("human decision was not verified by this broker");
  }
  const ConsentRecord record = status(decision.challenge_id);
  if (record.challenge.fields().execution_binding_digest != binding_digest) {
    throw ConsentBrokerBindingError("install execution binding does not match the challenge");
  }
  return Guard(*this, decision);
}

namespace {

// synchronous = NORMAL for the life of this object (outside any transaction), FULL again after.
class SettlementSync {
 public:
  explicit SettlementSync(store::Database& db) : db_(db) {
    db_.exec("PRAGMA synchronous = NORMAL;");
  }
  ~SettlementSync() {
    try {
      db_.exec("PRAGMA synchronous = FULL;");
    } catch (...) {
      // Setting the pragma does no I/O; should it ever fail, stop rather than keep committing
      // decisions unsynced.
      std::terminate();
    }
  }
  SettlementSync(const SettlementSync&) = delete;
  SettlementSync& operator=(const SettlementSync&) = delete;

 private:
  store::Database& db_;
};

}  // namespace

ConsentDecisionGuard::ConsentDecisionGuard(ConsentBroker& broker, VerifiedHumanDecision decision)
    : broker_(&broker), decision_(std::move(decision)) {}

ConsentDecisionGuard::~ConsentDecisionGuard() {
  if (broker_ == nullptr || token_.empty() || settled_) return;
  try {
    std::lock_guard lock(broker_->mutex_);
    store::Transaction txn(*broker_->db_, store::Transaction::Kind::kImmediate);
    auto existing = broker_->load_locked("challenge_id", decision_.challenge_id);
    if (existing && existing->record.state == ConsentState::kReserved &&
        existing->reservation_token_digest == core::sha256_hex(token_)) {
      ConsentBroker::Row row = std::move(*existing);
      row.record.state = ConsentState::kDecisionReady;
      row.record.reservation_event_id.reset();
      row.record.reservation_event_content_digest.reset();
      row.record.reserved_at.reset();
      row.reservation_token_digest.reset();
      broker_->write_locked(row, false);
      txn.commit();
    }
  } catch (...) {
    // The reservation stays; reconciliation resolves it from the journal.
  }
}

void ConsentDecisionGuard::reserve(const ConsentReservation& reservation) {
  if (!token_.empty()) throw ConsentBrokerConflict("consent guard is already reserved");
  auto lease = std::make_unique<ExclusiveFileLock>(broker_->lease_slot(decision_.challenge_id),
                                                   std::chrono::seconds(30));
  std::lock_guard lock(broker_->mutex_);
  store::Transaction txn(*broker_->db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = broker_->trusted_now_locked();
  auto existing = broker_->load_locked("challenge_id", decision_.challenge_id);
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  bool changed = false;
  ConsentBroker::Row row = broker_->apply_expiry_locked(std::move(*existing), now, changed);
  if (changed) {
    broker_->write_locked(row, false);
    txn.commit();
    throw ConsentBrokerExpired("install consent decision expired before its reservation");
  }
  ConsentRecord& r = row.record;
  if (r.state != ConsentState::kDecisionReady) {
    throw ConsentBrokerConflict("install consent challenge is not decision-ready");
  }
  if (*r.decision != decision_.decision || *r.principal_digest != decision_.principal_digest ||
      *r.authenticator_id != decision_.authenticator_id ||
      *r.assertion_nonce_digest != decision_.nonce_digest) {
    throw ConsentBrokerConflict("stored decision differs from the verified decision");
  }
  const ConsentChallengeFields& f = r.challenge.fields();
  if (reservation.consent_id != f.challenge_id || reservation.decision != *r.decision ||
      reservation.policy_snapshot_digest != f.policy_snapshot_digest ||
      reservation.requested_action_id != f.requested_action_id ||
      reservation.requested_action_kind != f.requested_action_kind ||
      reservation.requested_action_content_digest != f.requested_action_content_digest ||
      reservation.requested_action_precondition_revision !=
          f.requested_action_precondition_revision ||
      reservation.install_expires_at != f.expires_at ||
      !core::is_sha256_hex(reservation.event_content_digest) || reservation.event_id.empty()) {
    throw ConsentBrokerBindingError("consent reservation does not match its challenge");
  }
  std::string token = random_bytes(32);
  r.state = ConsentState::kReserved;
  r.reservation_event_id = reservation.event_id;
  r.reservation_event_content_digest = reservation.event_content_digest;
  r.reserved_at = now_text(now);
  row.reservation_token_digest = core::sha256_hex(token);
  broker_->write_locked(row, false);
  txn.commit();
  token_ = std::move(token);
  lease_ = std::move(lease);
}

// The settlement commit is not fsynced (WAL at synchronous NORMAL for this one transaction): it
// runs only after the journal committed the decision durably, and a power loss that drops it
// leaves the reserved record of a crash before settlement (crash point
// kBeforeDecisionSettlement), which reconcile() settles from the journal's evidence. WAL frames
// are durable in order, so the broker's next FULL commit (or checkpoint) makes it durable too.
ConsentRecord ConsentDecisionGuard::settle() {
  if (token_.empty() || settled_) throw ConsentBrokerConflict("consent guard is not reserved");
  std::lock_guard lock(broker_->mutex_);
  const SettlementSync sync(*broker_->db_);
  store::Transaction txn(*broker_->db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = broker_->trusted_now_locked();
  auto existing = broker_->load_locked("challenge_id", decision_.challenge_id);
  if (!existing || existing->record.state != ConsentState::kReserved ||
      existing->reservation_token_digest != core::sha256_hex(token_)) {
    throw ConsentBrokerConflict("consent reservation is not held by this guard");
  }
  ConsentBroker::Row row = std::move(*existing);
  row.record.state = ConsentState::kSettled;
  row.record.settled_at = now_text(now);
  row.reservation_token_digest.reset();
  broker_->write_locked(row, false);
  txn.commit();
  settled_ = true;
  lease_.reset();
  return row.record;
}

ConsentReconciliation ConsentBroker::reconcile(std::string_view challenge_id,
                                               DecisionEvidencePort& evidence) {
  ExclusiveFileLock lease(lease_slot(challenge_id), std::chrono::seconds(30));
  std::lock_guard lock(mutex_);
  store::Transaction txn(*db_, store::Transaction::Kind::kImmediate);
  const Timestamp now = trusted_now_locked();
  auto existing = load_locked("challenge_id", challenge_id);
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  Row row = std::move(*existing);
  ConsentRecord& r = row.record;
  if (r.state == ConsentState::kPending || !r.decision) {
    throw ConsentBrokerConflict("a pending install consent cannot be reconciled");
  }
  const EvidenceAnswer answer = evidence.evidence(r);
  ConsentReconciliation report{ReconcileOutcome::kQuarantined, answer.status, r};
  if (answer.status == JournalEvidence::kAbsentAtExpectedHead) {
    if (r.state == ConsentState::kSettled) return report;  // settled rows never reopen
    const bool live = now < r.challenge.expires_at_time();
    r.reservation_event_id.reset();
    r.reservation_event_content_digest.reset();
    r.reserved_at.reset();
    row.reservation_token_digest.reset();
    if (live) {
      r.state = ConsentState::kReauthRequired;
      r.expired_at.reset();
      report.outcome = ReconcileOutcome::kReauthRequired;
    } else {
      r.state = ConsentState::kExpired;
      if (!r.expired_at) r.expired_at = now_text(now);
      report.outcome = ReconcileOutcome::kExpired;
    }
  } else if (answer.status == JournalEvidence::kCommitted) {
    if (answer.event_id.empty() || !core::is_sha256_hex(answer.event_content_digest) ||
        (r.reservation_event_id && (*r.reservation_event_id != answer.event_id ||
                                    *r.reservation_event_content_digest !=
                                        answer.event_content_digest))) {
      return report;  // evidence disagrees with the reservation: quarantine, nothing changes
    }
    report.outcome = ReconcileOutcome::kSettled;
    if (r.state != ConsentState::kSettled) {
      r.state = ConsentState::kSettled;
      r.reservation_event_id = answer.event_id;
      r.reservation_event_content_digest = answer.event_content_digest;
      if (!r.reserved_at) r.reserved_at = now_text(now);
      r.settled_at = now_text(now);
      r.expired_at.reset();
      row.reservation_token_digest.reset();
    }
  } else {
    return report;
  }
  write_locked(row, false);
  txn.commit();
  report.record = r;
  return report;
}

}  // namespace ctx::runtime
