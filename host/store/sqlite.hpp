// The one SQLite layer every store uses: Database (one connection, busy timeout, a statement
// cache keyed by static SQL), Statement, Transaction (BEGIN IMMEDIATE / DEFERRED, rolled back
// unless committed) and migrate() (PRAGMA user_version, ordered migrations). Failures become
// typed errors with SQLite's message: SQLITE_BUSY/LOCKED → engine::StoreBusy (retryable),
// SQLITE_CORRUPT/NOTADB → engine::JournalCorruption, anything else → engine::EngineStoreError.
// A Database and its Statements are used by one thread at a time.
#ifndef CTX_HOST_STORE_SQLITE_HPP_
#define CTX_HOST_STORE_SQLITE_HPP_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <unordered_map>

#include "host/engine/journal_store.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace ctx::store {

// Throws the typed error for SQLite result `rc` (never returns). `what` names the operation.
[[noreturn]] void throw_sqlite_error(int rc, std::string_view what, sqlite3* db);

class Statement;
class CachedStatement;

// SQL text with static storage duration (a string literal): the statement cache keys on it.
class StaticSql {
 public:
  template <std::size_t N>
  consteval StaticSql(const char (&text)[N]) noexcept : text_(text, N - 1) {}  // NOLINT
  std::string_view text() const noexcept { return text_; }

 private:
  std::string_view text_;
};

// The file was written by a newer schema than this build knows: "<what> has newer schema
// version N (this build reads up to M)". Code: kFailedPrecondition. Retry: no (upgrade ctx).
class NewerSchemaVersion : public engine::EngineStoreError {
 public:
  NewerSchemaVersion(std::string_view what, int found, int supported);
  int found() const noexcept { return found_; }

 private:
  int found_;
};

class Database {
 public:
  // kImmutableReadOnly: a read-only snapshot no process changes (URI mode=ro&immutable=1:
  // no locks, no sidecar files).
  enum class Mode { kReadWriteCreate, kReadWrite, kReadOnly, kImmutableReadOnly };

  // Opens (and for kReadWriteCreate creates) the file at `path`, sets busy_timeout first.
  // Errors: StoreBusy, JournalCorruption (not a database), EngineStoreError.
  Database(const std::filesystem::path& path, Mode mode, int busy_timeout_ms);
  // A read-only in-memory database over a copy of `image`, the bytes of a database file (no
  // file, no locks, no sidecars): what the caller read and checked is exactly what is queried.
  // Errors: JournalCorruption (not a database), EngineStoreError.
  static std::unique_ptr<Database> from_image(std::string_view image);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements without results (pragmas, DDL).
  void exec(std::string_view sql);
  // PRAGMA journal_mode = WAL, tried again (5 ms apart, up to the busy timeout) while it fails
  // busy: two connections converting one file at once each hold a shared lock and want the
  // exclusive one, and SQLite refuses one of them at once, without the busy handler.
  // Errors: as exec (StoreBusy once the busy timeout has passed).
  void use_wal();

  // Prepares one statement. REQUIRES: `sql` is a single statement.
  Statement prepare(std::string_view sql);

  // A statement prepared once per connection and reused; it is reset (bindings cleared) when
  // the returned lease ends, so it never keeps an implicit transaction open.
  CachedStatement cached(StaticSql sql);

  // The number of rows the last INSERT/UPDATE/DELETE changed.
  int changes() const noexcept;
  // The rowid of the last successful INSERT on this connection.
  std::int64_t last_insert_rowid() const noexcept;
  // True when the main database is read-only on this connection.
  bool read_only() const noexcept;

  sqlite3* handle() const noexcept { return db_; }

  // WAL pages: SQLite's automatic checkpoint; the log length at which a writer checkpoints it
  // (and truncates it) when its connection closes.
  static constexpr int kAutoCheckpointFrames = 1000;
  static constexpr int kCloseCheckpointFrames = 128;

 private:
  static int on_wal_commit(void* self, sqlite3* db, const char* name, int frames);

  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = 0;
  int wal_frames_ = 0;  // pages in the log after this connection's last commit (WAL mode)
  bool image_ = false;  // from_image: a read-only in-memory database
  std::unordered_map<const char*, std::unique_ptr<Statement>> cache_;  // finalized before close
};

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) noexcept : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds by 1-based index. Text is copied by SQLite (SQLITE_TRANSIENT).
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind_optional(int index, const std::optional<std::string>& text);  // nullopt: NULL
  Statement& bind_null(int index);
  Statement& bind(int index, double value);
  Statement& bind_blob(int index, std::string_view bytes);  // copied (SQLITE_TRANSIENT)

  // Steps once: true when a row is available, false when done. Errors: as the file comment.
  bool step();
  // Steps to completion, expecting no row.
  void run();
  // Resets to run again with new bindings (bindings are cleared).
  void reset() noexcept;

  bool is_null(int column) const noexcept;
  std::string text(int column) const;                    // NULL reads as ""
  std::optional<std::string> optional_text(int column) const;
  std::int64_t integer(int column) const noexcept;
  // True when the column holds exactly the INTEGER storage class.
  bool is_integer(int column) const noexcept;
  bool is_blob(int column) const noexcept;
  bool is_text(int column) const noexcept;
  std::string blob(int column) const;  // the column's bytes as a BLOB; NULL reads as ""

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// A lease on a cached statement; resets it on destruction.
class CachedStatement {
 public:
  explicit CachedStatement(Statement& statement) noexcept : statement_(&statement) {}
  ~CachedStatement();
  CachedStatement(const CachedStatement&) = delete;
  CachedStatement& operator=(const CachedStatement&) = delete;
  Statement* operator->() const noexcept { return statement_; }
  Statement& operator*() const noexcept { return *statement_; }

 private:
  Statement* statement_;
};

// A transaction on `db`: BEGIN IMMEDIATE (write, takes the write lock now, honouring
// busy_timeout) or BEGIN DEFERRED (consistent read). Rolls back in the destructor unless
// commit() succeeded.
class Transaction {
 public:
  enum class Kind { kImmediate, kDeferred };
  Transaction(Database& db, Kind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Database& db_;
  bool open_ = false;
};

// A row layout: for each column of a result row (0-based; its insert parameter is index + 1),
// the struct field holding its text, or nullptr for a column read some other way.
template <typename Row, std::size_t N>
using TextColumns = std::string Row::* const[N];

template <typename Row, std::size_t N>
void read_text_columns(const Statement& row, const TextColumns<Row, N>& columns, Row& out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (columns[i] != nullptr) out.*columns[i] = row.text(static_cast<int>(i));
  }
}

template <typename Row, std::size_t N>
void bind_text_columns(Statement& insert, const TextColumns<Row, N>& columns, const Row& in) {
  for (std::size_t i = 0; i < N; ++i) {
    if (columns[i] != nullptr) insert.bind(static_cast<int>(i) + 1, in.*columns[i]);
  }
}

// One step of a schema's history: the statements that bring version `version - 1` to `version`.
struct Migration {
  int version;
  std::span<const std::string_view> statements;
};

// Brings `db` to the last of `migrations` (versions 1, 2, ... in order): in one BEGIN IMMEDIATE
// runs every migration above PRAGMA user_version, then sets user_version. A file with
// user_version 0 that already holds tables was written before versioning: it is taken to be at
// `unversioned_version`. Returns the version the file was at.
// Errors: NewerSchemaVersion (user_version above the last migration), StoreBusy,
//   JournalCorruption ("<what> schema version N does not migrate to M: ..." — the file does not
//   hold the schema its version names).
int migrate(Database& db, std::string_view what, std::span<const Migration> migrations,
            int unversioned_version);

// For a file this build only reads (no migration possible): returns its PRAGMA user_version
// (0 read as `unversioned_version`). Errors: NewerSchemaVersion (above `supported`), StoreBusy,
//   JournalCorruption, EngineStoreError.
int require_schema_version(Database& db, std::string_view what, int supported,
                           int unversioned_version);

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_SQLITE_HPP_
