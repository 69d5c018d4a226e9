#include "host/runtime/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"

namespace ctx::runtime {

namespace {

// Opens (creating) the lock file `path`; its parent directory is created 0700 if absent.
int open_lock_file(const std::filesystem::path& path) {
  const auto parent = path.parent_path();
  if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError("execution lock directory cannot be created: " +
                      std::string(std::strerror(errno)));
  }
  struct stat parent_stat {};
  if (::lstat(parent.c_str(), &parent_stat) != 0 || !S_ISDIR(parent_stat.st_mode)) {
    throw SystemError("execution lock directory is not a directory");
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw SystemError("execution lock cannot be opened: " + std::string(std::strerror(errno)));
  }
  return fd;
}

// One byte at `slot` of the file, for F_OFD_SETLK (`type` F_WRLCK or F_UNLCK).
struct flock slot_range(long long slot, short type) {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = static_cast<off_t>(slot);
  range.l_len = 1;
  return range;
}

// Polls `try_lock` (true when taken; false with errno EWOULDBLOCK/EAGAIN/EINTR when held
// elsewhere) until it succeeds or `timeout` passes; closes `fd` before throwing.
template <typename TryLock>
void wait_for_lock(int fd, std::chrono::milliseconds timeout, TryLock try_lock) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Short waits first: a lock released between two polls sits idle until the next one, and
  // lifecycle work holds it for milliseconds, so a fixed 5 ms poll would idle it for a large
  // share of every hand-over between processes.
  auto wait = std::chrono::microseconds(50);
  while (!try_lock()) {
    if (errno != EWOULDBLOCK && errno != EAGAIN && errno != EACCES && errno != EINTR) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw SystemError("execution lock failed: " + reason);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      throw SystemError("execution lock timed out", ErrorCode::kUnavailable);
    }
    std::this_thread::sleep_for(wait);
    wait = std::min<std::chrono::microseconds>(wait * 2, std::chrono::microseconds(250));
  }
}

}  // namespace

ExclusiveFileLock::ExclusiveFileLock(const std::filesystem::path& path,
                                     std::chrono::milliseconds timeout)
    : fd_(open_lock_file(path)) {
  wait_for_lock(fd_, timeout, [this] { return ::flock(fd_, LOCK_EX | LOCK_NB) == 0; });
}

ExclusiveFileLock::ExclusiveFileLock(const LockSlot& slot, std::chrono::milliseconds timeout) {
  if (!core::is_sha256_hex(slot.key_digest)) {
    throw InvalidArgument("lock slot key must be a lowercase SHA-256 digest");
  }
  // 15 hex digits: a byte offset below 2^60, well inside off_t.
  slot_ = std::stoll(slot.key_digest.substr(0, 15), nullptr, 16);
  fd_ = open_lock_file(slot.file);
  wait_for_lock(fd_, timeout, [this] {
    struct flock range = slot_range(slot_, F_WRLCK);
    return ::fcntl(fd_, F_OFD_SETLK, &range) == 0;
  });
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (fd_ < 0) return;
  if (slot_ >= 0) {
    struct flock range = slot_range(slot_, F_UNLCK);
    ::fcntl(fd_, F_OFD_SETLK, &range);
  } else {
    ::flock(fd_, LOCK_UN);
  }
  ::close(fd_);
}

}  // namespace ctx::runtime
