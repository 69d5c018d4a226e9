#include "host/runtime/service/query_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <ostream>
#include <set>
#include <unordered_map>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

constexpr int kBusyTimeoutMs = 30'000;
// 3: managed_inputs (the catalog input authority's registrations; they were one file each).
// 4: managed_query_correlations (which registrations name a plan id, so a registration's
//    same-plan check reads those rows, not the whole table) and an index of managed_inputs'
//    keys (its capacity count reads that, not every input's text).
constexpr int kUserVersion = 4;
constexpr std::int64_t kMaxQueryRows = 4096;
constexpr std::int64_t kMaxInputRows = 2 * kMaxQueryRows;
constexpr std::size_t kMaxInputBytes = 64 * 1024;
constexpr std::int64_t kMaxDesiredRows = 16384;
constexpr std::size_t kMaxRegistrationBytes = 36 * 1024;
constexpr std::size_t kMaxDesiredEventBytes = 24 * 1024;
constexpr std::size_t kMaxCapabilityIdsBytes = 1024;
constexpr std::string_view kObservationProvider = "ctx-managed-artifact-observation-v1";

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

// The column lists as macros so that each statement below is one string literal (static SQL,
// prepared once per connection through Database::cached).
#define CTX_QUERY_COLUMNS                                                           \
  "logical_query_id, query_ref, registration_json, registration_bytes, plan_id, " \
  "decision_digest, journal_revision, journal_record_digest, row_hmac"
#define CTX_DESIRED_COLUMNS                                                              \
  "query_ref, logical_choice_id, desired_set_ref, plan_id, decision_digest, "            \
  "stream_identity_digest, expected_revision, event_id, event_json, event_bytes, "       \
  "capability_ids_json, capability_ids_bytes, journal_revision, journal_record_digest, " \
  "transition_digest, row_hmac"

// The statements of this store. Each is used through one lease at a time (never nested).
constexpr store::StaticSql kQueryByRef =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE query_ref = ?";
constexpr store::StaticSql kQueryByLogicalId =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE logical_query_id = ?";
constexpr store::StaticSql kQueriesByPlan =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE plan_id = ?";
constexpr store::StaticSql kAllQueries = "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries";
constexpr store::StaticSql kQueriesWithCorrelation =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE logical_query_id IN "
    "(SELECT logical_query_id FROM managed_query_correlations WHERE correlation_id = ?)";
constexpr store::StaticSql kInsertCorrelation =
    "INSERT OR IGNORE INTO managed_query_correlations(correlation_id, logical_query_id) "
    "VALUES (?, ?)";
constexpr store::StaticSql kRegistrationTextByRef =
    "SELECT registration_json FROM managed_queries WHERE query_ref = ?";
constexpr store::StaticSql kQueryCount = "SELECT count(*) FROM managed_queries";
// Retirement (register_query at capacity): the oldest planned registrations, by the time their
// decision was made (json_extract in a query, not in the schema, so trusted_schema OFF allows it).
constexpr store::StaticSql kOldestPlanned =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE plan_id IS NOT NULL "
    "ORDER BY json_extract(registration_json, '$.decision_event.occurred_at'), query_ref "
    "LIMIT ?";
constexpr store::StaticSql kUncommittedDesiredOfQuery =
    "SELECT count(*) FROM managed_desired_sets WHERE query_ref = ? AND journal_revision IS NULL";
constexpr store::StaticSql kDeleteDesiredOfQuery =
    "DELETE FROM managed_desired_sets WHERE query_ref = ?";
constexpr store::StaticSql kDeleteInput = "DELETE FROM managed_inputs WHERE plan_id = ?";
constexpr store::StaticSql kDeleteCorrelations =
    "DELETE FROM managed_query_correlations WHERE logical_query_id = ?";
constexpr store::StaticSql kDeleteQuery = "DELETE FROM managed_queries WHERE query_ref = ?";
constexpr store::StaticSql kInputCount = "SELECT count(*) FROM managed_inputs";
constexpr store::StaticSql kInputByPlan =
    "SELECT input_json, row_hmac FROM managed_inputs WHERE plan_id = ?";
constexpr store::StaticSql kInsertInput =
    "INSERT INTO managed_inputs(plan_id, input_json, row_hmac) VALUES (?, ?, ?)";
constexpr store::StaticSql kDesiredCount = "SELECT count(*) FROM managed_desired_sets";
constexpr store::StaticSql kAllDesired =
    "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets";
constexpr store::StaticSql kDesiredByStream =
    "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets WHERE stream_identity_digest = ?";
constexpr store::StaticSql kDesiredByRef =
    "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets WHERE desired_set_ref = ?";
constexpr store::StaticSql kDesiredLatestOfQuery =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE query_ref = ? ORDER BY expected_revision DESC LIMIT 1";
constexpr store::StaticSql kDesiredUncommittedOnStream =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE stream_identity_digest = ? AND journal_revision IS NULL";
constexpr store::StaticSql kDesiredByChoice =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE query_ref = ? AND logical_choice_id = ?";
#undef CTX_DESIRED_COLUMNS
#undef CTX_QUERY_COLUMNS

std::string tagged(std::string_view tag, std::string_view bytes) {
  std::string message(tag);
  message.push_back('\0');
  message.append(bytes);
  return message;
}

std::string cjson(const Json& value) { return core::canonical_json(value, core::Encoding::kAscii); }

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}
Json optional_json(const std::optional<std::int64_t>& value) {
  return value ? Json(*value) : Json(nullptr);
}

void require_sha(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

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

void configure(store::Database& db) {
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
  return core::hmac_sha256_hex(key, tagged("ctx.managed-query-installation-key-v1", ""));
}

// The (type, name, sql) of every schema object, from a database or the reference schema.
std::vector<std::string> schema_objects(store::Database& db) {
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

std::int64_t user_version(store::Database& db) {
  auto version = db.prepare("PRAGMA user_version");
  return version.step() ? version.integer(0) : 0;
}

// A version 2 store gains managed_inputs (one BEGIN IMMEDIATE; a concurrent opener that got
// there first leaves nothing to do). Any other version is left to the checks that follow.
void migrate_from_version_2(store::Database& db) {
  if (user_version(db) != 2) return;
  store::Transaction tx(db, store::Transaction::Kind::kImmediate);
  if (user_version(db) != 2) return;
  db.exec(kInputsSchemaSql);
  db.exec("PRAGMA user_version = 3");
  tx.commit();
}

// A version 3 store gains managed_query_correlations, filled from its registrations' text (a
// text that is not a registration is left out: its row fails authentication wherever it is read).
void migrate_from_version_3(store::Database& db) {
  if (user_version(db) != 3) return;
  store::Transaction tx(db, store::Transaction::Kind::kImmediate);
  if (user_version(db) != 3) return;
  db.exec(kCorrelationsSchemaSql);
  auto rows = db.prepare("SELECT logical_query_id, registration_json FROM managed_queries");
  auto insert = db.prepare(kInsertCorrelation.text());
  while (rows.step()) {
    try {
      const Json registration = core::parse_json(rows.text(1));
      const Json& correlation = registration.at("decision_event").at("correlation_id");
      if (!correlation.is_string()) continue;
      insert.bind(1, correlation.get<std::string>()).bind(2, rows.text(0)).run();
      insert.reset();
    } catch (const std::exception&) {
      continue;
    }
  }
  db.exec("PRAGMA user_version = 4");
  tx.commit();
}

// schema_digest(reference_schema()) as this build's SQLite records the objects: a store whose
// objects hash to it needs no reference schema built in memory on open (the journal's pattern;
// QueryStoreSchema.PinnedDigestIsTheReferences keeps it equal).
constexpr std::string_view kPinnedSchemaDigest =
    "3541606caed193e1809003974ed703b8f36b3ec037921875fb326f1f0073bd7d";

const std::vector<std::string>& reference_schema() {
  static const std::vector<std::string> objects = [] {
    store::Database memory(":memory:", store::Database::Mode::kReadWriteCreate, kBusyTimeoutMs);
    memory.exec(kSchemaSql);
    memory.exec(kInputsSchemaSql);
    memory.exec(kCorrelationsSchemaSql);
    return schema_objects(memory);
  }();
  return objects;
}

void build_schema(const std::filesystem::path& path, std::string_view key) {
  store::Database db(path, store::Database::Mode::kReadWrite, kBusyTimeoutMs);
  // The stage is published by link(), so it must be one self-contained file: no WAL here
  // (configure() switches the published store to WAL at its first open).
  db.exec("PRAGMA journal_mode = DELETE");
  db.exec("PRAGMA synchronous = FULL");
  store::Transaction tx(db, store::Transaction::Kind::kImmediate);
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

bool same_envelope(const engine::EngineEvent& a, const engine::EngineEvent& b) {
  return a.engine_version() == b.engine_version() && a.planner_version() == b.planner_version() &&
         a.policy_version() == b.policy_version() &&
         a.host_descriptor_digest() == b.host_descriptor_digest() &&
         a.catalog_snapshot_digest() == b.catalog_snapshot_digest() &&
         a.semantic_model_digest() == b.semantic_model_digest() &&
         a.semantic_index_digest() == b.semantic_index_digest() &&
         a.work_signature() == b.work_signature() && a.random_seed() == b.random_seed() &&
         a.privacy() == b.privacy();
}

void require_token(const std::optional<std::string>& value, const char* field) {
  if (!value || !engine::is_opaque_token(*value)) {
    throw InvalidArgument(std::string("managed query ") + field + " must be an opaque token");
  }
}

void require_event_digest(const std::optional<std::string>& value, const char* field) {
  if (!value || !core::is_sha256_hex(*value)) {
    throw InvalidArgument(std::string("managed query ") + field +
                          " must be a lowercase SHA-256 digest");
  }
}

// §4.4 registration validation.
void validate_registration(const std::string& logical_query_id, const engine::EngineEvent& started,
                           const engine::EngineEvent& decision, const std::string& manifest,
                           const std::string& environment) {
  require_sha(logical_query_id, "logical_query_id");
  require_sha(manifest, "artifact_manifest_digest");
  require_sha(environment, "planning_environment_digest");
  for (const auto* event : {&started, &decision}) {
    require_token(event->correlation_id(), "correlation_id");
    require_token(event->causation_id(), "causation_id");
    require_token(event->engine_version(), "engine_version");
    require_token(event->planner_version(), "planner_version");
    require_token(event->policy_version(), "policy_version");
    require_event_digest(event->host_descriptor_digest(), "host_descriptor_digest");
    require_event_digest(event->catalog_snapshot_digest(), "catalog_snapshot_digest");
    require_event_digest(event->semantic_model_digest(), "semantic_model_digest");
    require_event_digest(event->semantic_index_digest(), "semantic_index_digest");
    require_event_digest(event->work_signature(), "work_signature");
    if (!event->random_seed().is_number_integer()) {
      throw InvalidArgument("managed query random_seed must be an integer");
    }
  }
  if (started.event_kind() != engine::EventKind::kSessionStarted ||
      started.expected_revision() != 0 || started.payload() != Json{{"host_level", "managing"}}) {
    throw InvalidArgument("managed query registration requires a managing SessionStarted at 0");
  }
  const bool intent = decision.event_kind() == engine::EventKind::kIntentObserved &&
                      decision.expected_revision() == 1;
  const bool development = decision.event_kind() == engine::EventKind::kDevelopmentObserved &&
                           decision.expected_revision() >= 2;
  if (!intent && !development) {
    throw InvalidArgument(
        "managed query decision must be IntentObserved at 1 or DevelopmentObserved after");
  }
  const Json& payload = decision.payload();
  if (!payload.is_object() || payload.size() != 1 || !payload.contains("observation_ref") ||
      !payload["observation_ref"].is_object() ||
      payload["observation_ref"].value("provider_id", "") != kObservationProvider ||
      payload["observation_ref"].value("opaque_id", "") != "manifest-" + manifest) {
    throw InvalidArgument("managed query decision must reference its managed artifact");
  }
  if (started.event_id() == decision.event_id()) {
    throw InvalidArgument("managed query events must have distinct event ids");
  }
  if (started.planner_version() != decision.planner_version() ||
      started.host_descriptor_digest() != decision.host_descriptor_digest() ||
      started.catalog_snapshot_digest() != decision.catalog_snapshot_digest() ||
      started.semantic_model_digest() != decision.semantic_model_digest() ||
      started.semantic_index_digest() != decision.semantic_index_digest()) {
    throw InvalidArgument("managed query events disagree on their planning envelope");
  }
  if (intent && (!(started.scope() == decision.scope()) ||
                 started.correlation_id() != decision.correlation_id() ||
                 decision.causation_id() != std::optional<std::string>(started.event_id()) ||
                 started.engine_version() != decision.engine_version() ||
                 started.policy_version() != decision.policy_version() ||
                 started.work_signature() != decision.work_signature() ||
                 started.random_seed() != decision.random_seed())) {
    throw InvalidArgument("managed query IntentObserved must continue its exact session start");
  }
  if (!(started.scope().stream_id() == decision.scope().stream_id())) {
    throw InvalidArgument("managed query events must share one stable stream");
  }
  if (started.catalog_snapshot_digest() != std::optional<std::string>(environment)) {
    throw InvalidArgument("managed query events must carry the planning environment digest");
  }
}

// The registration mapping; its bytes are cjson() of it.
Json registration_json(const std::string& logical_query_id, const engine::EngineEvent& started,
                       const engine::EngineEvent& decision, const std::string& manifest,
                       const std::string& environment) {
  return {{"artifact_manifest_digest", manifest},
          {"decision_event", decision.to_json()},
          {"logical_query_id", logical_query_id},
          {"planning_environment_digest", environment},
          {"schema", "ctx.managed-query-registration-v1"},
          {"session_started", started.to_json()}};
}

}  // namespace

bool is_query_ref(std::string_view text) noexcept {
  return text.size() == 68 && text.starts_with("mqr_") && core::is_sha256_hex(text.substr(4));
}
bool is_desired_set_ref(std::string_view text) noexcept {
  return text.size() == 68 && text.starts_with("mds_") && core::is_sha256_hex(text.substr(4));
}

std::string desired_stream_identity_digest(const engine::ScopeRef& scope) {
  return core::sha256_hex(
      tagged("ctx.managed-desired-set-stream-v1", scope.stream_id().stream_key()));
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryRecord& value) {
  return out << "ManagedQueryRecord(query_ref='" << value.query_ref_ << "', "
             << (value.planned() ? "planned" : "registered") << ")";
}
std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRecord& value) {
  return out << "ManagedDesiredSetRecord(desired_set_ref='" << value.desired_set_ref_ << "', "
             << (value.committed() ? "committed" : "reserved") << ")";
}
std::ostream& operator<<(std::ostream& out, const ManagedQueryStore&) {
  return out << "ManagedQueryStore(schema='" << kManagedQueryStoreSchema << "')";
}

struct ManagedQueryStore::Impl {
  static constexpr std::size_t kVerifiedRowMemo = 4096;
  std::string key;
  // query_ref -> (row_bytes of the row authenticated, its record). GUARDED_BY the store's mutex.
  mutable std::unordered_map<std::string,
                             std::pair<std::string, std::shared_ptr<const ManagedQueryRecord>>>
      verified_rows;
  // desired_set_ref -> (row_bytes of the desired row authenticated, its record). GUARDED_BY the
  // store's mutex.
  mutable std::unordered_map<std::string,
                             std::pair<std::string, std::shared_ptr<const ManagedDesiredSetRecord>>>
      verified_desired;
  dev_t device = 0;
  ino_t inode = 0;
  std::unique_ptr<store::Database> db;
  std::filesystem::path path;

  // Every transaction re-checks that the file is the one authenticated at open.
  void check_binding() const {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || info.st_dev != device || info.st_ino != inode) {
      throw ManagedQueryStoreCorruption(
          "managed query store changed since its authenticated binding");
    }
  }

  std::string query_row_hmac(const std::string& query_ref, const Json& registration,
                             const std::optional<std::string>& plan_id,
                             const std::optional<std::string>& decision_digest,
                             const std::optional<std::int64_t>& revision,
                             const std::optional<std::string>& record_digest) const {
    const Json row = {{"decision_digest", optional_json(decision_digest)},
                      {"journal_record_digest", optional_json(record_digest)},
                      {"journal_revision", optional_json(revision)},
                      {"plan_id", optional_json(plan_id)},
                      {"query_ref", query_ref},
                      {"registration", registration},
                      {"schema", "ctx.managed-query-store-row-v1"}};
    return core::hmac_sha256_hex(key, tagged("ctx.managed-query-row-v1", cjson(row)));
  }

  std::string query_ref_for(const std::string& registration_bytes) const {
    return "mqr_" +
           core::hmac_sha256_hex(key, tagged("ctx.managed-query-ref-v1", registration_bytes));
  }

  ManagedQueryRecord read_query(store::Statement& row) const {
    const auto fail = [] {
      return ManagedQueryStoreCorruption("managed query row authentication failed");
    };
    const std::string logical = row.text(0);
    const std::string query_ref = row.text(1);
    const std::string text = row.text(2);
    if (!row.is_integer(3) || row.integer(3) != static_cast<std::int64_t>(text.size())) {
      throw fail();
    }
    if (!core::constant_time_equal(query_ref_for(text), query_ref)) throw fail();
    Json registration;
    try {
      registration = core::parse_canonical_json(text, core::Encoding::kAscii);
    } catch (const Error&) {
      throw fail();
    }
    static const std::set<std::string> keys = {
        "artifact_manifest_digest",    "decision_event", "logical_query_id",
        "planning_environment_digest", "schema",         "session_started"};
    if (!registration.is_object() || registration.size() != keys.size()) throw fail();
    for (const auto& name : keys) {
      if (!registration.contains(name)) throw fail();
    }
    if (registration["schema"] != "ctx.managed-query-registration-v1" ||
        registration["logical_query_id"] != logical) {
      throw fail();
    }
    const auto plan_id = row.optional_text(4);
    const auto decision_digest = row.optional_text(5);
    const std::optional<std::int64_t> revision =
        row.is_null(6) ? std::nullopt : std::optional<std::int64_t>(row.integer(6));
    const auto record_digest = row.optional_text(7);
    const int nulls = !plan_id + !decision_digest + !revision + !record_digest;
    if (nulls != 0 && nulls != 4) throw fail();
    if (!row.is_null(6) && !row.is_integer(6)) throw fail();
    if (!core::constant_time_equal(query_row_hmac(query_ref, registration, plan_id, decision_digest,
                                                  revision, record_digest),
                                   row.text(8))) {
      throw fail();
    }
    try {
      ManagedQueryRecord record(engine::EngineEvent::from_json(registration["session_started"]),
                                engine::EngineEvent::from_json(registration["decision_event"]));
      record.query_ref_ = query_ref;
      record.logical_query_id_ = logical;
      record.manifest_digest_ = registration["artifact_manifest_digest"].get<std::string>();
      record.environment_digest_ = registration["planning_environment_digest"].get<std::string>();
      record.plan_id_ = plan_id;
      record.decision_digest_ = decision_digest;
      record.revision_ = revision;
      record.record_digest_ = record_digest;
      return record;
    } catch (const Error&) {
      throw fail();
    } catch (const Json::exception&) {
      throw fail();
    }
  }

  // Every column of a query row, typed and length-prefixed: equal bytes, equal row.
  static void append_text(std::string& out, const std::string& text) {
    out.append("T").append(std::to_string(text.size())).push_back(':');
    out.append(text);
  }
  static void append_integer(std::string& out, std::int64_t value) {
    out.append("I").append(std::to_string(value)).push_back(';');
  }
  // The exact stored values of the first `columns` columns of `row` (a query row has 9).
  static std::string row_bytes(store::Statement& row, int columns = 9) {
    std::string out;
    for (int column = 0; column < columns; ++column) {
      if (row.is_null(column)) {
        out += "N;";
      } else if (row.is_integer(column)) {
        append_integer(out, row.integer(column));
      } else {
        append_text(out, row.text(column));
      }
    }
    return out;
  }
  // row_bytes of the row this store writes for `record` (registration `text`, `row_hmac`).
  static std::string row_bytes_of(const ManagedQueryRecord& record, const std::string& text,
                                  const std::string& row_hmac) {
    std::string out;
    append_text(out, record.logical_query_id_);
    append_text(out, record.query_ref_);
    append_text(out, text);
    append_integer(out, static_cast<std::int64_t>(text.size()));
    const auto optional_text = [&out](const std::optional<std::string>& value) {
      if (value) {
        append_text(out, *value);
      } else {
        out += "N;";
      }
    };
    optional_text(record.plan_id_);
    optional_text(record.decision_digest_);
    if (record.revision_) {
      append_integer(out, *record.revision_);
    } else {
      out += "N;";
    }
    optional_text(record.record_digest_);
    append_text(out, row_hmac);
    return out;
  }
  // Remembers the row this store just wrote for `record`: built here from its own inputs (the
  // registration text was encoded from exactly these events), so it needs no read-back.
  void remember_written(ManagedQueryRecord record, const std::string& text,
                        const std::string& row_hmac) const {
    std::string bytes = row_bytes_of(record, text, row_hmac);
    const std::string query_ref = record.query_ref_;
    if (verified_rows.size() >= kVerifiedRowMemo) verified_rows.clear();
    verified_rows[query_ref] = {std::move(bytes),
                                std::make_shared<const ManagedQueryRecord>(std::move(record))};
  }

  // read_query of `row`, shared. Authentication and decoding are a pure function of the row's
  // bytes under this store's key, so a row byte-equal to one this store authenticated before is
  // that record; any other row (an edited one included) is authenticated and decoded in full.
  std::shared_ptr<const ManagedQueryRecord> read_query_shared(store::Statement& row) const {
    std::string bytes = row_bytes(row);
    const std::string query_ref = row.text(1);
    if (const auto it = verified_rows.find(query_ref);
        it != verified_rows.end() && it->second.first == bytes) {
      return it->second.second;
    }
    auto record = std::make_shared<const ManagedQueryRecord>(read_query(row));
    if (verified_rows.size() >= kVerifiedRowMemo) verified_rows.clear();
    verified_rows[query_ref] = {std::move(bytes), record};
    return record;
  }

  static ManagedQueryRecord copy_of(const ManagedQueryRecord& from) {
    ManagedQueryRecord record(from.session_started_, from.decision_event_);
    record.query_ref_ = from.query_ref_;
    record.logical_query_id_ = from.logical_query_id_;
    record.manifest_digest_ = from.manifest_digest_;
    record.environment_digest_ = from.environment_digest_;
    record.plan_id_ = from.plan_id_;
    record.decision_digest_ = from.decision_digest_;
    record.revision_ = from.revision_;
    record.record_digest_ = from.record_digest_;
    return record;
  }

  // The row `sql` (kQueryByRef or kQueryByLogicalId) selects for `value`, authenticated.
  std::optional<ManagedQueryRecord> query_where(store::StaticSql sql,
                                                const std::string& value) const {
    auto statement = db->cached(sql);
    statement->bind(1, value);
    if (!statement->step()) return std::nullopt;
    return copy_of(*read_query_shared(*statement));
  }

  ManagedQueryRecord require_query(const std::string& query_ref) const {
    auto record = query_where(kQueryByRef, query_ref);
    if (!record) throw ManagedQueryStoreNotFound("managed query record is unavailable");
    return std::move(*record);
  }

  static Json desired_registration(const std::string& query_ref, const std::string& logical,
                                   const std::string& plan_id, const std::string& decision_digest,
                                   const std::string& stream_digest,
                                   const std::vector<std::string>& ids,
                                   const engine::EngineEvent& event) {
    return {{"capability_ids", ids},
            {"decision_digest", decision_digest},
            {"event_content_digest", event.content_digest()},
            {"logical_choice_id", logical},
            {"plan_id", plan_id},
            {"query_ref", query_ref},
            {"schema", "ctx.managed-desired-set-registration-v1"},
            {"stream_identity_digest", stream_digest}};
  }

  std::string desired_ref_for(const Json& registration) const {
    return "mds_" + core::hmac_sha256_hex(
                        key, tagged("ctx.managed-desired-set-ref-v1", cjson(registration)));
  }

  std::string desired_row_hmac(const std::string& ref, const Json& registration,
                               const std::string& ids_json, const std::string& event_json,
                               const std::optional<std::int64_t>& revision,
                               const std::optional<std::string>& record_digest,
                               const std::optional<std::string>& transition_digest) const {
    const Json row = {{"capability_ids_sha256", core::sha256_hex(ids_json)},
                      {"desired_set_ref", ref},
                      {"event_sha256", core::sha256_hex(event_json)},
                      {"journal_record_digest", optional_json(record_digest)},
                      {"journal_revision", optional_json(revision)},
                      {"registration", registration},
                      {"schema", "ctx.managed-desired-set-row-v1"},
                      {"transition_digest", optional_json(transition_digest)}};
    return core::hmac_sha256_hex(key, tagged("ctx.managed-desired-set-row-v1", cjson(row)));
  }

  ManagedDesiredSetRecord read_desired(store::Statement& row) const {
    const auto fail = [] {
      return ManagedQueryStoreCorruption("managed desired-set row authentication failed");
    };
    const std::string query_ref = row.text(0);
    const std::string logical = row.text(1);
    const std::string ref = row.text(2);
    const std::string plan_id = row.text(3);
    const std::string decision_digest = row.text(4);
    const std::string stream_digest = row.text(5);
    const std::string event_json = row.text(8);
    const std::string ids_json = row.text(10);
    if (!row.is_integer(6) || !row.is_integer(9) || !row.is_integer(11) ||
        row.integer(9) != static_cast<std::int64_t>(event_json.size()) ||
        row.integer(11) != static_cast<std::int64_t>(ids_json.size())) {
      throw fail();
    }
    std::optional<engine::EngineEvent> event;
    std::vector<std::string> ids;
    try {
      event.emplace(engine::EngineEvent::from_json_text(event_json));
      if (event->to_json_text() != event_json) throw fail();
      const Json parsed = core::parse_canonical_json(ids_json, core::Encoding::kAscii);
      if (!parsed.is_array()) throw fail();
      for (const auto& item : parsed) ids.push_back(item.get<std::string>());
    } catch (const Error&) {
      throw fail();
    } catch (const Json::exception&) {
      throw fail();
    }
    const Json registration = desired_registration(query_ref, logical, plan_id, decision_digest,
                                                   stream_digest, ids, *event);
    if (!core::constant_time_equal(desired_ref_for(registration), ref)) throw fail();
    if (row.text(7) != event->event_id() || row.integer(6) != event->expected_revision() ||
        stream_digest != desired_stream_identity_digest(event->scope())) {
      throw fail();
    }
    const std::optional<std::int64_t> revision =
        row.is_null(12) ? std::nullopt : std::optional<std::int64_t>(row.integer(12));
    const auto record_digest = row.optional_text(13);
    const auto transition_digest = row.optional_text(14);
    const int nulls = !revision + !record_digest + !transition_digest;
    if (nulls != 0 && nulls != 3) throw fail();
    if (!core::constant_time_equal(desired_row_hmac(ref, registration, ids_json, event_json,
                                                    revision, record_digest, transition_digest),
                                   row.text(15))) {
      throw fail();
    }
    ManagedDesiredSetRecord record(std::move(*event));
    record.query_ref_ = query_ref;
    record.logical_choice_id_ = logical;
    record.desired_set_ref_ = ref;
    record.plan_id_ = plan_id;
    record.decision_digest_ = decision_digest;
    record.stream_identity_digest_ = stream_digest;
    record.capability_ids_ = std::move(ids);
    record.revision_ = revision;
    record.record_digest_ = record_digest;
    record.transition_digest_ = transition_digest;
    return record;
  }

  static ManagedDesiredSetRecord copy_of(const ManagedDesiredSetRecord& from) {
    ManagedDesiredSetRecord record(from.event_);
    record.query_ref_ = from.query_ref_;
    record.logical_choice_id_ = from.logical_choice_id_;
    record.desired_set_ref_ = from.desired_set_ref_;
    record.plan_id_ = from.plan_id_;
    record.decision_digest_ = from.decision_digest_;
    record.stream_identity_digest_ = from.stream_identity_digest_;
    record.capability_ids_ = from.capability_ids_;
    record.revision_ = from.revision_;
    record.record_digest_ = from.record_digest_;
    record.transition_digest_ = from.transition_digest_;
    return record;
  }

  // read_desired, remembered: a row whose stored values are byte for byte the ones this store
  // authenticated before (in this process, under this key) is that record again.
  ManagedDesiredSetRecord read_desired_memo(store::Statement& row) const {
    std::string bytes = row_bytes(row, 16);
    const std::string ref = row.text(2);
    if (const auto it = verified_desired.find(ref);
        it != verified_desired.end() && it->second.first == bytes) {
      return copy_of(*it->second.second);
    }
    auto record = std::make_shared<const ManagedDesiredSetRecord>(read_desired(row));
    if (verified_desired.size() >= kVerifiedRowMemo) verified_desired.clear();
    verified_desired[ref] = {std::move(bytes), record};
    return copy_of(*record);
  }

  // The rows `sql` (one of the kDesired* selections, one parameter) selects for `value`.
  std::vector<ManagedDesiredSetRecord> desired_where(store::StaticSql sql,
                                                     const std::string& value) const {
    auto statement = db->cached(sql);
    statement->bind(1, value);
    std::vector<ManagedDesiredSetRecord> rows;
    while (statement->step()) rows.push_back(read_desired_memo(*statement));
    return rows;
  }

  // `sql` is a count(*) statement.
  std::int64_t count(store::StaticSql sql) const {
    auto statement = db->cached(sql);
    statement->step();
    return statement->integer(0);
  }

  // Inside register_query's transaction: retires up to kRetirementBatch of the oldest planned
  // registrations that have no uncommitted desired set and that `may_retire` accepts, with their
  // desired sets, input and lookup rows. Returns how many it retired.
  int retire_oldest(const ManagedQueryStore::RetirementCheck& may_retire) const {
    constexpr int kCandidates = 4 * ManagedQueryStore::kRetirementBatch;
    std::vector<std::shared_ptr<const ManagedQueryRecord>> candidates;
    {
      auto oldest = db->cached(kOldestPlanned);
      oldest->bind(1, std::int64_t{kCandidates});
      while (oldest->step()) candidates.push_back(read_query_shared(*oldest));
    }
    int retired = 0;
    for (const auto& record : candidates) {
      if (retired == ManagedQueryStore::kRetirementBatch) break;
      {
        auto uncommitted = db->cached(kUncommittedDesiredOfQuery);
        uncommitted->bind(1, record->query_ref());
        uncommitted->step();
        if (uncommitted->integer(0) != 0) continue;
      }
      if (!may_retire(*record)) continue;
      db->cached(kDeleteDesiredOfQuery)->bind(1, record->query_ref()).run();
      db->cached(kDeleteInput)->bind(1, *record->plan_id()).run();
      db->cached(kDeleteCorrelations)->bind(1, record->logical_query_id()).run();
      db->cached(kDeleteQuery)->bind(1, record->query_ref()).run();
      ++retired;
    }
    return retired;
  }
};

namespace {

// One commit at synchronous NORMAL (WAL: durable against a process crash when it returns, not
// fsynced), FULL again when this ends (after the transaction declared after it has committed or
// rolled back). Only for the marks, whose loss on power failure is the tested crash state.
class UnsyncedCommit {
 public:
  explicit UnsyncedCommit(store::Database& db) : db_(db) {
    db_.cached("PRAGMA synchronous = NORMAL")->run();
  }
  ~UnsyncedCommit() {
    try {
      db_.cached("PRAGMA synchronous = FULL")->run();
    } catch (...) {
      std::terminate();  // does no I/O; never keep committing unsynced
    }
  }
  UnsyncedCommit(const UnsyncedCommit&) = delete;
  UnsyncedCommit& operator=(const UnsyncedCommit&) = delete;

 private:
  store::Database& db_;
};

}  // namespace

ManagedQueryStore::ManagedQueryStore(std::filesystem::path path, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}
ManagedQueryStore::~ManagedQueryStore() = default;

namespace detail {
std::string_view pinned_query_store_schema_digest() noexcept { return kPinnedSchemaDigest; }
std::string reference_query_store_schema_digest() { return schema_digest(reference_schema()); }
}  // namespace detail

std::shared_ptr<ManagedQueryStore> open_managed_query_store(
    const std::filesystem::path& path, std::string_view installation_hmac_key) {
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
  auto impl = std::make_unique<ManagedQueryStore::Impl>();
  impl->key = std::string(installation_hmac_key);
  impl->path = normal;
  struct stat info {};
  if (::lstat(normal.c_str(), &info) != 0) {
    throw ManagedQueryStoreUnavailable("managed query store file is unavailable");
  }
  impl->device = info.st_dev;
  impl->inode = info.st_ino;
  try {
    impl->db = std::make_unique<store::Database>(normal, store::Database::Mode::kReadWrite,
                                                 kBusyTimeoutMs);
    configure(*impl->db);
    migrate_from_version_2(*impl->db);
    migrate_from_version_3(*impl->db);
    const auto objects = schema_objects(*impl->db);
    if (schema_digest(objects) != kPinnedSchemaDigest && objects != reference_schema()) {
      throw ManagedQueryStoreCorruption("managed query store schema is not the expected schema");
    }
    if (user_version(*impl->db) != kUserVersion) {
      throw ManagedQueryStoreCorruption("managed query store schema version is unsupported");
    }
    auto identity =
        impl->db->prepare("SELECT singleton, key_check FROM managed_query_store_identity");
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
  return std::shared_ptr<ManagedQueryStore>(new ManagedQueryStore(normal, std::move(impl)));
}

void ManagedQueryStore::verify() {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  try {
    store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
    {
      auto check = impl_->db->prepare("PRAGMA integrity_check");
      if (!check.step() || check.text(0) != "ok") {
        throw ManagedQueryStoreCorruption("managed query store failed its integrity check");
      }
    }
    {
      // Every registration naming a plan id has exactly its lookup row, and no lookup row names
      // anything else: the same-plan check of register_query can miss no registration.
      std::int64_t correlated = 0;
      auto queries = impl_->db->cached(kAllQueries);
      auto lookup = impl_->db->cached(
          "SELECT count(*) FROM managed_query_correlations WHERE correlation_id = ? AND "
          "logical_query_id = ?");
      while (queries->step()) {
        const auto record = impl_->read_query(*queries);
        const auto& correlation = record.decision_event().correlation_id();
        if (!correlation) continue;
        ++correlated;
        lookup->bind(1, *correlation).bind(2, record.logical_query_id());
        const bool found = lookup->step() && lookup->integer(0) == 1;
        lookup->reset();
        if (!found) {
          throw ManagedQueryStoreCorruption("managed query plan lookup misses a registration");
        }
      }
      if (impl_->count("SELECT count(*) FROM managed_query_correlations") != correlated) {
        throw ManagedQueryStoreCorruption("managed query plan lookup names no registration");
      }
    }
    auto desired = impl_->db->cached(kAllDesired);
    while (desired->step()) static_cast<void>(impl_->read_desired(*desired));
  } catch (const ManagedQueryStoreError&) {
    throw;
  } catch (const Error& error) {
    throw ManagedQueryStoreCorruption(std::string("managed query store is unusable: ") +
                                      error.what());
  }
}

namespace {
std::string input_row_hmac(std::string_view key, const std::string& plan_id,
                           std::string_view input_json) {
  std::string message = plan_id;
  message.push_back('\0');
  message.append(input_json);
  return core::hmac_sha256_hex(key, tagged("ctx.managed-input-row-v1", message));
}

void require_input_plan_id(const std::string& plan_id) {
  if (plan_id.empty() || plan_id.size() > 128 || !engine::is_opaque_token(plan_id)) {
    throw InvalidArgument("managed input plan_id must be an opaque token");
  }
}
}  // namespace

void ManagedQueryStore::put_input(const std::string& plan_id, std::string_view input_json) {
  require_input_plan_id(plan_id);
  if (input_json.empty() || input_json.size() > kMaxInputBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed input registration is too large");
  }
  const std::string row_hmac = input_row_hmac(impl_->key, plan_id, input_json);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kImmediate);
  {
    auto existing = impl_->db->cached(kInputByPlan);
    existing->bind(1, plan_id);
    if (existing->step()) {
      if (existing->blob(0) != input_json ||
          !core::constant_time_equal(existing->text(1), row_hmac)) {
        throw ManagedQueryStoreCorruption(
            "managed input registration differs from the stored one");
      }
      return;  // the same registration: nothing to write (the transaction rolls back)
    }
  }
  if (impl_->count(kInputCount) >= kMaxInputRows) {
    throw ManagedQueryStoreCapacityExceeded("managed query store holds too many inputs");
  }
  impl_->db->cached(kInsertInput)
      ->bind(1, plan_id)
      .bind_blob(2, input_json)
      .bind(3, row_hmac)
      .run();
  tx.commit();
}

std::optional<std::string> ManagedQueryStore::find_input(const std::string& plan_id) {
  require_input_plan_id(plan_id);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  auto row = impl_->db->cached(kInputByPlan);
  row->bind(1, plan_id);
  if (!row->step()) return std::nullopt;
  std::string input_json = row->blob(0);
  if (!row->is_blob(0) || input_json.size() > kMaxInputBytes ||
      !core::constant_time_equal(row->text(1), input_row_hmac(impl_->key, plan_id, input_json))) {
    throw ManagedQueryStoreCorruption("managed input registration authentication failed");
  }
  return input_json;
}

ManagedQueryRecord ManagedQueryStore::register_query(const std::string& logical_query_id,
                                                     const engine::EngineEvent& session_started,
                                                     const engine::EngineEvent& decision_event,
                                                     const std::string& manifest,
                                                     const std::string& environment,
                                                     const RetirementCheck& may_retire) {
  validate_registration(logical_query_id, session_started, decision_event, manifest, environment);
  const Json registration =
      registration_json(logical_query_id, session_started, decision_event, manifest, environment);
  const std::string text = cjson(registration);
  if (text.size() > kMaxRegistrationBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed query registration is too large");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kImmediate);
  if (auto existing = impl_->query_where(kQueryByLogicalId, logical_query_id)) {
    if (existing->query_ref() == impl_->query_ref_for(text)) return std::move(*existing);
    throw ManagedQueryStoreConflict("logical query identity is already bound to different content");
  }
  if (impl_->count(kQueryCount) >= kMaxQueryRows &&
      (!may_retire || impl_->retire_oldest(may_retire) == 0)) {
    throw ManagedQueryStoreCapacityExceeded("managed query store is full");
  }
  {
    // Only a registration recorded under this correlation id can hold it: each such row is
    // authenticated and compared exactly, without reading every row of the store.
    const auto& correlation = decision_event.correlation_id();
    auto same_plan = impl_->db->cached(correlation ? kQueriesWithCorrelation : kAllQueries);
    if (correlation) same_plan->bind(1, *correlation);
    while (same_plan->step()) {
      const auto other = impl_->read_query_shared(*same_plan);
      if (other->decision_event().scope() == decision_event.scope() &&
          other->decision_event().correlation_id() == decision_event.correlation_id()) {
        throw ManagedQueryStoreConflict(
            "managed query scope and plan are already reserved by another registration");
      }
    }
  }
  const std::string query_ref = impl_->query_ref_for(text);
  if (impl_->query_where(kQueryByRef, query_ref)) {
    throw ManagedQueryStoreConflict("managed query reference collides");
  }
  const std::string row_hmac = impl_->query_row_hmac(query_ref, registration, {}, {}, {}, {});
  impl_->db
      ->cached(
          "INSERT INTO managed_queries(logical_query_id, query_ref, registration_json, "
          "registration_bytes, row_hmac) VALUES (?, ?, ?, ?, ?)")
      ->bind(1, logical_query_id)
      .bind(2, query_ref)
      .bind(3, text)
      .bind(4, static_cast<std::int64_t>(text.size()))
      .bind(5, row_hmac)
      .run();
  if (const auto& correlation = decision_event.correlation_id()) {
    impl_->db->cached(kInsertCorrelation)->bind(1, *correlation).bind(2, logical_query_id).run();
  }
  ManagedQueryRecord record(session_started, decision_event);
  record.query_ref_ = query_ref;
  record.logical_query_id_ = logical_query_id;
  record.manifest_digest_ = manifest;
  record.environment_digest_ = environment;
  tx.commit();
  impl_->remember_written(Impl::copy_of(record), text, row_hmac);
  return record;
}

ManagedQueryRecord ManagedQueryStore::mark_planned(const std::string& query_ref,
                                                   const std::string& plan_id,
                                                   const std::string& decision_digest,
                                                   std::int64_t journal_revision,
                                                   const std::string& journal_record_digest) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  require_sha(decision_digest, "decision_digest");
  require_sha(journal_record_digest, "journal_record_digest");
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  const UnsyncedCommit unsynced(*impl_->db);  // see the header: recovery redoes a lost mark
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kImmediate);
  auto record = impl_->require_query(query_ref);
  if (record.decision_event().correlation_id() != std::optional<std::string>(plan_id) ||
      journal_revision != record.decision_event().expected_revision() + 1) {
    throw ManagedQueryStoreConflict("managed query completion does not match its decision");
  }
  if (record.planned()) {
    if (record.plan_id() == std::optional<std::string>(plan_id) &&
        record.decision_digest() == std::optional<std::string>(decision_digest) &&
        record.journal_revision() == std::optional<std::int64_t>(journal_revision) &&
        record.journal_record_digest() == std::optional<std::string>(journal_record_digest)) {
      return record;
    }
    throw ManagedQueryStoreConflict("managed query completion is already bound differently");
  }
  {
    auto same_plan = impl_->db->cached(kQueriesByPlan);
    same_plan->bind(1, plan_id);
    while (same_plan->step()) {
      const auto other = impl_->read_query_shared(*same_plan);
      if (other->decision_event().scope() == record.decision_event().scope()) {
        throw ManagedQueryStoreConflict(
            "managed query scope and plan are already planned by another logical identity");
      }
    }
  }
  auto text_statement = impl_->db->cached(kRegistrationTextByRef);
  text_statement->bind(1, query_ref);
  text_statement->step();
  const std::string text = text_statement->text(0);
  const Json registration = core::parse_json(text);
  const std::string row_hmac = impl_->query_row_hmac(query_ref, registration, plan_id,
                                                     decision_digest, journal_revision,
                                                     journal_record_digest);
  impl_->db
      ->cached(
          "UPDATE managed_queries SET plan_id = ?, decision_digest = ?, "
          "journal_revision = ?, journal_record_digest = ?, row_hmac = ? "
          "WHERE query_ref = ?")
      ->bind(1, plan_id)
      .bind(2, decision_digest)
      .bind(3, journal_revision)
      .bind(4, journal_record_digest)
      .bind(5, row_hmac)
      .bind(6, query_ref)
      .run();
  // The authenticated row with exactly the columns just written: no read-back.
  ManagedQueryRecord marked = Impl::copy_of(record);
  marked.plan_id_ = plan_id;
  marked.decision_digest_ = decision_digest;
  marked.revision_ = journal_revision;
  marked.record_digest_ = journal_record_digest;
  tx.commit();
  impl_->remember_written(Impl::copy_of(marked), text, row_hmac);
  return marked;
}

ManagedQueryRecord ManagedQueryStore::load(const std::string& query_ref) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
  return impl_->require_query(query_ref);
}

std::optional<ManagedQueryRecord> ManagedQueryStore::find_planned_by_scope_and_plan(
    const engine::ScopeRef& scope, const std::string& plan_id) {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
  auto statement = impl_->db->cached(kQueriesByPlan);
  statement->bind(1, plan_id);
  std::optional<ManagedQueryRecord> found;
  while (statement->step()) {
    const auto record = impl_->read_query_shared(*statement);
    if (!(record->decision_event().scope() == scope)) continue;
    if (found) throw ManagedQueryStoreCorruption("managed query scope and plan are ambiguous");
    found.emplace(Impl::copy_of(*record));
  }
  return found;
}

ManagedDesiredSetRecord ManagedQueryStore::reserve_desired_set(
    const std::string& query_ref, const std::string& logical_choice_id,
    const std::vector<std::string>& capability_ids, const engine::EngineEvent& event) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  require_sha(logical_choice_id, "logical_choice_id");
  const std::string event_json = event.to_json_text();
  const std::string ids_json = cjson(Json(capability_ids));
  if (event_json.size() > kMaxDesiredEventBytes || ids_json.size() > kMaxCapabilityIdsBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed desired set is too large");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kImmediate);
  const auto parent = impl_->require_query(query_ref);
  if (!parent.planned()) {
    throw ManagedQueryStoreConflict("managed desired set requires a planned parent query");
  }
  const auto& decision = parent.decision_event();
  if (event.event_kind() != engine::EventKind::kReassessmentRequested ||
      *parent.journal_revision() > event.expected_revision() ||
      !(event.scope() == decision.scope()) || event.correlation_id() != parent.plan_id() ||
      !same_envelope(event, decision)) {
    throw ManagedQueryStoreConflict("managed desired event does not continue its parent plan");
  }
  const Json& payload = event.payload();
  if (!payload.is_object() || payload.size() != 3 || !payload.contains("desired_capabilities") ||
      !payload.contains("owner_id") || !payload.contains("policy_snapshot_digest") ||
      !payload["desired_capabilities"].is_array()) {
    throw ManagedQueryStoreConflict("managed desired event payload is not exact");
  }
  const Json& rows = payload["desired_capabilities"];
  if (rows.size() != capability_ids.size()) {
    throw ManagedQueryStoreConflict("managed desired rows do not match the capability ids");
  }
  static const std::set<std::string> row_keys = {
      "actionability", "capability_id", "install_descriptor_digest", "install_plan_digest", "kind",
      "lease_id",      "source_digest"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Json& row = rows[i];
    if (!row.is_object() || row.size() != row_keys.size()) {
      throw ManagedQueryStoreConflict("managed desired row is not exact");
    }
    for (const auto& name : row_keys) {
      if (!row.contains(name)) throw ManagedQueryStoreConflict("managed desired row is not exact");
    }
    const Json& spelled = row["actionability"];
    const auto actionability =
        spelled.is_string() ? engine::find_enum<engine::Actionability>(spelled.get<std::string>())
                            : std::nullopt;
    const bool install = actionability == engine::Actionability::kInstall;
    if (row["capability_id"] != capability_ids[i] || !actionability ||
        row["install_descriptor_digest"].is_null() == install ||
        row["install_plan_digest"].is_null() == install) {
      throw ManagedQueryStoreConflict("managed desired row does not match its capability");
    }
  }
  const std::string stream_digest = desired_stream_identity_digest(event.scope());
  const Json registration =
      Impl::desired_registration(query_ref, logical_choice_id, *parent.plan_id(),
                                 *parent.decision_digest(), stream_digest, capability_ids, event);
  const std::string ref = impl_->desired_ref_for(registration);
  {
    auto same = impl_->db->cached(kDesiredByChoice);
    same->bind(1, query_ref).bind(2, logical_choice_id);
    if (same->step()) {
      auto existing = impl_->read_desired(*same);
      if (existing.desired_set_ref() == ref && existing.capability_ids() == capability_ids &&
          existing.event() == event) {
        return existing;
      }
      throw ManagedQueryStoreConflict(
          "logical desired choice is already bound to different content");
    }
  }
  const auto on_stream = impl_->desired_where(kDesiredByStream, stream_digest);
  std::optional<std::string> newest_same_query_event;
  std::int64_t newest_revision = -1;
  std::int64_t latest_committed = 0;
  for (const auto& other : on_stream) {
    if (other.event().expected_revision() == event.expected_revision()) {
      throw ManagedQueryStoreConflict("managed desired stream revision is already reserved");
    }
    if (!other.committed()) {
      throw ManagedQueryStoreConflict("managed desired stream has a pending reservation");
    }
    latest_committed = std::max(latest_committed, *other.journal_revision());
    if (other.query_ref() == query_ref && other.event().expected_revision() > newest_revision) {
      newest_revision = other.event().expected_revision();
      newest_same_query_event = other.event().event_id();
    }
  }
  const std::string expected_causation = newest_same_query_event.value_or(decision.event_id());
  if (event.causation_id() != std::optional<std::string>(expected_causation)) {
    throw ManagedQueryStoreConflict("managed desired event does not follow its predecessor");
  }
  if (event.expected_revision() < latest_committed) {
    throw ManagedQueryStoreConflict("managed desired event precedes a committed desired set");
  }
  if (impl_->count(kDesiredCount) >= kMaxDesiredRows) {
    throw ManagedQueryStoreCapacityExceeded("managed desired-set store is full");
  }
  impl_->db
      ->cached(
          "INSERT INTO managed_desired_sets(query_ref, logical_choice_id, desired_set_ref, "
          "plan_id, decision_digest, stream_identity_digest, expected_revision, event_id, "
          "event_json, event_bytes, capability_ids_json, capability_ids_bytes, row_hmac) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      ->bind(1, query_ref)
      .bind(2, logical_choice_id)
      .bind(3, ref)
      .bind(4, *parent.plan_id())
      .bind(5, *parent.decision_digest())
      .bind(6, stream_digest)
      .bind(7, event.expected_revision())
      .bind(8, event.event_id())
      .bind(9, event_json)
      .bind(10, static_cast<std::int64_t>(event_json.size()))
      .bind(11, ids_json)
      .bind(12, static_cast<std::int64_t>(ids_json.size()))
      .bind(13, impl_->desired_row_hmac(ref, registration, ids_json, event_json, {}, {}, {}))
      .run();
  auto stored = impl_->desired_where(kDesiredByRef, ref);
  tx.commit();
  return std::move(stored.at(0));
}

ManagedDesiredSetRecord ManagedQueryStore::mark_desired_set_committed(
    const std::string& desired_set_ref, std::int64_t journal_revision,
    const std::string& journal_record_digest, const std::string& transition_digest) {
  if (!is_desired_set_ref(desired_set_ref)) {
    throw InvalidArgument("desired_set_ref must be an opaque managed desired-set reference");
  }
  require_sha(journal_record_digest, "journal_record_digest");
  require_sha(transition_digest, "transition_digest");
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  const UnsyncedCommit unsynced(*impl_->db);  // see the header: recovery redoes a lost mark
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kImmediate);
  auto rows = impl_->desired_where(kDesiredByRef, desired_set_ref);
  if (rows.empty()) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  auto& record = rows.front();
  if (journal_revision != record.event().expected_revision() + 1) {
    throw ManagedQueryStoreConflict("managed desired-set commit revision does not match");
  }
  if (record.committed()) {
    if (record.journal_revision() == std::optional<std::int64_t>(journal_revision) &&
        record.journal_record_digest() == std::optional<std::string>(journal_record_digest) &&
        record.transition_digest() == std::optional<std::string>(transition_digest)) {
      return std::move(record);
    }
    throw ManagedQueryStoreConflict("managed desired-set completion is already bound differently");
  }
  const Json registration = Impl::desired_registration(
      record.query_ref(), record.logical_choice_id(), record.plan_id(), record.decision_digest(),
      record.stream_identity_digest(), record.capability_ids(), record.event());
  impl_->db
      ->cached(
          "UPDATE managed_desired_sets SET journal_revision = ?, journal_record_digest = ?, "
          "transition_digest = ?, row_hmac = ? WHERE desired_set_ref = ?")
      ->bind(1, journal_revision)
      .bind(2, journal_record_digest)
      .bind(3, transition_digest)
      .bind(4, impl_->desired_row_hmac(desired_set_ref, registration,
                                       cjson(Json(record.capability_ids())),
                                       record.event().to_json_text(), journal_revision,
                                       journal_record_digest, transition_digest))
      .bind(5, desired_set_ref)
      .run();
  if (impl_->db->changes() != 1) {
    throw ManagedQueryStoreCorruption("managed desired-set completion did not update one row");
  }
  // The authenticated row with exactly the columns just written: no read-back (as mark_planned).
  record.revision_ = journal_revision;
  record.record_digest_ = journal_record_digest;
  record.transition_digest_ = transition_digest;
  tx.commit();
  return std::move(record);
}

ManagedDesiredSetRecord ManagedQueryStore::load_desired_set(const std::string& desired_set_ref) {
  if (!is_desired_set_ref(desired_set_ref)) {
    throw InvalidArgument("desired_set_ref must be an opaque managed desired-set reference");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
  auto rows = impl_->desired_where(kDesiredByRef, desired_set_ref);
  if (rows.empty()) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  return std::move(rows.front());
}

std::optional<ManagedDesiredSetRecord> ManagedQueryStore::find_latest_desired_set(
    const std::string& query_ref) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
  impl_->require_query(query_ref);
  auto rows =
      impl_->desired_where(kDesiredLatestOfQuery, query_ref);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

ManagedDesiredSetRecord ManagedQueryStore::load_latest_desired_set(const std::string& query_ref) {
  auto found = find_latest_desired_set(query_ref);
  if (!found) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  return std::move(*found);
}

std::optional<ManagedDesiredSetRecord> ManagedQueryStore::find_pending_desired_set(
    const engine::ScopeRef& scope) {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  store::Transaction tx(*impl_->db, store::Transaction::Kind::kDeferred);
  auto rows = impl_->desired_where(kDesiredUncommittedOnStream, desired_stream_identity_digest(scope));
  if (rows.empty()) return std::nullopt;
  if (rows.size() > 1) {
    throw ManagedQueryStoreCorruption("managed desired stream has several pending reservations");
  }
  return std::move(rows.front());
}

ManagedDesiredSetRecord ManagedQueryStore::load_pending_desired_set(const engine::ScopeRef& scope) {
  auto found = find_pending_desired_set(scope);
  if (!found) throw ManagedQueryStoreNotFound("managed desired stream has no pending reservation");
  return std::move(*found);
}

}  // namespace ctx::runtime
