#include "plugins/common/host_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctx/support/fs.hpp>
#include <ctx/support/unique_fd.hpp>

namespace ctx::plugin_common {
namespace {

namespace fs = std::filesystem;

constexpr char kWho[] = "installer";
constexpr std::string_view kBackupSuffix = ".ctx-backup";

using Fd = support::UniqueFd;
using support::fsync_directory;  // best effort where called: the file itself was fsynced

void write_all(int fd, std::string_view bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno(kWho, "write a file");
    written += static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd, std::size_t max_bytes, std::string_view label) {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(kWho, "read a file");
    }
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      throw InvalidArgument(std::string(label) + " is larger than ctx edits");
    }
  }
  return out;
}

// A temporary file name in `dir` unique across threads and processes.
fs::path temporary_beside(const fs::path& file) {
  static std::atomic<unsigned long> counter{0};
  // Appended, not "." + ... (GCC 12 -O3 reports a false -Wrestrict in operator+ here).
  std::string name = ".";
  name += file.filename().string();
  name += ".ctx-tmp-";
  name += std::to_string(::getpid());
  name += '-';
  name += std::to_string(counter.fetch_add(1));
  return file.parent_path() / name;
}

// True when `file` is still exactly what `before` saw.
bool unchanged(const fs::path& file, const HostFileSnapshot& before, std::string_view label) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno != ENOENT) throw_errno(kWho, "stat a file");
    return !before.exists;
  }
  if (!before.exists) return false;
  if (st.st_dev != before.device || st.st_ino != before.inode || st.st_size != before.size ||
      st.st_mtim.tv_sec != before.modified.tv_sec ||
      st.st_mtim.tv_nsec != before.modified.tv_nsec) {
    return false;
  }
  const HostFileSnapshot now = read_host_file(file, label, before.bytes.size() + 1);
  return now.bytes == before.bytes;
}

void write_temporary(const fs::path& temp, std::string_view bytes, mode_t mode) {
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd.valid()) throw_errno(kWho, "create a temporary file");
  try {
    if (::fchmod(fd.get(), mode) != 0) throw_errno(kWho, "set a file's mode");
    write_all(fd.get(), bytes);
    if (::fsync(fd.get()) != 0) throw_errno(kWho, "sync a file");
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

}  // namespace

void throw_errno(std::string_view who, std::string_view action) {
  const int error = errno;
  throw Error(std::string(who) + " could not " + std::string(action) + ": " + std::strerror(error),
              ErrorCode::kInternal);
}

fs::path end_of_symlink_chain(const fs::path& file) {
  fs::path current = file;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::string target(4096, '\0');
    const ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0) throw_errno(kWho, "read a symlink");
    target.resize(static_cast<std::size_t>(n));
    const fs::path next(target);
    current = next.is_absolute() ? next : current.parent_path() / next;
  }
  throw Error("installer found too many levels of symbolic links", ErrorCode::kInternal);
}

HostFileSnapshot read_host_file(const fs::path& file, std::string_view label,
                                std::size_t max_bytes) {
  HostFileSnapshot out;
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return out;
    if (errno == ELOOP) throw InvalidArgument(std::string(label) + " is not a regular file");
    throw_errno(kWho, "open a file");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno(kWho, "stat a file");
  if (!S_ISREG(st.st_mode)) throw InvalidArgument(std::string(label) + " is not a regular file");
  out.exists = true;
  out.device = st.st_dev;
  out.inode = st.st_ino;
  out.mode = st.st_mode & 07777;
  out.size = st.st_size;
  out.modified = st.st_mtim;
  out.bytes = read_all(fd.get(), max_bytes, label);
  return out;
}

DirectoryLock::DirectoryLock(const fs::path& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  fd_ = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw_errno(kWho, "open a host directory");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    ::close(fd_);
    errno = error;
    throw_errno(kWho, "lock a host directory");
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

void replace_host_file(const fs::path& file, std::string_view bytes, mode_t mode,
                       const HostFileSnapshot& before, std::string_view label) {
  const fs::path temp = temporary_beside(file);
  write_temporary(temp, bytes, mode);
  try {
    if (!unchanged(file, before, label)) {
      throw HostFileChanged(std::string(label) +
                            " changed while ctx was editing it; nothing was written");
    }
    if (::rename(temp.c_str(), file.c_str()) != 0) throw_errno(kWho, "replace a file");
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  fsync_directory(file.parent_path());
}

void remove_host_file(const fs::path& file, const HostFileSnapshot& before,
                      std::string_view label) {
  if (!unchanged(file, before, label)) {
    throw HostFileChanged(std::string(label) +
                          " changed while ctx was editing it; nothing was removed");
  }
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) throw_errno(kWho, "remove a file");
  fsync_directory(file.parent_path());
}

bool backup_host_file_once(const fs::path& file, const HostFileSnapshot& before) {
  if (!before.exists) return false;
  const fs::path backup =
      file.parent_path() / (file.filename().string() + std::string(kBackupSuffix));
  struct stat st {};
  if (::lstat(backup.c_str(), &st) == 0) return false;
  if (errno != ENOENT) throw_errno(kWho, "stat a backup");
  const fs::path temp = temporary_beside(backup);
  write_temporary(temp, before.bytes, 0600);
  // link(2) publishes the backup only when no other writer made one first.
  if (::link(temp.c_str(), backup.c_str()) != 0 && errno != EEXIST) {
    ::unlink(temp.c_str());
    throw_errno(kWho, "publish a backup");
  }
  ::unlink(temp.c_str());
  fsync_directory(backup.parent_path());
  return true;
}

void write_private_file(const fs::path& file, std::string_view bytes) {
  const fs::path temp = temporary_beside(file);
  write_temporary(temp, bytes, 0600);
  if (::rename(temp.c_str(), file.c_str()) != 0) {
    ::unlink(temp.c_str());
    throw_errno(kWho, "replace a private file");
  }
  fsync_directory(file.parent_path());
}

}  // namespace ctx::plugin_common
