#include "host/runtime/consent/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctx/support/unique_fd.hpp>
#include <random>

#include "host/core/crypto.hpp"

namespace ctx::runtime {
namespace {

using Fd = support::UniqueFd;

[[noreturn]] void refuse(std::string_view what, std::string_view rule) {
  throw UnsafeStateFile(std::string(what) + " refused: " + std::string(rule));
}

[[noreturn]] void system_failure(std::string_view what, std::string_view call, int err) {
  throw SystemError(std::string(what) + ": " + std::string(call) + " failed: " +
                    std::strerror(err));
}

// A failed StateFs step in this file's words: "<what>: <call> failed: <strerror>".
[[noreturn]] void step_failure(std::string_view what, const core::StateFsError& error) {
  std::string_view call = core::to_string(error.step());
  if (error.step() == core::StateFsStep::kCreate) call = "create stage";
  throw core::StateFsError(error, std::string(what) + ": " + std::string(call) +
                                      " failed: " + std::strerror(error.error()));
}

void check_dir_stat(const struct stat& st, std::string_view what) {
  if (!S_ISDIR(st.st_mode)) refuse(what, "directory is not a directory");
  if (st.st_uid != ::geteuid()) refuse(what, "directory is not owned by this user");
  if ((st.st_mode & 07777) != 0700) refuse(what, "directory mode is not 0700");
}

}  // namespace

void ensure_private_dir(const std::filesystem::path& dir, std::string_view what,
                        DirDurability durability, core::StateFs& fs) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) system_failure(what, "lstat", errno);
    if (dir.has_parent_path() && dir.parent_path() != dir) {
      std::error_code ec;
      std::filesystem::create_directories(dir.parent_path(), ec);
      if (ec) system_failure(what, "create parent", ec.value());
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) system_failure(what, "mkdir", errno);
    if (::chmod(dir.c_str(), 0700) != 0) system_failure(what, "chmod", errno);
    if (durability == DirDurability::kDurable && dir.has_parent_path()) {
      try {
        fs.sync_dir(dir.parent_path(), support::Follow::kNoSymlinks);
      } catch (const core::StateFsError& error) {
        step_failure(what, error);
      }
    }
    if (::lstat(dir.c_str(), &st) != 0) system_failure(what, "lstat", errno);
  }
  if (S_ISLNK(st.st_mode)) refuse(what, "directory is a symlink");
  check_dir_stat(st, what);
}

std::optional<std::string> read_private_file(const std::filesystem::path& path,
                                             std::size_t max_bytes, std::string_view what) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) refuse(what, "file is a symlink");
    system_failure(what, "open", errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) system_failure(what, "fstat", errno);
  if (!S_ISREG(st.st_mode)) refuse(what, "file is not a regular file");
  if (st.st_uid != ::geteuid()) refuse(what, "file is not owned by this user");
  if ((st.st_mode & 07777) != 0600) refuse(what, "file mode is not 0600");
  if (st.st_nlink != 1) refuse(what, "file has more than one link");
  if (static_cast<std::size_t>(st.st_size) > max_bytes) refuse(what, "file is too large");
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) system_failure(what, "read", errno);
    if (n == 0) refuse(what, "file shrank while read");
    done += static_cast<std::size_t>(n);
  }
  char extra = 0;
  if (::read(fd.get(), &extra, 1) > 0) refuse(what, "file grew while read");
  return bytes;
}

void write_private_file(const std::filesystem::path& path, std::string_view bytes,
                        std::string_view what, core::StateFs& fs) {
  const std::filesystem::path dir = path.parent_path();
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) system_failure(what, "lstat directory", errno);
  if (S_ISLNK(st.st_mode)) refuse(what, "directory is a symlink");
  check_dir_stat(st, what);
  std::random_device random;
  // Appended, not "." + name + "...": GCC 12 -O3 reports a false -Wrestrict in operator+.
  std::string stage_name = ".";
  stage_name += path.filename().string();
  stage_name += '.';
  stage_name +=
      core::sha256_hex(std::to_string(random()) + std::to_string(::getpid())).substr(0, 16);
  stage_name += ".stage";
  try {
    core::replace_file(fs, path, dir / stage_name, bytes, core::NewFile{},
                       support::Follow::kNoSymlinks);
  } catch (const core::StateFsError& error) {
    step_failure(what, error);
  }
}

}  // namespace ctx::runtime
