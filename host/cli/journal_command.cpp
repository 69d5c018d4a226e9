#include "host/cli/journal_command.hpp"

#include <filesystem>

#include "host/core/canonical_json.hpp"
#include "host/core/time.hpp"
#include "host/engine/engine.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/runtime/service/query_store.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::cli {

std::string journal_usage() {
  return "  ctx journal verify [--state DIR] [--json]\n"
         "      replay every stream of the journal and check the whole chain, then check\n"
         "      every page of the managed query store and authenticate each of its rows;\n"
         "      exit 1 naming the first bad record\n";
}

int run_journal_verify(const JournalVerifyOptions& options, const CommandIo& io) {
  const auto state_dir = command_state_dir(options.state, io.env);
  const auto paths = runtime::StatePaths::of(state_dir);
  std::error_code ec;
  const bool exists = std::filesystem::exists(paths.journal, ec);
  if (exists) {
    const core::SystemClock clock;
    const store::SqliteJournalStore store(paths.journal, clock);
    engine::ReducerReplayer replayer;
    store.verify(&replayer);
  }
  // The managed query store's whole-file check (its open reads only the schema and key row).
  if (std::filesystem::exists(std::filesystem::symlink_status(paths.queries, ec))) {
    runtime::open_managed_query_store(paths.queries, runtime::read_installation_key(state_dir))
        ->verify();
  }
  if (options.json) {
    io.out << core::canonical_json(core::Json{{"journal", exists ? "verified" : "absent"}}) << "\n";
  } else {
    io.out << (exists ? "journal verified: every stream replays and its chain is intact; the managed "
                               "query store's pages and rows check\n"
                      : "no journal yet: nothing to verify\n");
  }
  return kExitOk;
}

}  // namespace ctx::cli
