// StateWatch (state_watch.hpp) over a real state dir with a WAL database in service/, changed by
// real other processes (fork): a commit moves the fingerprint — a row added, a value
// overwritten in place, a row removed — while a process that only opens, reads and closes the
// database does not, nor does time passing.
#include "host/app/hook/state_watch.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "tests/support/journal/raw_sqlite.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;

// Runs `sql` on `db` (created if missing) in a forked child, on its own connection, closed
// before it exits; true when the child succeeded.
bool in_other_process(const fs::path& db, const std::string& sql) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    sqlite3* handle = nullptr;
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int code = sqlite3_open_v2(db.c_str(), &handle, flags, nullptr) == SQLITE_OK &&
                       sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK
                   ? 0
                   : 1;
    if (sqlite3_close(handle) != SQLITE_OK) code = 1;
    ::_exit(code);
  }
  int status = 0;
  return ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A VFS over the default one whose first sync of a -wal file after a frame was written to it
// (past the 32-byte log header, which a restarted log writes and syncs first) writes a byte to
// `ready` and then waits for a byte on `go`: a commit held between writing its log frames (which
// raises the -wal write event) and publishing them to readers (the -shm index, which raises
// none).
namespace pause_vfs {
sqlite3_vfs* real = nullptr;
int ready = -1;
int go = -1;
bool paused = false;
bool frames_written = false;
struct File {
  sqlite3_file base;
  sqlite3_file* inner;
  bool wal;
};
sqlite3_file* in(sqlite3_file* f) { return reinterpret_cast<File*>(f)->inner; }
int sync(sqlite3_file* f, int flags) {
  auto* file = reinterpret_cast<File*>(f);
  const int rc = file->inner->pMethods->xSync(file->inner, flags);
  if (file->wal && frames_written && !paused) {
    paused = true;
    char byte = 'r';
    if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1) return SQLITE_IOERR;
  }
  return rc;
}
const sqlite3_io_methods kMethods = {
    3,
    [](sqlite3_file* f) { return in(f)->pMethods->xClose(in(f)); },
    [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
      return in(f)->pMethods->xRead(in(f), b, n, o);
    },
    [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
      if (reinterpret_cast<File*>(f)->wal && o >= 32) frames_written = true;
      return in(f)->pMethods->xWrite(in(f), b, n, o);
    },
    [](sqlite3_file* f, sqlite3_int64 n) { return in(f)->pMethods->xTruncate(in(f), n); },
    sync,
    [](sqlite3_file* f, sqlite3_int64* n) { return in(f)->pMethods->xFileSize(in(f), n); },
    [](sqlite3_file* f, int l) { return in(f)->pMethods->xLock(in(f), l); },
    [](sqlite3_file* f, int l) { return in(f)->pMethods->xUnlock(in(f), l); },
    [](sqlite3_file* f, int* r) { return in(f)->pMethods->xCheckReservedLock(in(f), r); },
    [](sqlite3_file* f, int op, void* a) { return in(f)->pMethods->xFileControl(in(f), op, a); },
    [](sqlite3_file* f) { return in(f)->pMethods->xSectorSize(in(f)); },
    [](sqlite3_file* f) { return in(f)->pMethods->xDeviceCharacteristics(in(f)); },
    [](sqlite3_file* f, int i, int n, int w, void volatile** p) {
      return in(f)->pMethods->xShmMap(in(f), i, n, w, p);
    },
    [](sqlite3_file* f, int o, int n, int fl) {
      return in(f)->pMethods->xShmLock(in(f), o, n, fl);
    },
    [](sqlite3_file* f) { in(f)->pMethods->xShmBarrier(in(f)); },
    [](sqlite3_file* f, int d) { return in(f)->pMethods->xShmUnmap(in(f), d); },
    [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
      return in(f)->pMethods->xFetch(in(f), o, n, p);
    },
    [](sqlite3_file* f, sqlite3_int64 o, void* p) {
      return in(f)->pMethods->xUnfetch(in(f), o, p);
    },
};
int open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* file = reinterpret_cast<File*>(f);
  file->inner = reinterpret_cast<sqlite3_file*>(file + 1);
  file->wal = (flags & SQLITE_OPEN_WAL) != 0;
  const int rc = real->xOpen(real, name, file->inner, flags, out_flags);
  file->base.pMethods = file->inner->pMethods != nullptr ? &kMethods : nullptr;
  return rc;
}
// Registers "pause" (not the default) in this process.
void install(int ready_fd, int go_fd) {
  static sqlite3_vfs vfs;
  real = sqlite3_vfs_find(nullptr);
  ready = ready_fd;
  go = go_fd;
  vfs = *real;
  vfs.zName = "pause";
  vfs.szOsFile = static_cast<int>(sizeof(File)) + real->szOsFile;
  vfs.pAppData = nullptr;
  vfs.xOpen = open;
  sqlite3_vfs_register(&vfs, 0);
}
}  // namespace pause_vfs

class StateWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() / "state";
    fs::create_directories(state_ / "service");
    ::chmod(state_.c_str(), 0700);
    db_ = state_ / "service" / "journal.sqlite3";
    ASSERT_TRUE(in_other_process(
        db_, "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);"
             "INSERT INTO t VALUES (1, 'one');"));
    // Whatever the creation left queued is seen by the first capture; start after it.
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  ctx::testing::TempDir dir_;
  fs::path state_;
  fs::path db_;
};

TEST_F(StateWatchTest, ACommitByAnotherProcessMovesTheFingerprintAndAReaderDoesNot) {
  StateWatch watch(state_);
  const std::optional<std::string> first = watch.capture({});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(watch.capture({}), first) << "nothing happened";
  // Another process opens the database, reads it and closes it: no change.
  ASSERT_TRUE(in_other_process(db_, "SELECT count(*) FROM t;"));
  EXPECT_EQ(watch.capture({}), first) << "a reader is no change";
  // Another process commits a row: a change, seen at once.
  ASSERT_TRUE(in_other_process(db_, "INSERT INTO t VALUES (2, 'two');"));
  const std::optional<std::string> second = watch.capture({});
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second, first);
  EXPECT_EQ(watch.capture({}), second);
  // A value overwritten in place (same size, one letter) is seen too. (A row rewritten with
  // its own values is not a change: SQLite then writes nothing, and commits nothing.)
  ASSERT_TRUE(in_other_process(db_, "UPDATE t SET v = 'One' WHERE k = 1;"));
  const std::optional<std::string> third = watch.capture({});
  ASSERT_TRUE(third.has_value());
  EXPECT_NE(third, second);
  // Without waiting, the same.
  ASSERT_TRUE(in_other_process(db_, "DELETE FROM t WHERE k = 2;"));
  const std::optional<std::string> fourth = watch.capture({}, /*wait=*/false);
  ASSERT_TRUE(fourth.has_value());
  EXPECT_NE(fourth, third);
}

// A database in service/ in rollback-journal mode (no WAL-index to read) is watched through a
// read of its own: its commits move the fingerprint, its readers do not, and watching it creates
// no -shm file beside it.
TEST_F(StateWatchTest, ADatabaseNotInWalModeIsWatchedWithoutAWalIndex) {
  const fs::path other = state_ / "service" / "other.sqlite3";
  ASSERT_TRUE(in_other_process(other, "PRAGMA journal_mode=DELETE; CREATE TABLE t(k INTEGER);"));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  StateWatch watch(state_);
  const std::optional<std::string> first = watch.capture({});
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(in_other_process(other, "SELECT count(*) FROM t;"));
  EXPECT_EQ(watch.capture({}), first) << "a reader is no change";
  ASSERT_TRUE(in_other_process(other, "INSERT INTO t VALUES (1);"));
  const std::optional<std::string> second = watch.capture({});
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second, first);
  EXPECT_EQ(watch.capture({}), second);
  EXPECT_FALSE(fs::exists(state_ / "service" / "other.sqlite3-shm"));
}

// Another process's commit is caught between writing its log frames and publishing them: the
// capture taken then has drained the -wal write event while a reader still sees the old rows.
// When the commit is published (no further event), the fingerprint moves all the same, so a
// reply computed from the old rows around that capture is never taken as current.
TEST_F(StateWatchTest, ACommitPublishedAfterTheCaptureThatSawItsLogWriteMovesTheFingerprint) {
  StateWatch watch(state_);
  ASSERT_TRUE(watch.capture({}).has_value());
  int ready[2];
  int go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(go[1]);
    pause_vfs::install(ready[1], go[0]);
    sqlite3* handle = nullptr;
    int code =
        sqlite3_open_v2(db_.c_str(), &handle, SQLITE_OPEN_READWRITE, "pause") == SQLITE_OK &&
                sqlite3_exec(handle, "PRAGMA synchronous=FULL; INSERT INTO t VALUES (3, 'three');",
                             nullptr, nullptr, nullptr) == SQLITE_OK
            ? 0
            : 1;
    if (sqlite3_close(handle) != SQLITE_OK) code = 1;
    ::_exit(code);
  }
  ::close(ready[1]);
  ::close(go[0]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the child never reached its log sync";
  const std::optional<std::string> before = watch.capture({});
  EXPECT_EQ(ctx::testing::journal::raw_count(db_, "t"), 1) << "the commit is not visible yet";
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  ::close(go[1]);
  EXPECT_EQ(ctx::testing::journal::raw_count(db_, "t"), 2);
  ASSERT_TRUE(before.has_value());
  const std::optional<std::string> after = watch.capture({});
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after, before);
}

// The database replaced by another file under its name (a rename, as an attacker or a restore
// would do it): a change, even when the new file holds the same bytes.
TEST_F(StateWatchTest, TheDatabaseReplacedUnderItsNameMovesTheFingerprint) {
  StateWatch watch(state_);
  const std::optional<std::string> first = watch.capture({});
  ASSERT_TRUE(first.has_value());
  const fs::path copy = state_ / "copy.sqlite3";
  ASSERT_TRUE(in_other_process(db_, "VACUUM INTO '" + copy.string() + "';"));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const std::optional<std::string> before = watch.capture({});
  ASSERT_TRUE(before.has_value());
  EXPECT_NE(before, first) << "a new file in the state dir is a change";
  fs::rename(copy, db_);
  const std::optional<std::string> after = watch.capture({});
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after, before);
}

}  // namespace
}  // namespace ctx::runtime::hooks
