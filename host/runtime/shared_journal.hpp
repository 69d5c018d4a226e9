// One journal connection per process and state: the managed query service, its compositions and
// the input authority read and commit through it instead of each opening (and schema-checking)
// their own. Opened on first use; thread-safe (the store serialises its calls).
// A holder destroyed in a forked child leaks the connection it inherited (SQLite forbids closing
// a connection across fork; see EngineComposition).
#ifndef CTX_HOST_RUNTIME_SHARED_JOURNAL_HPP_
#define CTX_HOST_RUNTIME_SHARED_JOURNAL_HPP_

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <mutex>

#include "host/core/time.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime {

class SharedJournal {
 public:
  // `path` absolute; `clock` is the trusted clock of claims and outcomes (null: the system clock).
  SharedJournal(std::filesystem::path path, std::shared_ptr<const core::Clock> clock);
  SharedJournal(const SharedJournal&) = delete;
  SharedJournal& operator=(const SharedJournal&) = delete;
  ~SharedJournal();

  const std::filesystem::path& path() const noexcept { return path_; }
  // Errors: InvalidArgument unless this is the connection to `journal_path`.
  void require_path(const std::filesystem::path& journal_path) const;
  // The connection, opened on the first call (the pointer keeps the clock alive with it).
  // Errors: as store::SqliteJournalStore's constructor; a failed open is retried next call.
  std::shared_ptr<store::SqliteJournalStore> get();

 private:
  std::filesystem::path path_;
  std::shared_ptr<const core::Clock> clock_;
  pid_t owner_pid_;
  std::mutex mutex_;
  std::shared_ptr<store::SqliteJournalStore> store_;  // GUARDED_BY(mutex_)
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SHARED_JOURNAL_HPP_
