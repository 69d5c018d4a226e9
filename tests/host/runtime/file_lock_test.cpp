// ExclusiveFileLock: one holder per lock file across descriptors (and hence processes).
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ctx::runtime
