#include "host/runtime/consent/consent_broker.hpp"

#include <array>
#include <chrono>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/sqlite_consent_store.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
using core::Timestamp;

constexpr std::string_view kSealDomain{"ctx.verified-human-decision-v1\0", 31};

using Opt = std::optional<std::string>;

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  core::random_bytes(reinterpret_cast<std::uint8_t*>(out.data()), n);
  return out;
}

std::string now_text(Timestamp t) { return core::format_rfc3339(t); }

[[noreturn]] void corrupt(std::string_view what) {
  throw ConsentBrokerCorruption("consent broker " + std::string(what) + " authentication failed");
}

// The broker's argument rules, checked before any store is opened or written.
void check_arguments(const std::string& audience, const ConsentBroker::Options& options) {
  if (options.capacity < 1 || options.capacity > kMaxConsentCapacity) {
    throw InvalidArgument("consent capacity out of range");
  }
  if (!is_consent_token(audience)) throw InvalidArgument("consent audience must be a token");
}

std::shared_ptr<engine::ConsentStore> open_sqlite_store(const std::filesystem::path& path,
                                                        const std::string& installation_key,
                                                        const std::string& audience,
                                                        const ConsentBroker::Options& options) {
  if (!path.is_absolute()) throw InvalidArgument("consent store path must be absolute");
  if (installation_key.size() != 32) {
    throw InvalidArgument("installation key must be exactly 32 bytes");
  }
  check_arguments(audience, options);
  return std::make_shared<store::SqliteConsentStore>(path, installation_key,
                                                     options.busy_timeout_ms);
}

}  // namespace

// A stored row: the record plus the reservation token digest.
struct ConsentBroker::Row {
  ConsentRecord record;
  Opt reservation_token_digest;

  // The row as the store keeps it, column for column.
  engine::ConsentChallengeRow stored() const {
    const ConsentRecord& r = record;
    return engine::ConsentChallengeRow{r.challenge.challenge_id(),
                                       r.challenge.digest(),
                                       r.challenge.json_text(),
                                       r.state,
                                       r.created_at,
                                       r.decision,
                                       r.principal_digest,
                                       r.authenticator_id,
                                       r.audience,
                                       r.assertion_nonce_digest,
                                       r.assertion_nonce_count,
                                       r.decision_issued_at,
                                       r.decision_expires_at,
                                       r.decision_recorded_at,
                                       r.reservation_event_id,
                                       r.reservation_event_content_digest,
                                       reservation_token_digest,
                                       r.reserved_at,
                                       r.settled_at,
                                       r.expired_at};
  }
};

namespace {

// Lifecycle invariants of spec §5.3, checked on every read.
void check_invariants(const ConsentRecord& r, const Opt& token) {
  const bool decided = r.decision.has_value();
  const bool all_decision = r.decision && r.principal_digest && r.authenticator_id && r.audience &&
                            r.assertion_nonce_digest && r.decision_issued_at &&
                            r.decision_expires_at && r.decision_recorded_at;
  const bool any_decision = r.decision || r.principal_digest || r.authenticator_id || r.audience ||
                            r.assertion_nonce_digest || r.decision_issued_at ||
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
    : ConsentBroker(open_sqlite_store(path, installation_key, audience, options), audience, clock,
                    options) {}

ConsentBroker::ConsentBroker(std::shared_ptr<engine::ConsentStore> store, std::string audience,
                             const core::Clock& clock, Options options)
    : store_(std::move(store)),
      audience_(std::move(audience)),
      clock_(clock),
      options_(options),
      instance_key_(random_bytes(32)) {
  if (!store_) throw InvalidArgument("consent store is required");
  check_arguments(audience_, options_);
  const auto txn = store_->begin();
  if (const auto identity = txn->identity()) {
    if (identity->audience != audience_) {
      throw ConsentBrokerDecisionRejected("consent store belongs to another audience");
    }
  } else {
    txn->write_identity({audience_, std::nullopt});
  }
  txn->commit();
}

ConsentBroker::~ConsentBroker() = default;

Timestamp ConsentBroker::trusted_now_locked(Txn& txn) {
  const auto identity = txn.identity();
  if (!identity) corrupt("identity row");
  Timestamp now = clock_.now();
  if (identity->trusted_time_high_water) {
    try {
      now = std::max(now, core::parse_rfc3339(*identity->trusted_time_high_water));
    } catch (const InvalidArgument&) {
      corrupt("identity row");
    }
  }
  return now;
}

void ConsentBroker::advance_high_water_locked(Txn& txn, Timestamp now) {
  txn.write_identity({audience_, now_text(now)});
}

std::optional<ConsentBroker::Row> ConsentBroker::load_locked(Txn& txn, std::string_view value,
                                                             bool by_digest) {
  auto stored = by_digest ? txn.challenge_by_digest(value) : txn.challenge_by_id(value);
  if (!stored) return std::nullopt;
  std::optional<Row> loaded(decode_row_locked(std::move(*stored)));
  check_nonce_history_locked(txn, loaded->record);
  return loaded;
}

ConsentBroker::Row ConsentBroker::decode_row_locked(engine::ConsentChallengeRow s) {
  std::optional<ConsentChallenge> challenge;
  if (const auto known = decoded_challenges_.find(s.challenge_json);
      known != decoded_challenges_.end()) {
    challenge = known->second;
  } else {
    try {
      challenge = ConsentChallenge::from_json_text(s.challenge_json);
    } catch (const ConsentChallengeError&) {
      corrupt("challenge row");
    }
    if (decoded_challenges_.size() >= 1024) decoded_challenges_.clear();
    decoded_challenges_.emplace(s.challenge_json, *challenge);
  }
  if (s.challenge_id != challenge->challenge_id() || s.challenge_digest != challenge->digest()) {
    corrupt("challenge row");
  }
  Row row{ConsentRecord{std::move(*challenge)}, std::move(s.reservation_token_digest)};
  ConsentRecord& r = row.record;
  r.state = s.state;
  r.created_at = std::move(s.created_at);
  r.decision = s.decision;
  r.principal_digest = std::move(s.principal_digest);
  r.authenticator_id = std::move(s.authenticator_id);
  r.audience = std::move(s.audience);
  r.assertion_nonce_digest = std::move(s.assertion_nonce_digest);
  r.assertion_nonce_count = s.assertion_nonce_count;
  r.decision_issued_at = std::move(s.decision_issued_at);
  r.decision_expires_at = std::move(s.decision_expires_at);
  r.decision_recorded_at = std::move(s.decision_recorded_at);
  r.reservation_event_id = std::move(s.reservation_event_id);
  r.reservation_event_content_digest = std::move(s.reservation_event_content_digest);
  r.reserved_at = std::move(s.reserved_at);
  r.settled_at = std::move(s.settled_at);
  r.expired_at = std::move(s.expired_at);
  check_invariants(r, row.reservation_token_digest);
  return row;
}

void ConsentBroker::check_nonce_history_locked(Txn& txn, const ConsentRecord& r) {
  // The nonce history of this challenge (each row authenticated by the store): numbered 1, 2, ...
  // as many as the row counts, the current digest among them.
  std::int64_t count = 0;
  bool current_seen = false;
  for (const auto& nonce : txn.nonces_of(r.challenge.challenge_id())) {
    ++count;
    if (nonce.sequence != count) corrupt("nonce history");
    if (r.assertion_nonce_digest && nonce.nonce_digest == *r.assertion_nonce_digest) {
      current_seen = true;
    }
  }
  if (count != r.assertion_nonce_count || (r.assertion_nonce_digest && !current_seen)) {
    corrupt("nonce history");
  }
}

void ConsentBroker::write_locked(Txn& txn, const Row& row, bool insert) {
  if (insert) {
    txn.insert_challenge(row.stored());
  } else {
    txn.update_challenge(row.stored());
  }
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

std::size_t ConsentBroker::retire_locked(Txn& txn, Timestamp now) {
  // Oldest first; reserved rows are never candidates.
  const std::vector<std::string> ids = txn.oldest_unreserved_ids(kConsentRetirementCandidates);
  std::size_t retired = 0;
  for (const auto& id : ids) {
    if (retired == kConsentRetirementBatch) break;
    auto existing = load_locked(txn, id);  // authenticated before it is judged
    if (!existing) continue;
    bool changed = false;
    const Row row = apply_expiry_locked(std::move(*existing), now, changed);
    const ConsentRecord& r = row.record;
    const bool retirable =
        now >= r.challenge.expires_at_time() &&
        (r.state == ConsentState::kSettled || (r.state == ConsentState::kExpired && !r.decision));
    if (!retirable) continue;
    txn.remove_challenge(id);
    ++retired;
  }
  // A retired challenge must stay past its expiry for good: trusted time never falls below now.
  if (retired != 0) advance_high_water_locked(txn, now);
  return retired;
}

ConsentRecord ConsentBroker::prepare(const ConsentChallenge& challenge) {
  if (challenge.fields().audience != audience_) {
    throw ConsentBrokerDecisionRejected("install consent challenge names another audience");
  }
  std::lock_guard lock(mutex_);
  const auto txn = store_->begin();
  const Timestamp now = trusted_now_locked(*txn);
  if (auto existing = load_locked(*txn, challenge.challenge_id())) {
    if (!(existing->record.challenge == challenge)) {
      throw ConsentBrokerConflict("consent challenge id is already bound to another challenge");
    }
    bool changed = false;
    Row row = apply_expiry_locked(std::move(*existing), now, changed);
    if (changed) write_locked(*txn, row, false);
    txn->commit();
    return row.record;
  }
  if (load_locked(*txn, challenge.digest(), true)) {
    throw ConsentBrokerConflict("consent challenge digest is already published");
  }
  if (now >= challenge.expires_at_time()) {
    throw ConsentBrokerExpired("install consent challenge has already expired");
  }
  if (txn->challenge_count() >= options_.capacity &&
      (retire_locked(*txn, now) == 0 || txn->challenge_count() >= options_.capacity)) {
    throw ConsentBrokerCapacityExceeded("consent broker capacity is exhausted");
  }
  Row row{ConsentRecord{challenge}, std::nullopt};
  row.record.created_at = now_text(now);
  write_locked(*txn, row, true);
  txn->commit();
  return row.record;
}

ConsentRecord ConsentBroker::status_locked(std::string_view value, bool by_digest) {
  const auto txn = store_->begin();
  const Timestamp now = trusted_now_locked(*txn);
  auto existing = load_locked(*txn, value, by_digest);
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  bool changed = false;
  Row row = apply_expiry_locked(std::move(*existing), now, changed);
  if (changed) write_locked(*txn, row, false);
  txn->commit();
  return row.record;
}

ConsentRecord ConsentBroker::status(std::string_view challenge_id) {
  std::lock_guard lock(mutex_);
  return status_locked(challenge_id, false);
}

ConsentRecord ConsentBroker::status_by_challenge_digest(std::string_view challenge_digest) {
  if (!core::is_sha256_hex(challenge_digest)) {
    throw InvalidArgument("challenge digest must be 64 lower-case hex");
  }
  std::lock_guard lock(mutex_);
  return status_locked(challenge_digest, true);
}

std::vector<ConsentRecord> ConsentBroker::awaiting_decision(std::size_t limit) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> ids;
  {
    const auto txn = store_->begin();
    ids = txn->awaiting_decision_ids();
  }
  std::vector<ConsentRecord> out;
  for (const auto& id : ids) {
    if (out.size() >= limit) break;
    ConsentRecord record = status_locked(id, false);
    if (record.state == ConsentState::kPending || record.state == ConsentState::kReauthRequired) {
      out.push_back(std::move(record));
    }
  }
  return out;
}

std::string ConsentBroker::seal_of(const VerifiedHumanDecision& d) const {
  const Json fields{{"audience", d.audience},
                    {"authenticator_id", d.authenticator_id},
                    {"challenge_digest", d.challenge_digest},
                    {"challenge_id", d.challenge_id},
                    {"decision", d.decision},
                    {"expires_at", d.expires_at},
                    {"issued_at", d.issued_at},
                    {"nonce_digest", d.nonce_digest},
                    {"principal_digest", d.principal_digest}};
  return core::hmac_sha256_hex(instance_key_,
                               std::string(kSealDomain) + core::canonical_json(fields));
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
  const auto txn = store_->begin();
  const Timestamp now = trusted_now_locked(*txn);
  auto existing = load_locked(*txn, current.challenge_id());
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
    if (changed) write_locked(*txn, row, false);
    txn->commit();
    throw ConsentBrokerExpired("install consent challenge has expired");
  }
  if (row.record.state == ConsentState::kDecisionReady) {
    throw ConsentBrokerReplay("install consent challenge already carries a decision");
  }
  // A decision past its own expiry became reauthentication-required above; that change is
  // written with the new decision below (or re-derived on the next read).
  ConsentRecord& r = row.record;
  check_assertion_fits(assertion, r, now);
  if (txn->nonce_used(nonce_digest)) {
    throw ConsentBrokerReplay("signed assertion nonce was already used");
  }
  if (now >= assertion.expires_at_time()) {
    throw ConsentBrokerExpired("signed assertion has expired");
  }
  if (!verifier->verify(assertion, wire_payload, assertion.signing_bytes())) {
    throw ConsentBrokerDecisionRejected("signed assertion signature was not verified");
  }
  advance_high_water_locked(*txn, now);
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
  txn->insert_nonce(
      {nonce_digest, r.challenge.challenge_id(), r.assertion_nonce_count, recorded_at});
  write_locked(*txn, row, false);
  txn->commit();
  VerifiedHumanDecision decision{r.challenge.challenge_id(),
                                 r.challenge.digest(),
                                 *r.decision,
                                 *r.principal_digest,
                                 *r.authenticator_id,
                                 *r.audience,
                                 nonce_digest,
                                 *r.decision_issued_at,
                                 *r.decision_expires_at,
                                 ""};
  decision.seal = seal_of(decision);
  return decision;
}

// One slot per challenge of the store's `.ctx-consent-reservations` file beside it.
LockSlot ConsentBroker::lease_slot(std::string_view challenge_id) const {
  const std::filesystem::path& path = store_->path();
  return {path.parent_path() / ".ctx-consent-reservations",
          core::sha256_hex(path.filename().string() + std::string(1, '\0') +
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

ConsentDecisionGuard::ConsentDecisionGuard(ConsentBroker& broker, VerifiedHumanDecision decision)
    : broker_(&broker), decision_(std::move(decision)) {}

ConsentDecisionGuard::~ConsentDecisionGuard() {
  if (broker_ == nullptr || token_.empty() || settled_) return;
  try {
    std::lock_guard lock(broker_->mutex_);
    const auto txn = broker_->store_->begin();
    auto existing = broker_->load_locked(*txn, decision_.challenge_id);
    if (existing && existing->record.state == ConsentState::kReserved &&
        existing->reservation_token_digest == core::sha256_hex(token_)) {
      ConsentBroker::Row row = std::move(*existing);
      row.record.state = ConsentState::kDecisionReady;
      row.record.reservation_event_id.reset();
      row.record.reservation_event_content_digest.reset();
      row.record.reserved_at.reset();
      row.reservation_token_digest.reset();
      ConsentBroker::write_locked(*txn, row, false);
      txn->commit();
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
  const auto txn = broker_->store_->begin();
  const Timestamp now = broker_->trusted_now_locked(*txn);
  auto existing = broker_->load_locked(*txn, decision_.challenge_id);
  if (!existing) throw ConsentBrokerChallengeNotFound("install consent challenge is unknown");
  bool changed = false;
  ConsentBroker::Row row = broker_->apply_expiry_locked(std::move(*existing), now, changed);
  if (changed) {
    ConsentBroker::write_locked(*txn, row, false);
    txn->commit();
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
  ConsentBroker::write_locked(*txn, row, false);
  txn->commit();
  token_ = std::move(token);
  lease_ = std::move(lease);
}

// The settlement commit is not fsynced (a kRelaxed store transaction: WAL at synchronous NORMAL
// for this one commit in the SQLite store): it
// runs only after the journal committed the decision durably, and a power loss that drops it
// leaves the reserved record of a crash before settlement (crash point
// kBeforeDecisionSettlement), which reconcile() settles from the journal's evidence. WAL frames
// are durable in order, so the broker's next FULL commit (or checkpoint) makes it durable too.
ConsentRecord ConsentDecisionGuard::settle() {
  if (token_.empty() || settled_) throw ConsentBrokerConflict("consent guard is not reserved");
  std::lock_guard lock(broker_->mutex_);
  const auto txn = broker_->store_->begin(engine::ConsentCommitSync::kRelaxed);
  const Timestamp now = broker_->trusted_now_locked(*txn);
  auto existing = broker_->load_locked(*txn, decision_.challenge_id);
  if (!existing || existing->record.state != ConsentState::kReserved ||
      existing->reservation_token_digest != core::sha256_hex(token_)) {
    throw ConsentBrokerConflict("consent reservation is not held by this guard");
  }
  ConsentBroker::Row row = std::move(*existing);
  row.record.state = ConsentState::kSettled;
  row.record.settled_at = now_text(now);
  row.reservation_token_digest.reset();
  ConsentBroker::write_locked(*txn, row, false);
  txn->commit();
  settled_ = true;
  lease_.reset();
  return row.record;
}

ConsentReconciliation ConsentBroker::reconcile(std::string_view challenge_id,
                                               DecisionEvidencePort& evidence) {
  ExclusiveFileLock lease(lease_slot(challenge_id), std::chrono::seconds(30));
  std::lock_guard lock(mutex_);
  const auto txn = store_->begin();
  const Timestamp now = trusted_now_locked(*txn);
  auto existing = load_locked(*txn, challenge_id);
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
        (r.reservation_event_id &&
         (*r.reservation_event_id != answer.event_id ||
          *r.reservation_event_content_digest != answer.event_content_digest))) {
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
  write_locked(*txn, row, false);
  txn->commit();
  report.record = r;
  return report;
}

}  // namespace ctx::runtime
