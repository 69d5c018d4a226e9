// `ctx journal verify [--state DIR] [--json]`: re-validates the state dir's engine journal
// (<state>/service/journal.sqlite3) completely — every stream's chain (canonical texts, digests,
// links), every head and stored state, every claim/outcome row — and replays every record through
// the engine's reducer (store::SqliteJournalStore::verify with engine::ReducerReplayer). Writes
// nothing. Exit codes: 0 verified (or no journal yet), 1 corrupt (one stderr line naming the
// stream and the first bad record) or unreadable, 2 usage.
#ifndef CTX_HOST_CLI_JOURNAL_COMMAND_HPP_
#define CTX_HOST_CLI_JOURNAL_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct JournalVerifyOptions {
  std::optional<std::filesystem::path> state;
  bool json = false;
};

// Errors: the journal store's typed corruption error naming the first bad record.
int run_journal_verify(const JournalVerifyOptions& options, const CommandIo& io);

std::string journal_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_JOURNAL_COMMAND_HPP_
