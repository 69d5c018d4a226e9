// The core::StateFs contract, run against store::PosixStateFs and against a StateFsWrapper over it
// (the wrapper tests use must forward exactly): files are created whole with exact modes, never
// through a symlink; rename replaces the name itself; link never replaces; a symlinked directory
// is refused where asked; core::replace_file leaves the old bytes and no stage when the rename
// fails; errors are typed with their retry contract in their code.
#include "host/store/posix_state_fs.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::store {
namespace {

namespace fs = std::filesystem;
using core::NewFile;
using core::StateFsError;
using core::StateFsStep;
using ::ctx::testing::read_file;

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The step and errno a call failed with (nullopt: it did not throw a StateFsError).
template <typename Call>
std::optional<std::pair<StateFsStep, int>> failure_of(Call&& call) {
  try {
    call();
  } catch (const StateFsError& error) {
    return std::make_pair(error.step(), error.error());
  }
  return std::nullopt;
}

// The StateFs under test: PosixStateFs itself, or a StateFsWrapper over it.
class StateFsContract : public ::testing::TestWithParam<bool> {
 protected:
  StateFsContract() {
    if (GetParam()) wrapper_ = std::make_unique<::ctx::testing::StateFsWrapper>(posix_);
  }
  core::StateFs& fs() { return wrapper_ ? *wrapper_ : static_cast<core::StateFs&>(posix_); }
  fs::path at(const std::string& name) const { return dir_.path() / name; }

  ::ctx::testing::TempDir dir_;
  PosixStateFs posix_;
  std::unique_ptr<::ctx::testing::StateFsWrapper> wrapper_;
};

TEST_P(StateFsContract, CreateFileWritesTheBytesWithTheExactModeWhateverTheUmask) {
  const mode_t old_umask = ::umask(077);
  fs().create_file(at("private"), "secret\n", NewFile{});
  fs().create_file(at("pinned"), std::string(100000, 'x'), NewFile{0444, false, false});
  fs().create_file(at("users"), "{}", NewFile{0644, /*umask=*/true, true});
  ::umask(022);
  fs().create_file(at("users-022"), "", NewFile{0644, /*umask=*/true, true});
  ::umask(old_umask);
  EXPECT_EQ(read_file(at("private")), "secret\n");
  EXPECT_EQ(mode_of(at("private")), 0600u);
  EXPECT_EQ(read_file(at("pinned")), std::string(100000, 'x'));
  EXPECT_EQ(mode_of(at("pinned")), 0444u);
  EXPECT_EQ(mode_of(at("users")), 0600u);  // 0644 less 077
  EXPECT_EQ(mode_of(at("users-022")), 0644u);
  EXPECT_EQ(read_file(at("users-022")), "");
}

TEST_P(StateFsContract, CreateFileNeverReplacesNorFollowsASymlink) {
  fs().create_file(at("file"), "old", NewFile{});
  EXPECT_EQ(failure_of([&] { fs().create_file(at("file"), "new", NewFile{}); }),
            std::make_pair(StateFsStep::kCreate, EEXIST));
  EXPECT_EQ(read_file(at("file")), "old");
  fs::create_symlink(at("elsewhere"), at("link"));  // dangling: O_CREAT would make its target
  EXPECT_EQ(failure_of([&] { fs().create_file(at("link"), "new", NewFile{}); }),
            std::make_pair(StateFsStep::kCreate, EEXIST));
  EXPECT_FALSE(fs::exists(fs::symlink_status(at("elsewhere"))));
  EXPECT_TRUE(fs::is_symlink(at("link")));
}

// A write the file system refuses (past RLIMIT_FSIZE: EFBIG) is kWrite and leaves no file.
TEST_P(StateFsContract, AFailedWriteLeavesNoFile) {
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 4096;
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const auto failed = failure_of([&] { fs().create_file(at("big"), std::string(8192, 'b'), NewFile{}); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(failed, std::make_pair(StateFsStep::kWrite, EFBIG));
  EXPECT_FALSE(fs::exists(fs::symlink_status(at("big"))));
}

TEST_P(StateFsContract, RenameReplacesTheNameItselfNotASymlinksTarget) {
  fs().create_file(at("victim"), "victim", NewFile{});
  fs::create_symlink(at("victim"), at("current"));
  fs().create_file(at(".stage"), "new", NewFile{});
  fs().rename(at(".stage"), at("current"));
  EXPECT_FALSE(fs::is_symlink(at("current")));
  EXPECT_EQ(read_file(at("current")), "new");
  EXPECT_EQ(read_file(at("victim")), "victim");
  EXPECT_FALSE(fs::exists(at(".stage")));
  // A directory renames too (a staged snapshot).
  fs::create_directory(at("staging"));
  fs().rename(at("staging"), at("snapshot"));
  EXPECT_TRUE(fs::is_directory(at("snapshot")));
  EXPECT_EQ(failure_of([&] { fs().rename(at("missing"), at("x")); }),
            std::make_pair(StateFsStep::kRename, ENOENT));
}

TEST_P(StateFsContract, LinkNeverReplaces) {
  fs().create_file(at("published"), "good", NewFile{0400, false, true});
  fs().create_file(at(".stage"), "other", NewFile{0400, false, true});
  EXPECT_EQ(failure_of([&] { fs().link(at(".stage"), at("published")); }),
            std::make_pair(StateFsStep::kLink, EEXIST));
  EXPECT_EQ(read_file(at("published")), "good");
  fs().link(at(".stage"), at("second"));
  fs().remove(at(".stage"));
  fs().remove(at("never-there"));  // ignored
  EXPECT_EQ(read_file(at("second")), "other");
  EXPECT_EQ(names_in(dir_.path()), (std::vector<std::string>{"published", "second"}));
}

TEST_P(StateFsContract, SyncDirRefusesASymlinkOnlyWhenAsked) {
  fs::create_directory(at("real"));
  fs::create_directory_symlink(at("real"), at("alias"));
  fs().sync_dir(at("real"), support::Follow::kNoSymlinks);
  fs().sync_dir(at("alias"), support::Follow::kSymlinks);
  const auto refused =
      failure_of([&] { fs().sync_dir(at("alias"), support::Follow::kNoSymlinks); });
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->first, StateFsStep::kSyncDir);
  EXPECT_EQ(failure_of([&] { fs().sync_dir(at("missing"), support::Follow::kSymlinks); }),
            std::make_pair(StateFsStep::kSyncDir, ENOENT));
  fs().sync_file_system(at("real"));
  EXPECT_EQ(failure_of([&] { fs().sync_file_system(at("missing")); }),
            std::make_pair(StateFsStep::kSyncFs, ENOENT));
}

TEST_P(StateFsContract, ReplaceFileIsAtomicAndLeavesNoStage) {
  core::replace_file(fs(), at("state.json"), at(".state.json.1.stage"), "one", NewFile{},
                     support::Follow::kNoSymlinks);
  core::replace_file(fs(), at("state.json"), at(".state.json.2.stage"), "two", NewFile{},
                     support::Follow::kNoSymlinks);
  EXPECT_EQ(read_file(at("state.json")), "two");
  EXPECT_EQ(mode_of(at("state.json")), 0600u);
  EXPECT_EQ(names_in(dir_.path()), std::vector<std::string>{"state.json"});
  // A rename the file system refuses (a non-empty directory holds the name): the old bytes stay
  // and the stage is gone.
  fs::create_directories(at("taken/child"));
  EXPECT_TRUE(failure_of([&] {
    core::replace_file(fs(), at("taken"), at(".taken.stage"), "x", NewFile{},
                       support::Follow::kNoSymlinks);
  }));
  EXPECT_TRUE(fs::is_directory(at("taken/child")));
  EXPECT_FALSE(fs::exists(at(".taken.stage")));
  // A stage name that is taken: nothing is replaced.
  fs().create_file(at(".busy.stage"), "someone else's", NewFile{});
  EXPECT_EQ(failure_of([&] {
              core::replace_file(fs(), at("state.json"), at(".busy.stage"), "three", NewFile{},
                                 support::Follow::kNoSymlinks);
            }),
            std::make_pair(StateFsStep::kCreate, EEXIST));
  EXPECT_EQ(read_file(at("state.json")), "two");
  EXPECT_EQ(read_file(at(".busy.stage")), "someone else's");
}

INSTANTIATE_TEST_SUITE_P(PosixAndWrapped, StateFsContract, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Wrapped" : "Posix"; });

TEST(StateFsError, CarriesStepErrnoAndTheRetryContractInItsCode) {
  const StateFsError full(StateFsStep::kRename, "/s/CURRENT", ENOSPC);
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(std::string(full.what()), "rename /s/CURRENT failed: No space left on device");
  const StateFsError io(StateFsStep::kSyncDir, "/s", EIO);
  EXPECT_EQ(io.code(), ErrorCode::kInternal);
  EXPECT_EQ(std::string(io.what()), "fsync directory /s failed: Input/output error");
  const StateFsError told(full, "catalog store: cannot switch CURRENT");
  EXPECT_EQ(std::string(told.what()), "catalog store: cannot switch CURRENT");
  EXPECT_EQ(told.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(told.step(), StateFsStep::kRename);
  EXPECT_EQ(told.error(), ENOSPC);
  static_assert(std::is_base_of_v<SystemError, StateFsError>);
}

// The fault wrapper itself: the Nth step of a kind on a named file fails as the real one would
// (a failed create leaves nothing), a crash throws before the step, each arming fires once.
TEST(FaultyStateFs, FailsOrCrashesExactlyTheArmedStep) {
  ::ctx::testing::TempDir dir;
  ::ctx::testing::FaultyStateFs faulty(default_state_fs());
  faulty.fail(StateFsStep::kRename, EIO, "CURRENT", 2);
  faulty.fail(StateFsStep::kSync, ENOSPC);
  EXPECT_EQ(failure_of([&] { faulty.create_file(dir / "a", "a", NewFile{}); }),
            std::make_pair(StateFsStep::kSync, ENOSPC));
  EXPECT_FALSE(fs::exists(dir / "a"));
  faulty.create_file(dir / "a", "a", NewFile{});
  faulty.create_file(dir / "b", "b", NewFile{});
  faulty.rename(dir / "a", dir / "other");        // not CURRENT: not counted by the arming
  faulty.rename(dir / "other", dir / "CURRENT");  // the first CURRENT
  EXPECT_EQ(failure_of([&] { faulty.rename(dir / "b", dir / "CURRENT"); }),
            std::make_pair(StateFsStep::kRename, EIO));
  EXPECT_EQ(read_file(dir / "CURRENT"), "a");
  EXPECT_EQ(faulty.pending(), 0u);
  faulty.rename(dir / "b", dir / "CURRENT");  // fired once only
  EXPECT_EQ(read_file(dir / "CURRENT"), "b");
  EXPECT_EQ(faulty.count(StateFsStep::kRename), 4);
  faulty.crash_at(StateFsStep::kSyncDir);
  EXPECT_THROW(faulty.sync_dir(dir.path(), support::Follow::kSymlinks),
               ::ctx::testing::StateFsCrash);
}

}  // namespace
}  // namespace ctx::store
