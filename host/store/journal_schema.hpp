// The journal file's schema (spec §6.2) and its ordered migrations (PRAGMA user_version):
//   1  the original nine objects (a file written before versioning is at version 1);
//   2  records without the result state (kept once, in engine_streams, at the head), and
//      engine_streams with its small head columns before state_json;
//   3  no redundant (stream_key, revision) index; engine_streams WITHOUT ROWID.
#ifndef CTX_HOST_STORE_JOURNAL_SCHEMA_HPP_
#define CTX_HOST_STORE_JOURNAL_SCHEMA_HPP_

#include <string>
#include <string_view>

namespace ctx::store {

class Database;

inline constexpr int kJournalSchemaVersion = 3;

// Migrates `db` to kJournalSchemaVersion and checks it holds exactly the expected objects (no
// extra tables, indexes, views or triggers). Errors: NewerSchemaVersion ("journal file has newer
// schema version N ..."), JournalCorruption ("journal schema does not match the expected
// objects"), StoreBusy.
void prepare_journal_schema(Database& db);

namespace detail {
// The digest of the expected objects that prepare_journal_schema accepts without building the
// reference schema, and the digest of that reference (built in memory): equal in a current build.
std::string_view pinned_journal_schema_digest() noexcept;
std::string reference_journal_schema_digest();
}  // namespace detail

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_JOURNAL_SCHEMA_HPP_
