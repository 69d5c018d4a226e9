// The journal port: an append-only, per-stream, digest-chained record of replay inputs, transitions
// and result-state digests — the engine's single source of truth — plus one head per stream
// holding the latest state. It speaks plain values and canonical JSON text (canon-U), never reducer
// types. Texts this process produced arrive as CanonicalText and are not re-parsed; bytes read back
// from storage are verified (canonical form, digests, chain). Implementations:
// store::SqliteJournalStore (durable) and testing::MemJournalStore (tests). Both are thread-safe
// (they serialise their own calls); any number of SqliteJournalStore objects may share one file
// across threads and processes (SQLite's write lock orders their commits).
#ifndef CTX_HOST_ENGINE_JOURNAL_STORE_HPP_
#define CTX_HOST_ENGINE_JOURNAL_STORE_HPP_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/error.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/engine/stream_id.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

// ---- Errors (spec §9 "Store"). All derive from EngineStoreError. ----

// A journal or claim store operation failed. Code: kInternal unless a subclass says otherwise
// (e.g. "trusted utc clock failed"). Retry: no.
class EngineStoreError : public Error {
 public:
  explicit EngineStoreError(const std::string& message, ErrorCode code = ErrorCode::kInternal)
      : Error(message, code) {}
};

// The head is not at the revision the caller expected: "expected revision 2, found 3".
// Code: kAborted. Retry: yes; re-read the head, re-decide, append again.
class RevisionConflict : public EngineStoreError {
 public:
  RevisionConflict(Revision expected, Revision actual);
  Revision expected() const noexcept { return expected_; }
  Revision actual() const noexcept { return actual_; }

 private:
  Revision expected_;
  Revision actual_;
};

// The event id is already journaled with other content (or in another stream):
// "event id '<id>' is already bound to different content". The head is unchanged.
// Code: kAlreadyExists. Retry: no.
class EventIdCollision : public EngineStoreError {
 public:
  EventIdCollision(std::string event_id, std::string stored_digest, std::string submitted_digest);
  const std::string& event_id() const noexcept { return event_id_; }
  const std::string& stored_digest() const noexcept { return stored_digest_; }
  const std::string& submitted_digest() const noexcept { return submitted_digest_; }

 private:
  std::string event_id_;
  std::string stored_digest_;
  std::string submitted_digest_;
};

// The store's write lock could not be taken in time (SQLite busy/locked).
// Code: kUnavailable. Retry: yes, with backoff.
class StoreBusy : public EngineStoreError {
 public:
  explicit StoreBusy(const std::string& message)
      : EngineStoreError(message, ErrorCode::kUnavailable) {}
};

// Persisted bytes fail their integrity contract (revision gap, chain mismatch, digest mismatch,
// non-canonical JSON, broken claim anchor, unexpected schema, unreadable file).
// Code: kDataLoss. Retry: never.
class JournalCorruption : public EngineStoreError {
 public:
  explicit JournalCorruption(const std::string& message)
      : EngineStoreError(message, ErrorCode::kDataLoss) {}
};

// ---- Values ----

// One committed record. Every *_json field is canon-U text; every *_digest is lowercase
// sha256 hex; record_digest chains to previous_record_digest (null at revision 1). The result
// state itself is kept once, at the stream's head (JournalLatest), not in every record.
struct JournalRecord {
  StreamId stream;
  Revision revision = 0;
  std::string event_id;
  std::string event_content_digest;   // digest of the ingress event (spec §5 step 7)
  std::string replay_json;            // ReplayInput (spec §4)
  std::string replay_digest;          // sha(replay_json)
  std::string transition_json;        // Transition (spec §1.6)
  std::string transition_digest;      // sha(transition_json)
  std::string result_state_digest;    // sha of the EngineState text after the event
  std::optional<std::string> previous_record_digest;
  std::string record_digest;          // journal_record_digest(*this)
  PrivacyClass privacy_classification = PrivacyClass::kPrivate;
  Retention retention_class = Retention::kLocal;
  std::string reducer_version;

  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

// sha(canon-U{event_content_digest, event_id, previous_record_digest, privacy_classification,
// reducer_version, replay_digest, retention_class, result_state_digest, revision, stream_key,
// transition_digest}) — spec §2.2. Uses the record's stored *_digest fields as given.
std::string journal_record_digest(const JournalRecord& record);

// Which one-use authority a settlement guard refers to.
enum class ExecutionAuthority : int { kInstall = 1, kActivation = 2 };

// How a receipt closes a claimed (or unclaimed, for kExpired) action.
// Install: applied | failed | expired. Activation: applied | expired (no failed).
enum class GuardMode : int { kApplied = 1, kFailed = 2, kExpired = 3 };

// Binds a receipt append to the action's one-use authority (spec §6.4 step 3–4):
// applied/failed: the claim and its recorded outcome (execution_outcome_digest) must exist and
//   match; the append writes the settlement row in the same transaction.
// expired: the action must be unclaimed; no settlement row is written.
struct SettlementGuard {
  ExecutionAuthority authority = ExecutionAuthority::kInstall;
  std::string action_id;
  std::string action_content_digest;
  GuardMode mode = GuardMode::kApplied;
  std::optional<std::string> execution_outcome_digest;  // required iff mode != kExpired

  friend bool operator==(const SettlementGuard&, const SettlementGuard&) = default;
};

// A transition's canonical text together with the binding it names (event id, to_revision,
// scope stream), kept from the typed Transition it was encoded from — so append checks the
// binding without re-parsing the text.
struct TransitionText {
  CanonicalText text;
  std::string event_id;
  Revision to_revision = 0;
  StreamId stream;

  // Parses untrusted text and reads its binding. Errors: InvalidArgument ("transition_json must
  // be canonical json", "transition must name the record event id and revision", "transition
  // scope must belong to the record stream").
  static TransitionText verify(std::string_view text);

  friend bool operator==(const TransitionText&, const TransitionText&) = default;
};

// What the coordinator asks the journal to append (everything but the chain).
struct JournalAppend {
  StreamId stream;
  Revision expected_revision = 0;  // the new record gets expected_revision + 1
  std::string event_id;
  std::string event_content_digest;
  std::string reducer_version;
  CanonicalText replay;        // ReplayInput
  TransitionText transition;   // must name event_id, expected_revision + 1 and `stream`
  CanonicalText result_state;  // EngineState after the event (becomes the head's state)
  PrivacyClass privacy_classification = PrivacyClass::kPrivate;
  Retention retention_class = Retention::kLocal;
  std::optional<SettlementGuard> guard;  // only for receipts / expiries of claimable actions
};

// The outcome of append(): the durable record, and whether it was an idempotent replay of an
// already journaled identical event (then nothing was written).
struct JournalCommit {
  JournalRecord record;
  bool replayed = false;
};

// The head of a stream. revision 0 (and no digests) for a stream with no records.
struct JournalHead {
  Revision revision = 0;
  std::optional<std::string> record_digest;
  std::optional<std::string> state_digest;

  friend bool operator==(const JournalHead&, const JournalHead&) = default;
};

// A stream's head with its latest state: what an engine resumes from without replaying.
struct JournalLatest {
  Revision revision = 0;
  std::string record_digest;
  CanonicalText state;  // verified: canonical, and its digest is the head's state digest

  friend bool operator==(const JournalLatest&, const JournalLatest&) = default;
};

// Replays one stream's records for verification (implemented by the engine: the reducer of the
// record's version): reset() before each stream, then apply() each record oldest first; apply
// returns the canonical state text the record's event produces on top of the previous one.
// Errors from apply: any ctx::Error naming why the record does not replay.
class StreamReplayer {
 public:
  virtual ~StreamReplayer() = default;
  virtual void reset() = 0;
  virtual std::string apply(const JournalRecord& record) = 0;
};

// ---- Helpers every implementation uses (so all agree byte for byte) ----

// Validates `request`'s fields and transition binding and builds the record it appends at
// expected_revision + 1, using the digests the request's texts carry (no re-parse, no re-hash);
// the chain fields are left empty for chain_journal_record once the head is known.
// Errors: InvalidArgument naming the field ("event_id must be a non-empty trimmed string",
//   "expected_revision must be >= 0",
//   "transition must name the record event id and revision", "transition scope must belong to
//   the record stream", ...).
JournalRecord build_journal_record(const JournalAppend& request);

// Links `record` (from build_journal_record) to the head record `previous_record_digest`
// (nullopt iff record.revision == 1) and computes its record digest.
// Errors: InvalidArgument "previous_record_digest must be a lowercase sha-256 digest".
void chain_journal_record(JournalRecord& record,
                          const std::optional<std::string>& previous_record_digest);

// Verifies one record read from storage on its own: canonical JSON columns, their digests, the
// transition binding and the record digest. Errors: JournalCorruption naming what failed.
// Verification is a pure function of the record's fields, so this process remembers a bounded
// number of records it verified: a record equal field by field (byte for byte) to one of them is
// accepted by that comparison instead of being parsed and hashed again. Any other record — one
// byte edited on disk included — is verified in full. Inside a FreshJournalVerification scope
// nothing remembered is used.
void verify_journal_record(const JournalRecord& record);

// While alive, verify_journal_record on this thread verifies every record from scratch (the
// explicit full verification, SqliteJournalStore::verify()).
class FreshJournalVerification {
 public:
  FreshJournalVerification() noexcept;
  ~FreshJournalVerification();
  FreshJournalVerification(const FreshJournalVerification&) = delete;
  FreshJournalVerification& operator=(const FreshJournalVerification&) = delete;

 private:
  bool previous_;
};

// Verifies `records` (oldest first) as a gap-free chain that continues `anchor` (the record at
// records.front().revision - 1, or nullptr when the chain starts at revision 1), each record
// verified with verify_journal_record. Errors: JournalCorruption ("journal revision gap",
// "journal chain mismatch", ...).
void verify_journal_chain(const std::vector<JournalRecord>& records, const JournalRecord* anchor);

// What Engine::process reads before it plans: the record of the event id if it is already
// journaled in the stream, else the stream's head.
struct JournalLookup {
  std::optional<JournalRecord> existing;
  JournalHead head;  // revision 0 when `existing` is set (not read)
};

// ---- The port ----

class JournalStore {
 public:
  virtual ~JournalStore() = default;

  // Appends `request` as revision expected_revision + 1 iff the stream's head is at
  // expected_revision, chaining it to the head record; returns the durable record.
  // If `request.event_id` is already journaled in this stream with the same
  // event_content_digest, returns that record with replayed = true and writes nothing
  // (checked before the revision, so a retry after the head moved still replays).
  // With a guard, settles (or checks) the action's one-use authority in the same transaction.
  // Errors: InvalidArgument (malformed request: non-canonical JSON, bad digest, revision < 0,
  //   transition not naming this event id / revision), EventIdCollision (same id, other content
  //   or other stream), RevisionConflict, StoreBusy, JournalCorruption, and with a guard the
  //   claim errors of claim_store.hpp (InstallActionClaimRequired, InstallActionClaimSettled,
  //   InstallExecutionOutcomeRequired/Conflict, InstallActionAlreadyClaimed, and the
  //   Activation* equivalents).
  virtual JournalCommit append(const JournalAppend& request) = 0;

  // The stream's head (revision 0 when empty), from the per-stream head alone (no JSON, no
  // record read). Errors: StoreBusy, JournalCorruption.
  virtual JournalHead head(const StreamId& stream) const = 0;

  // The head with its stored latest state, checked in O(1): the state's bytes are canonical and
  // hash to the head's state digest, and the head record (verified on its own) carries the
  // head's revision, record digest and state digest. nullopt for an empty stream.
  // Errors: StoreBusy, JournalCorruption naming what does not match.
  virtual std::optional<JournalLatest> latest(const StreamId& stream) const = 0;

  // Records with revision > `after`, oldest first, each verified (revision sequence, chain link,
  // every digest, canonical JSON); an unknown stream reads as empty.
  // Errors: InvalidArgument (after < 0), StoreBusy, JournalCorruption.
  virtual std::vector<JournalRecord> read(const StreamId& stream, Revision after = 0) const = 0;

  // The verified record of `event_id` if it is journaled in `stream`, else nullopt.
  // Errors: EventIdCollision when the id is journaled in another stream (event ids are global),
  //   StoreBusy, JournalCorruption.
  virtual std::optional<JournalRecord> find(const StreamId& stream,
                                            std::string_view event_id) const = 0;

  // find(stream, event_id) and, when that finds nothing, head(stream) — a durable store reads
  // both in one read transaction. Errors: those of find() and head().
  virtual JournalLookup lookup(const StreamId& stream, std::string_view event_id) const {
    JournalLookup out{find(stream, event_id), {}};
    if (!out.existing) out.head = head(stream);
    return out;
  }
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_JOURNAL_STORE_HPP_
