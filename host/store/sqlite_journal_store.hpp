// SqliteJournalStore: the durable JournalStore and ClaimStore (spec §6) in one SQLite file,
// WAL, synchronous FULL (except record_install_outcome's commit, unsynced: the receipt commit that
// follows syncs it, and losing it is the tested claim-without-outcome state), busy_timeout, every
// write in one BEGIN IMMEDIATE. One connection per object; the object serialises its own calls (a
// mutex), and any number of objects may share one file across threads and processes — SQLite's
// write lock orders their commits.
// Opening is O(1) in stream length: it validates the file (private regular file, schema migrated
// to the current user_version and exactly the objects of §6.2, no triggers) and every claim /
// outcome / settlement row against its journal anchors; verify() re-checks everything.
#ifndef CTX_HOST_STORE_SQLITE_JOURNAL_STORE_HPP_
#define CTX_HOST_STORE_SQLITE_JOURNAL_STORE_HPP_

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/json_reader.hpp"
#include "host/core/time.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/journal_store.hpp"

namespace ctx::store {

class Database;

// PRAGMA synchronous: kFull (durable on power loss) or kNormal (WAL: durable on process crash),
// spelled "FULL" / "NORMAL" by kSynchronousStrings.
enum class Synchronous { kFull, kNormal };
inline constexpr core::EnumStrings<Synchronous, 2> kSynchronousStrings{
    "synchronous level", {Synchronous::kFull, Synchronous::kNormal}, {"FULL", "NORMAL"}};

struct SqliteJournalOptions {
  int busy_timeout_ms = 30'000;
  Synchronous synchronous = Synchronous::kFull;
};

}  // namespace ctx::store

namespace ctx::core {
template <>
struct EnumTraits<store::Synchronous> {
  static constexpr const auto& kStrings = store::kSynchronousStrings;
};
}  // namespace ctx::core

namespace ctx::store {

class SqliteJournalStore final : public engine::JournalStore, public engine::ClaimStore {
 public:
  // Opens or creates the journal at `path` (parent directory created 0700 if missing).
  // `clock` is the trusted UTC clock for claims and outcomes; it must outlive the store.
  // Errors: EngineStoreError (kPermissionDenied: symlink, not a regular file, not owned by
  //   this user, file readable by others, parent writable by others), StoreBusy,
  //   JournalCorruption (unexpected schema, broken rows, not a database), InvalidArgument.
  SqliteJournalStore(const std::filesystem::path& path, const core::Clock& clock,
                     SqliteJournalOptions options = {});
  ~SqliteJournalStore() override;
  SqliteJournalStore(const SqliteJournalStore&) = delete;
  SqliteJournalStore& operator=(const SqliteJournalStore&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

  // JournalStore
  engine::JournalCommit append(const engine::JournalAppend& request) override;
  engine::JournalHead head(const engine::StreamId& stream) const override;
  std::optional<engine::JournalLatest> latest(const engine::StreamId& stream) const override;
  std::vector<engine::JournalRecord> read(const engine::StreamId& stream,
                                          engine::Revision after = 0) const override;
  std::optional<engine::JournalRecord> find(const engine::StreamId& stream,
                                            std::string_view event_id) const override;
  // One BEGIN DEFERRED for both reads.
  engine::JournalLookup lookup(const engine::StreamId& stream,
                               std::string_view event_id) const override;

  // ClaimStore
  engine::ActionClaim claim_install(const engine::ClaimRequest& request) override;
  engine::ActionClaim claim_activation(const engine::ClaimRequest& request) override;
  engine::ExecutionOutcome record_install_outcome(
      const engine::InstallOutcomeRequest& request) override;
  engine::ExecutionOutcome record_activation_outcome(
      const engine::ActivationOutcomeRequest& request) override;
  engine::InstallExecutionStatus install_execution_status(
      const engine::StreamId& stream, std::string_view action_id) const override;
  engine::ActivationExecutionStatus activation_execution_status(
      const engine::StreamId& stream, std::string_view action_id) const override;
  std::optional<engine::ActionClaim> find_install_claim(const engine::StreamId& stream,
                                                        std::string_view action_id) const override;
  std::optional<engine::ExecutionOutcome> find_install_outcome(
      const engine::StreamId& stream, std::string_view action_id) const override;

  // Re-validates the whole file: every stream's chain (canonical texts, digests, links), every
  // head against its last record and stored state, every claim/outcome/settlement row — and,
  // with `replayer` (the engine's, engine::ReducerReplayer), that every record replays to the
  // state it names. Writes nothing. Errors: JournalCorruption naming the stream and the first
  // bad record, StoreBusy.
  void verify(engine::StreamReplayer* replayer = nullptr) const;

 private:
  class Impl;
  std::filesystem::path path_;
  mutable std::mutex mutex_;
  std::unique_ptr<Impl> impl_;  // GUARDED_BY(mutex_)
};

// The claim store is the same object (claims live in the journal's file and transactions).
using SqliteClaimStore = SqliteJournalStore;

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_SQLITE_JOURNAL_STORE_HPP_
