#include "host/cli/journal_command.hpp"

#include <filesystem>

#include "host/core/canonical_json.hpp"
#include "host/core/time.hpp"
#include "host/engine/engine.hpp"
#include "host/runtime/catalog/state_service.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::cli {

std::string journal_usage() {
  return "  ctx journal verify [--state DIR] [--json]\n"
         "      replay every stream of the journal and check the whole chain; exit 1\n"
         "      naming the first bad record\n";
}

int run_journal_verify(const JournalVerifyOptions& options, const CommandIo& io) {
  const auto journal = runtime::StatePaths::of(command_state_dir(options.state, io.env)).journal;
  std::error_code ec;
  const bool exists = std::filesystem::exists(journal, ec);
  if (exists) {
    const core::SystemClock clock;
    const store::SqliteJournalStore store(journal, clock);
    engine::ReducerReplayer replayer;
    store.verify(&replayer);
  }
  if (options.json) {
    io.out << core::canonical_json(core::Json{{"journal", exists ? "verified" : "absent"}}) << "\n";
  } else {
    io.out << (exists ? "journal verified: every stream replays and its chain is intact\n"
                      : "no journal yet: nothing to verify\n");
  }
  return kExitOk;
}

}  // namespace ctx::cli
