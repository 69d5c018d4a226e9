// SqliteManagedQueryStore: the engine::ManagedQueryStore port on one SQLite file — the tables
// `managed_queries`, `managed_desired_sets`, `managed_inputs`, `managed_query_correlations` and
// the identity row (runtime spec §4; PRAGMA user_version 4, every table WITHOUT ROWID).
// References (`mqr_…`, `mds_…`) and every row are HMAC-SHA256 authenticated under the embedder's
// 32-byte installation key: a tampered row, a foreign reference or a row written under another key
// fails as ManagedQueryStoreCorruption ("authentication failed") and nothing is mutated. Every
// mutation is one BEGIN IMMEDIATE transaction, so stores on the same file in several threads or
// processes serialise. Thread-safe (one connection behind a mutex).
#ifndef CTX_HOST_STORE_SQLITE_MANAGED_QUERY_STORE_HPP_
#define CTX_HOST_STORE_SQLITE_MANAGED_QUERY_STORE_HPP_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/managed_query_store.hpp"

namespace ctx::store {

class SqliteManagedQueryStore final : public engine::ManagedQueryStore {
 public:
  ~SqliteManagedQueryStore() override;

  const std::filesystem::path& path() const noexcept override { return path_; }

  using engine::ManagedQueryStore::register_query;
  engine::ManagedQueryRecord register_query(const std::string& logical_query_id,
                                            const engine::EngineEvent& session_started,
                                            const engine::EngineEvent& decision_event,
                                            const std::string& artifact_manifest_digest,
                                            const std::string& planning_environment_digest,
                                            const RetirementCheck& may_retire) override;

  // Durability: this commit (and mark_desired_set_committed's) is not fsynced (WAL at
  // synchronous NORMAL for the one transaction): it survives a process crash when it returns, the
  // store's next commit syncs it, and a power loss before that loses only the mark — the state of
  // a crash between the journal commit and the mark, which the service recovers
  // (ManagedServicePrepareCrash, set_desired_recovers_engine_commit_before_store_mark,
  // DesiredChoiceOfAKilledProcessIsFinishedOnceByAnother). Every other commit is FULL.
  engine::ManagedQueryRecord mark_planned(const std::string& query_ref, const std::string& plan_id,
                                          const std::string& decision_digest,
                                          std::int64_t journal_revision,
                                          const std::string& journal_record_digest) override;
  engine::ManagedQueryRecord load(const std::string& query_ref) override;

  // The input row is HMAC-bound to the plan id under the installation key.
  void put_input(const std::string& plan_id, std::string_view input_json) override;
  std::optional<std::string> find_input(const std::string& plan_id) override;

  std::optional<engine::ManagedQueryRecord> find_planned_by_scope_and_plan(
      const engine::ScopeRef& scope, const std::string& plan_id) override;

  engine::ManagedDesiredSetRecord reserve_desired_set(
      const std::string& query_ref, const std::string& logical_choice_id,
      const std::vector<std::string>& capability_ids, const engine::EngineEvent& event) override;
  engine::ManagedDesiredSetRecord mark_desired_set_committed(
      const std::string& desired_set_ref, std::int64_t journal_revision,
      const std::string& journal_record_digest, const std::string& transition_digest) override;
  engine::ManagedDesiredSetRecord load_desired_set(const std::string& desired_set_ref) override;
  std::optional<engine::ManagedDesiredSetRecord> find_latest_desired_set(
      const std::string& query_ref) override;
  std::optional<engine::ManagedDesiredSetRecord> find_pending_desired_set(
      const engine::ScopeRef& scope) override;

  // SQLite's integrity_check over every page of the file, then every query and desired-set row
  // read and authenticated as a load would, and the plan-id lookup checked to name exactly the
  // registrations that have a plan id. Reads only. Errors: Corruption ("failed its integrity
  // check", a row's own message), Unavailable (the file was replaced).
  void verify() override;

 private:
  friend std::shared_ptr<SqliteManagedQueryStore> open_managed_query_store(
      const std::filesystem::path& path, std::string_view installation_hmac_key);
  struct Impl;
  SqliteManagedQueryStore(std::filesystem::path path, std::unique_ptr<Impl> impl);

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
std::shared_ptr<SqliteManagedQueryStore> open_managed_query_store(
    const std::filesystem::path& path, std::string_view installation_hmac_key);

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_SQLITE_MANAGED_QUERY_STORE_HPP_
