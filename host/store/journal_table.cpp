#include "host/store/journal_table.hpp"

#include <utility>

#include "host/core/crypto.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {

using engine::JournalCorruption;
using engine::JournalRecord;
using engine::Revision;
using engine::StreamId;

namespace {

#define CTX_JOURNAL_COLUMNS                                                                    \
  "event_id, stream_key, revision, event_content_digest, replay_json, replay_digest, "         \
  "transition_json, transition_digest, result_state_digest, previous_record_digest, "          \
  "record_digest, privacy_classification, retention_class, reducer_version"

#define CTX_SELECT_RECORDS(where) "SELECT " CTX_JOURNAL_COLUMNS " FROM engine_journal WHERE " where

constexpr StaticSql kByEventId{CTX_SELECT_RECORDS("event_id = ?1")};
constexpr StaticSql kAtRevision{CTX_SELECT_RECORDS("stream_key = ?1 AND revision = ?2")};
constexpr StaticSql kFromRevision{
    CTX_SELECT_RECORDS("stream_key = ?1 AND revision >= ?2 ORDER BY revision")};
constexpr StaticSql kLastRecord{
    CTX_SELECT_RECORDS("stream_key = ?1 ORDER BY revision DESC LIMIT 1")};
constexpr StaticSql kInsertRecord{"INSERT INTO engine_journal (" CTX_JOURNAL_COLUMNS
                                  ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                  "?13, ?14)"};
#undef CTX_SELECT_RECORDS
#undef CTX_JOURNAL_COLUMNS

constexpr StaticSql kHeadRow{
    "SELECT revision, head_record_digest, state_digest FROM engine_streams WHERE stream_key = ?1"};
constexpr StaticSql kHeadRowWithState{
    "SELECT revision, head_record_digest, state_digest, state_json FROM engine_streams "
    "WHERE stream_key = ?1"};
constexpr StaticSql kUpsertHead{
    "INSERT INTO engine_streams (stream_key, tenant_id, workspace_id, repository_id, session_id, "
    "revision, head_record_digest, state_digest, state_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(stream_key) DO UPDATE SET "
    "revision = excluded.revision, head_record_digest = excluded.head_record_digest, "
    "state_digest = excluded.state_digest, state_json = excluded.state_json"};

// CTX_JOURNAL_COLUMNS: 1 (stream key), 2 (revision), 9 (nullable link), 11 (privacy
// classification) and 12 (retention class) are read apart.
using R = JournalRecord;
constexpr TextColumns<R, 14> kTextColumns = {
    &R::event_id, nullptr, nullptr, &R::event_content_digest, &R::replay_json, &R::replay_digest,
    &R::transition_json, &R::transition_digest, &R::result_state_digest, nullptr,
    &R::record_digest, nullptr, nullptr, &R::reducer_version};

// A stored enumerated column's value; an unknown spelling is corruption.
template <typename E>
E stored_enum(const Statement& row, int column, const char* name) {
  if (auto value = engine::find_enum<E>(row.text(column))) return *value;
  throw JournalCorruption(std::string(name) + " is not a known " +
                          std::string(core::EnumTraits<E>::kStrings.what));
}

// The row as stored (not yet verified). `known` spares re-parsing the stream key.
JournalRecord row_to_record(Statement& row, const StreamId* known) {
  std::string stream_key = row.text(1);
  std::optional<StreamId> parsed;
  if (known == nullptr || known->stream_key() != stream_key) parsed = stream_from_key(stream_key);
  if (!row.is_integer(2)) throw JournalCorruption("journal revision is not an integer");
  JournalRecord record{parsed ? *parsed : *known, row.integer(2), {}, {}, {}, {}, {}, {}, {},
                       {}, {}, {}, {}, {}};
  read_text_columns(row, kTextColumns, record);
  record.previous_record_digest = row.optional_text(9);
  record.privacy_classification =
      stored_enum<engine::PrivacyClass>(row, 11, "privacy_classification");
  record.retention_class = stored_enum<engine::Retention>(row, 12, "retention_class");
  return record;
}

[[noreturn]] void head_corrupt(const StreamId& stream, const std::string& what) {
  throw JournalCorruption("stream " + stream.stream_key() + " head: " + what);
}

}  // namespace

StreamId stream_from_key(const std::string& key) {
  try {
    return StreamId::from_stream_key(key);
  } catch (const InvalidArgument&) {
    throw JournalCorruption("stored row has an invalid stream key");
  }
}

engine::JournalHead JournalTable::head(const StreamId& stream) {
  auto row = db_.cached(kHeadRow);
  row->bind(1, stream.stream_key());
  if (!row->step()) return {};
  if (!row->is_integer(0) || row->integer(0) < 1) head_corrupt(stream, "revision is malformed");
  engine::JournalHead head{row->integer(0), row->text(1), row->text(2)};
  if (!core::is_sha256_hex(*head.record_digest) || !core::is_sha256_hex(*head.state_digest)) {
    head_corrupt(stream, "digests are malformed");
  }
  return head;
}

std::optional<engine::JournalLatest> JournalTable::latest(const StreamId& stream) {
  std::optional<JournalRecord> last;
  {
    auto stmt = db_.cached(kLastRecord);
    stmt->bind(1, stream.stream_key());
    if (stmt->step()) last = row_to_record(*stmt, &stream);
  }
  auto row = db_.cached(kHeadRowWithState);
  row->bind(1, stream.stream_key());
  if (!row->step()) {
    if (last) head_corrupt(stream, "records exist without a head");
    return std::nullopt;
  }
  if (!last) head_corrupt(stream, "head without records");
  engine::verify_journal_record(*last);
  if (!row->is_integer(0) || row->integer(0) != last->revision ||
      row->text(1) != last->record_digest || row->text(2) != last->result_state_digest) {
    head_corrupt(stream, "does not match the last record");
  }
  engine::CanonicalText state;
  try {
    state = engine::CanonicalText::verify(row->text(3), "state_json");
  } catch (const InvalidArgument&) {
    head_corrupt(stream, "state is not canonical json");
  }
  if (state.digest() != last->result_state_digest) {
    head_corrupt(stream, "state does not match its digest");
  }
  return engine::JournalLatest{last->revision, last->record_digest, std::move(state)};
}

std::optional<JournalRecord> JournalTable::by_event_id(std::string_view event_id) {
  auto stmt = db_.cached(kByEventId);
  stmt->bind(1, event_id);
  if (!stmt->step()) return std::nullopt;
  JournalRecord record = row_to_record(*stmt, nullptr);
  engine::verify_journal_record(record);
  return record;
}

std::optional<JournalRecord> JournalTable::at(const StreamId& stream, Revision revision) {
  auto stmt = db_.cached(kAtRevision);
  stmt->bind(1, stream.stream_key()).bind(2, revision);
  if (!stmt->step()) return std::nullopt;
  JournalRecord record = row_to_record(*stmt, &stream);
  engine::verify_journal_record(record);
  return record;
}

std::vector<JournalRecord> JournalTable::rows_from(const StreamId& stream, Revision from) {
  std::vector<JournalRecord> records;
  auto stmt = db_.cached(kFromRevision);
  stmt->bind(1, stream.stream_key()).bind(2, from);
  while (stmt->step()) records.push_back(row_to_record(*stmt, &stream));
  return records;
}

std::vector<JournalRecord> JournalTable::read(const StreamId& stream, Revision after) {
  if (after < 0) throw InvalidArgument("after must be >= 0");
  std::vector<JournalRecord> records = rows_from(stream, after == 0 ? 1 : after);
  if (after == 0) {
    engine::verify_journal_chain(records, nullptr);
    return records;
  }
  if (records.empty()) return records;  // the stream ends before `after`
  if (records.front().revision != after) {
    throw JournalCorruption("journal revision gap: expected revision " + std::to_string(after) +
                            ", found " + std::to_string(records.front().revision));
  }
  JournalRecord anchor = std::move(records.front());
  records.erase(records.begin());
  engine::verify_journal_chain(records, &anchor);
  return records;
}

void JournalTable::insert(const JournalRecord& record, const engine::CanonicalText& state) {
  CTX_CHECK(state.digest() == record.result_state_digest);
  {
    auto insert = db_.cached(kInsertRecord);
    bind_text_columns(*insert, kTextColumns, record);
    insert->bind(2, record.stream.stream_key()).bind(3, record.revision);
    insert->bind(12, to_string(record.privacy_classification))
        .bind(13, to_string(record.retention_class));
    insert->bind_optional(10, record.previous_record_digest);
    insert->run();
  }
  auto head = db_.cached(kUpsertHead);
  head->bind(1, record.stream.stream_key())
      .bind(2, record.stream.tenant_id())
      .bind(3, record.stream.workspace_id())
      .bind(4, record.stream.repository_id())
      .bind(5, record.stream.session_id())
      .bind(6, record.revision)
      .bind(7, record.record_digest)
      .bind(8, record.result_state_digest)
      .bind(9, state.text());
  head->run();
}

void JournalTable::verify_all(engine::StreamReplayer* replayer) {
  std::vector<std::string> keys;
  {
    auto stmt = db_.prepare(
        "SELECT stream_key FROM engine_journal UNION SELECT stream_key FROM engine_streams");
    while (stmt.step()) keys.push_back(stmt.text(0));
  }
  for (const std::string& key : keys) {
    const StreamId stream = stream_from_key(key);
    std::vector<JournalRecord> records = rows_from(stream, 1);
    try {
      engine::verify_journal_chain(records, nullptr);
    } catch (const JournalCorruption& e) {
      throw JournalCorruption("stream " + key + ": " + e.what());
    }
    std::optional<engine::JournalLatest> head = latest(stream);
    if (!head) continue;
    if (replayer == nullptr) continue;
    replayer->reset();
    std::string state;
    for (const JournalRecord& record : records) {
      try {
        state = replayer->apply(record);
      } catch (const Error& e) {
        throw JournalCorruption("stream " + key + ": journal record " +
                                std::to_string(record.revision) + " does not replay: " + e.what());
      }
      if (core::sha256_hex(state) != record.result_state_digest) {
        throw JournalCorruption("stream " + key + ": journal record " +
                                std::to_string(record.revision) +
                                " replays to a state other than its result_state_digest");
      }
    }
    if (state != head->state.text()) {
      throw JournalCorruption("stream " + key + " head: state is not the replayed state");
    }
  }
}

}  // namespace ctx::store
