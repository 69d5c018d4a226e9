// The lock file as a trust root (issue 9 item 4): canonical bytes only, normalised paths,
// owner/mode of the file and of every directory above it, size from fstat, serialised updates,
// linear parsing of large locks. Ownership cases use real uids (root hands files to 65534).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <barrier>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/lock_file.hpp>
#include <string>
#include <thread>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

namespace fs = std::filesystem;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;

constexpr uid_t kNobody = 65534;

LockEntry entry(const std::string& id, char hex = 'a') {
  LockEntry e;
  e.kind = PluginKind::kVerifier;
  e.id = id;
  e.version = "1.0.0";
  e.sha256 = std::string(64, hex);
  e.size = 100;
  e.abi_major = 1;
  e.needed = {"libc.so.6"};
  e.platform = "linux-x86_64";
  e.path = "/opt/plugins/" + id + ".so";
  return e;
}

std::string canonical_text(const LockFile& lock) {
  return core::canonical_json(lock.to_json()) + "\n";
}

class LockTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lock_.upsert(entry("a"));
    lock_.upsert(entry("b", 'b'));
    path_ = dir_ / "plugins.lock.json";
    lock_.save(path_);
  }
  TempDir dir_;
  LockFile lock_;
  fs::path path_;
};

TEST_F(LockTrustTest, NonCanonicalBytesAreRefusedWithHowToFix) {
  const std::string text = read_bytes(path_);
  const std::vector<std::string> variants = {
      text.substr(0, text.size() - 1),                        // no final newline
      text + "\n",                                            // two newlines
      " " + text,                                             // leading space
      core::Json::parse(text).dump(2) + "\n",                 // pretty-printed
      core::canonical_json(core::Json::parse(text)) + "\r\n"  // CRLF
  };
  for (const std::string& variant : variants) {
    SCOPED_TRACE(variant.substr(0, 40));
    write_bytes(path_, variant);
    CTX_EXPECT_THROW(LockFile::load(path_), MalformedLockFile, "ctx plugin pin");
  }
  // Entries out of order are not canonical either.
  core::Json json = lock_.to_json();
  std::swap(json["entries"][0], json["entries"][1]);
  write_bytes(path_, core::canonical_json(json) + "\n");
  CTX_EXPECT_THROW(LockFile::load(path_), MalformedLockFile, "not sorted");
}

TEST_F(LockTrustTest, PathsMustBeAbsoluteNormalisedAndFreeOfControlCharacters) {
  for (const std::string& bad :
       {std::string("/opt/./x.so"), std::string("/opt/../etc/x.so"), std::string("/opt//x.so"),
        std::string("/opt/x.so/"), std::string("opt/x.so"), std::string("/opt/x\nso"),
        std::string("/opt/x.so\0/other.so", 19), std::string("/opt/x\x7f.so")}) {
    SCOPED_TRACE(bad);
    LockEntry e = entry("c");
    e.path = bad;
    LockFile lock;
    CTX_EXPECT_THROW(lock.upsert(e), InvalidArgument, "path");
    core::Json json = lock_.to_json();
    json["entries"][0]["path"] = bad;
    write_bytes(path_, core::canonical_json(json) + "\n");
    CTX_EXPECT_THROW(LockFile::load(path_), MalformedLockFile, "path");
  }
}

TEST_F(LockTrustTest, SymlinkedLockOrAncestorIsRefused) {
  const fs::path link = dir_ / "link.json";
  fs::create_symlink(path_, link);
  CTX_EXPECT_THROW(LockFile::load(link), UnsafePluginFile, "symlink");
  fs::create_directory(dir_ / "real");
  lock_.save(dir_ / "real" / "plugins.lock.json");
  fs::create_directory_symlink(dir_ / "real", dir_ / "alias");
  CTX_EXPECT_THROW(LockFile::load(dir_ / "alias" / "plugins.lock.json"), UnsafePluginFile,
                   "is a symlink");
}

TEST_F(LockTrustTest, WritableByOthersIsRefused) {
  for (const mode_t mode : {0666, 0664, 0646}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(path_.c_str(), mode), 0);
    CTX_EXPECT_THROW(LockFile::load(path_), UnsafePluginFile, "writable");
  }
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  // An ancestor directory writable by others (not sticky) is as bad as the file itself.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  CTX_EXPECT_THROW(LockFile::load(path_), UnsafePluginFile, "writable by group or other");
  ASSERT_EQ(::chmod(dir_.path().c_str(), 01777), 0);  // sticky, like /tmp: accepted
  EXPECT_NO_THROW(LockFile::load(path_));
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0700), 0);
  EXPECT_NO_THROW(LockFile::load(path_));
}

TEST_F(LockTrustTest, LockOrDirectoryOfAnotherUidIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "not root: ownership tests need root to hand files to uid 65534";
  }
  ASSERT_EQ(::chown(path_.c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(LockFile::load(path_), UnsafePluginFile, "wrong owner (uid 65534");
  ASSERT_EQ(::chown(path_.c_str(), 0, 0), 0);
  const fs::path sub = dir_ / "sub";
  fs::create_directory(sub);
  lock_.save(sub / "plugins.lock.json");
  ASSERT_EQ(::chown(sub.c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(LockFile::load(sub / "plugins.lock.json"), UnsafePluginFile,
                   "directory " + sub.string() + " has the wrong owner");
  // Another uid rewriting the lock (a rollback) is exactly what the owner check refuses: the
  // rewrite below really happens as uid 65534, through a directory it may write.
  ASSERT_EQ(::chmod(sub.c_str(), 0755), 0);
  const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cp " +
                              (sub / "plugins.lock.json").string() + " " + (sub / "x").string() +
                              " && mv " + (sub / "x").string() + " " +
                              (sub / "plugins.lock.json").string() + "'";
  ASSERT_EQ(::chown(sub.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(sub.c_str(), 0777), 0);
  CTX_EXPECT_THROW(LockFile::load(sub / "plugins.lock.json"), UnsafePluginFile,
                   "writable by group or other");
  ASSERT_EQ(std::system(command.c_str()), 0);
  ASSERT_EQ(::chmod(sub.c_str(), 0755), 0);  // the directory is tightened; the file stays theirs
  struct stat st {};
  ASSERT_EQ(::stat((sub / "plugins.lock.json").c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, kNobody);
  CTX_EXPECT_THROW(LockFile::load(sub / "plugins.lock.json"), UnsafePluginFile, "wrong owner");
}

TEST_F(LockTrustTest, SizeIsCheckedFromFstatBeforeReading) {
  const fs::path big = dir_ / "big.json";
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMaxLockFileBytes + 1)), 0);  // sparse
    ::close(fd);
  }
  CTX_EXPECT_THROW(LockFile::load(big), MalformedLockFile, "larger than 16 MiB");
  // A FIFO cannot stall the reader: it is not a regular file.
  const fs::path fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  CTX_EXPECT_THROW(LockFile::load(fifo), UnsafePluginFile, "not a regular file");
}

TEST_F(LockTrustTest, ConcurrentUpdatesAreSerialisedAndNoneIsLost) {
  constexpr int kThreads = 8;
  constexpr int kEach = 10;
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        LockFile::update(path_, [&](LockFile& lock) {
          lock.upsert(entry("t" + std::to_string(t) + "-" + std::to_string(i)));
        });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const LockFile loaded = LockFile::load(path_);
  EXPECT_EQ(loaded.entries().size(), 2u + kThreads * kEach);
  EXPECT_EQ(ctx::testing::list_dir(dir_.path()).size(), 1u);  // no temp files left
}

TEST_F(LockTrustTest, AFailedUpdateLeavesTheFileAsItWas) {
  const std::string before = read_bytes(path_);
  EXPECT_THROW(LockFile::update(path_, [](LockFile&) { throw PinConflict("no"); }), PinConflict);
  EXPECT_EQ(read_bytes(path_), before);
}

TEST_F(LockTrustTest, LargeLockParsesAndListsEveryEntry) {
  LockFile lock;
  std::vector<LockEntry> entries;
  for (int i = 0; i < 55000; ++i) {
    LockEntry e = entry("p" + std::to_string(i));
    entries.push_back(e);
  }
  core::Json json{{"entries", core::Json::array()}, {"schema", std::string(kLockSchema)}};
  std::sort(entries.begin(), entries.end(),
            [](const LockEntry& a, const LockEntry& b) { return a.id < b.id; });
  for (const LockEntry& e : entries) json["entries"].push_back(e.to_json());
  const std::string text = core::canonical_json(json) + "\n";
  const LockFile parsed = LockFile::parse(text, "big");
  EXPECT_EQ(parsed.entries().size(), 55000u);
  EXPECT_NE(parsed.find(PluginKind::kVerifier, "p54321"), nullptr);
  EXPECT_EQ(canonical_text(parsed), text);
}

}  // namespace
}  // namespace ctx::plugins
