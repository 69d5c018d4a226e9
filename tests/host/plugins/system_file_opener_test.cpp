// SystemFileOpener (detail/trusted_path.hpp): one dependency check walks each directory chain
// once, yet every file is still opened and checked, a directory below a remembered one is still
// checked, symlinked directories resolve as open_system_file resolves them, and a new opener
// (the next load) sees the live filesystem. Root only: the chain must be root-owned.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctx/loader/detail/trusted_path.hpp>
#include <ctx/loader/errors.hpp>
#include <filesystem>
#include <string>

#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins::detail {
namespace {

namespace fs = std::filesystem;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;

constexpr uid_t kNobody = 65534;

class SystemFileOpenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "not root: the directory chain must be root-owned";
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
    fs::create_directories(dir_ / "lib/sub");
    write_bytes(dir_ / "lib/a.so", "a");
    write_bytes(dir_ / "lib/b.so", "b");
    write_bytes(dir_ / "lib/sub/c.so", "c");
    fs::create_directory_symlink("lib", dir_ / "link");
    fs::create_symlink("a.so", dir_ / "lib/a.so.1");
  }
  std::string at(const std::string& relative) const { return (dir_ / relative).string(); }

  TempDir dir_;
};

TEST_F(SystemFileOpenerTest, EveryFileIsCheckedEvenBelowARememberedDirectory) {
  SystemFileOpener opener;
  std::string real;
  const TrustedFile a = opener.open(at("lib/a.so"), &real);
  EXPECT_TRUE(a.fd);
  EXPECT_EQ(real, at("lib/a.so"));
  // Same directory, remembered: the file itself is still checked.
  ASSERT_EQ(::chown(at("lib/b.so").c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(opener.open(at("lib/b.so"), nullptr), UnsafePluginFile,
                   "library " + at("lib/b.so") + " has the wrong owner (uid 65534");
  ASSERT_EQ(::chmod(at("lib/a.so").c_str(), 0666), 0);
  CTX_EXPECT_THROW(opener.open(at("lib/a.so"), nullptr), UnsafePluginFile,
                   "group- or world-writable");
  // A directory below the remembered one is walked and checked.
  ASSERT_EQ(::chmod(at("lib/sub").c_str(), 0777), 0);
  CTX_EXPECT_THROW(opener.open(at("lib/sub/c.so"), nullptr), UnsafePluginFile,
                   "directory " + at("lib/sub") + " is writable by group or other and not sticky");
  // A file that is not there is not found, remembered directory or not.
  CTX_EXPECT_THROW(opener.open(at("lib/missing.so"), nullptr), PluginFileNotFound, "not found");
}

TEST_F(SystemFileOpenerTest, SymlinksResolveAsOpenSystemFileResolvesThem) {
  SystemFileOpener opener;
  for (const char* path : {"link/a.so.1", "link/b.so", "lib/a.so.1", "link/sub/c.so"}) {
    SCOPED_TRACE(path);
    std::string fresh, remembered;
    const TrustedFile expected = open_system_file(at(path), &fresh);
    const TrustedFile got = opener.open(at(path), &remembered);
    EXPECT_EQ(remembered, fresh);
    EXPECT_EQ(got.st.st_ino, expected.st.st_ino);
  }
  std::string real;
  static_cast<void>(opener.open(at("link/a.so.1"), &real));
  EXPECT_EQ(real, at("lib/a.so"));
  static_cast<void>(opener.open(at("link/sub/c.so"), &real));
  EXPECT_EQ(real, at("lib/sub/c.so"));
  // A directory given where a file is expected is refused.
  CTX_EXPECT_THROW(opener.open(at("link/sub"), nullptr), UnsafePluginFile, "is a directory");
}

TEST_F(SystemFileOpenerTest, ANewOpenerWalksTheLiveFilesystem) {
  SystemFileOpener first;
  static_cast<void>(first.open(at("lib/a.so"), nullptr));
  // What the next load sees: its own opener walks from "/" again.
  ASSERT_EQ(::chmod(at("lib").c_str(), 0777), 0);
  SystemFileOpener next;
  CTX_EXPECT_THROW(next.open(at("lib/a.so"), nullptr), UnsafePluginFile,
                   "directory " + at("lib") + " is writable by group or other and not sticky");
  CTX_EXPECT_THROW(open_system_file(at("lib/a.so"), nullptr), UnsafePluginFile,
                   "is writable by group or other and not sticky");
  ASSERT_EQ(::chmod(at("lib").c_str(), 0755), 0);
  ASSERT_EQ(::chown(at("lib").c_str(), kNobody, kNobody), 0);
  SystemFileOpener after;
  CTX_EXPECT_THROW(after.open(at("link/a.so"), nullptr), UnsafePluginFile,
                   "directory " + at("lib") + " has the wrong owner (uid 65534");
}

}  // namespace
}  // namespace ctx::plugins::detail
