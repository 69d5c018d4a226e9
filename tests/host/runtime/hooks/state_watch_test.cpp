// StateWatch (state_watch.hpp) over a real state dir with a WAL database in service/, changed by
// real other processes (fork): a commit moves the fingerprint — a row added, a value
// overwritten in place, a row removed — while a process that only opens, reads and closes the
// database does not, nor does time passing.
#include "host/runtime/hooks/state_watch.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

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
