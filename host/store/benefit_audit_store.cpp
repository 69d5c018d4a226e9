#include "host/store/benefit_audit_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <tuple>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"

namespace ctx::store {
namespace {

using engine::planning::BenefitAuditCorruption;
using engine::planning::BenefitAuditDigestCollision;
using engine::planning::BenefitAuditStoreUnavailable;
using engine::planning::BenefitSelectionResult;
using engine::planning::kMaxBenefitResultJsonBytes;

constexpr int kBusyTimeoutMs = 30'000;
constexpr const char* kTableSql =
    "CREATE TABLE benefit_audit_results (\n"
    "    result_digest   TEXT PRIMARY KEY NOT NULL,\n"
    "    result_json     BLOB NOT NULL,\n"
    "    byte_length     INTEGER NOT NULL CHECK (byte_length >= 0),\n"
    "    content_digest  TEXT NOT NULL\n"
    ") WITHOUT ROWID";

// Maps a SQLite failure to the store's error vocabulary: operational problems are Unavailable
// (the planner's one fail-soft path), anything else means the file is not what we wrote.
[[noreturn]] void fail(sqlite3* db, int rc, const char* what) {
  const int primary = rc & 0xff;
  const std::string detail = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      throw BenefitAuditStoreUnavailable("benefit audit store is unavailable: " + detail);
    default:
      throw BenefitAuditCorruption("benefit audit database operation is invalid: " + detail);
  }
}

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    const int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  void bind_text(int i, std::string_view v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_blob(int i, std::string_view v) {
    check(sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_int(int i, std::int64_t v) { check(sqlite3_bind_int64(stmt_, i, v)); }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, "step");
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, "exec");
}

void require_private_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw BenefitAuditStoreUnavailable("benefit audit store directory could not be created");
    ::chmod(dir.c_str(), 0700);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    throw BenefitAuditStoreUnavailable(
        "benefit audit store parent must be a real directory owned by the current user");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), st.st_mode & 0700) != 0) {
    throw BenefitAuditStoreUnavailable("benefit audit store parent must be owner-private (0700)");
  }
}

void require_private_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      throw BenefitAuditStoreUnavailable("benefit audit store file could not be created");
    }
    if (fd >= 0) ::close(fd);
    if (::lstat(path.c_str(), &st) != 0) {
      throw BenefitAuditStoreUnavailable("benefit audit store file could not be created");
    }
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
    throw BenefitAuditStoreUnavailable(
        "benefit audit store file must be a single-link regular file owned by the current user");
  }
  if ((st.st_mode & 077) != 0 || (st.st_mode & 0600) != 0600) {
    throw BenefitAuditStoreUnavailable("benefit audit store file must be owner-private (0600)");
  }
}

void require_schema(sqlite3* db) {
  Statement objects(db,
                    "SELECT type, name, tbl_name, sql FROM sqlite_master"
                    " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name");
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> rows;
  while (objects.step()) {
    auto col = [&](int i) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(objects.get(), i));
      return p ? std::string(p) : std::string();
    };
    rows.emplace_back(col(0), col(1), col(2), col(3));
  }
  if (rows.size() != 1 ||
      rows[0] != std::make_tuple(std::string("table"), std::string("benefit_audit_results"),
                                 std::string("benefit_audit_results"), std::string(kTableSql))) {
    throw BenefitAuditCorruption("benefit audit database objects are invalid");
  }
}

struct StoredRow {
  std::string payload;
  std::optional<std::int64_t> byte_length;
  std::optional<std::string> content_digest;
};

// Reads the row for `digest` with its types checked in SQL, as the original does.
std::optional<StoredRow> read_row(sqlite3* db, std::string_view digest) {
  Statement select(db,
                   "SELECT CASE WHEN typeof(result_json) = 'blob' AND length(result_json) <= ?1"
                   " THEN result_json ELSE NULL END, length(result_json),"
                   " CASE WHEN typeof(byte_length) = 'integer' THEN byte_length ELSE NULL END,"
                   " CASE WHEN typeof(content_digest) = 'text' AND length(content_digest) = 64"
                   " THEN content_digest ELSE NULL END"
                   " FROM benefit_audit_results WHERE result_digest = ?2");
  select.bind_int(1, static_cast<std::int64_t>(kMaxBenefitResultJsonBytes));
  select.bind_text(2, digest);
  if (!select.step()) return std::nullopt;
  sqlite3_stmt* s = select.get();
  const std::int64_t actual_length = sqlite3_column_int64(s, 1);
  if (sqlite3_column_type(s, 0) != SQLITE_BLOB || actual_length < 0 ||
      actual_length > static_cast<std::int64_t>(kMaxBenefitResultJsonBytes)) {
    throw BenefitAuditCorruption("persisted benefit result is not a bounded byte string");
  }
  StoredRow row;
  const auto* data = static_cast<const char*>(sqlite3_column_blob(s, 0));
  row.payload.assign(data ? data : "", static_cast<std::size_t>(sqlite3_column_bytes(s, 0)));
  if (sqlite3_column_type(s, 2) == SQLITE_INTEGER) row.byte_length = sqlite3_column_int64(s, 2);
  if (sqlite3_column_type(s, 3) == SQLITE_TEXT) {
    row.content_digest = reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
  }
  return row;
}

void validate_metadata(const StoredRow& row) {
  if (!row.byte_length || *row.byte_length != static_cast<std::int64_t>(row.payload.size())) {
    throw BenefitAuditCorruption("persisted benefit result byte length is invalid");
  }
  if (!row.content_digest || core::sha256_hex(row.payload) != *row.content_digest) {
    throw BenefitAuditCorruption("persisted benefit result content digest is invalid");
  }
}

BenefitSelectionResult decode(const std::string& payload, std::string_view digest) {
  std::optional<BenefitSelectionResult> result;
  try {
    result.emplace(BenefitSelectionResult::from_json(payload));
  } catch (const InvalidArgument&) {
    throw BenefitAuditCorruption("persisted benefit result is invalid");
  }
  if (result->result_digest() != digest) {
    throw BenefitAuditCorruption("persisted benefit result is bound to the wrong digest");
  }
  return std::move(*result);
}

class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (db_ != nullptr) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, "COMMIT");
    db_ = nullptr;
  }

 private:
  sqlite3* db_;
};

}  // namespace

std::unique_ptr<SqliteBenefitAuditStore> SqliteBenefitAuditStore::open(
    const std::filesystem::path& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  if (ec) throw BenefitAuditStoreUnavailable("benefit audit store path is unavailable");
  require_private_directory(absolute.parent_path());
  require_private_file(absolute);
  std::unique_ptr<SqliteBenefitAuditStore> store(new SqliteBenefitAuditStore());
  const int rc = sqlite3_open_v2(absolute.c_str(), &store->db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) fail(store->db_, rc, "open");
  sqlite3* db = store->db_;
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  exec(db, "PRAGMA trusted_schema = OFF");
  {
    Transaction tx(db);
    Statement count(db, "SELECT COUNT(*) FROM sqlite_master");
    count.step();
    if (sqlite3_column_int64(count.get(), 0) == 0) exec(db, kTableSql);
    require_schema(db);
    tx.commit();
  }
  exec(db, "PRAGMA journal_mode = WAL");
  exec(db, "PRAGMA synchronous = FULL");
  for (const char* suffix : {"-wal", "-shm"}) {
    ::chmod((absolute.string() + suffix).c_str(), 0600);
  }
  return store;
}

SqliteBenefitAuditStore::~SqliteBenefitAuditStore() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

std::string SqliteBenefitAuditStore::store(const BenefitSelectionResult& result) {
  // The result's own canonical text, encoded once when it was built.
  const std::string& payload = result.to_json();
  std::lock_guard lock(mutex_);
  Transaction tx(db_);
  if (const auto row = read_row(db_, result.result_digest())) {
    if (row->payload != payload) {
      throw BenefitAuditDigestCollision("benefit result digest is already bound to different bytes");
    }
    // The stored bytes equal the canonical encoding of a validated result, so decoding them could
    // only reproduce `result`; the row's own length and content digest are still checked.
    validate_metadata(*row);
    tx.commit();
    return result.result_digest();
  }
  const std::string content_digest = core::sha256_hex(payload);
  Statement insert(db_,
                   "INSERT INTO benefit_audit_results(result_digest, result_json, byte_length,"
                   " content_digest) VALUES(?1, ?2, ?3, ?4)");
  insert.bind_text(1, result.result_digest());
  insert.bind_blob(2, payload);
  insert.bind_int(3, static_cast<std::int64_t>(payload.size()));
  insert.bind_text(4, content_digest);
  insert.step();
  tx.commit();
  return result.result_digest();
}

BenefitSelectionResult SqliteBenefitAuditStore::load(std::string_view result_digest) const {
  if (!engine::planning::is_digest(result_digest)) {
    throw InvalidArgument("result_digest must be a lowercase SHA-256 digest");
  }
  std::lock_guard lock(mutex_);
  const auto row = read_row(db_, result_digest);
  if (!row) throw NotFound("no benefit result is stored under this digest");
  validate_metadata(*row);
  return decode(row->payload, result_digest);
}

}  // namespace ctx::store
