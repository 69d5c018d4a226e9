#include "host/store/sqlite_journal_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {

using engine::ActionClaim;
using engine::ActivationActionAlreadyClaimed;
using engine::ActivationActionClaimExpired;
using engine::ActivationActionClaimSettled;
using engine::ActivationExecutionOutcomeConflict;
using engine::ActivationExecutionOutcomeRequired;
using engine::ClaimRequest;
using engine::EngineStoreError;
using engine::EventIdCollision;
using engine::ExecutionAuthority;
using engine::ExecutionOutcome;
using engine::GuardMode;
using engine::InstallActionAlreadyClaimed;
using engine::InstallActionClaimExpired;
using engine::InstallActionClaimRequired;
using engine::InstallActionClaimSettled;
using engine::InstallExecutionOutcomeConflict;
using engine::InstallExecutionOutcomeRequired;
using engine::InstallOutcome;
using engine::JournalCorruption;
using engine::JournalRecord;
using engine::Revision;
using engine::RevisionConflict;
using engine::SettlementGuard;
using engine::StreamId;
using Json = core::Json;

namespace {

// ---- Schema (spec §6.2) ----

constexpr const char* kSchema[] = {
    R"(CREATE TABLE IF NOT EXISTS engine_streams (
    stream_key          TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL,
    workspace_id        TEXT NOT NULL,
    repository_id       TEXT NOT NULL,
    session_id          TEXT NOT NULL,
    revision            INTEGER NOT NULL CHECK (revision >= 1),
    state_json          TEXT NOT NULL,
    state_digest        TEXT NOT NULL,
    head_record_digest  TEXT NOT NULL
))",
    R"(CREATE TABLE IF NOT EXISTS engine_journal (
    event_id                TEXT PRIMARY KEY,
    stream_key              TEXT NOT NULL,
    revision                INTEGER NOT NULL CHECK (revision >= 1),
    event_content_digest    TEXT NOT NULL,
    replay_json             TEXT NOT NULL,
    replay_digest           TEXT NOT NULL,
    transition_json         TEXT NOT NULL,
    transition_digest       TEXT NOT NULL,
    result_state_json       TEXT NOT NULL,
    result_state_digest     TEXT NOT NULL,
    previous_record_digest  TEXT,
    record_digest           TEXT NOT NULL,
    privacy_classification  TEXT NOT NULL,
    retention_class         TEXT NOT NULL,
    reducer_version         TEXT NOT NULL,
    UNIQUE (stream_key, revision)
))",
    R"(CREATE INDEX IF NOT EXISTS idx_engine_journal_stream_revision
    ON engine_journal(stream_key, revision))",
    R"(CREATE TABLE IF NOT EXISTS engine_install_claims (
    stream_key                  TEXT NOT NULL,
    action_id                   TEXT NOT NULL,
    action_content_digest       TEXT NOT NULL,
    action_kind                 TEXT NOT NULL,
    precondition_revision       INTEGER NOT NULL CHECK (precondition_revision >= 1),
    action_json                 TEXT NOT NULL,
    issuing_record_digest       TEXT NOT NULL,
    claimed_head_revision       INTEGER NOT NULL CHECK (claimed_head_revision >= 1),
    claimed_head_record_digest  TEXT NOT NULL,
    claimed_head_state_digest   TEXT NOT NULL,
    action_expires_at           TEXT NOT NULL,
    claimed_at                  TEXT NOT NULL,
    authorization_digest        TEXT NOT NULL,
    execution_binding_json      TEXT NOT NULL,
    execution_binding_digest    TEXT NOT NULL,
    claim_digest                TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
    R"(CREATE TABLE IF NOT EXISTS engine_install_outcomes (
    stream_key                         TEXT NOT NULL,
    action_id                          TEXT NOT NULL,
    action_content_digest              TEXT NOT NULL,
    claim_digest                       TEXT NOT NULL,
    execution_binding_digest           TEXT NOT NULL,
    outcome                            TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')),
    observed_material_identity_digest  TEXT,
    verification_digest                TEXT NOT NULL,
    observed_at                        TEXT NOT NULL,
    outcome_digest                     TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
    R"(CREATE TABLE IF NOT EXISTS engine_install_claim_settlements (
    stream_key                    TEXT NOT NULL,
    action_id                     TEXT NOT NULL,
    action_content_digest         TEXT NOT NULL,
    claim_digest                  TEXT NOT NULL,
    outcome                       TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')),
    receipt_event_id              TEXT NOT NULL,
    receipt_event_content_digest  TEXT NOT NULL,
    receipt_record_digest         TEXT NOT NULL,
    settlement_digest             TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
    R"(CREATE TABLE IF NOT EXISTS engine_activation_claims (
    stream_key                  TEXT NOT NULL,
    action_id                   TEXT NOT NULL,
    action_content_digest       TEXT NOT NULL,
    precondition_revision       INTEGER NOT NULL CHECK (precondition_revision >= 1),
    action_json                 TEXT NOT NULL,
    issuing_record_digest       TEXT NOT NULL,
    claimed_head_revision       INTEGER NOT NULL CHECK (claimed_head_revision >= 1),
    claimed_head_record_digest  TEXT NOT NULL,
    claimed_head_state_digest   TEXT NOT NULL,
    action_expires_at           TEXT NOT NULL,
    claimed_at                  TEXT NOT NULL,
    authorization_digest        TEXT NOT NULL,
    execution_binding_json      TEXT NOT NULL,
    execution_binding_digest    TEXT NOT NULL,
    claim_digest                TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
    R"(CREATE TABLE IF NOT EXISTS engine_activation_outcomes (
    stream_key                         TEXT NOT NULL,
    action_id                          TEXT NOT NULL,
    action_content_digest              TEXT NOT NULL,
    claim_digest                       TEXT NOT NULL,
    execution_binding_digest           TEXT NOT NULL,
    observed_material_identity_digest  TEXT NOT NULL,
    verification_digest                TEXT NOT NULL,
    observed_at                        TEXT NOT NULL,
    outcome_digest                     TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
    R"(CREATE TABLE IF NOT EXISTS engine_activation_claim_settlements (
    stream_key                    TEXT NOT NULL,
    action_id                     TEXT NOT NULL,
    action_content_digest         TEXT NOT NULL,
    claim_digest                  TEXT NOT NULL,
    outcome_digest                TEXT NOT NULL,
    receipt_event_id              TEXT NOT NULL,
    receipt_event_content_digest  TEXT NOT NULL,
    receipt_record_digest         TEXT NOT NULL,
    settlement_digest             TEXT NOT NULL,
    PRIMARY KEY (stream_key, action_id)
))",
};

constexpr const char* kSchemaObjectsSql =
    "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
    "ORDER BY type, name";

std::string collapse_whitespace(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

using SchemaObjects = std::map<std::string, std::string>;  // "type name tbl" -> sql

SchemaObjects read_schema_objects(Database& db) {
  SchemaObjects objects;
  auto stmt = db.prepare(kSchemaObjectsSql);
  while (stmt.step()) {
    objects[stmt.text(0) + " " + stmt.text(1) + " " + stmt.text(2)] =
        collapse_whitespace(stmt.text(3));
  }
  return objects;
}

// The exact schema objects as SQLite itself records them (built once in memory).
const SchemaObjects& expected_schema_objects() {
  static const SchemaObjects objects = [] {
    Database memory(":memory:", Database::Mode::kReadWriteCreate, 0);
    for (const char* sql : kSchema) memory.exec(sql);
    return read_schema_objects(memory);
  }();
  return objects;
}

// ---- File rules (spec §6.1) ----

[[noreturn]] void refuse_path(const std::string& what) {
  throw EngineStoreError("journal path refused: " + what, ErrorCode::kPermissionDenied);
}

void secure_journal_path(const std::filesystem::path& path) {
  std::filesystem::path parent = path.parent_path();
  if (parent.empty()) parent = ".";
  struct stat info{};
  if (::lstat(parent.c_str(), &info) != 0) {
    if (errno != ENOENT) refuse_path("parent directory cannot be inspected");
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) refuse_path("parent directory cannot be created");
    ::chmod(parent.c_str(), 0700);
    if (::lstat(parent.c_str(), &info) != 0) refuse_path("parent directory cannot be inspected");
  }
  if (S_ISLNK(info.st_mode)) refuse_path("parent directory is a symlink");
  if (!S_ISDIR(info.st_mode)) refuse_path("parent is not a directory");
  if (info.st_uid != ::geteuid()) refuse_path("parent directory is not owned by this user");
  if ((info.st_mode & 022) != 0) refuse_path("parent directory is writable by others");

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    refuse_path("journal file cannot be created");
  }
  if (::lstat(path.c_str(), &info) != 0) refuse_path("journal file cannot be inspected");
  if (S_ISLNK(info.st_mode)) refuse_path("journal file is a symlink");
  if (!S_ISREG(info.st_mode)) refuse_path("journal file is not a regular file");
  if (info.st_uid != ::geteuid()) refuse_path("journal file is not owned by this user");
  if ((info.st_mode & 077) != 0) refuse_path("journal file must have mode 0600");
}

void secure_sidecars(const std::filesystem::path& path) {
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string sidecar = path.string() + suffix;
    struct stat info{};
    if (::lstat(sidecar.c_str(), &info) != 0) continue;
    if (S_ISLNK(info.st_mode) || !S_ISREG(info.st_mode)) refuse_path("sqlite sidecar is unsafe");
    if ((info.st_mode & 0777) != 0600) ::chmod(sidecar.c_str(), 0600);
  }
}

// ---- Small helpers ----

bool is_trimmed(std::string_view value) noexcept {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  return !value.empty() && !space(value.front()) && !space(value.back());
}

void require_digest(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase sha-256 digest");
  }
}

void require_digest(const std::optional<std::string>& value, const char* field) {
  if (value) require_digest(*value, field);
}


// The fields a claim needs from a HostAction's canonical JSON text.
struct ParsedAction {
  std::string action_id;
  std::string kind;
  Revision precondition_revision = 0;
  std::string expires_at;
  core::Timestamp expires{};
  std::string content_digest;
};

ParsedAction parse_action(const std::string& action_json) {
  Json action;
  try {
    action = core::parse_canonical_json(action_json);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("action_json must be canonical json");
  }
  if (!action.is_object()) throw InvalidArgument("action_json must be an object");
  ParsedAction parsed;
  auto id = action.find("action_id");
  if (id == action.end() || !id->is_string() || !is_trimmed(id->get<std::string>())) {
    throw InvalidArgument("action_id must be a non-empty trimmed string");
  }
  parsed.action_id = id->get<std::string>();
  auto kind = action.find("kind");
  if (kind == action.end() || !kind->is_string()) throw InvalidArgument("action kind is missing");
  parsed.kind = kind->get<std::string>();
  auto precondition = action.find("precondition_revision");
  if (precondition == action.end() || !precondition->is_number_integer() ||
      precondition->get<std::int64_t>() < 1) {
    throw InvalidArgument("action precondition_revision must be an integer >= 1");
  }
  parsed.precondition_revision = precondition->get<std::int64_t>();
  auto expires = action.find("expires_at");
  if (expires == action.end() || !expires->is_string() ||
      !core::is_normalized_rfc3339(expires->get<std::string>())) {
    throw InvalidArgument("action expires_at is required for physical action");
  }
  parsed.expires_at = expires->get<std::string>();
  parsed.expires = core::parse_rfc3339(parsed.expires_at);
  parsed.content_digest = core::sha256_hex(action_json);
  return parsed;
}

// The reducer event inside a ReplayInput (spec §4): kind, payload and occurred_at.
struct ReceiptEvent {
  std::string kind;
  std::string action_id;
  std::string action_content_digest;
  std::string occurred_at;
};

std::optional<ReceiptEvent> parse_receipt_event(const std::string& replay_json) {
  Json replay = core::parse_json(replay_json);
  if (!replay.is_object()) return std::nullopt;
  auto event = replay.find("reducer_event");
  if (event == replay.end() || !event->is_object()) return std::nullopt;
  auto text = [](const Json& object, const char* key) -> std::string {
    auto it = object.find(key);
    return (it != object.end() && it->is_string()) ? it->get<std::string>() : std::string();
  };
  ReceiptEvent receipt;
  receipt.kind = text(*event, "kind");
  receipt.occurred_at = text(*event, "occurred_at");
  auto payload = event->find("payload");
  if (payload != event->end() && payload->is_object()) {
    receipt.action_id = text(*payload, "action_id");
    receipt.action_content_digest = text(*payload, "action_content_digest");
  }
  return receipt;
}

std::string install_settlement_digest(const StreamId& stream, const std::string& action_id,
                                      const std::string& action_content_digest,
                                      const std::string& claim_digest, const std::string& outcome,
                                      const JournalRecord& receipt) {
  return core::canonical_digest(Json{{"action_content_digest", action_content_digest},
                                     {"action_id", action_id},
                                     {"claim_digest", claim_digest},
                                     {"outcome", outcome},
                                     {"receipt_event_content_digest", receipt.event_content_digest},
                                     {"receipt_event_id", receipt.event_id},
                                     {"receipt_record_digest", receipt.record_digest},
                                     {"stream_key", stream.stream_key()}});
}

std::string activation_settlement_digest(const StreamId& stream, const std::string& action_id,
                                         const std::string& action_content_digest,
                                         const std::string& claim_digest,
                                         const std::string& outcome_digest,
                                         const JournalRecord& receipt) {
  return core::canonical_digest(Json{{"action_content_digest", action_content_digest},
                                     {"action_id", action_id},
                                     {"claim_digest", claim_digest},
                                     {"outcome_digest", outcome_digest},
                                     {"receipt_event_content_digest", receipt.event_content_digest},
                                     {"receipt_event_id", receipt.event_id},
                                     {"receipt_record_digest", receipt.record_digest},
                                     {"stream_key", stream.stream_key()}});
}

// The cheap integrity check used on the append path: every stored digest recomputes from the
// stored text (no JSON parsing). Full verification (canonical form, transition binding) runs on
// every read.
void verify_record_digests(const JournalRecord& record) {
  if (record.replay_digest != core::sha256_hex(record.replay_json) ||
      record.transition_digest != core::sha256_hex(record.transition_json) ||
      record.result_state_digest != core::sha256_hex(record.result_state_json)) {
    throw JournalCorruption("journal record " + std::to_string(record.revision) +
                            ": a content digest does not match its text");
  }
  if (record.record_digest != engine::journal_record_digest(record)) {
    throw JournalCorruption("journal record " + std::to_string(record.revision) +
                            ": record_digest does not match record content");
  }
}

StreamId stream_from_key(const std::string& key) {
  try {
    return StreamId::from_stream_key(key);
  } catch (const InvalidArgument&) {
    throw JournalCorruption("stored row has an invalid stream key");
  }
}

constexpr const char* kJournalColumns =
    "event_id, stream_key, revision, event_content_digest, replay_json, replay_digest, "
    "transition_json, transition_digest, result_state_json, result_state_digest, "
    "previous_record_digest, record_digest, privacy_classification, retention_class, "
    "reducer_version";

constexpr const char* kClaimColumns =
    "stream_key, action_id, action_content_digest, %KIND%precondition_revision, action_json, "
    "issuing_record_digest, claimed_head_revision, claimed_head_record_digest, "
    "claimed_head_state_digest, action_expires_at, claimed_at, authorization_digest, "
    "execution_binding_json, execution_binding_digest, claim_digest";

std::string claim_columns(bool install) {
  std::string columns = kClaimColumns;
  columns.replace(columns.find("%KIND%"), 6, install ? "action_kind, " : "");
  return columns;
}

std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& part : parts) out += part;
  return out;
}

}  // namespace

// ---- Impl ----

class SqliteJournalStore::Impl {
 public:
  Impl(const std::filesystem::path& path, const core::Clock& clock,
       const SqliteJournalOptions& options)
      : db_(path, Database::Mode::kReadWrite, options.busy_timeout_ms), clock_(clock) {
    if (options.synchronous != "FULL" && options.synchronous != "NORMAL") {
      throw InvalidArgument("synchronous must be FULL or NORMAL");
    }
    // journal_mode needs the file lock; busy_timeout is already set.
    db_.exec("PRAGMA journal_mode=WAL");
    db_.exec("PRAGMA synchronous=" + options.synchronous);
    db_.exec("PRAGMA foreign_keys=ON");
    {
      Transaction tx(db_, Transaction::Kind::kImmediate);
      for (const char* sql : kSchema) db_.exec(sql);
      if (read_schema_objects(db_) != expected_schema_objects()) {
        throw JournalCorruption("journal schema does not match the expected objects");
      }
      tx.commit();
    }
    secure_sidecars(path);
    Transaction tx(db_, Transaction::Kind::kDeferred);
    verify_security_rows();
  }

  // ---------- journal rows ----------

  JournalRecord row_to_record(Statement& row, const StreamId* known) const {
    std::string stream_key = row.text(1);
    std::optional<StreamId> parsed;
    if (known == nullptr || known->stream_key() != stream_key) {
      try {
        parsed = StreamId::from_stream_key(stream_key);
      } catch (const InvalidArgument&) {
        throw JournalCorruption("journal row has an invalid stream key");
      }
    }
    if (!row.is_integer(2)) throw JournalCorruption("journal revision is not an integer");
    JournalRecord record{
        .stream = parsed ? *parsed : *known,
        .revision = row.integer(2),
        .event_id = row.text(0),
        .event_content_digest = row.text(3),
        .replay_json = row.text(4),
        .replay_digest = row.text(5),
        .transition_json = row.text(6),
        .transition_digest = row.text(7),
        .result_state_json = row.text(8),
        .result_state_digest = row.text(9),
        .previous_record_digest = row.optional_text(10),
        .record_digest = row.text(11),
        .privacy_classification = row.text(12),
        .retention_class = row.text(13),
        .reducer_version = row.text(14),
    };
    return record;
  }

  std::optional<JournalRecord> record_by_event_id(std::string_view event_id) {
    auto stmt = db_.cached(join({"SELECT ", kJournalColumns,
                                 " FROM engine_journal WHERE event_id = ?1"}));
    stmt->bind(1, event_id);
    if (!stmt->step()) return std::nullopt;
    JournalRecord record = row_to_record(*stmt, nullptr);
    engine::verify_journal_record(record);
    return record;
  }

  std::optional<JournalRecord> record_at(const StreamId& stream, Revision revision) {
    auto stmt = db_.cached(join({"SELECT ", kJournalColumns,
                                 " FROM engine_journal WHERE stream_key = ?1 AND revision = ?2"}));
    stmt->bind(1, stream.stream_key()).bind(2, revision);
    if (!stmt->step()) return std::nullopt;
    JournalRecord record = row_to_record(*stmt, &stream);
    engine::verify_journal_record(record);
    return record;
  }

  std::optional<JournalRecord> head_record(const StreamId& stream, bool full_verify = true) {
    auto stmt = db_.cached(join({"SELECT ", kJournalColumns,
                                 " FROM engine_journal WHERE stream_key = ?1 "
                                 "ORDER BY revision DESC LIMIT 1"}));
    stmt->bind(1, stream.stream_key());
    if (!stmt->step()) return std::nullopt;
    JournalRecord record = row_to_record(*stmt, &stream);
    if (full_verify) {
      engine::verify_journal_record(record);
    } else {
      verify_record_digests(record);
    }
    return record;
  }

  // The stored row of `event_id` exactly as written (no verification): for read-back checks.
  std::optional<JournalRecord> raw_record(const StreamId& stream, std::string_view event_id) {
    auto stmt = db_.cached(join({"SELECT ", kJournalColumns,
                                 " FROM engine_journal WHERE event_id = ?1"}));
    stmt->bind(1, event_id);
    if (!stmt->step()) return std::nullopt;
    return row_to_record(*stmt, &stream);
  }

  std::vector<JournalRecord> records_from(const StreamId& stream, Revision from) {
    std::vector<JournalRecord> records;
    auto stmt = db_.cached(join({"SELECT ", kJournalColumns,
                                 " FROM engine_journal WHERE stream_key = ?1 AND revision >= ?2 "
                                 "ORDER BY revision"}));
    stmt->bind(1, stream.stream_key()).bind(2, from);
    while (stmt->step()) records.push_back(row_to_record(*stmt, &stream));
    return records;
  }

  std::vector<JournalRecord> read(const StreamId& stream, Revision after) {
    if (after < 0) throw InvalidArgument("after must be >= 0");
    Transaction tx(db_, Transaction::Kind::kDeferred);
    std::vector<JournalRecord> records = records_from(stream, after == 0 ? 1 : after);
    if (after == 0) {
      engine::verify_journal_chain(records, nullptr);
      return records;
    }
    if (records.empty()) {
      // Nothing at or after `after`: valid only if the stream ends before `after`.
      return records;
    }
    if (records.front().revision != after) {
      throw JournalCorruption("journal revision gap: expected revision " +
                              std::to_string(after) + ", found " +
                              std::to_string(records.front().revision));
    }
    JournalRecord anchor = std::move(records.front());
    records.erase(records.begin());
    engine::verify_journal_chain(records, &anchor);
    return records;
  }

  void insert_record(const JournalRecord& record) {
    auto insert = db_.cached(join({"INSERT INTO engine_journal (", kJournalColumns,
                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                   "?13, ?14, ?15)"}));
    insert->bind(1, record.event_id)
        .bind(2, record.stream.stream_key())
        .bind(3, record.revision)
        .bind(4, record.event_content_digest)
        .bind(5, record.replay_json)
        .bind(6, record.replay_digest)
        .bind(7, record.transition_json)
        .bind(8, record.transition_digest)
        .bind(9, record.result_state_json)
        .bind(10, record.result_state_digest)
        .bind_optional(11, record.previous_record_digest)
        .bind(12, record.record_digest)
        .bind(13, record.privacy_classification)
        .bind(14, record.retention_class)
        .bind(15, record.reducer_version);
    insert->run();
    auto projection = db_.cached(
        "INSERT INTO engine_streams (stream_key, tenant_id, workspace_id, repository_id, "
        "session_id, revision, state_json, state_digest, head_record_digest) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(stream_key) DO UPDATE SET "
        "revision = excluded.revision, state_json = excluded.state_json, "
        "state_digest = excluded.state_digest, head_record_digest = excluded.head_record_digest");
    projection->bind(1, record.stream.stream_key())
        .bind(2, record.stream.tenant_id())
        .bind(3, record.stream.workspace_id())
        .bind(4, record.stream.repository_id())
        .bind(5, record.stream.session_id())
        .bind(6, record.revision)
        .bind(7, record.result_state_json)
        .bind(8, record.result_state_digest)
        .bind(9, record.record_digest);
    projection->run();
  }

  engine::JournalCommit append(const engine::JournalAppend& request) {
    // Validate everything that does not depend on the head before touching the file.
    std::optional<std::string> placeholder;
    if (request.expected_revision > 0) placeholder = std::string(64, '0');
    JournalRecord record = engine::build_journal_record(request, placeholder);
    if (request.guard) validate_guard_shape(*request.guard);

    Transaction tx(db_, Transaction::Kind::kImmediate);
    if (std::optional<JournalRecord> existing = record_by_event_id(request.event_id)) {
      if (existing->stream != request.stream ||
          existing->event_content_digest != request.event_content_digest) {
        throw EventIdCollision(request.event_id, existing->event_content_digest,
                               request.event_content_digest);
      }
      return {std::move(*existing), true};
    }
    std::optional<JournalRecord> head = head_record(request.stream, /*full_verify=*/false);
    Revision actual = head ? head->revision : 0;
    if (actual != request.expected_revision) {
      throw RevisionConflict(request.expected_revision, actual);
    }
    record.previous_record_digest = head ? std::optional<std::string>(head->record_digest)
                                         : std::nullopt;
    record.record_digest = engine::journal_record_digest(record);

    std::optional<PendingSettlement> settlement;
    if (request.guard) settlement = check_guard(request.stream, *request.guard, record);

    insert_record(record);
    if (settlement) insert_settlement(*settlement, record);

    std::optional<JournalRecord> stored = raw_record(record.stream, record.event_id);
    if (!stored || *stored != record) {
      throw JournalCorruption("journal row read back differs from the appended record");
    }
    tx.commit();
    return {std::move(record), false};
  }

  engine::JournalHead head(const StreamId& stream) {
    std::optional<JournalRecord> record = head_record(stream);
    if (!record) return {};
    return {record->revision, record->record_digest, record->result_state_digest};
  }

  std::optional<JournalRecord> find(const StreamId& stream, std::string_view event_id) {
    std::optional<JournalRecord> record = record_by_event_id(event_id);
    if (record && record->stream != stream) {
      throw EventIdCollision(std::string(event_id), record->event_content_digest, "");
    }
    return record;
  }

  // ---------- claims ----------

  std::optional<ActionClaim> claim_row(bool install, const StreamId& stream,
                                       std::string_view action_id) {
    auto stmt = db_.cached(join({"SELECT ", claim_columns(install), " FROM ",
                                 install ? "engine_install_claims" : "engine_activation_claims",
                                 " WHERE stream_key = ?1 AND action_id = ?2"}));
    stmt->bind(1, stream.stream_key()).bind(2, action_id);
    if (!stmt->step()) return std::nullopt;
    return claim_from_row(install, *stmt, &stream);
  }

  ActionClaim claim_from_row(bool install, Statement& row, const StreamId* known) const {
    int k = install ? 1 : 0;
    std::string stream_key = row.text(0);
    std::optional<StreamId> parsed;
    if (known == nullptr || known->stream_key() != stream_key) {
      try {
        parsed = StreamId::from_stream_key(stream_key);
      } catch (const InvalidArgument&) {
        throw JournalCorruption("claim row has an invalid stream key");
      }
    }
    return ActionClaim{
        .stream = parsed ? *parsed : *known,
        .action_id = row.text(1),
        .action_content_digest = row.text(2),
        .action_kind = install ? row.text(3) : std::string("ActivateCapability"),
        .precondition_revision = row.integer(3 + k),
        .action_json = row.text(4 + k),
        .issuing_record_digest = row.text(5 + k),
        .claimed_head_revision = row.integer(6 + k),
        .claimed_head_record_digest = row.text(7 + k),
        .claimed_head_state_digest = row.text(8 + k),
        .action_expires_at = row.text(9 + k),
        .claimed_at = row.text(10 + k),
        .authorization_digest = row.text(11 + k),
        .execution_binding_json = row.text(12 + k),
        .execution_binding_digest = row.text(13 + k),
        .claim_digest = row.text(14 + k),
    };
  }

  void insert_claim(bool install, const ActionClaim& claim) {
    std::string sql = join({"INSERT INTO ",
                            install ? "engine_install_claims" : "engine_activation_claims", " (",
                            claim_columns(install), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                            "?9, ?10, ?11, ?12, ?13, ?14, ?15",
                            install ? ", ?16)" : ")"});
    auto stmt = db_.cached(sql);
    int i = 1;
    auto next = [&](const auto& value) { stmt->bind(i++, value); };
    next(std::string_view(claim.stream.stream_key()));
    next(std::string_view(claim.action_id));
    next(std::string_view(claim.action_content_digest));
    if (install) next(std::string_view(claim.action_kind));
    next(claim.precondition_revision);
    next(std::string_view(claim.action_json));
    next(std::string_view(claim.issuing_record_digest));
    next(claim.claimed_head_revision);
    next(std::string_view(claim.claimed_head_record_digest));
    next(std::string_view(claim.claimed_head_state_digest));
    next(std::string_view(claim.action_expires_at));
    next(std::string_view(claim.claimed_at));
    next(std::string_view(claim.authorization_digest));
    next(std::string_view(claim.execution_binding_json));
    next(std::string_view(claim.execution_binding_digest));
    next(std::string_view(claim.claim_digest));
    stmt->run();
  }

  // Re-checks a stored claim against its anchors. Errors: JournalCorruption.
  void verify_claim(bool install, const ActionClaim& claim) {
    auto fail = [&](const std::string& what) {
      throw JournalCorruption(std::string(install ? "install" : "activation") + " claim of '" +
                              claim.action_id + "': " + what);
    };
    std::string expected = install ? engine::install_claim_digest(claim)
                                   : engine::activation_claim_digest(claim);
    if (claim.claim_digest != expected) fail("claim_digest does not match claim content");
    ParsedAction action;
    try {
      action = parse_action(claim.action_json);
    } catch (const InvalidArgument& e) {
      fail(e.what());
    }
    if (action.action_id != claim.action_id ||
        action.content_digest != claim.action_content_digest ||
        action.precondition_revision != claim.precondition_revision ||
        action.expires_at != claim.action_expires_at ||
        action.kind != (install ? "InstallCapability" : "ActivateCapability") ||
        (install && claim.action_kind != "InstallCapability")) {
      fail("claim does not match its action");
    }
    if (!core::is_sha256_hex(claim.execution_binding_digest) ||
        !core::is_sha256_hex(claim.authorization_digest)) {
      fail("claim digests are malformed");
    }
    std::optional<JournalRecord> issuing = record_at(claim.stream, claim.precondition_revision);
    if (!issuing || issuing->record_digest != claim.issuing_record_digest) {
      fail("issuing record anchor is broken");
    }
    std::optional<JournalRecord> claimed = record_at(claim.stream, claim.claimed_head_revision);
    if (!claimed || claimed->record_digest != claim.claimed_head_record_digest ||
        claimed->result_state_digest != claim.claimed_head_state_digest ||
        claim.claimed_head_revision < claim.precondition_revision) {
      fail("claimed head anchor is broken");
    }
    try {
      if (core::parse_rfc3339(claim.claimed_at) >= action.expires) fail("claimed after expiry");
    } catch (const InvalidArgument&) {
      fail("claimed_at is not rfc 3339");
    }
  }

  std::optional<ExecutionOutcome> outcome_row(bool install, const StreamId& stream,
                                              std::string_view action_id) {
    std::string columns =
        install ? "action_id, action_content_digest, claim_digest, execution_binding_digest, "
                  "outcome, observed_material_identity_digest, verification_digest, "
                  "observed_at, outcome_digest"
                : "action_id, action_content_digest, claim_digest, execution_binding_digest, "
                  "NULL, observed_material_identity_digest, verification_digest, observed_at, "
                  "outcome_digest";
    auto stmt = db_.cached(join({"SELECT ", columns, " FROM ",
                                 install ? "engine_install_outcomes" : "engine_activation_outcomes",
                                 " WHERE stream_key = ?1 AND action_id = ?2"}));
    stmt->bind(1, stream.stream_key()).bind(2, action_id);
    if (!stmt->step()) return std::nullopt;
    ExecutionOutcome outcome{
        .stream = stream,
        .action_id = stmt->text(0),
        .action_content_digest = stmt->text(1),
        .claim_digest = stmt->text(2),
        .execution_binding_digest = stmt->text(3),
        .outcome = std::nullopt,
        .observed_material_identity_digest = stmt->optional_text(5),
        .verification_digest = stmt->text(6),
        .observed_at = stmt->text(7),
        .outcome_digest = stmt->text(8),
    };
    if (install) {
      std::string name = stmt->text(4);
      if (name == "applied") {
        outcome.outcome = InstallOutcome::kApplied;
      } else if (name == "failed") {
        outcome.outcome = InstallOutcome::kFailed;
      } else {
        throw JournalCorruption("install outcome has an unknown outcome");
      }
    }
    return outcome;
  }

  void verify_outcome(bool install, const ExecutionOutcome& outcome, const ActionClaim& claim) {
    auto fail = [&](const std::string& what) {
      throw JournalCorruption(std::string(install ? "install" : "activation") + " outcome of '" +
                              outcome.action_id + "': " + what);
    };
    if (outcome.action_content_digest != claim.action_content_digest ||
        outcome.claim_digest != claim.claim_digest ||
        outcome.execution_binding_digest != claim.execution_binding_digest) {
      fail("outcome does not match its claim");
    }
    std::string expected = install ? engine::install_outcome_digest(outcome)
                                   : engine::activation_outcome_digest(outcome);
    if (outcome.outcome_digest != expected) fail("outcome_digest does not match outcome content");
    bool applied = !install || outcome.outcome == InstallOutcome::kApplied;
    if (applied != outcome.observed_material_identity_digest.has_value()) {
      fail("observed material does not match the outcome");
    }
    try {
      if (core::parse_rfc3339(outcome.observed_at) < core::parse_rfc3339(claim.claimed_at)) {
        fail("observed before the claim");
      }
    } catch (const InvalidArgument&) {
      fail("observed_at is not rfc 3339");
    }
  }

  struct SettlementRow {
    std::string action_content_digest;
    std::string claim_digest;
    std::string outcome;  // install: applied/failed; activation: outcome digest
    std::string receipt_event_id;
    std::string receipt_event_content_digest;
    std::string receipt_record_digest;
    std::string settlement_digest;
  };

  std::optional<SettlementRow> settlement_row(bool install, const StreamId& stream,
                                              std::string_view action_id) {
    auto stmt = db_.cached(join(
        {"SELECT action_content_digest, claim_digest, ", install ? "outcome" : "outcome_digest",
         ", receipt_event_id, receipt_event_content_digest, receipt_record_digest, "
         "settlement_digest FROM ",
         install ? "engine_install_claim_settlements" : "engine_activation_claim_settlements",
         " WHERE stream_key = ?1 AND action_id = ?2"}));
    stmt->bind(1, stream.stream_key()).bind(2, action_id);
    if (!stmt->step()) return std::nullopt;
    return SettlementRow{stmt->text(0), stmt->text(1), stmt->text(2), stmt->text(3),
                         stmt->text(4), stmt->text(5), stmt->text(6)};
  }

  void verify_settlement(bool install, const SettlementRow& row, const ActionClaim& claim,
                         const std::optional<ExecutionOutcome>& outcome) {
    auto fail = [&](const std::string& what) {
      throw JournalCorruption(std::string(install ? "install" : "activation") +
                              " settlement of '" + claim.action_id + "': " + what);
    };
    if (!outcome) fail("settlement has no outcome");
    if (row.action_content_digest != claim.action_content_digest ||
        row.claim_digest != claim.claim_digest) {
      fail("settlement does not match its claim");
    }
    std::string outcome_field = install ? engine::install_outcome_name(*outcome->outcome)
                                        : outcome->outcome_digest;
    if (row.outcome != outcome_field) fail("settlement does not match its outcome");
    std::optional<JournalRecord> receipt = record_by_event_id(row.receipt_event_id);
    if (!receipt || receipt->stream != claim.stream ||
        receipt->record_digest != row.receipt_record_digest ||
        receipt->event_content_digest != row.receipt_event_content_digest) {
      fail("receipt record anchor is broken");
    }
    std::string expected =
        install ? install_settlement_digest(claim.stream, claim.action_id,
                                            claim.action_content_digest, claim.claim_digest,
                                            row.outcome, *receipt)
                : activation_settlement_digest(claim.stream, claim.action_id,
                                               claim.action_content_digest, claim.claim_digest,
                                               row.outcome, *receipt);
    if (row.settlement_digest != expected) fail("settlement_digest does not match content");
  }

  // Loads and verifies the whole authority chain of one action.
  struct Authority {
    std::optional<ActionClaim> claim;
    std::optional<ExecutionOutcome> outcome;
    std::optional<SettlementRow> settlement;
  };

  Authority authority(bool install, const StreamId& stream, std::string_view action_id) {
    Authority a;
    a.claim = claim_row(install, stream, action_id);
    a.outcome = outcome_row(install, stream, action_id);
    a.settlement = settlement_row(install, stream, action_id);
    if (!a.claim) {
      if (a.outcome || a.settlement) {
        throw JournalCorruption(std::string(install ? "install" : "activation") +
                                " outcome or settlement without a claim");
      }
      return a;
    }
    verify_claim(install, *a.claim);
    if (a.outcome) verify_outcome(install, *a.outcome, *a.claim);
    if (a.settlement) verify_settlement(install, *a.settlement, *a.claim, a.outcome);
    return a;
  }

  void verify_security_rows() {
    for (bool install : {true, false}) {
      std::vector<std::pair<std::string, std::string>> keys;  // stream_key, action_id
      for (const char* table :
           {install ? "engine_install_claims" : "engine_activation_claims",
            install ? "engine_install_outcomes" : "engine_activation_outcomes",
            install ? "engine_install_claim_settlements"
                    : "engine_activation_claim_settlements"}) {
        auto stmt = db_.prepare(join({"SELECT stream_key, action_id FROM ", table}));
        while (stmt.step()) keys.emplace_back(stmt.text(0), stmt.text(1));
      }
      for (const auto& key : keys) {
        authority(install, stream_from_key(key.first), key.second);
      }
    }
  }

  core::Timestamp trusted_now() {
    try {
      return clock_.now();
    } catch (const std::exception&) {
      throw EngineStoreError("trusted utc clock failed");
    }
  }

  ActionClaim claim(bool install, const ClaimRequest& request) {
    const char* what = install ? "install" : "activation";
    if (request.expected_revision < 1) throw InvalidArgument("expected_revision must be >= 1");
    require_digest(request.expected_head_record_digest, "expected_head_record_digest");
    require_digest(request.authorization_digest, "authorization_digest");
    require_digest(request.execution_binding_digest, "execution_binding_digest");
    require_digest(request.installed_by_action_content_digest,
                   "installed_by_action_content_digest");
    if (install && request.installed_by_action_content_digest) {
      throw InvalidArgument("installed_by_action_content_digest is for activation claims only");
    }
    try {
      if (!core::parse_canonical_json(request.execution_binding_json, core::Encoding::kAscii)
               .is_object()) {
        throw InvalidArgument("not an object");
      }
    } catch (const InvalidArgument&) {
      throw InvalidArgument("execution_binding_json must be canonical json");
    }
    ParsedAction action = parse_action(request.action_json);
    const char* kind = install ? "InstallCapability" : "ActivateCapability";
    if (action.kind != kind) {
      throw InvalidArgument(std::string(what) + " claim requires an exact " + kind + " action");
    }

    Transaction tx(db_, Transaction::Kind::kImmediate);
    Authority existing = authority(install, request.stream, action.action_id);
    if (existing.claim) {
      if (existing.claim->action_content_digest != action.content_digest) {
        throw JournalCorruption(std::string(what) + " action '" + action.action_id +
                                "' is bound to different claimed content");
      }
      if (install) {
        throw InstallActionAlreadyClaimed("install action '" + action.action_id +
                                          "' has already been claimed");
      }
      throw ActivationActionAlreadyClaimed("activation action '" + action.action_id +
                                           "' is already claimed");
    }
    std::optional<JournalRecord> head = head_record(request.stream);
    Revision actual = head ? head->revision : 0;
    if (actual != request.expected_revision ||
        head->record_digest != request.expected_head_record_digest) {
      throw RevisionConflict(request.expected_revision, actual);
    }
    std::optional<JournalRecord> issuing = record_at(request.stream, action.precondition_revision);
    if (!issuing) {
      throw InvalidArgument(std::string(what) + " action is not exact journal authority: "
                            "no issuing record");
    }
    Json transition = core::parse_json(issuing->transition_json);
    int matches = 0;
    if (auto actions = transition.find("actions");
        actions != transition.end() && actions->is_array()) {
      for (const Json& emitted : *actions) {
        if (core::canonical_json(emitted) == request.action_json) ++matches;
      }
    }
    if (matches != 1) {
      throw InvalidArgument(std::string(what) +
                            " action is not exact journal authority: the issuing record did "
                            "not emit it exactly once");
    }
    core::Timestamp now = trusted_now();
    if (now >= action.expires) {
      if (install) {
        throw InstallActionClaimExpired("install action '" + action.action_id +
                                        "' expired before it was claimed");
      }
      throw ActivationActionClaimExpired("activation action '" + action.action_id +
                                         "' expired before claim");
    }
    if (request.installed_by_action_content_digest) {
      require_installation_before(request.stream, *request.installed_by_action_content_digest,
                                  now);
    }
    ActionClaim claim{
        .stream = request.stream,
        .action_id = action.action_id,
        .action_content_digest = action.content_digest,
        .action_kind = kind,
        .precondition_revision = action.precondition_revision,
        .action_json = request.action_json,
        .issuing_record_digest = issuing->record_digest,
        .claimed_head_revision = head->revision,
        .claimed_head_record_digest = head->record_digest,
        .claimed_head_state_digest = head->result_state_digest,
        .action_expires_at = action.expires_at,
        .claimed_at = core::format_rfc3339(now),
        .authorization_digest = request.authorization_digest,
        .execution_binding_json = request.execution_binding_json,
        .execution_binding_digest = request.execution_binding_digest,
        .claim_digest = {},
    };
    claim.claim_digest = install ? engine::install_claim_digest(claim)
                                 : engine::activation_claim_digest(claim);
    insert_claim(install, claim);
    std::optional<ActionClaim> stored = claim_row(install, claim.stream, claim.action_id);
    if (!stored || *stored != claim) {
      throw JournalCorruption("claim row read back differs from the claim");
    }
    tx.commit();
    return claim;
  }

  // The activated material must have been installed (applied + settled) no later than `now`.
  void require_installation_before(const StreamId& stream, const std::string& content_digest,
                                   core::Timestamp now) {
    std::vector<std::string> ids;
    {
      auto stmt = db_.cached(
          "SELECT action_id FROM engine_install_claims WHERE stream_key = ?1 AND "
          "action_content_digest = ?2");
      stmt->bind(1, stream.stream_key()).bind(2, content_digest);
      while (stmt->step()) ids.push_back(stmt->text(0));
    }
    if (ids.size() != 1) {
      throw InvalidArgument("activation material does not name exactly one install claim");
    }
    Authority install = authority(true, stream, ids.front());
    if (!install.outcome || install.outcome->outcome != InstallOutcome::kApplied ||
        !install.settlement || install.settlement->outcome != "applied") {
      throw InvalidArgument("activation material was not installed by a settled applied claim");
    }
    if (now < core::parse_rfc3339(install.outcome->observed_at)) {
      throw EngineStoreError("trusted utc clock moved before installation");
    }
  }

  ExecutionOutcome record_outcome(bool install, const StreamId& stream,
                                  const std::string& action_json,
                                  const std::string& binding_digest,
                                  std::optional<InstallOutcome> outcome_kind,
                                  const std::optional<std::string>& observed,
                                  const std::string& verification_digest,
                                  const std::optional<std::string>& expected_material) {
    const char* what = install ? "install" : "activation";
    require_digest(binding_digest, "execution_binding_digest");
    require_digest(verification_digest, "verification_digest");
    require_digest(observed, "observed_material_identity_digest");
    require_digest(expected_material, "expected_result_material_identity_digest");
    bool applied = !install || outcome_kind == InstallOutcome::kApplied;
    if (applied && !observed) {
      throw InvalidArgument("applied outcome requires an observed material identity");
    }
    if (!applied && observed) {
      throw InvalidArgument("failed outcome requires verified material absence");
    }
    ParsedAction action = parse_action(action_json);

    Transaction tx(db_, Transaction::Kind::kImmediate);
    Authority a = authority(install, stream, action.action_id);
    if (!a.claim || a.claim->action_content_digest != action.content_digest) {
      if (install) {
        throw InstallExecutionOutcomeRequired("install action '" + action.action_id +
                                              "' has no durable execution claim");
      }
      throw ActivationExecutionOutcomeRequired("activation action '" + action.action_id +
                                               "' has no durable claim");
    }
    if (a.claim->execution_binding_digest != binding_digest) {
      if (install) {
        throw InstallExecutionOutcomeConflict(
            "install outcome execution binding does not match the claim");
      }
      throw ActivationExecutionOutcomeConflict(
          "activation outcome execution binding does not match the claim");
    }
    if (a.settlement) {
      if (install) {
        throw InstallActionClaimSettled("install action '" + action.action_id +
                                        "' already has a terminal settlement");
      }
      throw ActivationActionClaimSettled("activation action '" + action.action_id +
                                         "' is already settled");
    }
    if (install && applied && expected_material && *observed != *expected_material) {
      throw InstallExecutionOutcomeConflict(
          "install outcome does not match authorized result material");
    }
    if (a.outcome) {
      if (a.outcome->outcome == (install ? outcome_kind : std::nullopt) &&
          a.outcome->observed_material_identity_digest == observed &&
          a.outcome->verification_digest == verification_digest) {
        return *a.outcome;  // identical retry
      }
      if (install) {
        throw InstallExecutionOutcomeConflict("install action '" + action.action_id +
                                              "' already has a different outcome");
      }
      throw ActivationExecutionOutcomeConflict("activation action '" + action.action_id +
                                               "' already has a different outcome");
    }
    core::Timestamp now = trusted_now();
    if (now < core::parse_rfc3339(a.claim->claimed_at)) {
      throw EngineStoreError("trusted utc clock moved before the " + std::string(what) +
                             " claim");
    }
    if (!install && now >= action.expires) {
      throw ActivationActionClaimExpired("activation action '" + action.action_id +
                                         "' expired before observation");
    }
    ExecutionOutcome outcome{
        .stream = stream,
        .action_id = action.action_id,
        .action_content_digest = action.content_digest,
        .claim_digest = a.claim->claim_digest,
        .execution_binding_digest = binding_digest,
        .outcome = install ? outcome_kind : std::nullopt,
        .observed_material_identity_digest = observed,
        .verification_digest = verification_digest,
        .observed_at = core::format_rfc3339(now),
        .outcome_digest = {},
    };
    outcome.outcome_digest = install ? engine::install_outcome_digest(outcome)
                                     : engine::activation_outcome_digest(outcome);
    if (install) {
      auto stmt = db_.cached(
          "INSERT INTO engine_install_outcomes (stream_key, action_id, action_content_digest, "
          "claim_digest, execution_binding_digest, outcome, observed_material_identity_digest, "
          "verification_digest, observed_at, outcome_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
          "?7, ?8, ?9, ?10)");
      stmt->bind(1, stream.stream_key()).bind(2, outcome.action_id);
      stmt->bind(3, outcome.action_content_digest).bind(4, outcome.claim_digest);
      stmt->bind(5, outcome.execution_binding_digest);
      stmt->bind(6, std::string_view(engine::install_outcome_name(*outcome.outcome)));
      stmt->bind_optional(7, outcome.observed_material_identity_digest);
      stmt->bind(8, outcome.verification_digest).bind(9, outcome.observed_at);
      stmt->bind(10, outcome.outcome_digest);
      stmt->run();
    } else {
      auto stmt = db_.cached(
          "INSERT INTO engine_activation_outcomes (stream_key, action_id, action_content_digest, "
          "claim_digest, execution_binding_digest, observed_material_identity_digest, "
          "verification_digest, observed_at, outcome_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
          "?7, ?8, ?9)");
      stmt->bind(1, stream.stream_key()).bind(2, outcome.action_id);
      stmt->bind(3, outcome.action_content_digest).bind(4, outcome.claim_digest);
      stmt->bind(5, outcome.execution_binding_digest);
      stmt->bind_optional(6, outcome.observed_material_identity_digest);
      stmt->bind(7, outcome.verification_digest).bind(8, outcome.observed_at);
      stmt->bind(9, outcome.outcome_digest);
      stmt->run();
    }
    std::optional<ExecutionOutcome> stored = outcome_row(install, stream, outcome.action_id);
    if (!stored || *stored != outcome) {
      throw JournalCorruption("outcome row read back differs from the outcome");
    }
    tx.commit();
    return outcome;
  }

  // ---------- settlement guards ----------

  static void validate_guard_shape(const SettlementGuard& guard) {
    if (!is_trimmed(guard.action_id)) {
      throw InvalidArgument("guard action_id must be a non-empty trimmed string");
    }
    require_digest(guard.action_content_digest, "guard action_content_digest");
    require_digest(guard.execution_outcome_digest, "guard execution_outcome_digest");
    if (guard.mode == GuardMode::kExpired && guard.execution_outcome_digest) {
      throw InvalidArgument("expired actions cannot carry an execution outcome");
    }
    if (guard.mode != GuardMode::kExpired && !guard.execution_outcome_digest) {
      throw InvalidArgument("receipt guard requires an execution outcome digest");
    }
    if (guard.authority == ExecutionAuthority::kActivation && guard.mode == GuardMode::kFailed) {
      throw InvalidArgument("activation guards have no failed mode");
    }
  }

  struct PendingSettlement {
    bool install = true;
    ActionClaim claim;
    std::string outcome_field;
  };

  std::optional<PendingSettlement> check_guard(const StreamId& stream,
                                               const SettlementGuard& guard,
                                               const JournalRecord& receipt) {
    bool install = guard.authority == ExecutionAuthority::kInstall;
    const std::string& id = guard.action_id;
    Authority a = authority(install, stream, id);
    if (guard.mode == GuardMode::kExpired) {
      if (a.claim) {
        if (install) {
          throw InstallActionAlreadyClaimed("claimed install action '" + id +
                                            "' cannot expire as unclaimed");
        }
        throw ActivationActionAlreadyClaimed("claimed activation action '" + id +
                                             "' cannot expire as unclaimed");
      }
      return std::nullopt;
    }
    if (a.settlement) {
      if (install) {
        throw InstallActionClaimSettled("install action '" + id +
                                        "' already has a terminal settlement");
      }
      throw ActivationActionClaimSettled("activation action '" + id + "' is already settled");
    }
    if (!a.claim) {
      if (install) {
        throw InstallActionClaimRequired("install action '" + id +
                                         "' must be claimed before receipt commit");
      }
      throw ActivationExecutionOutcomeRequired("activation action '" + id +
                                               "' has no durable claim");
    }
    if (!a.outcome) {
      if (install) {
        throw InstallExecutionOutcomeRequired("install action '" + id +
                                              "' has no verified execution outcome");
      }
      throw ActivationExecutionOutcomeRequired("activation action '" + id +
                                               "' has no verified outcome");
    }
    bool mode_matches = !install || (guard.mode == GuardMode::kApplied) ==
                                        (a.outcome->outcome == InstallOutcome::kApplied);
    std::optional<ReceiptEvent> event = parse_receipt_event(receipt.replay_json);
    const char* receipt_kind = guard.mode == GuardMode::kApplied ? "ActionApplied" : "ActionFailed";
    bool receipt_matches = event && event->kind == receipt_kind && event->action_id == id &&
                           event->action_content_digest == guard.action_content_digest &&
                           (install || event->occurred_at == a.outcome->observed_at);
    if (a.claim->action_content_digest != guard.action_content_digest || !mode_matches ||
        a.outcome->outcome_digest != *guard.execution_outcome_digest || !receipt_matches) {
      if (install) {
        throw InstallExecutionOutcomeConflict(
            "install receipt does not match its verified execution outcome");
      }
      throw ActivationExecutionOutcomeConflict(
          "activation receipt does not match its verified execution outcome");
    }
    return PendingSettlement{install, *a.claim,
                             install ? engine::install_outcome_name(*a.outcome->outcome)
                                     : a.outcome->outcome_digest};
  }

  void insert_settlement(const PendingSettlement& s, const JournalRecord& receipt) {
    const ActionClaim& c = s.claim;
    std::string digest =
        s.install ? install_settlement_digest(c.stream, c.action_id, c.action_content_digest,
                                              c.claim_digest, s.outcome_field, receipt)
                  : activation_settlement_digest(c.stream, c.action_id, c.action_content_digest,
                                                 c.claim_digest, s.outcome_field, receipt);
    auto stmt = db_.cached(join(
        {"INSERT INTO ",
         s.install ? "engine_install_claim_settlements" : "engine_activation_claim_settlements",
         " (stream_key, action_id, action_content_digest, claim_digest, ",
         s.install ? "outcome" : "outcome_digest",
         ", receipt_event_id, receipt_event_content_digest, receipt_record_digest, "
         "settlement_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"}));
    stmt->bind(1, c.stream.stream_key()).bind(2, c.action_id).bind(3, c.action_content_digest);
    stmt->bind(4, c.claim_digest).bind(5, s.outcome_field).bind(6, receipt.event_id);
    stmt->bind(7, receipt.event_content_digest).bind(8, receipt.record_digest).bind(9, digest);
    stmt->run();
  }

  // ---------- whole-file verification ----------

  void verify_all() {
    Transaction tx(db_, Transaction::Kind::kDeferred);
    std::vector<std::string> keys;
    {
      auto stmt = db_.prepare("SELECT DISTINCT stream_key FROM engine_journal");
      while (stmt.step()) keys.push_back(stmt.text(0));
    }
    for (const std::string& key : keys) {
      StreamId stream = stream_from_key(key);
      std::vector<JournalRecord> records = records_from(stream, 1);
      engine::verify_journal_chain(records, nullptr);
      auto projection = db_.cached(
          "SELECT revision, state_digest, head_record_digest, state_json FROM engine_streams "
          "WHERE stream_key = ?1");
      projection->bind(1, key);
      if (!projection->step() || projection->integer(0) != records.back().revision ||
          projection->text(1) != records.back().result_state_digest ||
          projection->text(2) != records.back().record_digest ||
          projection->text(3) != records.back().result_state_json) {
        throw JournalCorruption("stream projection does not match the journal head");
      }
    }
    verify_security_rows();
  }

  Database& db() { return db_; }

 private:
  Database db_;
  const core::Clock& clock_;
};

// ---- Public surface ----

SqliteJournalStore::SqliteJournalStore(const std::filesystem::path& path,
                                       const core::Clock& clock, SqliteJournalOptions options)
    : path_(path) {
  secure_journal_path(path_);
  impl_ = std::make_unique<Impl>(path_, clock, options);
}

SqliteJournalStore::~SqliteJournalStore() = default;

engine::JournalCommit SqliteJournalStore::append(const engine::JournalAppend& request) {
  std::lock_guard lock(mutex_);
  return impl_->append(request);
}

engine::JournalHead SqliteJournalStore::head(const StreamId& stream) const {
  std::lock_guard lock(mutex_);
  return impl_->head(stream);
}

std::vector<JournalRecord> SqliteJournalStore::read(const StreamId& stream,
                                                    Revision after) const {
  std::lock_guard lock(mutex_);
  return impl_->read(stream, after);
}

std::optional<JournalRecord> SqliteJournalStore::find(const StreamId& stream,
                                                      std::string_view event_id) const {
  std::lock_guard lock(mutex_);
  return impl_->find(stream, event_id);
}

ActionClaim SqliteJournalStore::claim_install(const ClaimRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->claim(true, request);
}

ActionClaim SqliteJournalStore::claim_activation(const ClaimRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->claim(false, request);
}

ExecutionOutcome SqliteJournalStore::record_install_outcome(
    const engine::InstallOutcomeRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->record_outcome(true, request.stream, request.action_json,
                               request.execution_binding_digest, request.outcome,
                               request.observed_material_identity_digest,
                               request.verification_digest,
                               request.expected_result_material_identity_digest);
}

ExecutionOutcome SqliteJournalStore::record_activation_outcome(
    const engine::ActivationOutcomeRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->record_outcome(false, request.stream, request.action_json,
                               request.execution_binding_digest, std::nullopt,
                               request.observed_material_identity_digest,
                               request.verification_digest, std::nullopt);
}

engine::InstallExecutionStatus SqliteJournalStore::install_execution_status(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  auto a = impl_->authority(true, stream, action_id);
  engine::InstallExecutionStatus status;
  if (!a.claim) return status;
  status.claimed = true;
  status.execution_binding_digest = a.claim->execution_binding_digest;
  if (a.outcome) {
    status.outcome_recorded = true;
    status.outcome = a.outcome->outcome;
    status.outcome_digest = a.outcome->outcome_digest;
    status.observed_at = a.outcome->observed_at;
  }
  status.settled = a.settlement.has_value();
  return status;
}

engine::ActivationExecutionStatus SqliteJournalStore::activation_execution_status(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  auto a = impl_->authority(false, stream, action_id);
  engine::ActivationExecutionStatus status;
  if (!a.claim) return status;
  status.claimed = true;
  status.execution_binding_digest = a.claim->execution_binding_digest;
  if (a.outcome) {
    status.outcome_recorded = true;
    status.outcome_digest = a.outcome->outcome_digest;
    status.observed_at = a.outcome->observed_at;
  }
  status.settled = a.settlement.has_value();
  return status;
}

std::optional<ActionClaim> SqliteJournalStore::find_install_claim(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->authority(true, stream, action_id).claim;
}

std::optional<ActionClaim> SqliteJournalStore::find_activation_claim(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->authority(false, stream, action_id).claim;
}

std::optional<ExecutionOutcome> SqliteJournalStore::find_install_outcome(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->authority(true, stream, action_id).outcome;
}

std::optional<ExecutionOutcome> SqliteJournalStore::find_activation_outcome(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->authority(false, stream, action_id).outcome;
}

void SqliteJournalStore::verify() const {
  std::lock_guard lock(mutex_);
  impl_->verify_all();
}

}  // namespace ctx::store
