// The journal's record table and per-stream head rows (spec §6.2) on one Database: records are
// written once (no read-back) and verified whenever they are read; the head row (revision,
// record digest, state digest, then the latest state) is read without touching JSON. Every
// call runs inside the caller's transaction. Used by one thread at a time.
#ifndef CTX_HOST_STORE_JOURNAL_TABLE_HPP_
#define CTX_HOST_STORE_JOURNAL_TABLE_HPP_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/journal_store.hpp"

namespace ctx::store {

class Database;

class JournalTable {
 public:
  explicit JournalTable(Database& db) noexcept : db_(db) {}

  // The head row (revision 0 when the stream has none). No JSON is read.
  engine::JournalHead head(const engine::StreamId& stream);

  // The head row with its state, checked against the head record (see JournalStore::latest).
  std::optional<engine::JournalLatest> latest(const engine::StreamId& stream);

  // The verified record of `event_id` (in any stream), or nullopt.
  std::optional<engine::JournalRecord> by_event_id(std::string_view event_id);
  // The verified record at `revision` of `stream`, or nullopt.
  std::optional<engine::JournalRecord> at(const engine::StreamId& stream,
                                          engine::Revision revision);
  // Records with revision > `after`, oldest first, verified as a chain.
  std::vector<engine::JournalRecord> read(const engine::StreamId& stream, engine::Revision after);

  // Writes `record` and moves the stream's head row to it with `state` (whose digest is the
  // record's result_state_digest).
  void insert(const engine::JournalRecord& record, const engine::CanonicalText& state);

  // Verifies every stream: the chain of every record, each head row against its last record
  // and its state, and — with a replayer — that every record's event replays to the state its
  // record names. Errors: JournalCorruption naming the stream and the first bad record.
  void verify_all(engine::StreamReplayer* replayer);

 private:
  std::vector<engine::JournalRecord> rows_from(const engine::StreamId& stream,
                                               engine::Revision from);
  Database& db_;
};

// The stream id of a stored stream key. Errors: JournalCorruption "stored row has an invalid
// stream key".
engine::StreamId stream_from_key(const std::string& key);

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_JOURNAL_TABLE_HPP_
