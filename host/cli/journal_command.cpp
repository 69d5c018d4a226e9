#include "host/cli/journal_command.hpp"

#include <filesystem>

#include "host/app/state_check.hpp"
#include "host/core/canonical_json.hpp"

namespace ctx::cli {

std::string journal_usage() {
  return "  ctx journal verify [--state DIR] [--json]\n"
         "      replay every stream of the journal and check the whole chain, then check\n"
         "      every page of the managed query store and authenticate each of its rows;\n"
         "      exit 1 naming the first bad record\n";
}

int run_journal_verify(const JournalVerifyOptions& options, const CommandIo& io) {
  const auto state_dir = command_state_dir(options.state, io.env);
  const bool exists = app::verify_state_stores(state_dir).journal;
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
