// Opening a journal is O(1) in stream length and never trusts what it cannot check: an engine on
// a 10,000-record SQLite stream resumes from the stored head state without reading a record
// (counted through the journal port); one byte edited by hand in a record, in the stored state
// or in the head row is typed JournalCorruption both on verify() (full replay) and on open, and
// nothing is written; a file from a newer schema is refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/engine/engine.hpp"
#include "host/engine/errors.hpp"
#include "host/store/journal_schema.hpp"
#include "host/store/sqlite.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/counting_journal_store.hpp"
#include "tests/support/journal/journal_fixtures.hpp"
#include "tests/support/journal/raw_sqlite.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;
using ctx::testing::journal::CountingJournalStore;
using ctx::testing::journal::ManualClock;
using ctx::testing::journal::raw_count;
using ctx::testing::journal::raw_exec;
using ctx::testing::journal::TempDir;

EngineEvent turn(std::int64_t revision) {
  return event("TurnEnded", revision, "event-turn-" + std::to_string(revision), Json::object());
}

class JournalOpen : public ::testing::Test {
 protected:
  JournalOpen() : clock_("2026-08-02T12:01:00Z") {}
  std::filesystem::path path() const { return dir_.path() / "journal.sqlite3"; }

  // Writes SessionStarted and `records - 1` TurnEnded events through an engine.
  void build(int records) {
    store::SqliteJournalStore store(path(), clock_, {.synchronous = store::Synchronous::kNormal});
    Engine engine(store, &store, clock_, EnginePorts{});
    engine.process(event("SessionStarted", 0, "event-start", {{"host_level", "managing"}}));
    for (int i = 1; i < records; ++i) engine.process(turn(i));
  }

  // Opens a fresh store and engine and processes the next event at `revision`.
  void open_and_process(std::int64_t revision) {
    store::SqliteJournalStore store(path(), clock_);
    Engine engine(store, &store, clock_, EnginePorts{});
    engine.process(turn(revision));
  }

  void verify_with_replay() {
    store::SqliteJournalStore store(path(), clock_);
    ReducerReplayer replayer;
    store.verify(&replayer);
  }

  TempDir dir_;
  ManualClock clock_;
};

TEST_F(JournalOpen, OpeningA10000RecordStreamDoesNotReplayIt) {
  build(10'000);
  store::SqliteJournalStore store(path(), clock_);
  CountingJournalStore counting(store);
  Engine engine(counting, &store, clock_, EnginePorts{});
  const Transition next = engine.process(turn(10'000));
  EXPECT_EQ(next.to_revision(), 10'001);
  EXPECT_EQ(counting.reads, 0);
  EXPECT_EQ(counting.records_read, 0);
  EXPECT_EQ(counting.latests, 1);  // the head state, once
  EXPECT_EQ(counting.appends, 1);
  // The next event on the warm engine does not even load the state again.
  engine.process(turn(10'001));
  EXPECT_EQ(counting.latests, 1);
  EXPECT_EQ(counting.reads, 0);
  EXPECT_EQ(store.head(scope().stream_id()).revision, 10'002);
}

// Passes every record to the reducer's replayer, counting them; `lie_at` (if set) returns a
// state other than the replayed one for that revision, as a reducer that disagrees would.
class CountingReplayer final : public StreamReplayer {
 public:
  explicit CountingReplayer(std::int64_t lie_at = 0) : lie_at_(lie_at) {}
  void reset() override {
    ++resets;
    inner_.reset();
  }
  std::string apply(const JournalRecord& record) override {
    revisions.push_back(record.revision);
    std::string state = inner_.apply(record);
    return record.revision == lie_at_ ? state + " " : state;
  }
  int resets = 0;
  std::vector<std::int64_t> revisions;

 private:
  ReducerReplayer inner_;
  std::int64_t lie_at_;
};

TEST_F(JournalOpen, VerifyReplaysEveryRecordOfAnIntactStream) {
  build(20);
  std::vector<std::int64_t> all(20);
  for (std::int64_t i = 0; i < 20; ++i) all[static_cast<std::size_t>(i)] = i + 1;
  {
    store::SqliteJournalStore store(path(), clock_);
    CountingReplayer replayer;
    store.verify(&replayer);
    EXPECT_EQ(replayer.resets, 1);  // one stream, from its first record
    EXPECT_EQ(replayer.revisions, all);
  }
  open_and_process(20);
  store::SqliteJournalStore store(path(), clock_);
  CountingReplayer replayer;
  store.verify(&replayer);
  all.push_back(21);
  EXPECT_EQ(replayer.revisions, all);
}

// A record whose replay reaches another state than the one it stored is named, by revision.
TEST_F(JournalOpen, VerifyNamesTheFirstRecordThatReplaysToAnotherState) {
  build(8);
  store::SqliteJournalStore store(path(), clock_);
  CountingReplayer replayer(5);
  CTX_EXPECT_THROW(store.verify(&replayer), JournalCorruption,
                   "journal record 5 replays to a state other than its result_state_digest");
  EXPECT_EQ(replayer.revisions.back(), 5);
}

// The reducer's replayer demands the stored transition byte for byte and the record's own
// binding: a record carrying another transition, or another event id, diverges at its revision.
TEST_F(JournalOpen, TheReplayerRefusesARecordWhoseTransitionOrBindingDiffers) {
  build(4);
  store::SqliteJournalStore store(path(), clock_);
  const auto records = store.read(scope().stream_id());
  ASSERT_EQ(records.size(), 4u);
  const auto replay_until = [&](const JournalRecord& last) {
    ReducerReplayer replayer;
    replayer.reset();
    for (std::size_t i = 0; i + 1 < records.size(); ++i) (void)replayer.apply(records[i]);
    (void)replayer.apply(last);
  };
  const auto expect_divergence = [&](const JournalRecord& last, const std::string& component) {
    try {
      replay_until(last);
      ADD_FAILURE() << "a record that differs in its " << component << " must not replay";
    } catch (const ReplayDivergenceError& e) {
      EXPECT_EQ(e.revision(), 4);
      EXPECT_EQ(e.component(), component);
    }
  };
  EXPECT_NO_THROW(replay_until(records[3]));
  JournalRecord other_transition = records[3];
  const auto at = other_transition.transition_json.find("event-turn-3");
  ASSERT_NE(at, std::string::npos);
  other_transition.transition_json.replace(at, 12, "event-turn-9");
  expect_divergence(other_transition, "transition");
  JournalRecord other_event = records[3];
  other_event.event_id = "event-turn-9";
  expect_divergence(other_event, "record-binding");
}

// Flips one character of `column` in `table` at the row selected by `where` (a hex digit of a
// digest or a byte of JSON), behind the store's back.
void edit_one_byte(const std::filesystem::path& path, const std::string& table,
                   const std::string& column, const std::string& where, int position) {
  const std::string p = std::to_string(position);
  raw_exec(path, "UPDATE " + table + " SET " + column + " = substr(" + column + ", 1, " + p +
                     " - 1) || CASE substr(" + column + ", " + p + ", 1) WHEN 'a' THEN 'b' " +
                     "WHEN '1' THEN '2' WHEN ':' THEN ';' ELSE 'a' END || substr(" + column +
                     ", " + p + " + 1) WHERE " + where);
}

class OneByteEdit : public JournalOpen,
                    public ::testing::WithParamInterface<std::tuple<const char*, const char*,
                                                                    const char*, int>> {};

TEST_P(OneByteEdit, IsCorruptionOnVerifyAndOnOpenAndNothingIsWritten) {
  const auto& [table, column, where, position] = GetParam();
  build(6);
  edit_one_byte(path(), table, column, where, position);
  const auto records = raw_count(path(), "engine_journal");
  CTX_EXPECT_THROW(verify_with_replay(), JournalCorruption, "");
  CTX_EXPECT_THROW(open_and_process(6), JournalCorruption, "");
  EXPECT_EQ(raw_count(path(), "engine_journal"), records);
}

INSTANTIATE_TEST_SUITE_P(
    HeadRecordStateAndHeadRow, OneByteEdit,
    ::testing::Values(
        // The head record: its transition text, its chain link, its state digest.
        std::tuple{"engine_journal", "transition_json", "revision = 6", 20},
        std::tuple{"engine_journal", "previous_record_digest", "revision = 6", 10},
        std::tuple{"engine_journal", "result_state_digest", "revision = 6", 1},
        std::tuple{"engine_journal", "replay_json", "revision = 6", 30},
        // The stored latest state.
        std::tuple{"engine_streams", "state_json", "1 = 1", 40},
        std::tuple{"engine_streams", "state_json", "1 = 1", 2},
        // The head row itself.
        std::tuple{"engine_streams", "head_record_digest", "1 = 1", 5},
        std::tuple{"engine_streams", "state_digest", "1 = 1", 64}),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param) + "_" +
             std::to_string(info.index);
    });

TEST_F(JournalOpen, AnEditedOlderRecordIsCorruptionOnVerifyNamingIt) {
  build(6);
  edit_one_byte(path(), "engine_journal", "transition_json", "revision = 3", 20);
  CTX_EXPECT_THROW(verify_with_replay(), JournalCorruption, "journal record 3");
  // Open checks the head in O(1); the older record is found by verify (and by any read).
  store::SqliteJournalStore store(path(), clock_);
  CTX_EXPECT_THROW(store.read(scope().stream_id()), JournalCorruption, "journal record 3");
}

TEST_F(JournalOpen, FileFromANewerSchemaIsRefusedByVersion) {
  build(1);
  raw_exec(path(), "PRAGMA user_version = 7");
  CTX_EXPECT_THROW(store::SqliteJournalStore(path(), clock_), store::NewerSchemaVersion,
                   "newer schema version 7");
  EXPECT_EQ(raw_count(path(), "engine_journal"), 1);
}

TEST_F(JournalOpen, AnUnversionedVersionOneFileMigratesAndResumes) {
  build(4);
  // Rewrite the file into the first released layout (records carry their state; the head row
  // has state_json before its digests; no user_version), as a file from before versioning.
  raw_exec(path(),
           "ALTER TABLE engine_journal ADD COLUMN result_state_json TEXT NOT NULL DEFAULT '{}';"
           "ALTER TABLE engine_streams RENAME TO s2;"
           "CREATE TABLE engine_streams (stream_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, "
           "workspace_id TEXT NOT NULL, repository_id TEXT NOT NULL, session_id TEXT NOT NULL, "
           "revision INTEGER NOT NULL CHECK (revision >= 1), state_json TEXT NOT NULL, "
           "state_digest TEXT NOT NULL, head_record_digest TEXT NOT NULL);"
           "INSERT INTO engine_streams SELECT stream_key, tenant_id, workspace_id, "
           "repository_id, session_id, revision, state_json, state_digest, head_record_digest "
           "FROM s2;"
           "DROP TABLE s2; PRAGMA user_version = 0;");
  // One authority table exactly as the first release laid its text out.
  raw_exec(path(), "DROP TABLE engine_install_outcomes;\n"
           "CREATE TABLE IF NOT EXISTS engine_install_outcomes (\n"
           "    stream_key                         TEXT NOT NULL,\n"
           "    action_id                          TEXT NOT NULL,\n"
           "    action_content_digest              TEXT NOT NULL,\n"
           "    claim_digest                       TEXT NOT NULL,\n"
           "    execution_binding_digest           TEXT NOT NULL,\n"
           "    outcome                            TEXT NOT NULL "
           "CHECK (outcome IN ('applied', 'failed')),\n"
           "    observed_material_identity_digest  TEXT,\n"
           "    verification_digest                TEXT NOT NULL,\n"
           "    observed_at                        TEXT NOT NULL,\n"
           "    outcome_digest                     TEXT NOT NULL,\n"
           "    PRIMARY KEY (stream_key, action_id)\n"
           ")\n");
  open_and_process(4);
  verify_with_replay();
  store::Database db(path(), store::Database::Mode::kReadOnly, 100);
  auto version = db.prepare("PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.integer(0), store::kJournalSchemaVersion);
  EXPECT_EQ(raw_count(path(), "engine_journal"), 5);
}

TEST_F(JournalOpen, NewFilesAreAtTheCurrentSchemaVersion) {
  build(1);
  store::Database db(path(), store::Database::Mode::kReadOnly, 100);
  auto version = db.prepare("PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.integer(0), store::kJournalSchemaVersion);
}

}  // namespace
}  // namespace ctx::engine

namespace ctx::store {
namespace {

// prepare_journal_schema accepts a file whose objects hash to the pinned digest without building
// the reference schema: that digest must be the reference's (update the constant with a schema
// change).
TEST(JournalSchema, PinnedDigestIsTheReferences) {
  EXPECT_EQ(detail::reference_journal_schema_digest(), detail::pinned_journal_schema_digest());
}

}  // namespace
}  // namespace ctx::store
