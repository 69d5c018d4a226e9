#include "host/app/state_check.hpp"

#include <system_error>

#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/core/time.hpp"
#include "host/engine/engine.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "host/store/sqlite_managed_query_store.hpp"

namespace ctx::app {

StateCheck verify_state_stores(const std::filesystem::path& state_dir) {
  const auto paths = runtime::StatePaths::of(state_dir);
  StateCheck check;
  std::error_code ec;
  check.journal = std::filesystem::exists(paths.journal, ec);
  if (check.journal) {
    const core::SystemClock clock;
    const store::SqliteJournalStore store(paths.journal, clock);
    engine::ReducerReplayer replayer;
    store.verify(&replayer);
  }
  // The managed query store's whole-file check (its open reads only the schema and key row).
  if (std::filesystem::exists(std::filesystem::symlink_status(paths.queries, ec))) {
    store::open_managed_query_store(paths.queries, runtime::read_installation_key(state_dir))
        ->verify();
  }
  return check;
}

}  // namespace ctx::app
