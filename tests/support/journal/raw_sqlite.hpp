// Raw SQLite access for the store tests: count rows, read a value or run SQL on a journal file
// behind the store's back (tamper and recovery scenarios), and read the file's bytes.
// Header-only; each call opens its own connection.
#ifndef CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// The first column of the first row `sql` returns on the database at `path`, as text ("" for no
// row or NULL; a failing statement is a test failure).
inline std::string raw_text(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
  std::string text;
  if (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* value = sqlite3_column_text(stmt, 0);
    if (value != nullptr) {
      text.assign(reinterpret_cast<const char*>(value),
                  static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0)));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return text;
}

// Every byte of the file at `path` ("" when it does not exist).
inline std::string raw_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ctx::testing::journal

#endif  // CTX_TESTS_SUPPORT_JOURNAL_RAW_SQLITE_HPP_
