#include "host/store/sqlite_managed_query_store.hpp"

#include <sys/stat.h>

#include <exception>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/keyed_rows.hpp"
#include "host/store/managed_query_file.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {
namespace {

using core::Json;
using engine::ManagedDesiredSetRecord;
using engine::ManagedQueryRecord;
using engine::ManagedQueryStore;
using engine::ManagedQueryStoreCapacityExceeded;
using engine::ManagedQueryStoreConflict;
using engine::ManagedQueryStoreCorruption;
using engine::ManagedQueryStoreError;
using engine::ManagedQueryStoreNotFound;
using engine::ManagedRecordKey;
namespace rules = engine::managed_store;

// The column lists as macros so that each statement below is one string literal (static SQL,
// prepared once per connection through Database::cached).
#define CTX_QUERY_COLUMNS                                                         \
  "logical_query_id, query_ref, registration_json, registration_bytes, plan_id, " \
  "decision_digest, journal_revision, journal_record_digest, row_hmac"
#define CTX_DESIRED_COLUMNS                                                              \
  "query_ref, logical_choice_id, desired_set_ref, plan_id, decision_digest, "            \
  "stream_identity_digest, expected_revision, event_id, event_json, event_bytes, "       \
  "capability_ids_json, capability_ids_bytes, journal_revision, journal_record_digest, " \
  "transition_digest, row_hmac"

// The statements of this store. Each is used through one lease at a time (never nested).
constexpr StaticSql kQueryByRef =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE query_ref = ?";
constexpr StaticSql kQueryByLogicalId =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE logical_query_id = ?";
constexpr StaticSql kQueriesByPlan =
    "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries WHERE plan_id = ?";
constexpr StaticSql kAllQueries = "SELECT " CTX_QUERY_COLUMNS " FROM managed_queries";
constexpr StaticSql kQueriesWithCorrelation =
    "SELECT " CTX_QUERY_COLUMNS
    " FROM managed_queries WHERE logical_query_id IN "
    "(SELECT logical_query_id FROM managed_query_correlations WHERE correlation_id = ?)";
constexpr StaticSql kInsertCorrelation =
    "INSERT OR IGNORE INTO managed_query_correlations(correlation_id, logical_query_id) "
    "VALUES (?, ?)";
constexpr StaticSql kRegistrationTextByRef =
    "SELECT registration_json FROM managed_queries WHERE query_ref = ?";
constexpr StaticSql kQueryCount = "SELECT count(*) FROM managed_queries";
// Retirement (register_query at capacity): the oldest planned registrations, by the time their
// decision was made (json_extract in a query, not in the schema, so trusted_schema OFF allows it).
constexpr StaticSql kOldestPlanned =
    "SELECT " CTX_QUERY_COLUMNS
    " FROM managed_queries WHERE plan_id IS NOT NULL "
    "ORDER BY json_extract(registration_json, '$.decision_event.occurred_at'), query_ref "
    "LIMIT ?";
constexpr StaticSql kUncommittedDesiredOfQuery =
    "SELECT count(*) FROM managed_desired_sets WHERE query_ref = ? AND journal_revision IS NULL";
constexpr StaticSql kDeleteDesiredOfQuery = "DELETE FROM managed_desired_sets WHERE query_ref = ?";
constexpr StaticSql kDeleteInput = "DELETE FROM managed_inputs WHERE plan_id = ?";
constexpr StaticSql kDeleteCorrelations =
    "DELETE FROM managed_query_correlations WHERE logical_query_id = ?";
constexpr StaticSql kDeleteQuery = "DELETE FROM managed_queries WHERE query_ref = ?";
constexpr StaticSql kInputCount = "SELECT count(*) FROM managed_inputs";
constexpr StaticSql kInputByPlan =
    "SELECT input_json, row_hmac FROM managed_inputs WHERE plan_id = ?";
constexpr StaticSql kInsertInput =
    "INSERT INTO managed_inputs(plan_id, input_json, row_hmac) VALUES (?, ?, ?)";
constexpr StaticSql kDesiredCount = "SELECT count(*) FROM managed_desired_sets";
constexpr StaticSql kAllDesired = "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets";
constexpr StaticSql kDesiredByStream =
    "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets WHERE stream_identity_digest = ?";
constexpr StaticSql kDesiredByRef =
    "SELECT " CTX_DESIRED_COLUMNS " FROM managed_desired_sets WHERE desired_set_ref = ?";
constexpr StaticSql kDesiredLatestOfQuery =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE query_ref = ? ORDER BY expected_revision DESC LIMIT 1";
constexpr StaticSql kDesiredUncommittedOnStream =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE stream_identity_digest = ? AND journal_revision IS NULL";
constexpr StaticSql kDesiredByChoice =
    "SELECT " CTX_DESIRED_COLUMNS
    " FROM managed_desired_sets WHERE query_ref = ? AND logical_choice_id = ?";
#undef CTX_DESIRED_COLUMNS
#undef CTX_QUERY_COLUMNS

std::string cjson(const Json& value) { return engine::managed_store::canonical_text(value); }

// The keyed-row domains of this store's tags (KeyedRows).
constexpr std::string_view kQueryRowDomain = "ctx.managed-query-row-v1";
constexpr std::string_view kDesiredRowDomain = "ctx.managed-desired-set-row-v1";

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}
Json optional_json(const std::optional<std::int64_t>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

struct SqliteManagedQueryStore::Impl {
  static constexpr std::size_t kVerifiedRowMemo = 4096;
  explicit Impl(std::string_view installation_key) : rows(installation_key) {}
  KeyedRows rows;  // the installation key
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
  std::unique_ptr<Database> db;
  std::filesystem::path path;

  // Every transaction re-checks that the file is the one authenticated at open.
  void check_binding() const {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || info.st_dev != device || info.st_ino != inode) {
      throw ManagedQueryStoreCorruption(
          "managed query store changed since its authenticated binding");
    }
  }

  // What a query row's tag (its row_hmac column) authenticates.
  static std::string query_row_bytes(const std::string& query_ref, const Json& registration,
                                     const std::optional<std::string>& plan_id,
                                     const std::optional<std::string>& decision_digest,
                                     const std::optional<std::int64_t>& revision,
                                     const std::optional<std::string>& record_digest) {
    const Json row = {{"decision_digest", optional_json(decision_digest)},
                      {"journal_record_digest", optional_json(record_digest)},
                      {"journal_revision", optional_json(revision)},
                      {"plan_id", optional_json(plan_id)},
                      {"query_ref", query_ref},
                      {"registration", registration},
                      {"schema", "ctx.managed-query-store-row-v1"}};
    return cjson(row);
  }
  std::string query_row_hmac(const std::string& query_ref, const Json& registration,
                             const std::optional<std::string>& plan_id,
                             const std::optional<std::string>& decision_digest,
                             const std::optional<std::int64_t>& revision,
                             const std::optional<std::string>& record_digest) const {
    return rows.tag(kQueryRowDomain, query_row_bytes(query_ref, registration, plan_id,
                                                     decision_digest, revision, record_digest));
  }

  std::string query_ref_for(const std::string& registration_bytes) const {
    return "mqr_" + rows.tag("ctx.managed-query-ref-v1", registration_bytes);
  }

  ManagedQueryRecord read_query(Statement& row) const {
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
    if (!rows.authentic(kQueryRowDomain,
                        query_row_bytes(query_ref, registration, plan_id, decision_digest, revision,
                                        record_digest),
                        row.text(8))) {
      throw fail();
    }
    try {
      return ManagedQueryRecord(
          record_key(),
          {.query_ref = query_ref,
           .logical_query_id = logical,
           .session_started = engine::EngineEvent::from_json(registration["session_started"]),
           .decision_event = engine::EngineEvent::from_json(registration["decision_event"]),
           .artifact_manifest_digest = registration["artifact_manifest_digest"].get<std::string>(),
           .planning_environment_digest =
               registration["planning_environment_digest"].get<std::string>(),
           .plan_id = plan_id,
           .decision_digest = decision_digest,
           .journal_revision = revision,
           .journal_record_digest = record_digest});
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
  static std::string row_bytes(Statement& row, int columns = 9) {
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
    append_text(out, record.logical_query_id());
    append_text(out, record.query_ref());
    append_text(out, text);
    append_integer(out, static_cast<std::int64_t>(text.size()));
    const auto optional_text = [&out](const std::optional<std::string>& value) {
      if (value) {
        append_text(out, *value);
      } else {
        out += "N;";
      }
    };
    optional_text(record.plan_id());
    optional_text(record.decision_digest());
    if (record.journal_revision()) {
      append_integer(out, *record.journal_revision());
    } else {
      out += "N;";
    }
    optional_text(record.journal_record_digest());
    append_text(out, row_hmac);
    return out;
  }
  // Remembers the row this store just wrote for `record`: built here from its own inputs (the
  // registration text was encoded from exactly these events), so it needs no read-back.
  void remember_written(ManagedQueryRecord record, const std::string& text,
                        const std::string& row_hmac) const {
    std::string bytes = row_bytes_of(record, text, row_hmac);
    const std::string query_ref = record.query_ref();
    if (verified_rows.size() >= kVerifiedRowMemo) verified_rows.clear();
    verified_rows[query_ref] = {std::move(bytes),
                                std::make_shared<const ManagedQueryRecord>(std::move(record))};
  }

  // read_query of `row`, shared. Authentication and decoding are a pure function of the row's
  // bytes under this store's key, so a row byte-equal to one this store authenticated before is
  // that record; any other row (an edited one included) is authenticated and decoded in full.
  std::shared_ptr<const ManagedQueryRecord> read_query_shared(Statement& row) const {
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
    return from.copy(record_key());
  }

  // The row `sql` (kQueryByRef or kQueryByLogicalId) selects for `value`, authenticated.
  std::optional<ManagedQueryRecord> query_where(StaticSql sql, const std::string& value) const {
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

  std::string desired_ref_for(const Json& registration) const {
    return "mds_" + rows.tag("ctx.managed-desired-set-ref-v1", cjson(registration));
  }

  // What a desired-set row's tag (its row_hmac column) authenticates.
  static std::string desired_row_bytes(const std::string& ref, const Json& registration,
                                       const std::string& ids_json, const std::string& event_json,
                                       const std::optional<std::int64_t>& revision,
                                       const std::optional<std::string>& record_digest,
                                       const std::optional<std::string>& transition_digest) {
    const Json row = {{"capability_ids_sha256", core::sha256_hex(ids_json)},
                      {"desired_set_ref", ref},
                      {"event_sha256", core::sha256_hex(event_json)},
                      {"journal_record_digest", optional_json(record_digest)},
                      {"journal_revision", optional_json(revision)},
                      {"registration", registration},
                      {"schema", "ctx.managed-desired-set-row-v1"},
                      {"transition_digest", optional_json(transition_digest)}};
    return cjson(row);
  }
  std::string desired_row_hmac(const std::string& ref, const Json& registration,
                               const std::string& ids_json, const std::string& event_json,
                               const std::optional<std::int64_t>& revision,
                               const std::optional<std::string>& record_digest,
                               const std::optional<std::string>& transition_digest) const {
    return rows.tag(kDesiredRowDomain,
                    desired_row_bytes(ref, registration, ids_json, event_json, revision,
                                      record_digest, transition_digest));
  }

  ManagedDesiredSetRecord read_desired(Statement& row) const {
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
    const Json registration = rules::desired_registration(
        query_ref, logical, plan_id, decision_digest, stream_digest, ids, *event);
    if (!core::constant_time_equal(desired_ref_for(registration), ref)) throw fail();
    if (row.text(7) != event->event_id() || row.integer(6) != event->expected_revision() ||
        stream_digest != engine::desired_stream_identity_digest(event->scope())) {
      throw fail();
    }
    const std::optional<std::int64_t> revision =
        row.is_null(12) ? std::nullopt : std::optional<std::int64_t>(row.integer(12));
    const auto record_digest = row.optional_text(13);
    const auto transition_digest = row.optional_text(14);
    const int nulls = !revision + !record_digest + !transition_digest;
    if (nulls != 0 && nulls != 3) throw fail();
    if (!rows.authentic(kDesiredRowDomain,
                        desired_row_bytes(ref, registration, ids_json, event_json, revision,
                                          record_digest, transition_digest),
                        row.text(15))) {
      throw fail();
    }
    return ManagedDesiredSetRecord(record_key(), {.query_ref = query_ref,
                                                  .logical_choice_id = logical,
                                                  .desired_set_ref = ref,
                                                  .plan_id = plan_id,
                                                  .decision_digest = decision_digest,
                                                  .stream_identity_digest = stream_digest,
                                                  .capability_ids = std::move(ids),
                                                  .event = std::move(*event),
                                                  .journal_revision = revision,
                                                  .journal_record_digest = record_digest,
                                                  .transition_digest = transition_digest});
  }

  static ManagedDesiredSetRecord copy_of(const ManagedDesiredSetRecord& from) {
    return from.copy(record_key());
  }

  // read_desired, remembered: a row whose stored values are byte for byte the ones this store
  // authenticated before (in this process, under this key) is that record again.
  ManagedDesiredSetRecord read_desired_memo(Statement& row) const {
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
  std::vector<ManagedDesiredSetRecord> desired_where(StaticSql sql,
                                                     const std::string& value) const {
    auto statement = db->cached(sql);
    statement->bind(1, value);
    std::vector<ManagedDesiredSetRecord> rows;
    while (statement->step()) rows.push_back(read_desired_memo(*statement));
    return rows;
  }

  // `sql` is a count(*) statement.
  std::int64_t count(StaticSql sql) const {
    auto statement = db->cached(sql);
    statement->step();
    return statement->integer(0);
  }

  // Inside register_query's transaction: retires up to kRetirementBatch of the oldest planned
  // registrations that have no uncommitted desired set and that `may_retire` accepts, with their
  // desired sets, input and lookup rows. Returns how many it retired.
  int retire_oldest(const RetirementCheck& may_retire) const {
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
  explicit UnsyncedCommit(Database& db) : db_(db) {
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
  Database& db_;
};

}  // namespace

SqliteManagedQueryStore::SqliteManagedQueryStore(std::filesystem::path path,
                                                 std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}
SqliteManagedQueryStore::~SqliteManagedQueryStore() = default;

std::shared_ptr<SqliteManagedQueryStore> open_managed_query_store(
    const std::filesystem::path& path, std::string_view installation_hmac_key) {
  auto file = detail::open_managed_query_file(path, installation_hmac_key);
  auto impl = std::make_unique<SqliteManagedQueryStore::Impl>(installation_hmac_key);
  impl->path = file.path;
  impl->device = file.device;
  impl->inode = file.inode;
  impl->db = std::move(file.db);
  return std::shared_ptr<SqliteManagedQueryStore>(
      new SqliteManagedQueryStore(std::move(file.path), std::move(impl)));
}

void SqliteManagedQueryStore::verify() {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  try {
    Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
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
constexpr std::string_view kInputRowDomain = "ctx.managed-input-row-v1";

// What an input row's tag authenticates: its plan id and its text.
std::string input_row_bytes(const std::string& plan_id, std::string_view input_json) {
  std::string bytes = plan_id;
  bytes.push_back('\0');
  bytes.append(input_json);
  return bytes;
}

}  // namespace

void SqliteManagedQueryStore::put_input(const std::string& plan_id, std::string_view input_json) {
  rules::require_input_plan_id(plan_id);
  if (input_json.empty() || input_json.size() > ManagedQueryStore::kMaxInputBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed input registration is too large");
  }
  const std::string row_hmac =
      impl_->rows.tag(kInputRowDomain, input_row_bytes(plan_id, input_json));
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kImmediate);
  {
    auto existing = impl_->db->cached(kInputByPlan);
    existing->bind(1, plan_id);
    if (existing->step()) {
      if (existing->blob(0) != input_json ||
          !core::constant_time_equal(existing->text(1), row_hmac)) {
        throw ManagedQueryStoreCorruption("managed input registration differs from the stored one");
      }
      return;  // the same registration: nothing to write (the transaction rolls back)
    }
  }
  if (impl_->count(kInputCount) >= ManagedQueryStore::kMaxInputs) {
    throw ManagedQueryStoreCapacityExceeded("managed query store holds too many inputs");
  }
  impl_->db->cached(kInsertInput)
      ->bind(1, plan_id)
      .bind_blob(2, input_json)
      .bind(3, row_hmac)
      .run();
  tx.commit();
}

std::optional<std::string> SqliteManagedQueryStore::find_input(const std::string& plan_id) {
  rules::require_input_plan_id(plan_id);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  auto row = impl_->db->cached(kInputByPlan);
  row->bind(1, plan_id);
  if (!row->step()) return std::nullopt;
  std::string input_json = row->blob(0);
  if (!row->is_blob(0) || input_json.size() > ManagedQueryStore::kMaxInputBytes ||
      !impl_->rows.authentic(kInputRowDomain, input_row_bytes(plan_id, input_json), row->text(1))) {
    throw ManagedQueryStoreCorruption("managed input registration authentication failed");
  }
  return input_json;
}

ManagedQueryRecord SqliteManagedQueryStore::register_query(
    const std::string& logical_query_id, const engine::EngineEvent& session_started,
    const engine::EngineEvent& decision_event, const std::string& manifest,
    const std::string& environment, const RetirementCheck& may_retire) {
  rules::validate_registration(logical_query_id, session_started, decision_event, manifest,
                               environment);
  const Json registration = rules::registration_json(logical_query_id, session_started,
                                                     decision_event, manifest, environment);
  const std::string text = cjson(registration);
  if (text.size() > ManagedQueryStore::kMaxRegistrationBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed query registration is too large");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kImmediate);
  if (auto existing = impl_->query_where(kQueryByLogicalId, logical_query_id)) {
    if (existing->query_ref() == impl_->query_ref_for(text)) return std::move(*existing);
    throw ManagedQueryStoreConflict("logical query identity is already bound to different content");
  }
  if (impl_->count(kQueryCount) >= ManagedQueryStore::kMaxQueries &&
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
  ManagedQueryRecord record(record_key(), {.query_ref = query_ref,
                                           .logical_query_id = logical_query_id,
                                           .session_started = session_started,
                                           .decision_event = decision_event,
                                           .artifact_manifest_digest = manifest,
                                           .planning_environment_digest = environment,
                                           .plan_id = std::nullopt,
                                           .decision_digest = std::nullopt,
                                           .journal_revision = std::nullopt,
                                           .journal_record_digest = std::nullopt});
  tx.commit();
  impl_->remember_written(Impl::copy_of(record), text, row_hmac);
  return record;
}

ManagedQueryRecord SqliteManagedQueryStore::mark_planned(const std::string& query_ref,
                                                         const std::string& plan_id,
                                                         const std::string& decision_digest,
                                                         std::int64_t journal_revision,
                                                         const std::string& journal_record_digest) {
  rules::require_query_ref(query_ref);
  rules::require_sha(decision_digest, "decision_digest");
  rules::require_sha(journal_record_digest, "journal_record_digest");
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  const UnsyncedCommit unsynced(*impl_->db);  // see the header: recovery redoes a lost mark
  Transaction tx(*impl_->db, Transaction::Kind::kImmediate);
  auto record = impl_->require_query(query_ref);
  if (rules::planned_already(record, plan_id, decision_digest, journal_revision,
                             journal_record_digest)) {
    return record;
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
  const std::string row_hmac = impl_->query_row_hmac(
      query_ref, registration, plan_id, decision_digest, journal_revision, journal_record_digest);
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
  auto fields = record.fields();
  fields.plan_id = plan_id;
  fields.decision_digest = decision_digest;
  fields.journal_revision = journal_revision;
  fields.journal_record_digest = journal_record_digest;
  ManagedQueryRecord marked(record_key(), std::move(fields));
  tx.commit();
  impl_->remember_written(Impl::copy_of(marked), text, row_hmac);
  return marked;
}

ManagedQueryRecord SqliteManagedQueryStore::load(const std::string& query_ref) {
  rules::require_query_ref(query_ref);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
  return impl_->require_query(query_ref);
}

std::optional<ManagedQueryRecord> SqliteManagedQueryStore::find_planned_by_scope_and_plan(
    const engine::ScopeRef& scope, const std::string& plan_id) {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
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

ManagedDesiredSetRecord SqliteManagedQueryStore::reserve_desired_set(
    const std::string& query_ref, const std::string& logical_choice_id,
    const std::vector<std::string>& capability_ids, const engine::EngineEvent& event) {
  rules::require_query_ref(query_ref);
  rules::require_sha(logical_choice_id, "logical_choice_id");
  const std::string event_json = event.to_json_text();
  const std::string ids_json = cjson(Json(capability_ids));
  if (event_json.size() > ManagedQueryStore::kMaxDesiredEventBytes ||
      ids_json.size() > kMaxCapabilityIdsBytes) {
    throw ManagedQueryStoreCapacityExceeded("managed desired set is too large");
  }
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kImmediate);
  const auto parent = impl_->require_query(query_ref);
  rules::validate_desired_set(parent, capability_ids, event);
  const std::string stream_digest = engine::desired_stream_identity_digest(event.scope());
  const Json registration =
      rules::desired_registration(query_ref, logical_choice_id, *parent.plan_id(),
                                  *parent.decision_digest(), stream_digest, capability_ids, event);
  const std::string ref = impl_->desired_ref_for(registration);
  {
    auto same = impl_->db->cached(kDesiredByChoice);
    same->bind(1, query_ref).bind(2, logical_choice_id);
    if (same->step()) {
      auto existing = impl_->read_desired(*same);
      rules::require_same_choice(existing, ref, capability_ids, event);
      return existing;
    }
  }
  const auto on_stream = impl_->desired_where(kDesiredByStream, stream_digest);
  rules::require_stream_continues(on_stream, query_ref, parent.decision_event(), event);
  if (impl_->count(kDesiredCount) >= ManagedQueryStore::kMaxDesiredSets) {
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

ManagedDesiredSetRecord SqliteManagedQueryStore::mark_desired_set_committed(
    const std::string& desired_set_ref, std::int64_t journal_revision,
    const std::string& journal_record_digest, const std::string& transition_digest) {
  rules::require_desired_set_ref(desired_set_ref);
  rules::require_sha(journal_record_digest, "journal_record_digest");
  rules::require_sha(transition_digest, "transition_digest");
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  const UnsyncedCommit unsynced(*impl_->db);  // see the header: recovery redoes a lost mark
  Transaction tx(*impl_->db, Transaction::Kind::kImmediate);
  auto rows = impl_->desired_where(kDesiredByRef, desired_set_ref);
  if (rows.empty()) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  auto& record = rows.front();
  if (rules::committed_already(record, journal_revision, journal_record_digest,
                               transition_digest)) {
    return std::move(record);
  }
  const Json registration = rules::desired_registration(
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
  auto fields = record.fields();
  fields.journal_revision = journal_revision;
  fields.journal_record_digest = journal_record_digest;
  fields.transition_digest = transition_digest;
  tx.commit();
  return ManagedDesiredSetRecord(record_key(), std::move(fields));
}

ManagedDesiredSetRecord SqliteManagedQueryStore::load_desired_set(
    const std::string& desired_set_ref) {
  rules::require_desired_set_ref(desired_set_ref);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
  auto rows = impl_->desired_where(kDesiredByRef, desired_set_ref);
  if (rows.empty()) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  return std::move(rows.front());
}

std::optional<ManagedDesiredSetRecord> SqliteManagedQueryStore::find_latest_desired_set(
    const std::string& query_ref) {
  rules::require_query_ref(query_ref);
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
  impl_->require_query(query_ref);
  auto rows = impl_->desired_where(kDesiredLatestOfQuery, query_ref);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::optional<ManagedDesiredSetRecord> SqliteManagedQueryStore::find_pending_desired_set(
    const engine::ScopeRef& scope) {
  std::lock_guard lock(mutex_);
  impl_->check_binding();
  Transaction tx(*impl_->db, Transaction::Kind::kDeferred);
  auto rows = impl_->desired_where(kDesiredUncommittedOnStream,
                                   engine::desired_stream_identity_digest(scope));
  if (rows.empty()) return std::nullopt;
  if (rows.size() > 1) {
    throw ManagedQueryStoreCorruption("managed desired stream has several pending reservations");
  }
  return std::move(rows.front());
}

}  // namespace ctx::store
