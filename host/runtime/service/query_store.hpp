// ManagedQueryStore: the durable registry of managed queries (`managed_queries`) and desired
// sets (`managed_desired_sets`) in one SQLite file (runtime spec §4; PRAGMA user_version 2,
// every table WITHOUT ROWID). References (`mqr_…`, `mds_…`) and every row are HMAC-SHA256
// authenticated under the embedder's 32-byte installation key: a tampered row, a foreign
// reference or a row written under another key fails as ManagedQueryStoreCorruption
// ("authentication failed") and nothing is mutated. Every mutation is one BEGIN IMMEDIATE
// transaction, so stores on the same file in several threads or processes serialise.
// Thread-safe (one connection behind a mutex). Records are store-issued, immutable, movable
// but not copyable.
#ifndef CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_
#define CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/protocol.hpp"
#include "host/runtime/service/errors.hpp"

namespace ctx::store {
class Database;
}  // namespace ctx::store

namespace ctx::runtime {

class ManagedQueryStore;

inline constexpr std::string_view kManagedQueryStoreSchema = "ctx.managed-query-store-v2";

// One registered managed query; planned() once its plan completion is recorded.
class ManagedQueryRecord final {
 public:
  ManagedQueryRecord(const ManagedQueryRecord&) = delete;
  ManagedQueryRecord& operator=(const ManagedQueryRecord&) = delete;
  ManagedQueryRecord& operator=(ManagedQueryRecord&&) = delete;
  ManagedQueryRecord(ManagedQueryRecord&&) noexcept = default;

  const std::string& query_ref() const noexcept { return query_ref_; }
  const std::string& logical_query_id() const noexcept { return logical_query_id_; }
  const engine::EngineEvent& session_started() const noexcept { return session_started_; }
  const engine::EngineEvent& decision_event() const noexcept { return decision_event_; }
  const std::string& artifact_manifest_digest() const noexcept { return manifest_digest_; }
  const std::string& planning_environment_digest() const noexcept { return environment_digest_; }
  const std::optional<std::string>& plan_id() const noexcept { return plan_id_; }
  const std::optional<std::string>& decision_digest() const noexcept { return decision_digest_; }
  const std::optional<std::int64_t>& journal_revision() const noexcept { return revision_; }
  const std::optional<std::string>& journal_record_digest() const noexcept {
    return record_digest_;
  }
  bool planned() const noexcept { return plan_id_.has_value(); }

  // Prints the reference and "planned"/"registered" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryRecord& value);

 private:
  friend class ManagedQueryStore;
  ManagedQueryRecord(engine::EngineEvent session_started, engine::EngineEvent decision_event)
      : session_started_(std::move(session_started)), decision_event_(std::move(decision_event)) {}

  std::string query_ref_;
  std::string logical_query_id_;
  engine::EngineEvent session_started_;
  engine::EngineEvent decision_event_;
  std::string manifest_digest_;
  std::string environment_digest_;
  std::optional<std::string> plan_id_;
  std::optional<std::string> decision_digest_;
  std::optional<std::int64_t> revision_;
  std::optional<std::string> record_digest_;
};

// One desired-set reservation; committed() once its journal commit is recorded.
class ManagedDesiredSetRecord final {
 public:
  ManagedDesiredSetRecord(const ManagedDesiredSetRecord&) = delete;
  ManagedDesiredSetRecord& operator=(const ManagedDesiredSetRecord&) = delete;
  ManagedDesiredSetRecord& operator=(ManagedDesiredSetRecord&&) = delete;
  ManagedDesiredSetRecord(ManagedDesiredSetRecord&&) noexcept = default;

  const std::string& query_ref() const noexcept { return query_ref_; }
  const std::string& logical_choice_id() const noexcept { return logical_choice_id_; }
  const std::string& desired_set_ref() const noexcept { return desired_set_ref_; }
  const std::string& plan_id() const noexcept { return plan_id_; }
  const std::string& decision_digest() const noexcept { return decision_digest_; }
  const std::string& stream_identity_digest() const noexcept { return stream_identity_digest_; }
  // Committed-plan order.
  const std::vector<std::string>& capability_ids() const noexcept { return capability_ids_; }
  const engine::EngineEvent& event() const noexcept { return event_; }
  const std::optional<std::int64_t>& journal_revision() const noexcept { return revision_; }
  const std::optional<std::string>& journal_record_digest() const noexcept {
    return record_digest_;
  }
  const std::optional<std::string>& transition_digest() const noexcept {
    return transition_digest_;
  }
  bool committed() const noexcept { return revision_.has_value(); }

  // Prints the reference and "committed"/"reserved" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRecord& value);

 private:
  friend class ManagedQueryStore;
  explicit ManagedDesiredSetRecord(engine::EngineEvent event) : event_(std::move(event)) {}

  std::string query_ref_;
  std::string logical_choice_id_;
  std::string desired_set_ref_;
  std::string plan_id_;
  std::string decision_digest_;
  std::string stream_identity_digest_;
  std::vector<std::string> capability_ids_;
  engine::EngineEvent event_;
  std::optional<std::int64_t> revision_;
  std::optional<std::string> record_digest_;
  std::optional<std::string> transition_digest_;
};

// "mqr_" + 64 lower-case hex / "mds_" + 64 lower-case hex.
bool is_query_ref(std::string_view text) noexcept;
bool is_desired_set_ref(std::string_view text) noexcept;

// SHA("ctx.managed-desired-set-stream-v1\0" ‖ stream key of `scope`).
std::string desired_stream_identity_digest(const engine::ScopeRef& scope);

class ManagedQueryStore final {
 public:
  ManagedQueryStore(const ManagedQueryStore&) = delete;
  ManagedQueryStore& operator=(const ManagedQueryStore&) = delete;
  ~ManagedQueryStore();

  // The store file (used by the service to place its lifecycle lock beside it).
  const std::filesystem::path& path() const noexcept { return path_; }

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
  ManagedQueryRecord register_query(const std::string& logical_query_id,
                                    const engine::EngineEvent& session_started,
                                    const engine::EngineEvent& decision_event,
                                    const std::string& artifact_manifest_digest,
                                    const std::string& planning_environment_digest,
                                    const RetirementCheck& may_retire = {});

  // At most this many registrations are retired by one register_query at capacity.
  static constexpr int kRetirementBatch = 64;

  // Records the plan completion (idempotent for identical values). Errors: NotFound, Conflict
  // ("completion is already bound differently", wrong plan id or revision), Corruption.
  // Durability: this commit (and mark_desired_set_committed's) is not fsynced (WAL at
  // synchronous NORMAL for the one transaction): it survives a process crash when it returns, the
  // store's next commit syncs it, and a power loss before that loses only the mark — the state of
  // a crash between the journal commit and the mark, which the service recovers
  // (ManagedServicePrepareCrash, set_desired_recovers_engine_commit_before_store_mark,
  // DesiredChoiceOfAKilledProcessIsFinishedOnceByAnother). Every other commit is FULL.
  ManagedQueryRecord mark_planned(const std::string& query_ref, const std::string& plan_id,
                                  const std::string& decision_digest, std::int64_t journal_revision,
                                  const std::string& journal_record_digest);

  // Errors: InvalidArgument (not an mqr_ reference), NotFound ("managed query record is
  // unavailable"), Corruption ("authentication failed").
  ManagedQueryRecord load(const std::string& query_ref);

  // The catalog input authority's registration of `plan_id` (its canonical JSON, opaque here),
  // HMAC-bound to the plan id under the installation key. put_input stores it once (an
  // identical put is a no-op); find_input returns it, authenticated, or nullopt.
  // Errors: InvalidArgument (plan_id not an opaque token), CapacityExceeded (over 64 KiB, or
  // 8192 inputs), Corruption (a stored row differs or fails authentication), Unavailable (busy).
  void put_input(const std::string& plan_id, std::string_view input_json);
  std::optional<std::string> find_input(const std::string& plan_id);

  // The planned row whose decision scope and plan id equal these, if any. Errors: Corruption.
  std::optional<ManagedQueryRecord> find_planned_by_scope_and_plan(const engine::ScopeRef& scope,
                                                                   const std::string& plan_id);

  // Reserves one desired set (§4.5). Identical content returns the existing record.
  // Errors: NotFound (parent), Conflict (unplanned parent, envelope mismatch, "stream revision
  // is already reserved", "stream has a pending reservation", causation, bound differently),
  // CapacityExceeded, Corruption.
  ManagedDesiredSetRecord reserve_desired_set(const std::string& query_ref,
                                              const std::string& logical_choice_id,
                                              const std::vector<std::string>& capability_ids,
                                              const engine::EngineEvent& event);

  // Marks the reservation committed at `journal_revision` = event revision + 1 (idempotent).
  // Errors: NotFound, Conflict, Corruption.
  ManagedDesiredSetRecord mark_desired_set_committed(const std::string& desired_set_ref,
                                                     std::int64_t journal_revision,
                                                     const std::string& journal_record_digest,
                                                     const std::string& transition_digest);

  // Errors: InvalidArgument, NotFound, Corruption.
  ManagedDesiredSetRecord load_desired_set(const std::string& desired_set_ref);
  // The desired set of `query_ref` with the highest event revision. Errors: NotFound (no such
  // query or no desired set), Corruption.
  ManagedDesiredSetRecord load_latest_desired_set(const std::string& query_ref);
  // As load_latest_desired_set, nullopt when the query has none.
  std::optional<ManagedDesiredSetRecord> find_latest_desired_set(const std::string& query_ref);
  // The single uncommitted desired set on the stream of `scope`. Errors: NotFound, Corruption.
  ManagedDesiredSetRecord load_pending_desired_set(const engine::ScopeRef& scope);
  std::optional<ManagedDesiredSetRecord> find_pending_desired_set(const engine::ScopeRef& scope);

  // The full check an open does not make (`ctx journal verify` runs it): SQLite's
  // integrity_check over every page of the file, then every query and desired-set row read and
  // authenticated as a load would, and the plan-id lookup checked to name exactly the
  // registrations that have a plan id. Reads only. Errors: Corruption ("failed its integrity check",
  // a row's own message), Unavailable (the file was replaced).
  void verify();

  // Prints the schema only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryStore& value);

 private:
  friend std::shared_ptr<ManagedQueryStore> open_managed_query_store(
      const std::filesystem::path& path, std::string_view installation_hmac_key);
  struct Impl;
  ManagedQueryStore(std::filesystem::path path, std::unique_ptr<Impl> impl);

  std::filesystem::path path_;
  std::mutex mutex_;
  std::unique_ptr<Impl> impl_;  // GUARDED_BY(mutex_)
};

// Opens (creating it crash-safely if missing) the store at absolute `path` under the 32-byte
// `installation_hmac_key`. The parent directory is created 0700 when missing and must be owned
// by this user with mode exactly 0700. Errors: InvalidArgument ("must be absolute", key size),
// ManagedQueryStoreUnavailable (directory or file unsafe), ManagedQueryStoreCorruption (schema,
// wrong installation key). The open reads the schema and the identity row only, so its cost does
// not grow with the store: a damaged page is found by the row read that reaches it (SQLITE_CORRUPT,
// typed), a changed row by its HMAC, and the whole file by verify().
std::shared_ptr<ManagedQueryStore> open_managed_query_store(const std::filesystem::path& path,
                                                            std::string_view installation_hmac_key);

namespace detail {
// The schema digest the open path accepts without building the reference schema, and the
// digest of that reference (a test keeps them equal).
std::string_view pinned_query_store_schema_digest() noexcept;
std::string reference_query_store_schema_digest();
}  // namespace detail

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_
