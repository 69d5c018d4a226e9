// SharedJournal: one connection per process (every get() is the same store), opened on first use,
// and a forked child never touches the parent's: it gets its own, and destroying the holder there
// leaves the inherited descriptors open.
#include "host/runtime/shared_journal.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;

int descriptors_naming(const fs::path& file) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec) == file) ++count;
  }
  return count;
}

TEST(SharedJournal, OpensOnFirstUseAndHandsOutOneConnection) {
  ctx::testing::TempDir tmp;
  const fs::path path = tmp.path() / "journal.sqlite3";
  SharedJournal journal(path, nullptr);
  EXPECT_FALSE(fs::exists(path));  // nothing until first use
  const auto first = journal.get();
  const auto second = journal.get();
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(descriptors_naming(fs::canonical(path)), 1);
}

TEST(SharedJournal, AForkedChildGetsItsOwnConnectionAndLeavesTheInheritedOneOpen) {
  ctx::testing::TempDir tmp;
  const fs::path path = tmp.path() / "journal.sqlite3";
  auto journal = std::make_unique<SharedJournal>(path, nullptr);
  const store::SqliteJournalStore* parent = journal->get().get();  // the holder is its only owner
  const fs::path file = fs::canonical(path);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    {
      const auto own = journal->get();
      if (own.get() == parent) ++failures;
      if (own->head(engine::StreamId("t", "w", "r", "s")).revision != 0) ++failures;
    }
    const int inherited = descriptors_naming(file);
    if (inherited == 0) ++failures;
    journal.reset();  // a holder that closed the inherited connection would drop its descriptor
    if (descriptors_naming(file) != inherited) ++failures;
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(journal->get().get(), parent);
  EXPECT_EQ(journal->get()->head(engine::StreamId("t", "w", "r", "s")).revision, 0);
}

}  // namespace
}  // namespace ctx::runtime
