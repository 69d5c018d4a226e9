// The consent store port: the durable rows of the install consent broker (runtime spec §5.2–§5.5)
// as the broker's state machine (runtime::ConsentBroker) reads and writes them: the identity row
// (audience, trusted-time high water), one row per published challenge (by id or digest, with its
// state and decision columns) and the global assertion-nonce history. Rows are read and written
// whole, inside one transaction scope (ConsentStoreTransaction) that holds the store's write lock
// from begin() until it commits or is destroyed (rolled back).
//
// Implementations: store::SqliteConsentStore (one SQLite file; every row authenticated under the
// installation key, a row that fails authentication is ConsentBrokerCorruption) and
// testing::MemConsentStore (tests); one contract suite (tests/support/consent/
// consent_store_contract.hpp) runs against both. The store checks what it stores (row tags,
// spellings, uniqueness); the broker checks what rows mean (lifecycle invariants, nonce
// continuity, expiry). Thread-safe: transactions of one store are serialized (each holds the
// store until it ends); a transaction object is used by one thread.
#ifndef CTX_HOST_ENGINE_CONSENT_STORE_HPP_
#define CTX_HOST_ENGINE_CONSENT_STORE_HPP_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/error.hpp"
#include "host/core/json_reader.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

// ---- Errors (spec §5.4 names). All derive from ConsentBrokerError; runtime re-exports them. ----

class ConsentBrokerError : public Error {
 public:
  ConsentBrokerError(const std::string& message, ErrorCode code) : Error(message, code) {}
};
// A row failed authentication or an invariant ("... authentication failed"). Code: kDataLoss.
class ConsentBrokerCorruption : public ConsentBrokerError {
 public:
  explicit ConsentBrokerCorruption(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kDataLoss) {}
};
// No challenge with this id or digest. Code: kNotFound.
class ConsentBrokerChallengeNotFound : public ConsentBrokerError {
 public:
  explicit ConsentBrokerChallengeNotFound(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kNotFound) {}
};
// The challenge capacity is exhausted. Code: kResourceExhausted.
class ConsentBrokerCapacityExceeded : public ConsentBrokerError {
 public:
  explicit ConsentBrokerCapacityExceeded(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kResourceExhausted) {}
};
// A challenge id is already bound to other content, a row was not written, or a state transition
// is not allowed. Code: kAborted.
class ConsentBrokerConflict : public ConsentBrokerError {
 public:
  explicit ConsentBrokerConflict(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kAborted) {}
};
// The current challenge (target, binding) no longer equals the published one. The assertion is
// not burned. Code: kFailedPrecondition.
class ConsentBrokerBindingError : public ConsentBrokerError {
 public:
  explicit ConsentBrokerBindingError(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kFailedPrecondition) {}
};
// The human decision is refused (signature, identity, times). Code: kPermissionDenied.
class ConsentBrokerDecisionRejected : public ConsentBrokerError {
 public:
  explicit ConsentBrokerDecisionRejected(const std::string& m)
      : ConsentBrokerError(m, ErrorCode::kPermissionDenied) {}
};
// The assertion's audience is not this broker's. Refused before any lookup.
class ConsentBrokerAudienceMismatch : public ConsentBrokerDecisionRejected {
 public:
  using ConsentBrokerDecisionRejected::ConsentBrokerDecisionRejected;
};
// The nonce was already used, or the challenge already carries a decision.
class ConsentBrokerReplay : public ConsentBrokerDecisionRejected {
 public:
  using ConsentBrokerDecisionRejected::ConsentBrokerDecisionRejected;
};
// The challenge or the assertion has expired (trusted time).
class ConsentBrokerExpired : public ConsentBrokerDecisionRejected {
 public:
  using ConsentBrokerDecisionRejected::ConsentBrokerDecisionRejected;
};

// A challenge row's lifecycle, stored in its "state" column as its kConsentStateStrings spelling
// (core::to_string / core::parse_enum; frozen: never respell one).
enum class ConsentState {
  kPending,
  kDecisionReady,
  kReserved,
  kSettled,
  kExpired,
  kReauthRequired
};
inline constexpr core::EnumStrings<ConsentState, 6> kConsentStateStrings{
    "consent state",
    {ConsentState::kPending, ConsentState::kDecisionReady, ConsentState::kReserved,
     ConsentState::kSettled, ConsentState::kExpired, ConsentState::kReauthRequired},
    {"pending", "decision-ready", "reserved", "settled", "expired", "reauthentication-required"}};
}  // namespace ctx::engine

namespace ctx::core {
template <>
struct EnumTraits<engine::ConsentState> {
  static constexpr const auto& kStrings = engine::kConsentStateStrings;
};
}  // namespace ctx::core

namespace ctx::engine {

// The identity row: whose store this is and the trusted time it has seen (RFC 3339; time never
// regresses below it).
struct ConsentIdentityRow {
  std::string audience;
  std::optional<std::string> trusted_time_high_water;

  friend bool operator==(const ConsentIdentityRow&, const ConsentIdentityRow&) = default;
};

// One challenge row, column for column: the published challenge (its id, digest and exact JSON
// text), its state, and the decision / reservation / settlement / expiry columns (null until set).
struct ConsentChallengeRow {
  std::string challenge_id;
  std::string challenge_digest;
  std::string challenge_json;
  ConsentState state = ConsentState::kPending;
  std::string created_at;
  std::optional<Decision> decision;
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
  std::optional<std::string> reservation_token_digest;
  std::optional<std::string> reserved_at;
  std::optional<std::string> settled_at;
  std::optional<std::string> expired_at;

  friend bool operator==(const ConsentChallengeRow&, const ConsentChallengeRow&) = default;
};

// One used assertion nonce: its digest (globally unique), the challenge it decided and its place
// (1, 2, ...) in that challenge's history.
struct ConsentNonceRow {
  std::string nonce_digest;
  std::string challenge_id;
  std::int64_t sequence = 0;
  std::string recorded_at;

  friend bool operator==(const ConsentNonceRow&, const ConsentNonceRow&) = default;
};

// How durable a transaction's commit is when commit() returns.
enum class ConsentCommitSync {
  kDurable,  // synced before commit() returns
  kRelaxed,  // durable in order with the store's later durable commits; a power loss may drop it
};

// One transaction scope. Reads see this transaction's own writes. Destroying it without commit()
// rolls every write back. Errors of every operation: ConsentBrokerCorruption (a stored row fails
// authentication or holds an unknown spelling), StoreBusy, EngineStoreError.
class ConsentStoreTransaction {
 public:
  virtual ~ConsentStoreTransaction() = default;
  ConsentStoreTransaction(const ConsentStoreTransaction&) = delete;
  ConsentStoreTransaction& operator=(const ConsentStoreTransaction&) = delete;

  // The identity row, if written. Errors also: ConsentBrokerCorruption ("installation key": the
  // store was created under another key).
  virtual std::optional<ConsentIdentityRow> identity() = 0;
  // Writes the identity row (inserting or replacing it).
  virtual void write_identity(const ConsentIdentityRow& row) = 0;

  virtual std::optional<ConsentChallengeRow> challenge_by_id(std::string_view challenge_id) = 0;
  virtual std::optional<ConsentChallengeRow> challenge_by_digest(
      std::string_view challenge_digest) = 0;
  // The number of challenge rows.
  virtual std::size_t challenge_count() = 0;
  // Ids of up to `limit` rows not in state reserved, oldest first (created_at, then id).
  virtual std::vector<std::string> oldest_unreserved_ids(std::size_t limit) = 0;
  // Ids of the rows in state pending or reauthentication-required, oldest first.
  virtual std::vector<std::string> awaiting_decision_ids() = 0;
  // Inserts a new row. Errors also: ConsentBrokerConflict ("not written": its id or digest is
  // already stored; nothing is written).
  virtual void insert_challenge(const ConsentChallengeRow& row) = 0;
  // Replaces the row with row.challenge_id. Errors also: ConsentBrokerConflict (no such row).
  virtual void update_challenge(const ConsentChallengeRow& row) = 0;
  // Removes the row with `challenge_id` and its nonce history (absent: nothing happens).
  virtual void remove_challenge(std::string_view challenge_id) = 0;

  // The nonce history of `challenge_id`, by sequence.
  virtual std::vector<ConsentNonceRow> nonces_of(std::string_view challenge_id) = 0;
  // Whether a nonce with this digest was ever recorded (for any challenge still stored).
  virtual bool nonce_used(std::string_view nonce_digest) = 0;
  // Records a nonce. Errors also: ConsentBrokerConflict (its digest, or its challenge and
  // sequence, already stored); EngineStoreError (no challenge row with its challenge_id).
  virtual void insert_nonce(const ConsentNonceRow& row) = 0;

  // Makes every write of this transaction durable (as begin()'s sync says) and ends it: the
  // store is released; the object may only be destroyed. REQUIRES: called at most once.
  virtual void commit() = 0;

 protected:
  ConsentStoreTransaction() = default;
};

class ConsentStore {
 public:
  virtual ~ConsentStore() = default;
  ConsentStore(const ConsentStore&) = delete;
  ConsentStore& operator=(const ConsentStore&) = delete;

  // Where the store lives (the broker keeps its reservation leases beside it, and the service
  // checks that no other store aliases it).
  virtual const std::filesystem::path& path() const noexcept = 0;
  // Begins a write transaction, waiting for the store's write lock (StoreBusy past the timeout).
  virtual std::unique_ptr<ConsentStoreTransaction> begin(
      ConsentCommitSync sync = ConsentCommitSync::kDurable) = 0;

 protected:
  ConsentStore() = default;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_CONSENT_STORE_HPP_
