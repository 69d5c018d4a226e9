// SqliteJournalStore beyond the shared contract: durability across reopen, rows actually written
// (counted with raw sqlite3), tamper detection, file rules, busy mapping, a real two-writer race,
// and a process killed with SIGKILL mid-append.
#include "host/store/sqlite_journal_store.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/journal_fixtures.hpp"
#include "tests/support/journal/raw_sqlite.hpp"

namespace ctx::testing::journal {
namespace {

using store::SqliteJournalStore;

// Runs `sql` on `path` through a raw sqlite3 connection (the way an attacker or a bug would).
class SqliteJournalStoreTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "journal.sqlite3"; }
  std::unique_ptr<SqliteJournalStore> open(store::SqliteJournalOptions options = {}) {
    return std::make_unique<SqliteJournalStore>(path(), clock_, options);
  }
  void append_n(SqliteJournalStore& s, int n, const engine::StreamId& id = stream()) {
    engine::Revision start = s.head(id).revision;
    for (int i = 0; i < n; ++i) {
      s.append(make_append(id, start + i, id.session_id() + "-event-" + std::to_string(start + i)));
    }
  }

  TempDir dir_;
  ManualClock clock_;
};

TEST_F(SqliteJournalStoreTest, IdempotentRetryWritesNoRow) {
  auto s = open();
  engine::JournalAppend first = make_append(stream(), 0, "event-1");
  s->append(first);
  EXPECT_EQ(raw_count(path(), "engine_journal"), 1);
  EXPECT_TRUE(s->append(first).replayed);
  EXPECT_TRUE(s->append(first).replayed);
  EXPECT_EQ(raw_count(path(), "engine_journal"), 1);
  EXPECT_EQ(raw_count(path(), "engine_streams"), 1);
}

TEST_F(SqliteJournalStoreTest, CreatesTheSpecTablesWithPrivateFileMode) {
  open();
  for (const char* table :
       {"engine_streams", "engine_journal", "engine_install_claims", "engine_install_outcomes",
        "engine_install_claim_settlements", "engine_activation_claims",
        "engine_activation_outcomes", "engine_activation_claim_settlements"}) {
    EXPECT_EQ(raw_count(path(), table), 0) << table;
  }
  struct stat info{};
  ASSERT_EQ(::stat(path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(SqliteJournalStoreTest, ReopenAfterCloseKeepsTheChainAndContinues) {
  std::vector<engine::JournalRecord> before;
  {
    auto s = open();
    append_n(*s, 5);
    before = s->read(stream());
  }
  auto s = open();
  EXPECT_EQ(s->read(stream()), before);
  EXPECT_EQ(s->head(stream()).revision, 5);
  auto next = s->append(make_append(stream(), 5, "event-after-reopen")).record;
  EXPECT_EQ(next.previous_record_digest, before.back().record_digest);
  s->verify();
}

TEST_F(SqliteJournalStoreTest, TamperedTransitionIsJournalCorruption) {
  open()->append(make_append(stream(), 0, "event-1"));
  auto s = open();
  append_n(*s, 2);
  raw_exec(path(),
           "UPDATE engine_journal SET transition_json = replace(transition_json, "
           "'\"diagnostics\":[]', '\"diagnostics\":[{}]') WHERE revision = 2");
  CTX_EXPECT_THROW(s->read(stream()), engine::JournalCorruption, "transition_digest");
  CTX_EXPECT_THROW(s->verify(), engine::JournalCorruption, "transition_digest");
}

// A stored privacy classification or retention class is parsed where the row is read: an
// unknown spelling is corruption, never a record.
TEST_F(SqliteJournalStoreTest, UnknownStoredPrivacySpellingIsJournalCorruption) {
  {
    auto s = open();
    append_n(*s, 3);
  }
  raw_exec(path(),
           "UPDATE engine_journal SET privacy_classification = 'secret' WHERE revision = 2");
  {
    auto s = open();
    CTX_EXPECT_THROW(s->read(stream()), engine::JournalCorruption,
                     "privacy_classification is not a known privacy classification");
    CTX_EXPECT_THROW(s->verify(), engine::JournalCorruption, "privacy_classification");
  }
  raw_exec(path(), "UPDATE engine_journal SET privacy_classification = 'private', "
                   "retention_class = 'forever' WHERE revision = 2");
  auto s = open();
  CTX_EXPECT_THROW(s->read(stream(), 2), engine::JournalCorruption,
                   "retention_class is not a known retention class");
  EXPECT_EQ(s->head(stream()).revision, 3);
}

TEST_F(SqliteJournalStoreTest, TamperedDigestOrChainOrGapIsJournalCorruption) {
  {
    auto s = open();
    append_n(*s, 4);
  }
  // A record naming another result state (a well-formed digest) breaks its record digest.
  std::string forged_state = "{\"revision\":2,\"tag\":\"forged\"}";
  raw_exec(path(), "UPDATE engine_journal SET result_state_digest = '" +
                       core::sha256_hex(forged_state) + "' WHERE revision = 2");
  auto s = open();
  CTX_EXPECT_THROW(s->read(stream()), engine::JournalCorruption, "record_digest");
  CTX_EXPECT_THROW(s->read(stream(), 1), engine::JournalCorruption, "record_digest");

  TempDir other;
  std::filesystem::path p2 = other.path() / "j.sqlite3";
  {
    SqliteJournalStore s2(p2, clock_);
    append_n(s2, 4);
  }
  raw_exec(p2, "DELETE FROM engine_journal WHERE revision = 2");
  SqliteJournalStore s2(p2, clock_);
  CTX_EXPECT_THROW(s2.read(stream()), engine::JournalCorruption, "journal revision gap");

  TempDir third;
  std::filesystem::path p3 = third.path() / "j.sqlite3";
  {
    SqliteJournalStore s3(p3, clock_);
    append_n(s3, 3);
  }
  raw_exec(p3, "UPDATE engine_journal SET previous_record_digest = '" + std::string(64, 'a') +
                   "' WHERE revision = 3");
  SqliteJournalStore s3(p3, clock_);
  CTX_EXPECT_THROW(s3.read(stream()), engine::JournalCorruption, "");
  // The head record is verified whenever a reader resumes from the head.
  CTX_EXPECT_THROW(s3.latest(stream()), engine::JournalCorruption, "record_digest");
}

TEST_F(SqliteJournalStoreTest, UnexpectedSchemaObjectIsJournalCorruption) {
  open();
  raw_exec(path(),
           "CREATE TRIGGER sneaky AFTER INSERT ON engine_install_claims BEGIN SELECT 1; END");
  CTX_EXPECT_THROW(open(), engine::JournalCorruption, "schema");
}

TEST_F(SqliteJournalStoreTest, AlteredSecurityTableIsJournalCorruption) {
  raw_exec(path(), "CREATE TABLE engine_install_outcomes (stream_key TEXT, action_id TEXT)");
  ::chmod(path().c_str(), 0600);
  CTX_EXPECT_THROW(open(), engine::JournalCorruption, "schema");
}

TEST_F(SqliteJournalStoreTest, NotADatabaseIsJournalCorruption) {
  {
    std::ofstream out(path());
    out << std::string(4096, 'x');
  }
  ::chmod(path().c_str(), 0600);
  EXPECT_THROW(open(), engine::JournalCorruption);
}

TEST_F(SqliteJournalStoreTest, RefusesUnsafePaths) {
  {
    std::ofstream out(path());
  }
  ::chmod(path().c_str(), 0644);
  try {
    open();
    FAIL() << "expected a refusal";
  } catch (const engine::EngineStoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPermissionDenied);
    EXPECT_NE(std::string(e.what()).find("mode 0600"), std::string::npos);
  }
  std::filesystem::path link = dir_.path() / "link.sqlite3";
  std::filesystem::create_symlink(path(), link);
  CTX_EXPECT_THROW(SqliteJournalStore(link, clock_), engine::EngineStoreError, "symlink");
  std::filesystem::path shared = dir_.path() / "shared";
  std::filesystem::create_directory(shared);
  ::chmod(shared.c_str(), 0777);
  CTX_EXPECT_THROW(SqliteJournalStore(shared / "j.sqlite3", clock_), engine::EngineStoreError,
                   "writable by others");
}

TEST_F(SqliteJournalStoreTest, HeldWriteLockIsStoreBusy) {
  auto s = open(store::SqliteJournalOptions{.busy_timeout_ms = 50,
                                            .synchronous = store::Synchronous::kFull});
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  try {
    s->append(make_append(stream(), 0, "event-1"));
    ADD_FAILURE() << "expected StoreBusy";
  } catch (const engine::StoreBusy& busy) {
    EXPECT_EQ(busy.code(), ErrorCode::kUnavailable);
  }
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(s->append(make_append(stream(), 0, "event-1")).record.revision, 1);
}

// The level is typed; its spellings are the PRAGMA's, and any other spelling is refused where
// text becomes a level.
TEST_F(SqliteJournalStoreTest, RejectsUnknownSynchronousLevel) {
  CTX_EXPECT_THROW(core::parse_enum<store::Synchronous>("OFF"), core::JsonFieldError,
                   "unknown synchronous level");
  EXPECT_EQ(core::parse_enum<store::Synchronous>("NORMAL"), store::Synchronous::kNormal);
  EXPECT_EQ(core::to_string(store::Synchronous::kFull), "FULL");
  auto s = open(store::SqliteJournalOptions{.busy_timeout_ms = 10,
                                            .synchronous = store::Synchronous::kNormal});
  EXPECT_EQ(s->append(make_append(stream(), 0, "event-1")).record.revision, 1);
}

// Two store objects on one file, in two threads, released together by a barrier, both appending
// at the same expected revision: exactly one wins each round, the other gets RevisionConflict.
TEST_F(SqliteJournalStoreTest, RacingWritersAtTheSameRevisionSerialize) {
  open();  // create the schema up front
  constexpr int kRounds = 25;
  std::barrier sync(2);
  std::vector<int> wins(2, 0), conflicts(2, 0), other(2, 0);
  auto writer = [&](int who) {
    SqliteJournalStore s(path(), clock_);
    for (int round = 0; round < kRounds; ++round) {
      sync.arrive_and_wait();
      try {
        s.append(make_append(stream(), round,
                             "w" + std::to_string(who) + "-r" + std::to_string(round)));
        ++wins[who];
      } catch (const engine::RevisionConflict& conflict) {
        if (conflict.expected() == round && conflict.actual() == round + 1) {
          ++conflicts[who];
        } else {
          ++other[who];
        }
      } catch (...) {
        ++other[who];
      }
      sync.arrive_and_wait();  // both done with this round before the next starts
    }
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  EXPECT_EQ(wins[0] + wins[1], kRounds);
  EXPECT_EQ(conflicts[0] + conflicts[1], kRounds);
  EXPECT_EQ(other[0] + other[1], 0);
  auto s = open();
  EXPECT_EQ(s->head(stream()).revision, kRounds);
  EXPECT_EQ(s->read(stream()).size(), static_cast<std::size_t>(kRounds));
  s->verify();
}

// A child process appends durably in a loop and is killed with SIGKILL mid-stream; a fresh store
// finds a complete, verified chain whose head is the last acknowledged append (or one past it if
// the kill landed between COMMIT and the acknowledgement).
TEST_F(SqliteJournalStoreTest, SigkilledWriterLeavesAVerifiedChain) {
  open();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    try {
      SqliteJournalStore s(path(), clock_);
      for (engine::Revision r = 0;; ++r) {
        s.append(make_append(stream(), r, "crash-" + std::to_string(r)));
        std::int64_t acknowledged = r + 1;
        if (::write(pipe_fds[1], &acknowledged, sizeof acknowledged) != sizeof acknowledged) {
          ::_exit(3);
        }
      }
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(pipe_fds[1]);
  std::int64_t last = 0, value = 0;
  while (last < 20 && ::read(pipe_fds[0], &value, sizeof value) == sizeof value) last = value;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  while (::read(pipe_fds[0], &value, sizeof value) == sizeof value) last = value;
  ::close(pipe_fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  auto s = open();
  s->verify();
  engine::Revision head = s->head(stream()).revision;
  EXPECT_GE(head, last);
  EXPECT_LE(head, last + 1);
  EXPECT_EQ(s->read(stream()).size(), static_cast<std::size_t>(head));
  EXPECT_EQ(s->append(make_append(stream(), head, "after-crash")).record.revision, head + 1);
}

TEST_F(SqliteJournalStoreTest, RejectedAppendLeavesTheFileByteIdentical) {
  auto s = open();
  append_n(*s, 2);
  auto snapshot = [&] {
    std::string bytes;
    for (const char* suffix : {"", "-wal"}) {
      std::ifstream in(path().string() + suffix, std::ios::binary);
      bytes += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return bytes;
  };
  std::string before = snapshot();
  engine::JournalAppend bad = make_append(stream(), 2, "event-bad");
  bad.event_id = "event-other";  // its transition names event-bad
  EXPECT_THROW(s->append(bad), InvalidArgument);
  EXPECT_THROW(s->append(make_append(stream(), 1, "event-stale")), engine::RevisionConflict);
  AppendSpec collide;
  collide.expected = 2;
  collide.event_id = stream().session_id() + "-event-1";
  collide.payload = Json{{"other", 1}};
  EXPECT_THROW(s->append(make_append(collide)), engine::EventIdCollision);
  EXPECT_EQ(snapshot(), before);
}

}  // namespace
}  // namespace ctx::testing::journal
