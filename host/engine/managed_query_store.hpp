// The managed query store port: the durable registry of managed queries and their desired sets
// (runtime spec §4.4, §4.5) plus the catalog input authority's registrations, as the runtime's
// ManagedQueryService and catalog input authority use it. Implementations:
// store::SqliteManagedQueryStore (one SQLite file, rows HMAC-authenticated under the installation
// key) and testing::MemManagedQueryStore (tests); one contract suite
// (tests/support/managed_query/managed_query_store_contract.hpp) runs against both. Both are
// thread-safe. Records are store-issued (their constructors take a ManagedRecordKey, which only
// ManagedQueryStore's implementations can obtain), immutable, movable but not copyable.
//
// The rules every implementation applies to what it is asked to store (registration shape,
// desired-set continuity) are the free functions in namespace managed_store below, so the fakes
// and the SQLite store refuse the same requests with the same errors.
#ifndef CTX_HOST_ENGINE_MANAGED_QUERY_STORE_HPP_
#define CTX_HOST_ENGINE_MANAGED_QUERY_STORE_HPP_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/error.hpp"
#include "host/engine/protocol.hpp"

namespace ctx::engine {

inline constexpr std::string_view kManagedQueryStoreSchema = "ctx.managed-query-store-v2";

// ---- Errors (runtime spec §4.1). Every message names what failed, never a path or secret. ----

// Base of every query-store failure. Retry: see the subclass.
class ManagedQueryStoreError : public Error {
 public:
  explicit ManagedQueryStoreError(const std::string& message,
                                  ErrorCode code = ErrorCode::kFailedPrecondition)
      : Error(message, code) {}
};
// The store file or its directory cannot be used safely. Code: kUnavailable.
class ManagedQueryStoreUnavailable : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreUnavailable(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kUnavailable) {}
};
// A stored row, reference or schema failed authentication or validation. Code: kDataLoss.
class ManagedQueryStoreCorruption : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreCorruption(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kDataLoss) {}
};
// The request conflicts with durable content. Code: kAlreadyExists (style §6.2). Retry: no (the
// same request meets the same content).
class ManagedQueryStoreConflict : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreConflict(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kAlreadyExists) {}
};
// A row or size bound would be exceeded. Code: kResourceExhausted.
class ManagedQueryStoreCapacityExceeded : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreCapacityExceeded(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kResourceExhausted) {}
};
// No such record. Code: kNotFound.
class ManagedQueryStoreNotFound : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreNotFound(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kNotFound) {}
};

class ManagedQueryStore;

// The pass a record constructor requires: only ManagedQueryStore makes one, and hands it to its
// implementations (ManagedQueryStore::record_key()), so records are issued by stores alone.
class ManagedRecordKey {
 private:
  friend class ManagedQueryStore;
  ManagedRecordKey() = default;
};

// One registered managed query; planned() once its plan completion is recorded.
class ManagedQueryRecord final {
 public:
  struct Fields {
    std::string query_ref;
    std::string logical_query_id;
    EngineEvent session_started;
    EngineEvent decision_event;
    std::string artifact_manifest_digest;
    std::string planning_environment_digest;
    std::optional<std::string> plan_id;
    std::optional<std::string> decision_digest;
    std::optional<std::int64_t> journal_revision;
    std::optional<std::string> journal_record_digest;
  };
  ManagedQueryRecord(ManagedRecordKey, Fields fields) : f_(std::move(fields)) {}
  ManagedQueryRecord(const ManagedQueryRecord&) = delete;
  ManagedQueryRecord& operator=(const ManagedQueryRecord&) = delete;
  ManagedQueryRecord& operator=(ManagedQueryRecord&&) = delete;
  ManagedQueryRecord(ManagedQueryRecord&&) noexcept = default;

  // A store's copy of this record (a store hands each caller its own).
  ManagedQueryRecord copy(ManagedRecordKey key) const { return {key, f_}; }
  const Fields& fields() const noexcept { return f_; }

  const std::string& query_ref() const noexcept { return f_.query_ref; }
  const std::string& logical_query_id() const noexcept { return f_.logical_query_id; }
  const EngineEvent& session_started() const noexcept { return f_.session_started; }
  const EngineEvent& decision_event() const noexcept { return f_.decision_event; }
  const std::string& artifact_manifest_digest() const noexcept {
    return f_.artifact_manifest_digest;
  }
  const std::string& planning_environment_digest() const noexcept {
    return f_.planning_environment_digest;
  }
  const std::optional<std::string>& plan_id() const noexcept { return f_.plan_id; }
  const std::optional<std::string>& decision_digest() const noexcept { return f_.decision_digest; }
  const std::optional<std::int64_t>& journal_revision() const noexcept {
    return f_.journal_revision;
  }
  const std::optional<std::string>& journal_record_digest() const noexcept {
    return f_.journal_record_digest;
  }
  bool planned() const noexcept { return f_.plan_id.has_value(); }

  // Prints the reference and "planned"/"registered" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryRecord& value);

 private:
  Fields f_;
};

// One desired-set reservation; committed() once its journal commit is recorded.
class ManagedDesiredSetRecord final {
 public:
  struct Fields {
    std::string query_ref;
    std::string logical_choice_id;
    std::string desired_set_ref;
    std::string plan_id;
    std::string decision_digest;
    std::string stream_identity_digest;
    std::vector<std::string> capability_ids;  // committed-plan order
    EngineEvent event;
    std::optional<std::int64_t> journal_revision;
    std::optional<std::string> journal_record_digest;
    std::optional<std::string> transition_digest;
  };
  ManagedDesiredSetRecord(ManagedRecordKey, Fields fields) : f_(std::move(fields)) {}
  ManagedDesiredSetRecord(const ManagedDesiredSetRecord&) = delete;
  ManagedDesiredSetRecord& operator=(const ManagedDesiredSetRecord&) = delete;
  ManagedDesiredSetRecord& operator=(ManagedDesiredSetRecord&&) = delete;
  ManagedDesiredSetRecord(ManagedDesiredSetRecord&&) noexcept = default;

  // A store's copy of this record.
  ManagedDesiredSetRecord copy(ManagedRecordKey key) const { return {key, f_}; }
  const Fields& fields() const noexcept { return f_; }

  const std::string& query_ref() const noexcept { return f_.query_ref; }
  const std::string& logical_choice_id() const noexcept { return f_.logical_choice_id; }
  const std::string& desired_set_ref() const noexcept { return f_.desired_set_ref; }
  const std::string& plan_id() const noexcept { return f_.plan_id; }
  const std::string& decision_digest() const noexcept { return f_.decision_digest; }
  const std::string& stream_identity_digest() const noexcept { return f_.stream_identity_digest; }
  // Committed-plan order.
  const std::vector<std::string>& capability_ids() const noexcept { return f_.capability_ids; }
  const EngineEvent& event() const noexcept { return f_.event; }
  const std::optional<std::int64_t>& journal_revision() const noexcept {
    return f_.journal_revision;
  }
  const std::optional<std::string>& journal_record_digest() const noexcept {
    return f_.journal_record_digest;
  }
  const std::optional<std::string>& transition_digest() const noexcept {
    return f_.transition_digest;
  }
  bool committed() const noexcept { return f_.journal_revision.has_value(); }

  // Prints the reference and "committed"/"reserved" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRecord& value);

 private:
  Fields f_;
};

// "mqr_" + 64 lower-case hex / "mds_" + 64 lower-case hex.
bool is_query_ref(std::string_view text) noexcept;
bool is_desired_set_ref(std::string_view text) noexcept;

// SHA("ctx.managed-desired-set-stream-v1\0" ‖ stream key of `scope`).
std::string desired_stream_identity_digest(const ScopeRef& scope);

class ManagedQueryStore {
 public:
  virtual ~ManagedQueryStore() = default;
  ManagedQueryStore(const ManagedQueryStore&) = delete;
  ManagedQueryStore& operator=(const ManagedQueryStore&) = delete;

  // Bounds every implementation keeps (register_query, put_input, reserve_desired_set).
  static constexpr std::int64_t kMaxQueries = 4096;
  static constexpr std::int64_t kMaxInputs = 2 * kMaxQueries;
  static constexpr std::size_t kMaxInputBytes = 64 * 1024;
  static constexpr std::int64_t kMaxDesiredSets = 16384;
  static constexpr std::size_t kMaxRegistrationBytes = 36 * 1024;
  static constexpr std::size_t kMaxDesiredEventBytes = 24 * 1024;
  static constexpr std::size_t kMaxCapabilityIdsBytes = 1024;
  // At most this many registrations are retired by one register_query at capacity.
  static constexpr int kRetirementBatch = 64;

  // The store's file; the service places its lifecycle lock beside it (an in-memory store names
  // a path in a private directory for that).
  virtual const std::filesystem::path& path() const noexcept = 0;

  // Whether a planned registration may be retired to make room: called inside register_query's
  // transaction (the store's write lock held), only for planned rows whose desired sets are all
  // committed. The service answers from the session's journal head (no pending consent or
  // effect). Errors it throws propagate and roll the registration back.
  using RetirementCheck = std::function<bool(const ManagedQueryRecord&)>;

  // Registers one logical query (§4.4): identical content returns the existing record (even if
  // planned). At capacity, with `may_retire`, first retires up to kRetirementBatch of the
  // oldest planned registrations (by their decision's occurred_at) it accepts, each with its
  // desired sets, input and lookup row; without it, or when it accepts none, CapacityExceeded.
  // Errors: InvalidArgument (malformed registration), Conflict ("logical query identity is
  // already bound to different content", "scope and plan"), CapacityExceeded, Corruption.
  virtual ManagedQueryRecord register_query(const std::string& logical_query_id,
                                            const EngineEvent& session_started,
                                            const EngineEvent& decision_event,
                                            const std::string& artifact_manifest_digest,
                                            const std::string& planning_environment_digest,
                                            const RetirementCheck& may_retire) = 0;
  // As above, never retiring.
  ManagedQueryRecord register_query(const std::string& logical_query_id,
                                    const EngineEvent& session_started,
                                    const EngineEvent& decision_event,
                                    const std::string& artifact_manifest_digest,
                                    const std::string& planning_environment_digest) {
    return register_query(logical_query_id, session_started, decision_event,
                          artifact_manifest_digest, planning_environment_digest, {});
  }

  // Records the plan completion (idempotent for identical values). Errors: InvalidArgument,
  // NotFound, Conflict ("completion is already bound differently", wrong plan id or revision),
  // Corruption. (The SQLite store's durability of this mark: see SqliteManagedQueryStore.)
  virtual ManagedQueryRecord mark_planned(const std::string& query_ref, const std::string& plan_id,
                                          const std::string& decision_digest,
                                          std::int64_t journal_revision,
                                          const std::string& journal_record_digest) = 0;

  // Errors: InvalidArgument (not an mqr_ reference), NotFound ("managed query record is
  // unavailable"), Corruption ("authentication failed").
  virtual ManagedQueryRecord load(const std::string& query_ref) = 0;

  // The catalog input authority's registration of `plan_id` (its canonical JSON, opaque here).
  // put_input stores it once (an identical put is a no-op); find_input returns it, or nullopt.
  // Errors: InvalidArgument (plan_id not an opaque token), CapacityExceeded (over kMaxInputBytes,
  // or kMaxInputs inputs), Corruption (a stored row differs or fails authentication),
  // Unavailable (busy).
  virtual void put_input(const std::string& plan_id, std::string_view input_json) = 0;
  virtual std::optional<std::string> find_input(const std::string& plan_id) = 0;

  // The planned row whose decision scope and plan id equal these, if any. Errors: Corruption.
  virtual std::optional<ManagedQueryRecord> find_planned_by_scope_and_plan(
      const ScopeRef& scope, const std::string& plan_id) = 0;

  // Reserves one desired set (§4.5). Identical content returns the existing record.
  // Errors: InvalidArgument, NotFound (parent), Conflict (unplanned parent, envelope mismatch,
  // "stream revision is already reserved", "stream has a pending reservation", causation, bound
  // differently), CapacityExceeded, Corruption.
  virtual ManagedDesiredSetRecord reserve_desired_set(
      const std::string& query_ref, const std::string& logical_choice_id,
      const std::vector<std::string>& capability_ids, const EngineEvent& event) = 0;

  // Marks the reservation committed at `journal_revision` = event revision + 1 (idempotent).
  // Errors: InvalidArgument, NotFound, Conflict, Corruption.
  virtual ManagedDesiredSetRecord mark_desired_set_committed(
      const std::string& desired_set_ref, std::int64_t journal_revision,
      const std::string& journal_record_digest, const std::string& transition_digest) = 0;

  // Errors: InvalidArgument, NotFound, Corruption.
  virtual ManagedDesiredSetRecord load_desired_set(const std::string& desired_set_ref) = 0;
  // The desired set of `query_ref` with the highest event revision, nullopt when it has none.
  // Errors: InvalidArgument, NotFound (no such query), Corruption.
  virtual std::optional<ManagedDesiredSetRecord> find_latest_desired_set(
      const std::string& query_ref) = 0;
  // As find_latest_desired_set; NotFound when the query has no desired set.
  ManagedDesiredSetRecord load_latest_desired_set(const std::string& query_ref);
  // The single uncommitted desired set on the stream of `scope`, if any. Errors: Corruption
  // (several).
  virtual std::optional<ManagedDesiredSetRecord> find_pending_desired_set(
      const ScopeRef& scope) = 0;
  // As find_pending_desired_set; NotFound when there is none.
  ManagedDesiredSetRecord load_pending_desired_set(const ScopeRef& scope);

  // The full check an open does not make (`ctx journal verify` runs it): every row read and
  // checked as a load would. Reads only. Errors: Corruption, Unavailable.
  virtual void verify() = 0;

  // Prints the schema only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryStore& value);

 protected:
  ManagedQueryStore() = default;
  // The pass record constructors take; for implementations only.
  static ManagedRecordKey record_key() noexcept { return {}; }
};

// The rules every ManagedQueryStore applies before it stores anything, shared so that every
// implementation refuses the same requests with the same errors and messages.
namespace managed_store {

// §4.4 registration validation. Errors: InvalidArgument.
void validate_registration(const std::string& logical_query_id, const EngineEvent& started,
                           const EngineEvent& decision, const std::string& manifest,
                           const std::string& environment);
// The registration mapping; the stored bytes are its canonical JSON (ASCII encoding).
core::Json registration_json(const std::string& logical_query_id, const EngineEvent& started,
                             const EngineEvent& decision, const std::string& manifest,
                             const std::string& environment);
// The canonical ASCII JSON text of `value` (what stores hash and store).
std::string canonical_text(const core::Json& value);

// Errors: InvalidArgument ("query_ref must be an opaque managed-query reference").
void require_query_ref(const std::string& query_ref);
// Errors: InvalidArgument ("desired_set_ref must be an opaque managed desired-set reference").
void require_desired_set_ref(const std::string& desired_set_ref);
// Errors: InvalidArgument ("<field> must be a lowercase SHA-256 digest").
void require_sha(const std::string& value, const char* field);
// Errors: InvalidArgument ("managed input plan_id must be an opaque token").
void require_input_plan_id(const std::string& plan_id);

// mark_planned's arguments against the stored `record`: true when it is already planned exactly
// so (nothing to write). Errors: Conflict ("does not match its decision", "already bound
// differently").
bool planned_already(const ManagedQueryRecord& record, const std::string& plan_id,
                     const std::string& decision_digest, std::int64_t journal_revision,
                     const std::string& journal_record_digest);
// mark_desired_set_committed's arguments against the stored `record`: true when it is already
// committed exactly so. Errors: Conflict.
bool committed_already(const ManagedDesiredSetRecord& record, std::int64_t journal_revision,
                       const std::string& journal_record_digest,
                       const std::string& transition_digest);

// §4.5: the desired event and capability ids against their planned `parent`. Errors: Conflict
// (unplanned parent, "does not continue its parent plan", payload or rows not exact).
void validate_desired_set(const ManagedQueryRecord& parent,
                          const std::vector<std::string>& capability_ids, const EngineEvent& event);
// The desired-set registration mapping (what its reference authenticates).
core::Json desired_registration(const std::string& query_ref, const std::string& logical_choice_id,
                                const std::string& plan_id, const std::string& decision_digest,
                                const std::string& stream_digest,
                                const std::vector<std::string>& capability_ids,
                                const EngineEvent& event);
// Whether `existing` (stored under the same query and logical choice) is the request again.
// Errors: Conflict ("logical desired choice is already bound to different content").
void require_same_choice(const ManagedDesiredSetRecord& existing, const std::string& ref,
                         const std::vector<std::string>& capability_ids, const EngineEvent& event);
// The new desired `event` of `query_ref` against every desired set already on its stream
// (`on_stream`) and the parent's `decision`. Errors: Conflict ("stream revision is already
// reserved", "stream has a pending reservation", "does not follow its predecessor", "precedes a
// committed desired set").
void require_stream_continues(const std::vector<ManagedDesiredSetRecord>& on_stream,
                              const std::string& query_ref, const EngineEvent& decision,
                              const EngineEvent& event);

}  // namespace managed_store

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_MANAGED_QUERY_STORE_HPP_
