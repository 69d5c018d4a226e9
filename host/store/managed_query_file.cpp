#include "host/store/managed_query_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/managed_query_store.hpp"
#include "host/store/keyed_rows.hpp"

namespace ctx::store::detail {
namespace {

using engine::ManagedQueryStoreCorruption;
using engine::ManagedQueryStoreError;
using engine::ManagedQueryStoreUnavailable;

// 3: managed_inputs (the catalog input authority's registrations; they were one file each).
// 4: managed_query_correlations (which registrations name a plan id, so a registration's
//    same-plan check reads those rows, not the whole table) and an index of managed_inputs'
//    keys (its capacity count reads that, not every input's text).
constexpr int kUserVersion = 4;

constexpr std::string_view kSchemaSql = R"sql(
CREATE TABLE managed_query_store_identity(
  singleton INTEGER PRIMARY KEY CHECK(singleton = 1),
  key_check TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE managed_queries(
  logical_query_id TEXT PRIMARY KEY,
  query_ref TEXT NOT NULL UNIQUE,
  registration_json BLOB NOT NULL,
  registration_bytes INTEGER NOT NULL,
  plan_id TEXT,
  decision_digest TEXT,
  journal_revision INTEGER,
  journal_record_digest TEXT,
  row_hmac TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX idx_managed_queries_plan_id ON managed_queries(plan_id);
CREATE TABLE managed_desired_sets(
  query_ref TEXT NOT NULL,
  logical_choice_id TEXT NOT NULL,
  desired_set_ref TEXT NOT NULL,
  plan_id TEXT NOT NULL,
  decision_digest TEXT NOT NULL,
  stream_identity_digest TEXT NOT NULL,
  expected_revision INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  event_json BLOB NOT NULL,
  event_bytes INTEGER NOT NULL,
  capability_ids_json BLOB NOT NULL,
  capability_ids_bytes INTEGER NOT NULL,
  journal_revision INTEGER,
  journal_record_digest TEXT,
  transition_digest TEXT,
  row_hmac TEXT NOT NULL,
  PRIMARY KEY(query_ref, logical_choice_id)) WITHOUT ROWID;
CREATE UNIQUE INDEX idx_managed_desired_sets_ref ON managed_desired_sets(desired_set_ref);
CREATE UNIQUE INDEX idx_managed_desired_sets_stream_revision
  ON managed_desired_sets(stream_identity_digest, expected_revision);
CREATE INDEX idx_managed_desired_sets_query_revision
  ON managed_desired_sets(query_ref, expected_revision);
CREATE INDEX idx_managed_desired_sets_stream_state
  ON managed_desired_sets(stream_identity_digest, journal_revision);
)sql";
// Version 3's table, also what migrates a version 2 store (one text: the stored schema objects of
// a migrated store and of a new one are the same).
constexpr std::string_view kInputsSchemaSql = R"sql(
CREATE TABLE managed_inputs(
  plan_id TEXT PRIMARY KEY,
  input_json BLOB NOT NULL,
  row_hmac TEXT NOT NULL) WITHOUT ROWID;
)sql";

// Version 4's objects (also what migrates a version 3 store): each registration's decision
// correlation id (its plan id), written with the registration — only a lookup: the rows it leads
// to are authenticated and compared in full — and the input keys alone, which count(*) scans.
constexpr std::string_view kCorrelationsSchemaSql = R"sql(
CREATE TABLE managed_query_correlations(
  correlation_id TEXT NOT NULL,
  logical_query_id TEXT NOT NULL,
  PRIMARY KEY(correlation_id, logical_query_id)) WITHOUT ROWID;
CREATE INDEX idx_managed_inputs_keys ON managed_inputs(plan_id);
)sql";

void fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw ManagedQueryStoreUnavailable("managed query store path cannot be synced");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw ManagedQueryStoreUnavailable("managed query store path cannot be synced");
}

// Creates missing directories 0700 and requires the parent to be ours with mode exactly 0700.
void prepare_parent(const std::filesystem::path& parent) {
  std::vector<std::filesystem::path> missing;
  for (auto at = parent; !at.empty() && !std::filesystem::exists(at); at = at.parent_path()) {
    missing.push_back(at);
    if (at == at.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      throw ManagedQueryStoreUnavailable("managed query store directory cannot be created");
    }
    fsync_path(it->parent_path(), O_RDONLY | O_DIRECTORY);
  }
  struct stat info {};
  if (::lstat(parent.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & 07777) != 0700) {
    throw ManagedQueryStoreUnavailable(
        "managed query store directory must be a private 0700 directory owned by this user");
  }
}

void require_private_file(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;
  if (!S_ISREG(info.st_mode) || info.st_nlink != 1 || info.st_uid != ::geteuid() ||
      (info.st_mode & 07777) != 0600) {
    throw ManagedQueryStoreUnavailable(
        "managed query store files must be private single-link 0600 regular files");
  }
}

void configure(Database& db) {
  db.exec("PRAGMA trusted_schema = OFF");
  db.use_wal();
  db.exec("PRAGMA synchronous = FULL");
  db.exec("PRAGMA foreign_keys = ON");
  auto page = db.prepare("PRAGMA page_size");
  std::int64_t page_size = 4096;
  if (page.step()) page_size = page.integer(0);
  db.exec("PRAGMA max_page_count = " + std::to_string((64LL << 20) / page_size));
}

std::string key_check(std::string_view key) {
  return KeyedRows(key).tag("ctx.managed-query-installation-key-v1", "");
}

// The (type, name, sql) of every schema object, from a database or the reference schema.
std::vector<std::string> schema_objects(Database& db) {
  std::vector<std::string> objects;
  auto statement = db.prepare(
      "SELECT type || '|' || name || '|' || coalesce(sql, '') FROM sqlite_master ORDER BY name");
  while (statement.step()) objects.push_back(statement.text(0));
  return objects;
}

std::string schema_digest(const std::vector<std::string>& objects) {
  core::Sha256 hash;
  for (const auto& object : objects) hash.update(object.data(), object.size() + 1);  // with NUL
  return core::to_hex(hash.finish());
}

std::int64_t user_version(Database& db) {
  auto version = db.prepare("PRAGMA user_version");
  return version.step() ? version.integer(0) : 0;
}

// Version 4's fill of managed_query_correlations from the registrations' text (a text that is not
// a registration is left out: its row fails authentication wherever it is read). CASE, so that no
// JSON function sees a value the one before it refused.
constexpr std::string_view kFillCorrelationsSql = R"sql(
INSERT OR IGNORE INTO managed_query_correlations(correlation_id, logical_query_id)
SELECT correlation, logical_query_id FROM (
  SELECT logical_query_id,
    CASE WHEN typeof(registration_json) <> 'text' THEN NULL
         WHEN NOT json_valid(registration_json) THEN NULL
         WHEN json_type(registration_json, '$.decision_event.correlation_id') IS NOT 'text'
           THEN NULL
         ELSE json_extract(registration_json, '$.decision_event.correlation_id') END AS correlation
  FROM managed_queries)
WHERE correlation IS NOT NULL;
)sql";

// The schema's history for store::migrate. Versions 1 and 2 have no statements here: a new store
// is built at the current version (build_schema), and only a version 2 or 3 store is migrated
// (migrate_old_versions); any other version is left to the checks of the open.
constexpr std::string_view kVersion3[] = {kInputsSchemaSql};
constexpr std::string_view kVersion4[] = {kCorrelationsSchemaSql, kFillCorrelationsSql};
constexpr Migration kMigrations[] = {{1, {}}, {2, {}}, {3, kVersion3}, {4, kVersion4}};
static_assert(std::size(kMigrations) == kUserVersion);

// A version 2 store gains managed_inputs (3), a version 3 store managed_query_correlations (4),
// through store::migrate: one BEGIN IMMEDIATE, so a concurrent opener that got there first leaves
// nothing to do.
void migrate_old_versions(Database& db) {
  const std::int64_t version = user_version(db);
  if (version != 2 && version != 3) return;
  migrate(db, "managed query store", kMigrations, /*unversioned_version=*/0);
}

// schema_digest(reference_schema()) as this build's SQLite records the objects: a store whose
// objects hash to it needs no reference schema built in memory on open (the journal's pattern;
// QueryStoreSchema.PinnedDigestIsTheReferences keeps it equal).
constexpr std::string_view kPinnedSchemaDigest =
    "3541606caed193e1809003974ed703b8f36b3ec037921875fb326f1f0073bd7d";

const std::vector<std::string>& reference_schema() {
  static const std::vector<std::string> objects = [] {
    Database memory(":memory:", Database::Mode::kReadWriteCreate, kManagedQueryBusyTimeoutMs);
    memory.exec(kSchemaSql);
    memory.exec(kInputsSchemaSql);
    memory.exec(kCorrelationsSchemaSql);
    return schema_objects(memory);
  }();
  return objects;
}

void build_schema(const std::filesystem::path& path, std::string_view key) {
  Database db(path, Database::Mode::kReadWrite, kManagedQueryBusyTimeoutMs);
  // The stage is published by link(), so it must be one self-contained file: no WAL here
  // (configure() switches the published store to WAL at its first open).
  db.exec("PRAGMA journal_mode = DELETE");
  db.exec("PRAGMA synchronous = FULL");
  Transaction tx(db, Transaction::Kind::kImmediate);
  db.exec(kSchemaSql);
  db.exec(kInputsSchemaSql);
  db.exec(kCorrelationsSchemaSql);
  db.prepare("INSERT INTO managed_query_store_identity(singleton, key_check) VALUES (1, ?)")
      .bind(1, key_check(key))
      .run();
  db.exec("PRAGMA user_version = " + std::to_string(kUserVersion));
  tx.commit();
}

// §4.6: build the schema in an O_EXCL stage, then hard-link it to the final name.
void create_store_file(const std::filesystem::path& path, std::string_view key) {
  const auto dir = path.parent_path();
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (std::filesystem::exists(path.string() + suffix)) {
      throw ManagedQueryStoreUnavailable("managed query store has sidecars without a database");
    }
  }
  const auto stage =
      dir / (".ctx-managed-query-init-" + core::sha256_hex(path.filename().string()) + "-" +
             core::random_hex(16) + ".stage");
  const int fd = ::open(stage.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw ManagedQueryStoreUnavailable("managed query store stage cannot be created");
  ::close(fd);
  try {
    build_schema(stage, key);
    fsync_path(stage, O_RDONLY);
    if (::link(stage.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      throw ManagedQueryStoreUnavailable("managed query store cannot be published");
    }
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
  } catch (...) {
    ::unlink(stage.c_str());
    throw;
  }
  ::unlink(stage.c_str());
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

// Leftover stages of an interrupted creation: a published stage must share the final inode.
void reconcile_stages(const std::filesystem::path& path) {
  const std::string prefix =
      ".ctx-managed-query-init-" + core::sha256_hex(path.filename().string()) + "-";
  struct stat final_info {};
  const bool has_final = ::lstat(path.c_str(), &final_info) == 0;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path())) {
    const auto name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".stage")) continue;
    struct stat info {};
    if (::lstat(entry.path().c_str(), &info) != 0) continue;
    if (info.st_nlink > 1 &&
        (!has_final || info.st_ino != final_info.st_ino || info.st_dev != final_info.st_dev)) {
      throw ManagedQueryStoreCorruption("managed query store stage does not match the store");
    }
    ::unlink(entry.path().c_str());
  }
}

}  // namespace

std::string_view pinned_query_store_schema_digest() noexcept { return kPinnedSchemaDigest; }
std::string reference_query_store_schema_digest() { return schema_digest(reference_schema()); }

ManagedQueryFile open_managed_query_file(const std::filesystem::path& path,
                                         std::string_view installation_hmac_key) {
  if (!path.is_absolute()) throw InvalidArgument("managed query store path must be absolute");
  if (installation_hmac_key.size() != 32) {
    throw InvalidArgument("managed query store installation key must be exactly 32 bytes");
  }
  const auto normal = path.lexically_normal();
  prepare_parent(normal.parent_path());
  reconcile_stages(normal);
  if (!std::filesystem::exists(std::filesystem::symlink_status(normal))) {
    create_store_file(normal, installation_hmac_key);
  }
  require_private_file(normal);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    require_private_file(normal.string() + suffix);
  }
  ManagedQueryFile file;
  file.path = normal;
  struct stat info {};
  if (::lstat(normal.c_str(), &info) != 0) {
    throw ManagedQueryStoreUnavailable("managed query store file is unavailable");
  }
  file.device = info.st_dev;
  file.inode = info.st_ino;
  try {
    file.db =
        std::make_unique<Database>(normal, Database::Mode::kReadWrite, kManagedQueryBusyTimeoutMs);
    configure(*file.db);
    migrate_old_versions(*file.db);
    const auto objects = schema_objects(*file.db);
    if (schema_digest(objects) != kPinnedSchemaDigest && objects != reference_schema()) {
      throw ManagedQueryStoreCorruption("managed query store schema is not the expected schema");
    }
    if (user_version(*file.db) != kUserVersion) {
      throw ManagedQueryStoreCorruption("managed query store schema version is unsupported");
    }
    auto identity =
        file.db->prepare("SELECT singleton, key_check FROM managed_query_store_identity");
    if (!identity.step() || identity.integer(0) != 1 ||
        !core::constant_time_equal(identity.text(1), key_check(installation_hmac_key)) ||
        identity.step()) {
      throw ManagedQueryStoreCorruption(
          "managed query store installation key authentication failed");
    }
  } catch (const ManagedQueryStoreError&) {
    throw;
  } catch (const Error& error) {
    throw ManagedQueryStoreCorruption(std::string("managed query store is unusable: ") +
                                      error.what());
  }
  return file;
}

}  // namespace ctx::store::detail
