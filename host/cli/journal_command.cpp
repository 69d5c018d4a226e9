#include "host/cli/journal_command.hpp"

#include <filesystem>

#include "host/cli/command_options.hpp"
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

int run_journal_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err, const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2 || args[1] != "verify") {
      throw CommandUsage("ctx journal needs the command verify");
    }
    const CommandLine line = parse_command_line(args, 2, "ctx journal verify", {}, true);
    if (!line.positional.empty()) throw CommandUsage("ctx journal verify takes no arguments");
    const auto journal = runtime::StatePaths::of(command_state_dir(line, env)).journal;
    std::error_code ec;
    const bool exists = std::filesystem::exists(journal, ec);
    if (exists) {
      const core::SystemClock clock;
      const store::SqliteJournalStore store(journal, clock);
      engine::ReducerReplayer replayer;
      store.verify(&replayer);
    }
    if (line.json) {
      out << core::canonical_json(core::Json{{"journal", exists ? "verified" : "absent"}}) << "\n";
    } else {
      out << (exists ? "journal verified: every stream replays and its chain is intact\n"
                     : "no journal yet: nothing to verify\n");
    }
    return kExitOk;
  });
}

}  // namespace ctx::cli
