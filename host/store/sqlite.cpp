#include "host/store/sqlite.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "host/engine/journal_store.hpp"

namespace ctx::store {

NewerSchemaVersion::NewerSchemaVersion(std::string_view what, int found, int supported)
    : engine::EngineStoreError(std::string(what) + " has newer schema version " +
                                   std::to_string(found) + " (this build reads up to " +
                                   std::to_string(supported) + ")",
                               ErrorCode::kFailedPrecondition),
      found_(found) {}

void throw_sqlite_error(int rc, std::string_view what, sqlite3* db) {
  std::string message = "sqlite ";
  message += what;
  message += " failed: ";
  message += (db != nullptr && sqlite3_errcode(db) == rc) ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw engine::StoreBusy(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      throw engine::JournalCorruption(message);
    default:
      throw engine::EngineStoreError(message);
  }
}

Database::Database(const std::filesystem::path& path, Mode mode, int busy_timeout_ms) {
  int flags = SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW;
  switch (mode) {
    case Mode::kReadWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case Mode::kReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::kReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Mode::kImmutableReadOnly: flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI; break;
  }
  std::string name = path.string();
  if (mode == Mode::kImmutableReadOnly) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string uri = "file:";
    for (unsigned char c : name) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
        uri.push_back(static_cast<char>(c));
      } else {
        uri.push_back('%');
        uri.push_back(kHex[c >> 4]);
        uri.push_back(kHex[c & 15]);
      }
    }
    name = uri + "?mode=ro&immutable=1";
  }
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    if ((rc & 0xff) == SQLITE_BUSY) throw engine::StoreBusy("sqlite open failed: " + message);
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT) {
      throw engine::JournalCorruption("sqlite open failed: " + message);
    }
    throw engine::EngineStoreError("sqlite open failed: " + message);
  }
  sqlite3_extended_result_codes(db_, 0);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  busy_timeout_ms_ = busy_timeout_ms;
  // A WAL database keeps its log when the last connection closes: each commit made it durable
  // already, and a checkpoint-and-delete at every close costs three fsyncs (plus a directory
  // fsync to re-create the log at the next open) — most of a one-shot `ctx hook`'s. The price is
  // that the next process's first connection rebuilds the log's index by reading it, so the log
  // is kept short: a connection that wrote checkpoints it at close once it holds
  // kCloseCheckpointFrames pages, and the usual automatic checkpoint still runs at
  // kAutoCheckpointFrames. No effect on rollback-journal databases.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_wal_hook(db_, &Database::on_wal_commit, this);
}

std::unique_ptr<Database> Database::from_image(std::string_view image) {
  auto db = std::make_unique<Database>(":memory:", Mode::kReadOnly, 0);
  const auto size = static_cast<sqlite3_int64>(image.size());
  auto* buffer = static_cast<unsigned char*>(sqlite3_malloc64(image.empty() ? 1 : image.size()));
  if (buffer == nullptr) throw engine::EngineStoreError("sqlite image: out of memory");
  std::memcpy(buffer, image.data(), image.size());
  // Takes the buffer over (freed on close, or now when it fails).
  const int rc = sqlite3_deserialize(db->db_, "main", buffer, size, size,
                                     SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) {
    throw engine::EngineStoreError(std::string("sqlite image cannot be opened: ") +
                                   sqlite3_errstr(rc));
  }
  db->image_ = true;  // SQLITE_DESERIALIZE_READONLY: every write fails with SQLITE_READONLY
  // A buffer that is not a database fails on first use; fail here, typed as corruption.
  db->exec("SELECT count(*) FROM sqlite_master");
  return db;
}

int Database::on_wal_commit(void* self, sqlite3* db, const char* name, int frames) {
  static_cast<Database*>(self)->wal_frames_ = frames;
  // What SQLite's own hook (replaced by this one) does.
  if (frames >= kAutoCheckpointFrames) {
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  return SQLITE_OK;
}

Database::~Database() {
  cache_.clear();
  if (wal_frames_ >= kCloseCheckpointFrames) {
    // Never waits: another connection reading or writing makes it a no-op (SQLITE_BUSY).
    sqlite3_busy_timeout(db_, 0);
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  }
  sqlite3_close_v2(db_);
}

CachedStatement Database::cached(StaticSql sql) {
  auto it = cache_.find(sql.text().data());
  if (it == cache_.end()) {
    it = cache_.emplace(sql.text().data(), std::make_unique<Statement>(prepare(sql.text()))).first;
  }
  return CachedStatement(*it->second);
}

CachedStatement::~CachedStatement() { statement_->reset(); }

void Database::exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "exec", db_);
}

void Database::use_wal() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
  for (;;) {
    const int rc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
      throw_sqlite_error(rc, "exec", db_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "prepare", db_);
  return Statement(db_, stmt);
}

int Database::changes() const noexcept { return sqlite3_changes(db_); }

std::int64_t Database::last_insert_rowid() const noexcept { return sqlite3_last_insert_rowid(db_); }

bool Database::read_only() const noexcept {
  return image_ || sqlite3_db_readonly(db_, "main") == 1;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement& Statement::bind(int index, std::string_view text) {
  int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "bind", db_);
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "bind", db_);
  return *this;
}

Statement& Statement::bind_optional(int index, const std::optional<std::string>& text) {
  return text ? bind(index, std::string_view(*text)) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "bind", db_);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "bind", db_);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throw_sqlite_error(rc, "bind", db_);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  throw_sqlite_error(rc, "step", db_);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const noexcept {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::string Statement::text(int column) const {
  const unsigned char* data = sqlite3_column_text(stmt_, column);
  if (data == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(data),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

std::int64_t Statement::integer(int column) const noexcept {
  return sqlite3_column_int64(stmt_, column);
}

bool Statement::is_integer(int column) const noexcept {
  return sqlite3_column_type(stmt_, column) == SQLITE_INTEGER;
}

bool Statement::is_blob(int column) const noexcept {
  return sqlite3_column_type(stmt_, column) == SQLITE_BLOB;
}

bool Statement::is_text(int column) const noexcept {
  return sqlite3_column_type(stmt_, column) == SQLITE_TEXT;
}

std::string Statement::blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  if (data == nullptr) return {};
  return std::string(static_cast<const char*>(data),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

// BEGIN / COMMIT / ROLLBACK run as cached statements (parsed once per connection, not per call).
Transaction::Transaction(Database& db, Kind kind) : db_(db) {
  if (kind == Kind::kImmediate) {
    db_.cached("BEGIN IMMEDIATE")->run();
  } else {
    db_.cached("BEGIN DEFERRED")->run();
  }
  open_ = true;
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    db_.cached("ROLLBACK")->run();
  } catch (...) {
    // SQLite may have rolled the transaction back itself (after an I/O or full-disk error); a
    // statement that could not even be prepared falls back to the unprepared form.
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  db_.cached("COMMIT")->run();
  open_ = false;
}

int migrate(Database& db, std::string_view what, std::span<const Migration> migrations,
            int unversioned_version) {
  const int latest = migrations.empty() ? 0 : migrations.back().version;
  Transaction tx(db, Transaction::Kind::kImmediate);
  int stored = 0;
  {
    auto stmt = db.prepare("PRAGMA user_version");
    if (stmt.step()) stored = static_cast<int>(stmt.integer(0));
  }
  int version = stored;
  if (version == 0) {
    auto tables = db.prepare("SELECT COUNT(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
    if (tables.step() && tables.integer(0) > 0) version = unversioned_version;
  }
  if (version > latest) throw NewerSchemaVersion(what, version, latest);
  const int found = version;
  for (const Migration& migration : migrations) {
    CTX_CHECK(migration.version >= 1);
    if (migration.version <= version) continue;
    CTX_CHECK(migration.version == version + 1);
    try {
      for (std::string_view sql : migration.statements) db.exec(sql);
    } catch (const engine::StoreBusy&) {
      throw;
    } catch (const engine::EngineStoreError& e) {
      throw engine::JournalCorruption(std::string(what) + " schema version " +
                                      std::to_string(version) + " does not migrate to " +
                                      std::to_string(migration.version) + ": " + e.what());
    }
    version = migration.version;
  }
  if (stored != version) {
    db.exec("PRAGMA user_version = " + std::to_string(version));
  }
  tx.commit();
  return found;
}

int require_schema_version(Database& db, std::string_view what, int supported,
                           int unversioned_version) {
  int version = 0;
  {
    auto stmt = db.prepare("PRAGMA user_version");
    if (stmt.step()) version = static_cast<int>(stmt.integer(0));
  }
  if (version == 0) version = unversioned_version;
  if (version > supported) throw NewerSchemaVersion(what, version, supported);
  return version;
}

}  // namespace ctx::store
