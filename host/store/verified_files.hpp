// A process-wide memory of whole files this process hashed: by (device, inode), the size, mode,
// link count, mtime and ctime seen before the read, and the sha256 of the bytes read. A file whose
// status is still exactly that holds those bytes; only a file already settled when it was read
// (ctime at least 1 s before) is remembered, so no write can share its unchanged time stamps.
#ifndef CTX_HOST_STORE_VERIFIED_FILES_HPP_
#define CTX_HOST_STORE_VERIFIED_FILES_HPP_

#include <sys/stat.h>

#include <optional>
#include <string>

namespace ctx::store {

// The sha256 remembered for the file whose current lstat/fstat is `status`, when that status
// equals the one remembered with it; nullopt otherwise. Thread-safe.
std::optional<std::string> known_sha256(const struct stat& status);

// Remembers `sha256` (of every byte read) for the regular file whose status, taken before the
// read through the descriptor that was read, is `status`, if it had settled by `read_at`
// (CLOCK_REALTIME when the read began). At most a few dozen files are remembered. Thread-safe.
void remember_sha256(const struct stat& status, const std::string& sha256,
                     const struct timespec& read_at);

// The CLOCK_REALTIME now, for remember_sha256's `read_at`.
struct timespec realtime_now();

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_VERIFIED_FILES_HPP_
