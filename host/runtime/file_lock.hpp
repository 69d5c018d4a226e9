// ExclusiveFileLock: an exclusive, cross-process advisory lock held for the object's lifetime —
// on a whole lock file (flock), or on one key's slot of a shared lock file (an open-file-
// description byte-range lock, F_OFD_SETLK), so per-action locks need no file per action. Used to
// serialise lifecycle work and the execution of one action across compositions, threads and
// processes; released when the holder closes it or dies. Not thread-shareable: one owner per
// object.
#ifndef CTX_HOST_RUNTIME_FILE_LOCK_HPP_
#define CTX_HOST_RUNTIME_FILE_LOCK_HPP_

#include <chrono>
#include <filesystem>
#include <string>

namespace ctx::runtime {

// One key's lock within a shared lock file: `key_digest` (lowercase SHA-256 hex) picks the
// byte locked. Two keys share a byte with probability 2^-60: they would then serialise, never
// run together.
struct LockSlot {
  std::filesystem::path file;
  std::string key_digest;
};

class ExclusiveFileLock {
 public:
  // Creates `path` (0600, parent 0700 created if absent; symlinks refused) and waits up to
  // `timeout` for the exclusive lock. Errors: SystemError (kUnavailable on timeout).
  ExclusiveFileLock(const std::filesystem::path& path, std::chrono::milliseconds timeout);
  // The same for one slot of `slot.file`. Errors: as above; InvalidArgument for a key that is
  // not a SHA-256 digest.
  ExclusiveFileLock(const LockSlot& slot, std::chrono::milliseconds timeout);
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  ~ExclusiveFileLock();

 private:
  int fd_ = -1;
  long long slot_ = -1;  // the locked byte of a LockSlot; -1 for a whole-file lock
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_FILE_LOCK_HPP_
