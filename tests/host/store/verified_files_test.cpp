#include "host/store/verified_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ctx::store {
namespace {

namespace fs = std::filesystem;

class VerifiedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/ctx-verified-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
  }
  static struct stat status_of(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0);
    return st;
  }
  // A read that began `seconds` after now (the file's last change is then that far back).
  static struct timespec later(time_t seconds) {
    struct timespec t = realtime_now();
    t.tv_sec += seconds;
    return t;
  }

  fs::path dir_;
};

TEST_F(VerifiedFilesTest, ASettledUnchangedFileIsKnownByItsStatus) {
  const auto path = write("a", "alpha");
  remember_sha256(status_of(path), "sha-of-alpha", later(5));
  EXPECT_EQ(known_sha256(status_of(path)), "sha-of-alpha");
}

TEST_F(VerifiedFilesTest, AFileChangedInTheLastSecondBeforeTheReadIsNotRemembered) {
  // Its time stamps could stay as they are through a change in the same clock tick.
  const auto path = write("b", "beta");
  remember_sha256(status_of(path), "sha-of-beta", realtime_now());
  EXPECT_FALSE(known_sha256(status_of(path)).has_value());
}

TEST_F(VerifiedFilesTest, AnyChangeOfBytesModeLinksOrNameIsNotKnown) {
  const auto rewritten = write("c", "gamma");
  remember_sha256(status_of(rewritten), "sha-of-gamma", later(5));
  ::usleep(50'000);     // past the clock tick of the first write (the settled case)
  write("c", "GAMMA");  // the same size, new bytes
  EXPECT_FALSE(known_sha256(status_of(rewritten)).has_value());

  const auto chmodded = write("d", "delta");
  remember_sha256(status_of(chmodded), "sha-of-delta", later(5));
  ASSERT_EQ(::chmod(chmodded.c_str(), 0400), 0);
  EXPECT_FALSE(known_sha256(status_of(chmodded)).has_value());

  const auto linked = write("e", "epsilon");
  remember_sha256(status_of(linked), "sha-of-epsilon", later(5));
  ASSERT_EQ(::link(linked.c_str(), (dir_ / "e2").c_str()), 0);
  EXPECT_FALSE(known_sha256(status_of(linked)).has_value());

  // Another file put in the name's place (a new inode) is another file.
  const auto replaced = write("f", "phi");
  remember_sha256(status_of(replaced), "sha-of-phi", later(5));
  const auto other = write("f.new", "phi");
  fs::rename(other, replaced);
  EXPECT_FALSE(known_sha256(status_of(replaced)).has_value());
}

TEST_F(VerifiedFilesTest, OnlyRegularFilesAreRemembered) {
  remember_sha256(status_of(dir_), "sha-of-a-directory", later(5));
  EXPECT_FALSE(known_sha256(status_of(dir_)).has_value());
}

TEST_F(VerifiedFilesTest, TheMemoryIsBoundedAndKeepsTheNewest) {
  std::vector<fs::path> files;
  for (int i = 0; i < 100; ++i) {
    files.push_back(write("n" + std::to_string(i), std::to_string(i)));
    remember_sha256(status_of(files.back()), "sha-" + std::to_string(i), later(5));
  }
  EXPECT_EQ(known_sha256(status_of(files.back())), "sha-99");
  EXPECT_FALSE(known_sha256(status_of(files.front())).has_value());
}

}  // namespace
}  // namespace ctx::store
