#include "host/runtime/shared_journal.hpp"

#include <unistd.h>

#include <utility>

#include "host/core/error.hpp"

namespace ctx::runtime {
namespace {

// The store and the clock it references, freed together.
struct OpenedJournal {
  OpenedJournal(const std::filesystem::path& path, std::shared_ptr<const core::Clock> c)
      : clock(std::move(c)), store(path, *clock) {}
  std::shared_ptr<const core::Clock> clock;
  store::SqliteJournalStore store;
};

std::shared_ptr<store::SqliteJournalStore> open_journal(const std::filesystem::path& path,
                                                        std::shared_ptr<const core::Clock> clock) {
  auto opened = std::make_shared<OpenedJournal>(path, std::move(clock));
  return std::shared_ptr<store::SqliteJournalStore>(opened, &opened->store);
}

}  // namespace

SharedJournal::SharedJournal(std::filesystem::path path, std::shared_ptr<const core::Clock> clock)
    : path_(std::move(path)),
      clock_(clock ? std::move(clock) : std::make_shared<core::SystemClock>()),
      owner_pid_(::getpid()) {}

SharedJournal::~SharedJournal() {
  if (::getpid() != owner_pid_ && store_) {
    static_cast<void>(new std::shared_ptr<store::SqliteJournalStore>(std::move(store_)));
  }
}

void SharedJournal::require_path(const std::filesystem::path& journal_path) const {
  if (path_ != journal_path) {
    throw InvalidArgument("the shared journal connection is not on journal_path");
  }
}

std::shared_ptr<store::SqliteJournalStore> SharedJournal::get() {
  std::lock_guard lock(mutex_);
  // A forked child gets a connection of its own, never the inherited one.
  if (::getpid() != owner_pid_) return open_journal(path_, clock_);
  if (!store_) store_ = open_journal(path_, clock_);
  return store_;
}

}  // namespace ctx::runtime
