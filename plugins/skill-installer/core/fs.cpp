#include "plugins/skill-installer/core/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <ctx/support/digest.hpp>

#include "plugins/common/bytes.hpp"

namespace ctx::skill_installer {

void throw_os(std::string_view action) {
  const int error = errno;
  throw Error("skill-installer could not " + std::string(action) + ": " + std::strerror(error),
              ErrorCode::kInternal);
}

void fsync_or_throw(int fd, std::string_view what) {
  if (::fsync(fd) != 0) throw_os("sync " + std::string(what));
}

struct stat fstat_or_throw(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_os("stat a store entry");
  return st;
}

FileDescriptor open_directory_at(int parent, const std::string& name, mode_t mode) {
  if (::mkdirat(parent, name.c_str(), mode) == 0) {
    fsync_or_throw(parent, "a directory");
  } else if (errno != EEXIST) {
    throw_os("create a directory");
  }
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      throw InvalidArgument("skill-installer store layout is corrupt: " + name +
                            " is not a directory");
    }
    throw_os("open a directory");
  }
  return FileDescriptor(fd);
}

std::optional<FileDescriptor> open_optional(int dir, const std::string& name, int flags) {
  const int fd = ::openat(dir, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) return FileDescriptor(fd);
  if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return std::nullopt;
  throw_os("open a store entry");
}

std::vector<std::string> list_directory(int dir) {
  const int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) throw_os("open a directory for listing");
  DIR* stream = ::fdopendir(copy);
  if (stream == nullptr) {
    ::close(copy);
    throw_os("list a directory");
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
    errno = 0;
  }
  const int error = errno;
  ::closedir(stream);
  if (error != 0) {
    errno = error;
    throw_os("list a directory");
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool try_lock(int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  throw_os("lock a staging entry");
}

void remove_tree_at(int parent, const std::string& name) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    throw_os("stat an entry to remove");
  }
  if (S_ISDIR(st.st_mode)) {
    if ((st.st_mode & S_IRWXU) != S_IRWXU) ::fchmodat(parent, name.c_str(), 0700, 0);
    if (auto dir = open_optional(parent, name, O_RDONLY | O_DIRECTORY)) {
      for (const std::string& child : list_directory(dir->get())) remove_tree_at(dir->get(), child);
    }
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      throw_os("remove a directory");
    }
    return;
  }
  if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) throw_os("remove a file");
}

std::string read_all(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return bytes;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_os("read a store entry");
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_os("write a staged file");
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

struct Sha256Stream::Context {
  support::Sha256Stream stream;
};

Sha256Stream::Sha256Stream() : context_(std::make_unique<Context>()) {}

Sha256Stream::~Sha256Stream() = default;

void Sha256Stream::update(std::string_view bytes) {
  if (!context_->stream.update(bytes.data(), bytes.size())) {
    throw Error("skill-installer could not update a sha-256 digest", ErrorCode::kInternal);
  }
}

std::string Sha256Stream::hex() {
  const auto digest = context_->stream.finish();
  if (!digest) {
    throw Error("skill-installer could not finish a sha-256 digest", ErrorCode::kInternal);
  }
  return support::to_hex(*digest);
}

}  // namespace ctx::skill_installer
