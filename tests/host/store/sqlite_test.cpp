// The SQLite RAII wrapper: statements, NULLs, cached statements, transactions that roll back
// unless committed, and error mapping (busy → StoreBusy, garbage → JournalCorruption, other →
// EngineStoreError with SQLite's message), and a WAL database's log across closes.
#include "host/store/sqlite.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>
#include <thread>
#include <barrier>
#include <atomic>
#include <fstream>
#include <iterator>
#include <string>

#include "host/engine/journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/journal_fixtures.hpp"

namespace ctx::store {
namespace {

using ctx::testing::journal::TempDir;

TEST(Sqlite, StatementsBindAndReadValues) {
  Database db(":memory:", Database::Mode::kReadWriteCreate, 100);
  db.exec("CREATE TABLE t (a TEXT, b INTEGER, c TEXT)");
  auto insert = db.prepare("INSERT INTO t VALUES (?1, ?2, ?3)");
  insert.bind(1, std::string_view("x\0y", 3)).bind(2, std::int64_t{1} << 40).bind_null(3);
  insert.run();
  EXPECT_EQ(db.changes(), 1);
  auto select = db.prepare("SELECT a, b, c FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.text(0), std::string("x\0y", 3));
  EXPECT_TRUE(select.is_integer(1));
  EXPECT_EQ(select.integer(1), std::int64_t{1} << 40);
  EXPECT_TRUE(select.is_null(2));
  EXPECT_EQ(select.optional_text(2), std::nullopt);
  EXPECT_FALSE(select.step());
}

TEST(Sqlite, CachedStatementsResetBetweenUses) {
  Database db(":memory:", Database::Mode::kReadWriteCreate, 100);
  db.exec("CREATE TABLE t (v INTEGER)");
  for (std::int64_t i = 0; i < 3; ++i) {
    auto insert = db.cached("INSERT INTO t VALUES (?1)");
    insert->bind(1, i);
    insert->run();
  }
  {
    auto count = db.cached("SELECT COUNT(*) FROM t");
    ASSERT_TRUE(count->step());
    EXPECT_EQ(count->integer(0), 3);
  }  // lease ends mid-result: the statement is reset, so a transaction can begin
  Transaction tx(db, Transaction::Kind::kImmediate);
  tx.commit();
}

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  Database db(":memory:", Database::Mode::kReadWriteCreate, 100);
  db.exec("CREATE TABLE t (v INTEGER)");
  {
    Transaction tx(db, Transaction::Kind::kImmediate);
    db.exec("INSERT INTO t VALUES (1)");
  }
  {
    Transaction tx(db, Transaction::Kind::kImmediate);
    db.exec("INSERT INTO t VALUES (2)");
    tx.commit();
  }
  auto select = db.prepare("SELECT group_concat(v) FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.text(0), "2");
}

TEST(Sqlite, ErrorsAreTyped) {
  TempDir dir;
  auto path = dir.path() / "db.sqlite3";
  Database a(path, Database::Mode::kReadWriteCreate, 20);
  a.exec("CREATE TABLE t (v INTEGER)");
  Database b(path, Database::Mode::kReadWrite, 20);
  Transaction hold(a, Transaction::Kind::kImmediate);
  try {
    Transaction blocked(b, Transaction::Kind::kImmediate);
    FAIL() << "expected StoreBusy";
  } catch (const engine::StoreBusy& busy) {
    EXPECT_NE(std::string(busy.what()).find("locked"), std::string::npos) << busy.what();
  }
  CTX_EXPECT_THROW(a.exec("SELECT * FROM missing"), engine::EngineStoreError, "no such table");
  CTX_EXPECT_THROW(a.prepare("NOT SQL"), engine::EngineStoreError, "syntax error");

  auto garbage = dir.path() / "garbage.sqlite3";
  {
    std::ofstream out(garbage);
    out << std::string(4096, 'g');
  }
  Database g(garbage, Database::Mode::kReadWrite, 20);
  EXPECT_THROW(g.exec("SELECT * FROM sqlite_master"), engine::JournalCorruption);
  CTX_EXPECT_THROW(Database(dir.path() / "absent.sqlite3", Database::Mode::kReadWrite, 20),
                   engine::EngineStoreError, "sqlite open failed");
}

constexpr std::string_view kCreate[] = {"CREATE TABLE t (v INTEGER)"};
constexpr std::string_view kFill[] = {"INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)"};
constexpr Migration kTwo[] = {{1, kCreate}, {2, kFill}};

TEST(Sqlite, MigrationsRunInOrderOnceAndStampTheVersion) {
  Database db(":memory:", Database::Mode::kReadWriteCreate, 100);
  EXPECT_EQ(migrate(db, "test file", std::span(kTwo).first(1), 1), 0);
  EXPECT_EQ(migrate(db, "test file", kTwo, 1), 1);  // only migration 2 runs
  EXPECT_EQ(migrate(db, "test file", kTwo, 1), 2);  // nothing runs
  auto rows = db.prepare("SELECT COUNT(*) FROM t");
  ASSERT_TRUE(rows.step());
  EXPECT_EQ(rows.integer(0), 2);
  auto version = db.prepare("PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.integer(0), 2);
}

TEST(Sqlite, AFileFromANewerSchemaOrWithoutItsVersionsSchemaIsRefused) {
  Database newer(":memory:", Database::Mode::kReadWriteCreate, 100);
  newer.exec("PRAGMA user_version = 3");
  CTX_EXPECT_THROW(migrate(newer, "test file", kTwo, 1), NewerSchemaVersion,
                   "test file has newer schema version 3 (this build reads up to 2)");
  // Unversioned but holding tables: taken to be at version 1, whose table is missing.
  Database odd(":memory:", Database::Mode::kReadWriteCreate, 100);
  odd.exec("CREATE TABLE other (x INTEGER)");
  CTX_EXPECT_THROW(migrate(odd, "test file", kTwo, 1), engine::JournalCorruption,
                   "test file schema version 1 does not migrate to 2");
}

// Eight connections, released together on a fresh rollback-journal file, all switch it to WAL:
// none is refused busy (as a plain PRAGMA can be: both hold a shared lock, both want the
// exclusive one, and SQLite fails one at once), and the file ends in WAL mode.
TEST(Sqlite, ConnectionsSwitchingOneFileToWalAtOnceAllSucceed) {
  constexpr int kConnections = 8;
  constexpr int kRounds = 25;
  TempDir dir;
  for (int round = 0; round < kRounds; ++round) {
    const auto path = dir.path() / ("race-" + std::to_string(round) + ".sqlite3");
    {
      Database db(path, Database::Mode::kReadWriteCreate, 100);
      db.exec("CREATE TABLE t (v TEXT)");
    }
    std::barrier start(kConnections);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kConnections; ++i) {
      threads.emplace_back([&] {
        try {
          Database db(path, Database::Mode::kReadWrite, 2000);
          start.arrive_and_wait();
          db.use_wal();
        } catch (const std::exception&) {
          ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0) << "round " << round;
    Database db(path, Database::Mode::kReadOnly, 100);
    auto mode = db.prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.text(0), "wal");
  }
}

// A WAL database keeps a short log when its last connection closes (no checkpoint, no delete),
// every commit readable by the next connection; a writer whose log reached
// kCloseCheckpointFrames pages checkpoints and truncates it at close.
TEST(Sqlite, AWalLogIsKeptAtCloseUntilItIsLongThenCheckpointedAndTruncated) {
  TempDir dir;
  const auto path = dir.path() / "wal.sqlite3";
  const std::filesystem::path wal = path.string() + "-wal";
  const std::string row(1000, 'x');  // about a quarter page
  const auto insert_rows = [&](int rows) {
    Database db(path, Database::Mode::kReadWriteCreate, 100);
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
    db.exec("CREATE TABLE IF NOT EXISTS t (v TEXT)");
    for (int i = 0; i < rows; ++i) db.prepare("INSERT INTO t VALUES (?1)").bind(1, row).run();
  };
  const auto count = [&] {
    Database db(path, Database::Mode::kReadOnly, 100);
    auto select = db.prepare("SELECT count(*) FROM t");
    EXPECT_TRUE(select.step());
    return select.integer(0);
  };
  insert_rows(10);
  ASSERT_TRUE(std::filesystem::exists(wal));
  const auto short_log = std::filesystem::file_size(wal);
  EXPECT_GT(short_log, 0u);  // not checkpointed away at close
  EXPECT_EQ(count(), 10);
  EXPECT_EQ(std::filesystem::file_size(wal), short_log);  // a reader changes nothing
  insert_rows(Database::kCloseCheckpointFrames);  // one commit (one page or more) per row
  EXPECT_EQ(std::filesystem::file_size(wal), 0u);
  EXPECT_EQ(count(), 10 + Database::kCloseCheckpointFrames);
}

// An image is the bytes of a database file, queried in memory and never written; bytes that are
// not a database are corruption.
TEST(Sqlite, AnImageIsAReadOnlyInMemoryDatabaseOfThoseBytes) {
  TempDir dir;
  const auto path = dir.path() / "image.sqlite3";
  {
    Database db(path, Database::Mode::kReadWriteCreate, 100);
    db.exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('x'), ('y');");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto image = Database::from_image(bytes);
  EXPECT_TRUE(image->read_only());
  auto select = image->prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.integer(0), 2);
  EXPECT_THROW(image->exec("INSERT INTO t VALUES ('z')"), engine::EngineStoreError);
  EXPECT_THROW(image->exec("CREATE TABLE u (v TEXT)"), engine::EngineStoreError);
  std::string garbage(4096, 'g');
  EXPECT_THROW(Database::from_image(garbage), engine::JournalCorruption);
}

}  // namespace
}  // namespace ctx::store
