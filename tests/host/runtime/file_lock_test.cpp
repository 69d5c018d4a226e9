// ExclusiveFileLock: one holder per lock file (or per slot of a shared lock file) across
// descriptors, threads and processes.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {
namespace {

using namespace std::chrono_literals;

class FileLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "ctx-lock-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(FileLockTest, SecondHolderTimesOutUntilTheFirstReleases) {
  const auto path = root_ / "locks" / "action";
  auto first = std::make_unique<ExclusiveFileLock>(path, 1s);
  try {
    ExclusiveFileLock second(path, 50ms);
    ADD_FAILURE() << "a second holder acquired a held lock";
  } catch (const SystemError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  }
  first.reset();
  EXPECT_NO_THROW(ExclusiveFileLock(path, 50ms));
}

TEST_F(FileLockTest, CreatesAPrivateDirectoryAndFile) {
  const auto path = root_ / "locks" / "action";
  ExclusiveFileLock lock(path, 1s);
  struct stat dir {};
  struct stat file {};
  ASSERT_EQ(::stat(path.parent_path().c_str(), &dir), 0);
  ASSERT_EQ(::stat(path.c_str(), &file), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0700u);
  EXPECT_EQ(file.st_mode & 0777, 0600u);
}

TEST_F(FileLockTest, RefusesASymlinkedLockFile) {
  std::filesystem::create_directory(root_ / "locks");
  std::filesystem::create_symlink(root_ / "elsewhere", root_ / "locks" / "action");
  EXPECT_THROW(ExclusiveFileLock(root_ / "locks" / "action", 50ms), SystemError);
}

TEST_F(FileLockTest, OneSlotHasOneHolderAcrossThreadsAndOtherSlotsStayFree) {
  const auto file = root_ / "locks" / "execution.lock";
  const LockSlot slot{file, core::sha256_hex("action-1")};
  const LockSlot other{file, core::sha256_hex("action-2")};
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::atomic<int> holders{0};
  std::atomic<int> most{0};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        ExclusiveFileLock lock(slot, 10s);
        const int now = ++holders;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --holders;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(most.load(), 1);
  // While one slot is held, another slot of the same file is free and the held one is not.
  ExclusiveFileLock held(slot, 1s);
  EXPECT_NO_THROW(ExclusiveFileLock(other, 50ms));
  try {
    ExclusiveFileLock second(slot, 50ms);
    ADD_FAILURE() << "a second holder acquired a held slot";
  } catch (const SystemError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  }
}

TEST_F(FileLockTest, ASlotHeldByAKilledProcessIsFreeAgain) {
  const LockSlot slot{root_ / "locks" / "execution.lock", core::sha256_hex("action")};
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ExclusiveFileLock lock(slot, 1s);
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_THROW(ExclusiveFileLock(slot, 50ms), SystemError);  // the child holds it
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_NO_THROW(ExclusiveFileLock(slot, 1s));
}

TEST_F(FileLockTest, ASlotKeyMustBeADigest) {
  EXPECT_THROW(ExclusiveFileLock(LockSlot{root_ / "locks" / "x.lock", "action"}, 50ms),
               InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(root_ / "locks"));
}

}  // namespace
}  // namespace ctx::runtime
