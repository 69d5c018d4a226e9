// The install consent broker (runtime spec §5.2–§5.5): the state machine of published
// challenges, their decisions and the global nonce history, over the engine::ConsentStore port
// (store::SqliteConsentStore in production: one SQLite file whose every row is HMAC-SHA256
// authenticated under the 32-byte installation key; a row that fails authentication →
// ConsentBrokerCorruption and the transaction is rolled back). The broker decides (expiry,
// authentication, reservation, settlement, reconciliation, the decision seal); the store keeps
// the rows, read and written whole inside one store transaction per operation.
// authenticate(): wrong audience and unknown verifier are refused before any broker lookup;
// then, in one store transaction, state / expiry / digest / time / nonce checks, the pinned
// verifier plugin over the exact wire payload and signing bytes, and decision-ready.
// Time comes only from the trusted Clock port, never regressing below the stored high-water.
// Thread-safety: every method may be called from any thread (one store, locked); several
// brokers (processes) may share one file.
#ifndef CTX_HOST_RUNTIME_CONSENT_CONSENT_BROKER_HPP_
#define CTX_HOST_RUNTIME_CONSENT_CONSENT_BROKER_HPP_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "host/core/error.hpp"
#include "host/core/json_reader.hpp"
#include "host/core/time.hpp"
#include "host/engine/consent_store.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/consent/consent_challenge.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {

inline constexpr std::size_t kDefaultConsentCapacity = 4096;
inline constexpr std::size_t kMaxConsentCapacity = 65536;
// At capacity, prepare() retires at most this many of the oldest retirable challenges, judged
// from at most kConsentRetirementCandidates of the oldest rows.
inline constexpr std::size_t kConsentRetirementBatch = 64;
inline constexpr std::size_t kConsentRetirementCandidates = 256;

// Errors (spec §5.4 names; engine/consent_store.hpp, the store port's header, defines them).
using engine::ConsentBrokerAudienceMismatch;
using engine::ConsentBrokerBindingError;
using engine::ConsentBrokerCapacityExceeded;
using engine::ConsentBrokerChallengeNotFound;
using engine::ConsentBrokerConflict;
using engine::ConsentBrokerCorruption;
using engine::ConsentBrokerDecisionRejected;
using engine::ConsentBrokerError;
using engine::ConsentBrokerExpired;
using engine::ConsentBrokerReplay;

// A challenge row's lifecycle (stored as its kConsentStateStrings spelling).
using engine::ConsentState;
using engine::kConsentStateStrings;

// One challenge row as callers see it (no reservation token).
struct ConsentRecord {
  explicit ConsentRecord(ConsentChallenge published) : challenge(std::move(published)) {}

  ConsentChallenge challenge;
  ConsentState state = ConsentState::kPending;
  std::string created_at;
  std::optional<engine::Decision> decision;
  std::optional<std::string> principal_digest;
  std::optional<std::string> authenticator_id;
  std::optional<std::string> audience;
  std::optional<std::string> assertion_nonce_digest;
  std::int64_t assertion_nonce_count = 0;
  std::optional<std::string> decision_issued_at;
  std::optional<std::string> decision_expires_at;
  std::optional<std::string> decision_recorded_at;
  std::optional<std::string> reservation_event_id;
  std::optional<std::string> reservation_event_content_digest;
  std::optional<std::string> reserved_at;
  std::optional<std::string> settled_at;
  std::optional<std::string> expired_at;
};

// A decision the broker verified, bound to the issuing broker instance (sealed with a random
// per-instance key): only that instance's guard accepts it.
struct VerifiedHumanDecision {
  std::string challenge_id;
  std::string challenge_digest;
  engine::Decision decision = engine::Decision::kDenied;
  std::string principal_digest;
  std::string authenticator_id;
  std::string audience;
  std::string nonce_digest;
  std::string issued_at;
  std::string expires_at;
  std::string seal;
};

// What the journal event that carries the decision will be (spec §3.15 reservation).
struct ConsentReservation {
  std::string event_id;
  std::string event_content_digest;
  std::string consent_id;
  engine::Decision decision = engine::Decision::kDenied;
  std::string policy_snapshot_digest;
  std::string requested_action_id;
  engine::ActionKind requested_action_kind = engine::ActionKind::kInstallCapability;
  std::string requested_action_content_digest;
  std::int64_t requested_action_precondition_revision = 0;
  std::string install_expires_at;
};

// What the journal says about a decision event (spec §5.5).
enum class JournalEvidence {
  kAbsentAtExpectedHead,
  kCommitted,
  kHeadAdvanced,
  kEventCollision,
  kCorrupt,
  kUnavailable,
};
// Spelled in a quarantined resolution's reason code ("journal-<spelling>").
inline constexpr core::EnumStrings<JournalEvidence, 6> kJournalEvidenceStrings{
    "journal evidence",
    {JournalEvidence::kAbsentAtExpectedHead, JournalEvidence::kCommitted,
     JournalEvidence::kHeadAdvanced, JournalEvidence::kEventCollision, JournalEvidence::kCorrupt,
     JournalEvidence::kUnavailable},
    {"absent-at-expected-head", "committed", "head-advanced", "event-collision", "corrupt",
     "unavailable"}};

struct EvidenceAnswer {
  JournalEvidence status = JournalEvidence::kUnavailable;
  std::string event_id;              // kCommitted: the committed decision event
  std::string event_content_digest;  // kCommitted
};

// The journal as evidence provider for reconciliation.
class DecisionEvidencePort {
 public:
  virtual ~DecisionEvidencePort() = default;
  virtual EvidenceAnswer evidence(const ConsentRecord& record) = 0;
};

enum class ReconcileOutcome { kSettled, kReauthRequired, kExpired, kQuarantined };
inline constexpr core::EnumStrings<ReconcileOutcome, 4> kReconcileOutcomeStrings{
    "reconcile outcome",
    {ReconcileOutcome::kSettled, ReconcileOutcome::kReauthRequired, ReconcileOutcome::kExpired,
     ReconcileOutcome::kQuarantined},
    {"settled", "reauthentication-required", "expired", "quarantined"}};

struct ConsentReconciliation {
  ReconcileOutcome outcome = ReconcileOutcome::kQuarantined;
  JournalEvidence journal_status = JournalEvidence::kUnavailable;
  ConsentRecord record;
};

class ConsentBroker;

// An armed guard for one verified decision (spec §5.5). reserve() takes the cross-process
// lease lock and moves decision-ready → reserved; settle() → settled; destruction without
// settle() releases back to decision-ready.
class ConsentDecisionGuard {
 public:
  ConsentDecisionGuard(const ConsentDecisionGuard&) = delete;
  ConsentDecisionGuard& operator=(const ConsentDecisionGuard&) = delete;
  ConsentDecisionGuard(ConsentDecisionGuard&&) noexcept = default;
  ~ConsentDecisionGuard();
  // Errors: ConsentBrokerConflict (already reserved, not decision-ready, decision differs);
  // ConsentBrokerBindingError (reservation does not match the challenge); ConsentBrokerExpired.
  void reserve(const ConsentReservation& reservation);
  // Called once the journal committed the decision. Its commit is not fsynced (a power loss
  // that drops it leaves the state of a crash before settlement, which reconcile() settles).
  // Errors: ConsentBrokerConflict when not reserved by this guard.
  ConsentRecord settle();

 private:
  friend class ConsentBroker;
  ConsentDecisionGuard(ConsentBroker& broker, VerifiedHumanDecision decision);
  ConsentBroker* broker_;
  VerifiedHumanDecision decision_;
  std::unique_ptr<ExclusiveFileLock> lease_;
  std::string token_;
  bool settled_ = false;
};

// The broker as its callers (the managed service) see it; ConsentBroker implements it. A port
// so that a test can interpose on one operation (e.g. commit a journal decision while a
// challenge is being published) and delegate the rest to a real broker.
class ConsentBrokerPort {
 public:
  virtual ~ConsentBrokerPort() = default;
  // The SQLite file of the store (for the service's path-aliasing checks).
  virtual const std::filesystem::path& path() const noexcept = 0;
  virtual const std::string& audience() const noexcept = 0;
  virtual ConsentRecord prepare(const ConsentChallenge& challenge) = 0;
  virtual ConsentRecord status(std::string_view challenge_id) = 0;
  virtual ConsentRecord status_by_challenge_digest(std::string_view challenge_digest) = 0;
  virtual VerifiedHumanDecision authenticate(const ConsentChallenge& current,
                                             std::string_view wire_payload,
                                             VerifierDirectory& verifiers) = 0;
  virtual ConsentDecisionGuard interactive_guard(const VerifiedHumanDecision& decision,
                                                 std::string_view execution_binding_digest) = 0;
  virtual ConsentReconciliation reconcile(std::string_view challenge_id,
                                          DecisionEvidencePort& evidence) = 0;
};

class ConsentBroker final : public ConsentBrokerPort {
 public:
  struct Options {
    std::size_t capacity = kDefaultConsentCapacity;  // 1..kMaxConsentCapacity
    int busy_timeout_ms = 30000;
  };

  using Guard = ConsentDecisionGuard;

  // Opens or creates the SQLite store at `path` (store::SqliteConsentStore: file 0600 in a 0700
  // directory owned by this user). `installation_key` is exactly 32 bytes; `audience` a token;
  // `clock` outlives the broker.
  // Errors: InvalidArgument (path, key, audience, options; checked before any file is touched);
  // ConsentBrokerCorruption (wrong key, tampered identity row); ConsentBrokerDecisionRejected
  // (the file belongs to another audience); store errors (StoreBusy, NewerSchemaVersion,
  // EngineStoreError).
  ConsentBroker(std::filesystem::path path, std::string installation_key, std::string audience,
                const core::Clock& clock, Options options);
  // The broker over `store` (shared: tests keep a handle to inject faults); writes the identity
  // row for `audience` when the store has none. Options::busy_timeout_ms is the store's concern
  // and unused here. Errors: as above (InvalidArgument also: no store).
  ConsentBroker(std::shared_ptr<engine::ConsentStore> store, std::string audience,
                const core::Clock& clock, Options options);
  ConsentBroker(std::filesystem::path path, std::string installation_key, std::string audience,
                const core::Clock& clock)
      : ConsentBroker(std::move(path), std::move(installation_key), std::move(audience), clock,
                      Options{}) {}
  ~ConsentBroker();
  ConsentBroker(const ConsentBroker&) = delete;
  ConsentBroker& operator=(const ConsentBroker&) = delete;

  const std::filesystem::path& path() const noexcept override { return store_->path(); }
  const std::string& audience() const noexcept override { return audience_; }

  // Publishes `challenge` as pending (idempotent: the same challenge returns its record). At
  // capacity it first retires, in the same transaction, up to kConsentRetirementBatch of the
  // oldest challenges past their expiry that are settled or expired undecided (with their nonce
  // rows), and raises trusted time to now, so a retired challenge can never be published again.
  // Errors: ConsentBrokerDecisionRejected (other audience); ConsentBrokerConflict (id or digest
  // bound to another challenge); ConsentBrokerExpired (already past expires_at);
  // ConsentBrokerCapacityExceeded (full, nothing retirable; nothing written);
  // ConsentBrokerCorruption.
  ConsentRecord prepare(const ConsentChallenge& challenge) override;

  // The record, after durably applying due expiry (spec §5.3).
  // Errors: ConsentBrokerChallengeNotFound; ConsentBrokerCorruption.
  ConsentRecord status(std::string_view challenge_id) override;
  ConsentRecord status_by_challenge_digest(std::string_view challenge_digest) override;

  // The records still awaiting a human decision (state pending or reauthentication-required
  // after due expiry is durably applied, as status() does), oldest first, at most `limit`.
  // Errors: ConsentBrokerCorruption.
  std::vector<ConsentRecord> awaiting_decision(std::size_t limit = 64);

  // Authenticates the human decision `wire_payload` for the challenge the caller re-derived now
  // (`current`). Order: decode; audience (ConsentBrokerAudienceMismatch) and verifier lookup
  // (UnknownHumanDecisionVerifier, VerifierPinMismatch) before any broker lookup; then one
  // transaction: unknown challenge (ConsentBrokerChallengeNotFound); current ≠ published
  // (ConsentBrokerBindingError); reserved/settled/decision-ready or nonce seen
  // (ConsentBrokerReplay); challenge expired (ConsentBrokerExpired, the expiry committed);
  // digest, issued in the future, outlives the challenge, identity change, bad signature
  // (ConsentBrokerDecisionRejected); assertion expired (ConsentBrokerExpired). Only success
  // changes the store. Codec errors: AssertionCodecError.
  VerifiedHumanDecision authenticate(const ConsentChallenge& current, std::string_view wire_payload,
                                     VerifierDirectory& verifiers) override;

  // Arms the guard for `decision` (issued by this broker) and the binding being executed.
  // Errors: ConsentBrokerBindingError (binding differs from the challenge's, or `decision` was
  // not issued by this instance).
  Guard interactive_guard(const VerifiedHumanDecision& decision,
                          std::string_view execution_binding_digest) override;

  // Reconciles a decided challenge with the journal (spec §5.5).
  // Errors: ConsentBrokerConflict (pending rows cannot be reconciled);
  // ConsentBrokerChallengeNotFound; ConsentBrokerCorruption.
  ConsentReconciliation reconcile(std::string_view challenge_id,
                                  DecisionEvidencePort& evidence) override;

 private:
  friend class ConsentDecisionGuard;
  struct Row;
  using Txn = engine::ConsentStoreTransaction;
  core::Timestamp trusted_now_locked(Txn& txn);
  // The challenge row with this id (by_digest: digest), decoded and checked: its challenge JSON,
  // the lifecycle invariants and its nonce history. Errors: ConsentBrokerCorruption.
  std::optional<Row> load_locked(Txn& txn, std::string_view value, bool by_digest = false);
  Row decode_row_locked(engine::ConsentChallengeRow stored);
  void check_nonce_history_locked(Txn& txn, const ConsentRecord& r);
  static void write_locked(Txn& txn, const Row& row, bool insert);
  static Row apply_expiry_locked(Row row, core::Timestamp now, bool& changed);
  std::string seal_of(const VerifiedHumanDecision& decision) const;
  LockSlot lease_slot(std::string_view challenge_id) const;
  void advance_high_water_locked(Txn& txn, core::Timestamp now);
  ConsentRecord status_locked(std::string_view value, bool by_digest);
  std::size_t retire_locked(Txn& txn, core::Timestamp now);

  std::shared_ptr<engine::ConsentStore> store_;
  std::string audience_;
  const core::Clock& clock_;
  Options options_;
  std::string instance_key_;
  std::mutex mutex_;
  // Challenges decoded from stored challenge_json, by those exact bytes (decoding is a pure
  // function of them; the store still authenticates the row on every load). GUARDED_BY(mutex_).
  std::unordered_map<std::string, ConsentChallenge> decoded_challenges_;
};

}  // namespace ctx::runtime

// The broker's enums are spelled by their one table each (core::to_string / parse_enum).
namespace ctx::core {
template <>
struct EnumTraits<runtime::JournalEvidence> {
  static constexpr const auto& kStrings = runtime::kJournalEvidenceStrings;
};
template <>
struct EnumTraits<runtime::ReconcileOutcome> {
  static constexpr const auto& kStrings = runtime::kReconcileOutcomeStrings;
};
}  // namespace ctx::core

#endif  // CTX_HOST_RUNTIME_CONSENT_CONSENT_BROKER_HPP_
