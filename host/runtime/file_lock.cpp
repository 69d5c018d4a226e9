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

#include "host/core/error.hpp"

namespace ctx::runtime {

ExclusiveFileLock::ExclusiveFileLock(const std::filesystem::path& path,
                                     std::chrono::milliseconds timeout) {
  const auto parent = path.parent_path();
  if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError("execution lock directory cannot be created: " +
                      std::string(std::strerror(errno)));
  }
  struct stat parent_stat {};
  if (::lstat(parent.c_str(), &parent_stat) != 0 || !S_ISDIR(parent_stat.st_mode)) {
    throw SystemError("execution lock directory is not a directory");
  }
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    throw SystemError("execution lock cannot be opened: " + std::string(std::strerror(errno)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Short waits first: a lock released between two polls sits idle until the next one, and
  // lifecycle work holds it for milliseconds, so a fixed 5 ms poll would idle it for a large
  // share of every hand-over between processes.
  auto wait = std::chrono::microseconds(50);
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const std::string reason = std::strerror(errno);
      ::close(fd_);
      throw SystemError("execution lock failed: " + reason);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd_);
      throw SystemError("execution lock timed out", ErrorCode::kUnavailable);
    }
    std::this_thread::sleep_for(wait);
    wait = std::min<std::chrono::microseconds>(wait * 2, std::chrono::microseconds(250));
  }
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace ctx::runtime
