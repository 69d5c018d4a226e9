#include "host/store/journal_schema.hpp"

#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "host/core/crypto.hpp"
#include "host/engine/journal_store.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {
namespace {

// Column lists both versions share (whitespace is not significant to the schema check).
#define CTX_STREAM_KEY_COLUMNS                                                                 \
  "stream_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, workspace_id TEXT NOT NULL, "         \
  "repository_id TEXT NOT NULL, session_id TEXT NOT NULL, "                                    \
  "revision INTEGER NOT NULL CHECK (revision >= 1), "
#define CTX_RECORD_HEAD_COLUMNS                                                                \
  "event_id TEXT PRIMARY KEY, stream_key TEXT NOT NULL, "                                      \
  "revision INTEGER NOT NULL CHECK (revision >= 1), event_content_digest TEXT NOT NULL, "      \
  "replay_json TEXT NOT NULL, replay_digest TEXT NOT NULL, transition_json TEXT NOT NULL, "    \
  "transition_digest TEXT NOT NULL, "
#define CTX_RECORD_TAIL_COLUMNS                                                                \
  "result_state_digest TEXT NOT NULL, previous_record_digest TEXT, "                           \
  "record_digest TEXT NOT NULL, privacy_classification TEXT NOT NULL, "                        \
  "retention_class TEXT NOT NULL, reducer_version TEXT NOT NULL, UNIQUE (stream_key, revision))"

// The authority tables (install claims have the action kind column, activation claims not).
#define CTX_ACTION_KEY_COLUMNS                                                                 \
  "stream_key TEXT NOT NULL, action_id TEXT NOT NULL, action_content_digest TEXT NOT NULL, "
#define CTX_OUTCOME_TAIL_COLUMNS                                                               \
  "verification_digest TEXT NOT NULL, observed_at TEXT NOT NULL, "                             \
  "outcome_digest TEXT NOT NULL, PRIMARY KEY (stream_key, action_id))"
#define CTX_SETTLEMENT_TAIL_COLUMNS                                                            \
  "receipt_event_id TEXT NOT NULL, receipt_event_content_digest TEXT NOT NULL, "               \
  "receipt_record_digest TEXT NOT NULL, settlement_digest TEXT NOT NULL, "                     \
  "PRIMARY KEY (stream_key, action_id))"
#define CTX_CLAIM_TAIL_COLUMNS                                                                 \
  "precondition_revision INTEGER NOT NULL CHECK (precondition_revision >= 1), "               \
  "action_json TEXT NOT NULL, issuing_record_digest TEXT NOT NULL, "                           \
  "claimed_head_revision INTEGER NOT NULL CHECK (claimed_head_revision >= 1), "               \
  "claimed_head_record_digest TEXT NOT NULL, claimed_head_state_digest TEXT NOT NULL, "        \
  "action_expires_at TEXT NOT NULL, claimed_at TEXT NOT NULL, "                                \
  "authorization_digest TEXT NOT NULL, execution_binding_json TEXT NOT NULL, "                 \
  "execution_binding_digest TEXT NOT NULL, claim_digest TEXT NOT NULL, "                       \
  "PRIMARY KEY (stream_key, action_id))"

// Version 1: the schema as first released.
constexpr std::string_view kVersion1[] = {
    "CREATE TABLE IF NOT EXISTS engine_streams (" CTX_STREAM_KEY_COLUMNS
    "state_json TEXT NOT NULL, state_digest TEXT NOT NULL, head_record_digest TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS engine_journal (" CTX_RECORD_HEAD_COLUMNS
    "result_state_json TEXT NOT NULL, " CTX_RECORD_TAIL_COLUMNS,
    "CREATE INDEX IF NOT EXISTS idx_engine_journal_stream_revision "
    "ON engine_journal(stream_key, revision)",
    "CREATE TABLE IF NOT EXISTS engine_install_claims (" CTX_ACTION_KEY_COLUMNS
    "action_kind TEXT NOT NULL, " CTX_CLAIM_TAIL_COLUMNS,
    "CREATE TABLE IF NOT EXISTS engine_install_outcomes (" CTX_ACTION_KEY_COLUMNS
    "claim_digest TEXT NOT NULL, execution_binding_digest TEXT NOT NULL, "
    "outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')), "
    "observed_material_identity_digest TEXT, " CTX_OUTCOME_TAIL_COLUMNS,
    "CREATE TABLE IF NOT EXISTS engine_install_claim_settlements (" CTX_ACTION_KEY_COLUMNS
    "claim_digest TEXT NOT NULL, outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')), "
    CTX_SETTLEMENT_TAIL_COLUMNS,
    "CREATE TABLE IF NOT EXISTS engine_activation_claims (" CTX_ACTION_KEY_COLUMNS
    CTX_CLAIM_TAIL_COLUMNS,
    "CREATE TABLE IF NOT EXISTS engine_activation_outcomes (" CTX_ACTION_KEY_COLUMNS
    "claim_digest TEXT NOT NULL, execution_binding_digest TEXT NOT NULL, "
    "observed_material_identity_digest TEXT NOT NULL, " CTX_OUTCOME_TAIL_COLUMNS,
    "CREATE TABLE IF NOT EXISTS engine_activation_claim_settlements (" CTX_ACTION_KEY_COLUMNS
    "claim_digest TEXT NOT NULL, outcome_digest TEXT NOT NULL, " CTX_SETTLEMENT_TAIL_COLUMNS,
};

// Version 2: rebuild engine_journal without result_state_json and engine_streams with the head
// columns first (state_json last, so reading the head never touches the state's pages).
constexpr std::string_view kVersion2[] = {
    "ALTER TABLE engine_journal RENAME TO engine_journal_v1",
    "CREATE TABLE engine_journal (" CTX_RECORD_HEAD_COLUMNS CTX_RECORD_TAIL_COLUMNS,
    "INSERT INTO engine_journal SELECT event_id, stream_key, revision, event_content_digest, "
    "replay_json, replay_digest, transition_json, transition_digest, result_state_digest, "
    "previous_record_digest, record_digest, privacy_classification, retention_class, "
    "reducer_version FROM engine_journal_v1",
    "DROP TABLE engine_journal_v1",
    R"(CREATE INDEX idx_engine_journal_stream_revision
    ON engine_journal(stream_key, revision))",
    "ALTER TABLE engine_streams RENAME TO engine_streams_v1",
    "CREATE TABLE engine_streams (" CTX_STREAM_KEY_COLUMNS
    "head_record_digest TEXT NOT NULL, state_digest TEXT NOT NULL, state_json TEXT NOT NULL)",
    "INSERT INTO engine_streams SELECT stream_key, tenant_id, workspace_id, repository_id, "
    "session_id, revision, head_record_digest, state_digest, state_json FROM engine_streams_v1",
    "DROP TABLE engine_streams_v1",
};


// Version 3: fewer pages per commit — drop the index UNIQUE (stream_key, revision) already
// provides, and keep the head rows in one b-tree (WITHOUT ROWID) instead of table + key index.
constexpr std::string_view kVersion3[] = {
    "DROP INDEX idx_engine_journal_stream_revision",
    "ALTER TABLE engine_streams RENAME TO engine_streams_v2",
    "CREATE TABLE engine_streams (" CTX_STREAM_KEY_COLUMNS
    "head_record_digest TEXT NOT NULL, state_digest TEXT NOT NULL, state_json TEXT NOT NULL) "
    "WITHOUT ROWID",
    "INSERT INTO engine_streams SELECT * FROM engine_streams_v2",
    "DROP TABLE engine_streams_v2",
};

#undef CTX_ACTION_KEY_COLUMNS
#undef CTX_OUTCOME_TAIL_COLUMNS
#undef CTX_SETTLEMENT_TAIL_COLUMNS
#undef CTX_CLAIM_TAIL_COLUMNS
#undef CTX_STREAM_KEY_COLUMNS
#undef CTX_RECORD_HEAD_COLUMNS
#undef CTX_RECORD_TAIL_COLUMNS

constexpr Migration kMigrations[] = {{1, kVersion1}, {2, kVersion2}, {3, kVersion3}};
static_assert(std::size(kMigrations) == kJournalSchemaVersion);

// The statement text without layout: whitespace runs become one space, and none is kept next
// to a parenthesis or comma (so "(\n    a TEXT,\n    b)" and "(a TEXT, b)" compare equal).
std::string normalize_sql(const std::string& text) {
  auto tight = [](char c) { return c == '(' || c == ')' || c == ','; };
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty() && !tight(out.back()) && !tight(c)) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

using SchemaObjects = std::map<std::string, std::string>;  // "type name tbl" -> sql

SchemaObjects read_schema_objects(Database& db) {
  SchemaObjects objects;
  auto stmt = db.prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
      "ORDER BY type, name");
  while (stmt.step()) {
    objects[stmt.text(0) + " " + stmt.text(1) + " " + stmt.text(2)] =
        normalize_sql(stmt.text(3));
  }
  return objects;
}

// The exact schema objects as SQLite itself records them after every migration (built once).
const SchemaObjects& expected_schema_objects() {
  static const SchemaObjects objects = [] {
    Database memory(":memory:", Database::Mode::kReadWriteCreate, 0);
    migrate(memory, "journal file", kMigrations, 1);
    return read_schema_objects(memory);
  }();
  return objects;
}

// SHA-256 over each object's key and normalised sql (NUL-terminated), in key order.
std::string schema_digest(const SchemaObjects& objects) {
  core::Sha256 hash;
  for (const auto& [key, sql] : objects) {
    hash.update(key.data(), key.size() + 1);  // with the NUL
    hash.update(sql.data(), sql.size() + 1);
  }
  return core::to_hex(hash.finish());
}

// schema_digest(expected_schema_objects()) as this build's SQLite records the objects: a file
// whose objects hash to it needs no reference schema built in memory (about 15M instructions, a
// tenth of a cold `ctx hook`); any other file is compared object by object with the reference
// (another SQLite may spell an object's sql differently). JournalSchema.PinnedDigestIsTheReferences
// keeps it current.
constexpr std::string_view kPinnedSchemaDigest =
    "26ab35325a20ad480f9dd55e6f1157eaf575a64e3b32bacddc56ba615e0f231d";

}  // namespace

void prepare_journal_schema(Database& db) {
  migrate(db, "journal file", kMigrations, 1);
  const SchemaObjects objects = read_schema_objects(db);
  if (schema_digest(objects) == kPinnedSchemaDigest) return;
  if (objects != expected_schema_objects()) {
    throw engine::JournalCorruption("journal schema does not match the expected objects");
  }
}

namespace detail {
std::string_view pinned_journal_schema_digest() noexcept { return kPinnedSchemaDigest; }
std::string reference_journal_schema_digest() { return schema_digest(expected_schema_objects()); }
}  // namespace detail

}  // namespace ctx::store
