// Raw SQLite access for the store tests: count rows or run SQL on a journal file behind the
// store's back (tamper and recovery scenarios). Header-only; each call opens its own connection.
#ifndef CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ctx::testing::journal {

// Runs `sql` on the database at `path`; a failure is a fatal test failure with SQLite's message.
inline void raw_exec(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// SELECT COUNT(*) of `table` in the database at `path`.
inline std::int64_t raw_count(const std::filesystem::path& path, const std::string& table) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string sql = "SELECT COUNT(*) FROM " + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  std::int64_t count = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return count;
}

}  // namespace ctx::testing::journal

#endif  // CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_
