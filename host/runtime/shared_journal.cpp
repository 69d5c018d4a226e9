#include "host/runtime/shared_journal.hpp"

#include <unistd.h>

#include <utility>

namespace ctx::runtime {
namespace {

// The store and the clock it references, freed together.
struct OpenedJournal {
  OpenedJournal(const std::filesystem::path& path, std::shared_ptr<const core::Clock> c)
      : clock(std::move(c)), store(path, *clock) {}
  std::shared_ptr<const core::Clock> clock;
  store::SqliteJournalStore store;
};

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

std::shared_ptr<store::SqliteJournalStore> SharedJournal::get() {
  std::lock_guard lock(mutex_);
  if (::getpid() != owner_pid_) {
    // A forked child gets a connection of its own, never the inherited one.
    auto opened = std::make_shared<OpenedJournal>(path_, clock_);
    return std::shared_ptr<store::SqliteJournalStore>(opened, &opened->store);
  }
  if (!store_) {
    auto opened = std::make_shared<OpenedJournal>(path_, clock_);
    store_ = std::shared_ptr<store::SqliteJournalStore>(opened, &opened->store);
  }
  return store_;
}

}  // namespace ctx::runtime
