// `ctx journal verify [--state DIR] [--json]`: re-validates the state dir's engine journal
// (<state>/service/journal.sqlite3) completely — every stream's chain (canonical texts, digests,
// links), every head and stored state, every claim/outcome row — and replays every record through
// the engine's reducer (store::SqliteJournalStore::verify with engine::ReducerReplayer). Writes
// nothing. Exit codes: 0 verified (or no journal yet), 1 corrupt (one stderr line naming the
// stream and the first bad record) or unreadable, 2 usage.
#ifndef CTX_HOST_CLI_JOURNAL_COMMAND_HPP_
#define CTX_HOST_CLI_JOURNAL_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// args[0] == "journal". Never throws.
int run_journal_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err, const Environment& env);

std::string journal_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_JOURNAL_COMMAND_HPP_
