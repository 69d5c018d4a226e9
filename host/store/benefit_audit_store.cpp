#include "host/store/benefit_audit_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <tuple>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"
#include "host/store/sqlite.hpp"

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

constexpr std::string_view kVersion1[] = {kTableSql};
constexpr Migration kMigrations[] = {{1, kVersion1}};
constexpr int kSchemaVersion = 1;

// Runs `body`, mapping the SQLite layer's errors to the store's vocabulary: a newer schema and
// operational problems are Unavailable (the planner's one fail-soft path); corruption reported by
// SQLite is BenefitAuditCorruption.
template <typename Body>
decltype(auto) guarded(Body&& body) {
  try {
    return body();
  } catch (const NewerSchemaVersion& e) {
    throw BenefitAuditStoreUnavailable(e.what());
  } catch (const engine::JournalCorruption& e) {
    throw BenefitAuditCorruption(std::string("benefit audit database operation is invalid: ") +
                                 e.what());
  } catch (const engine::EngineStoreError& e) {
    throw BenefitAuditStoreUnavailable(std::string("benefit audit store is unavailable: ") +
                                       e.what());
  }
}

void require_private_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec)
      throw BenefitAuditStoreUnavailable("benefit audit store directory could not be created");
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

void require_schema(Database& db) {
  auto objects = db.prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master"
      " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name");
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> rows;
  while (objects.step()) {
    rows.emplace_back(objects.text(0), objects.text(1), objects.text(2), objects.text(3));
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

// Reads the row for `digest` with its types checked in SQL (one cached statement).
std::optional<StoredRow> read_row(Database& db, std::string_view digest) {
  auto select = db.cached(
      "SELECT CASE WHEN typeof(result_json) = 'blob' AND length(result_json) <= ?1"
      " THEN result_json ELSE NULL END, length(result_json),"
      " CASE WHEN typeof(byte_length) = 'integer' THEN byte_length ELSE NULL END,"
      " CASE WHEN typeof(content_digest) = 'text' AND length(content_digest) = 64"
      " THEN content_digest ELSE NULL END"
      " FROM benefit_audit_results WHERE result_digest = ?2");
  select->bind(1, static_cast<std::int64_t>(kMaxBenefitResultJsonBytes));
  select->bind(2, digest);
  if (!select->step()) return std::nullopt;
  const std::int64_t actual_length = select->integer(1);
  if (!select->is_blob(0) || actual_length < 0 ||
      actual_length > static_cast<std::int64_t>(kMaxBenefitResultJsonBytes)) {
    throw BenefitAuditCorruption("persisted benefit result is not a bounded byte string");
  }
  StoredRow row;
  row.payload = select->blob(0);
  if (select->is_integer(2)) row.byte_length = select->integer(2);
  if (select->is_text(3)) row.content_digest = select->text(3);
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

}  // namespace

std::unique_ptr<SqliteBenefitAuditStore> SqliteBenefitAuditStore::open(
    const std::filesystem::path& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  if (ec) throw BenefitAuditStoreUnavailable("benefit audit store path is unavailable");
  require_private_directory(absolute.parent_path());
  require_private_file(absolute);
  std::unique_ptr<SqliteBenefitAuditStore> store(new SqliteBenefitAuditStore());
  guarded([&] {
    store->db_ = std::make_unique<Database>(absolute, Database::Mode::kReadWrite, kBusyTimeoutMs);
    Database& db = *store->db_;
    db.exec("PRAGMA trusted_schema = OFF");
    // A file written before versioning is checked before it is stamped with version 1.
    if (require_schema_version(db, "benefit audit store", kSchemaVersion, 0) == 0) {
      auto count = db.prepare("SELECT COUNT(*) FROM sqlite_master");
      if (count.step() && count.integer(0) > 0) require_schema(db);
    }
    migrate(db, "benefit audit store", kMigrations, kSchemaVersion);
    require_schema(db);
    db.use_wal();
    db.exec("PRAGMA synchronous = FULL");
  });
  for (const char* suffix : {"-wal", "-shm"}) {
    ::chmod((absolute.string() + suffix).c_str(), 0600);
  }
  return store;
}

SqliteBenefitAuditStore::~SqliteBenefitAuditStore() = default;

std::string SqliteBenefitAuditStore::store(const BenefitSelectionResult& result) {
  // The result's own canonical text, encoded once when it was built.
  const std::string& payload = result.to_json();
  std::lock_guard lock(mutex_);
  return guarded([&] {
    Transaction tx(*db_, Transaction::Kind::kImmediate);
    if (const auto row = read_row(*db_, result.result_digest())) {
      if (row->payload != payload) {
        throw BenefitAuditDigestCollision(
            "benefit result digest is already bound to different bytes");
      }
      // The stored bytes equal the canonical encoding of a validated result, so decoding them
      // could only reproduce `result`; the row's own length and content digest are still checked.
      validate_metadata(*row);
      tx.commit();
      return result.result_digest();
    }
    const std::string content_digest = core::sha256_hex(payload);
    {
      auto insert = db_->cached(
          "INSERT INTO benefit_audit_results(result_digest, result_json, byte_length,"
          " content_digest) VALUES(?1, ?2, ?3, ?4)");
      insert->bind(1, result.result_digest());
      insert->bind_blob(2, payload);
      insert->bind(3, static_cast<std::int64_t>(payload.size()));
      insert->bind(4, content_digest);
      insert->run();
    }
    tx.commit();
    return result.result_digest();
  });
}

BenefitSelectionResult SqliteBenefitAuditStore::load(std::string_view result_digest) const {
  if (!engine::planning::is_digest(result_digest)) {
    throw InvalidArgument("result_digest must be a lowercase SHA-256 digest");
  }
  std::lock_guard lock(mutex_);
  const auto row = guarded([&] { return read_row(*db_, result_digest); });
  if (!row) throw NotFound("no benefit result is stored under this digest");
  validate_metadata(*row);
  return decode(row->payload, result_digest);
}

}  // namespace ctx::store
