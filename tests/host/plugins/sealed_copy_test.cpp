// The sealed copy behind every pinned load (detail/sealed_copy.hpp): the digest is of the bytes
// in the memfd, the memfd is sealed and owner-read-only, both copy strategies agree, a file
// that shrinks fails cleanly, and a same-uid process racing to chmod and open the memfd for
// writing through /proc/<pid>/fd never gets a byte into it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <ctx/loader/detail/sealed_copy.hpp>
#include <ctx/loader/errors.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"

namespace ctx::plugins::detail {
namespace {

namespace fs = std::filesystem;
using ctx::testing::TempDir;

std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 gen(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(gen());
  return bytes;
}

// The memfd's bytes, read through the descriptor (not the mapping).
std::string memfd_bytes(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "<fstat failed>";
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) return "<pread failed>";
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

detail::UniqueFd open_file(const fs::path& path) {
  return detail::UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

class SealedCopyTest : public ::testing::TestWithParam<CopyStrategy> {
 protected:
  TempDir dir_;
};

TEST_P(SealedCopyTest, DigestIsOfTheSealedOwnerReadOnlyBytes) {
  // Around the serial threshold, several ring turns, and a ragged tail.
  const std::vector<std::size_t> sizes = {1, kSerialHashMaxBytes, kSerialHashMaxBytes + 1,
                                          (3u << 20) + 123, (5u << 20) + 4096};
  for (const std::size_t size : sizes) {
    SCOPED_TRACE(size);
    const std::string bytes = random_bytes(size, static_cast<unsigned>(size));
    const fs::path file = dir_ / ("f" + std::to_string(size));
    ctx::testing::write_bytes(file, bytes);
    const UniqueFd in = open_file(file);
    ASSERT_TRUE(in);

    const SealedCopy copy = make_sealed_copy(in.get(), size, "t:x", file.string(), GetParam());
    EXPECT_EQ(copy.sha256, core::sha256_hex(bytes));
    EXPECT_EQ(memfd_bytes(copy.memfd.get()), bytes);
    ASSERT_EQ(copy.map.bytes().size(), size);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy.map.bytes().data()), size), bytes);

    EXPECT_EQ(::fcntl(copy.memfd.get(), F_GET_SEALS),
              F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    EXPECT_EQ(::pwrite(copy.memfd.get(), "x", 1, 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_NE(::ftruncate(copy.memfd.get(), static_cast<off_t>(size + 1)), 0);
    struct stat st {};
    ASSERT_EQ(::fstat(copy.memfd.get(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, static_cast<mode_t>(S_IRUSR));
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), size);
  }
}

TEST_P(SealedCopyTest, FileShorterThanItsPinnedSizeIsRefused) {
  const fs::path file = dir_ / "short";
  ctx::testing::write_bytes(file, random_bytes((2u << 20) + 17, 7));
  const UniqueFd in = open_file(file);
  ASSERT_TRUE(in);
  try {
    static_cast<void>(make_sealed_copy(in.get(), (4u << 20), "t:x", file.string(), GetParam()));
    FAIL() << "a short file was copied";
  } catch (const UnsafePluginFile& e) {
    EXPECT_NE(std::string(e.what()).find("shrank while it was read"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, SealedCopyTest,
                         ::testing::Values(CopyStrategy::kSerial, CopyStrategy::kPipelined,
                                           CopyStrategy::kAuto),
                         [](const auto& info) {
                           switch (info.param) {
                             case CopyStrategy::kSerial:
                               return std::string("Serial");
                             case CopyStrategy::kPipelined:
                               return std::string("Pipelined");
                             case CopyStrategy::kAuto:
                               break;
                           }
                           return std::string("Auto");
                         });

// Becomes the unprivileged uid when run as root (so that file modes bind), else stays as is.
// Either way the process stays dumpable, as an ordinary same-uid process is.
bool become_nobody() {
  if (::geteuid() == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      return false;
    }
  }
  return ::prctl(PR_SET_DUMPABLE, 1) == 0;
}

// A same-uid racer scans /proc/<loader>/fd for the plugin memfd and, whenever it can chmod it
// and open it for writing, writes foreign bytes into it; the loader (same uid) copies a 3 MiB
// file 200 times, pipelined and serially. Every copy must still hold exactly the file's bytes
// and digest, and no write of the racer may ever have landed in a memfd.
TEST(SealedCopyRaceTest, SameUidRacerNeverWritesIntoTheMemfd) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const fs::path file = dir / "plugin.so";
  const std::string bytes = random_bytes(3u << 20, 42);
  ctx::testing::write_bytes(file, bytes);
  ::chmod(file.c_str(), 0644);
  const std::string digest = core::sha256_hex(bytes);

  int go[2], report[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  const pid_t loader = ::fork();
  ASSERT_GE(loader, 0);
  if (loader == 0) {
    ::close(go[1]);
    ::close(report[0]);
    ::close(report[1]);
    if (!become_nobody()) ::_exit(3);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(4);
    const UniqueFd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) ::_exit(5);
    int bad = 0;
    for (int i = 0; i < 200; ++i) {
      const CopyStrategy strategy = i % 2 ? CopyStrategy::kPipelined : CopyStrategy::kSerial;
      const SealedCopy copy =
          make_sealed_copy(in.get(), bytes.size(), "t:race", file.string(), strategy);
      if (copy.sha256 != digest || core::sha256_hex(memfd_bytes(copy.memfd.get())) != digest) {
        ++bad;
      }
    }
    ::_exit(bad == 0 ? 0 : 1);
  }
  const pid_t racer = ::fork();
  ASSERT_GE(racer, 0);
  if (racer == 0) {
    ::close(go[0]);
    ::close(go[1]);
    ::close(report[0]);
    if (!become_nobody()) ::_exit(3);
    const std::string fds = "/proc/" + std::to_string(loader) + "/fd/";
    const std::string foreign(4096, 'X');
    for (;;) {
      for (int n = 3; n < 32; ++n) {
        const std::string link = fds + std::to_string(n);
        char target[256];
        const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
        if (len <= 0 || std::string(target, static_cast<std::size_t>(len)).find("ctx-plugin") ==
                            std::string::npos) {
          continue;
        }
        // Mode 0 alone does not stop this: the owner may chmod the memfd through the magic
        // link (chmod needs ownership, not permission), then open it for writing.
        static_cast<void>(::chmod(link.c_str(), 0600));
        const int fd = ::open(link.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) continue;
        // Once sealed it may be opened (harmless: every write fails with EPERM); a write that
        // lands is the failure.
        const bool landed = ::pwrite(fd, foreign.data(), foreign.size(), 1 << 20) > 0;
        static_cast<void>(::write(report[1], landed ? "w" : "o", 1));
        ::close(fd);
      }
    }
  }
  ::close(go[0]);
  ::close(report[1]);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(loader, &status, 0), loader);
  ::kill(racer, SIGKILL);
  int racer_status = 0;
  ASSERT_EQ(::waitpid(racer, &racer_status, 0), racer);
  std::string opened;
  char buffer[256];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof buffer)) > 0;) {
    opened.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(report[0]);
  ASSERT_TRUE(WIFEXITED(status)) << "loader child died: status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a sealed copy did not hold the file's bytes";
  EXPECT_EQ(std::count(opened.begin(), opened.end(), 'w'), 0)
      << "a write of the racer landed in a plugin memfd";
  // The racer did reach the memfds (after their seals): the check above was not vacuous.
  EXPECT_GT(std::count(opened.begin(), opened.end(), 'o'), 0) << "the racer never saw a memfd";
  EXPECT_TRUE(WIFSIGNALED(racer_status)) << "racer stopped early: status " << racer_status;
}

}  // namespace
}  // namespace ctx::plugins::detail
