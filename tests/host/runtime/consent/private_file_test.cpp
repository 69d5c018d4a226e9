// write_private_file through core::StateFs: the file is 0600, whole, and replaced atomically with
// no stage left; a symlinked directory is refused and a symlink at the name is replaced, never
// written through. Then the faults a FaultyStateFs injects into a real caller, InstallApprovals:
// a failed stage write, rename or directory fsync is a typed error naming the step, the file is
// the previous one (or, after the rename, the whole new one) and nothing half-written is left.
#include "host/runtime/consent/private_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/runtime/consent/install_approvals.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using core::StateFsError;
using core::StateFsStep;
using ::ctx::testing::FaultyStateFs;
using ::ctx::testing::read_file;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class PrivateFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ensure_private_dir(dir(), "service directory"); }
  fs::path dir() const { return temp_.path() / "service"; }

  ::ctx::testing::TempDir temp_;
};

TEST_F(PrivateFileTest, WritesA0600FileWholeAndLeavesNoStage) {
  write_private_file(dir() / "a.json", "first\n", "a");
  write_private_file(dir() / "a.json", "second\n", "a");
  EXPECT_EQ(read_file(dir() / "a.json"), "second\n");
  EXPECT_EQ(mode_of(dir() / "a.json"), 0600u);
  EXPECT_EQ(names_in(dir()), std::vector<std::string>{"a.json"});
  EXPECT_EQ(read_private_file(dir() / "a.json", 100, "a"), "second\n");
}

TEST_F(PrivateFileTest, RefusesASymlinkedDirectoryAndReplacesASymlinkAtTheName) {
  fs::create_directory_symlink(dir(), temp_.path() / "alias");
  CTX_EXPECT_THROW(write_private_file(temp_.path() / "alias" / "a.json", "x", "a"), UnsafeStateFile,
                   "a refused: directory is a symlink");
  EXPECT_EQ(names_in(dir()), std::vector<std::string>{});
  write_private_file(temp_.path() / "victim", "victim", "victim");
  fs::create_symlink(temp_.path() / "victim", dir() / "a.json");
  write_private_file(dir() / "a.json", "mine", "a");
  EXPECT_FALSE(fs::is_symlink(dir() / "a.json"));
  EXPECT_EQ(read_file(dir() / "a.json"), "mine");
  EXPECT_EQ(read_file(temp_.path() / "victim"), "victim");
}

InstallApproval approval(const std::string& name) {
  return InstallApproval{"skill:" + name,
                         engine::CapabilityKind::kSkill,
                         core::sha256_hex("material " + name),
                         core::sha256_hex("content " + name),
                         120,
                         core::sha256_hex("policy"),
                         "2026-12-07T10:00:00Z"};
}

// InstallApprovals writing through a FaultyStateFs over the real file system.
class InstallApprovalsFaultTest : public PrivateFileTest {
 protected:
  fs::path file() const { return dir() / "install-approvals.json"; }
  // The stages in the directory (besides the file, it holds only the approvals' lock file).
  std::vector<std::string> stages() const {
    std::vector<std::string> out;
    for (const std::string& name : names_in(dir())) {
      if (name != "install-approvals.json" && name != ".install-approvals.json.lock") {
        out.push_back(name);
      }
    }
    return out;
  }

  FaultyStateFs faulty_{store::default_state_fs()};
  std::string key_ = std::string(32, 'k');
  InstallApprovals approvals_{file(), key_, faulty_};
};

TEST_F(InstallApprovalsFaultTest, AFailedRenameIsTypedAndLeavesThePreviousFileAndNoStage) {
  approvals_.record(approval("pdf"));
  const std::string before = read_file(file());
  faulty_.fail(StateFsStep::kRename, EIO);
  CTX_EXPECT_THROW(approvals_.record(approval("csv")), StateFsError,
                   "install approvals: rename failed: Input/output error");
  EXPECT_EQ(faulty_.pending(), 0u);
  EXPECT_EQ(read_file(file()), before);
  EXPECT_EQ(stages(), std::vector<std::string>{});
  EXPECT_EQ(approvals_.load().size(), 1u);
  approvals_.record(approval("csv"));  // the next write goes through
  EXPECT_EQ(approvals_.load().size(), 2u);
}

TEST_F(InstallApprovalsFaultTest, AFullDiskAtTheStageIsResourceExhaustedAndChangesNothing) {
  approvals_.record(approval("pdf"));
  const std::string before = read_file(file());
  for (const StateFsStep step : {StateFsStep::kCreate, StateFsStep::kWrite, StateFsStep::kSync}) {
    faulty_.fail(step, ENOSPC);
    try {
      approvals_.record(approval("csv"));
      ADD_FAILURE() << "no error at step " << static_cast<int>(step);
    } catch (const StateFsError& error) {
      EXPECT_EQ(error.code(), ErrorCode::kResourceExhausted);
      EXPECT_EQ(error.step(), step);
      EXPECT_NE(std::string(error.what()).find("No space left on device"), std::string::npos);
    }
    EXPECT_EQ(read_file(file()), before);
    EXPECT_EQ(stages(), std::vector<std::string>{});
  }
}

TEST_F(InstallApprovalsFaultTest, AFailedDirectoryFsyncIsReportedWithTheNewFileWhole) {
  approvals_.record(approval("pdf"));
  faulty_.fail(StateFsStep::kSyncDir, EIO);
  CTX_EXPECT_THROW(approvals_.record(approval("csv")), StateFsError,
                   "install approvals: fsync directory failed: Input/output error");
  // Renamed before the fsync failed: the whole new file, never a mix.
  EXPECT_EQ(approvals_.load().size(), 2u);
  EXPECT_EQ(stages(), std::vector<std::string>{});
}

TEST_F(InstallApprovalsFaultTest, ACrashBeforeTheRenameKeepsThePreviousApprovals) {
  approvals_.record(approval("pdf"));
  const std::string before = read_file(file());
  faulty_.crash_at(StateFsStep::kRename);
  EXPECT_THROW(approvals_.record(approval("csv")), ::ctx::testing::StateFsCrash);
  EXPECT_EQ(read_file(file()), before);
  // The dead process left its whole stage (0600) and nothing else; the file reads as before.
  const auto names = stages();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(names[0].starts_with(".install-approvals.json.") && names[0].ends_with(".stage"));
  EXPECT_EQ(mode_of(dir() / names[0]), 0600u);
  ASSERT_EQ(approvals_.load().size(), 1u);
  EXPECT_TRUE(approvals_.load().contains("skill:pdf"));
}

}  // namespace
}  // namespace ctx::runtime
