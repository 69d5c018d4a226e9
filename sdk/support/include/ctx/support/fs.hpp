// The file-system steps every durable write of ctx shares (host and plugins). Thread-safe.
#ifndef CTX_SUPPORT_FS_HPP_
#define CTX_SUPPORT_FS_HPP_

#include <filesystem>

namespace ctx::support {

enum class Follow { kSymlinks, kNoSymlinks };

// Makes `dir`'s entries (a rename or unlink in it) durable: opens it O_DIRECTORY (O_NOFOLLOW
// with kNoSymlinks) and fsyncs it. Returns 0, or the errno of the step that failed; callers
// that cannot report a failure may ignore it, the others name it in their own error.
int fsync_directory(const std::filesystem::path& dir, Follow follow = Follow::kSymlinks) noexcept;

}  // namespace ctx::support

#endif  // CTX_SUPPORT_FS_HPP_
