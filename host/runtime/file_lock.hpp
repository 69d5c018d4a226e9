// ExclusiveFileLock: an exclusive, cross-process advisory lock (flock) on one lock file, held for
// the object's lifetime. Used to serialise execution of one action across compositions and
// processes. Not thread-shareable: one owner per object.
#ifndef CTX_HOST_RUNTIME_FILE_LOCK_HPP_
#define CTX_HOST_RUNTIME_FILE_LOCK_HPP_

#include <chrono>
#include <filesystem>

namespace ctx::runtime {

class ExclusiveFileLock {
 public:
  // Creates `path` (0600, parent 0700 created if absent; symlinks refused) and waits up to
  // `timeout` for the exclusive lock. Errors: SystemError (kUnavailable on timeout).
  ExclusiveFileLock(const std::filesystem::path& path, std::chrono::milliseconds timeout);
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  ~ExclusiveFileLock();

 private:
  int fd_ = -1;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_FILE_LOCK_HPP_
