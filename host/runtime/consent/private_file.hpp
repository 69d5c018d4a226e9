// Owner-private state files for the consent authority (verifier registry, install policy):
// directories 0700 owned by this user; files regular, single link, 0600, owned by this user,
// opened O_NOFOLLOW and checked from fstat; replaced atomically (O_EXCL stage, fsync, rename,
// fsync of the directory). Errors never name file contents. Thread-safety: pure functions.
#ifndef CTX_HOST_RUNTIME_CONSENT_PRIVATE_FILE_HPP_
#define CTX_HOST_RUNTIME_CONSENT_PRIVATE_FILE_HPP_

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/error.hpp"
#include "host/core/state_fs.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {

// A private file or directory broke its rules ("<what> refused: <rule>"). Code:
// kPermissionDenied. Retry: not until an operator fixes the file.
class UnsafeStateFile : public Error {
 public:
  explicit UnsafeStateFile(const std::string& message)
      : Error(message, ErrorCode::kPermissionDenied) {}
};

// Whether the creation of a private directory must survive a power loss.
enum class DirDurability {
  kDurable,  // the parent is fsynced after the directory is created
  kScratch,  // not: a scratch directory that is re-created when a crash lost it
};

// Creates `dir` (and missing parents) 0700 and checks it: a directory (no symlink), owned by
// this user, mode exactly 0700; kDurable (the default) fsyncs the parent (through `fs`) when it
// created `dir`. Errors: UnsafeStateFile; core::StateFsError ("<what>: fsync directory failed:
// ..."); SystemError.
void ensure_private_dir(const std::filesystem::path& dir, std::string_view what,
                        DirDurability durability = DirDurability::kDurable,
                        core::StateFs& fs = store::default_state_fs());

// The bytes of `path`, or std::nullopt when it does not exist. The file must be regular, owned
// by this user, mode 0600, one link, at most `max_bytes`.
// Errors: UnsafeStateFile (rule broken, too large); SystemError.
std::optional<std::string> read_private_file(const std::filesystem::path& path,
                                             std::size_t max_bytes, std::string_view what);

// Atomically replaces `path` with `bytes` (0600) through `fs` (core::replace_file: an O_EXCL
// stage ".<name>.<random>.stage" beside it, renamed over it, the directory fsynced). The parent
// must already be private. A failure leaves `path` as it was (or, when only the directory fsync
// failed, whole and new) and no stage behind.
// Errors: UnsafeStateFile; core::StateFsError ("<what>: <step> failed: <strerror>", the steps
// "create stage", "write", "fsync", "rename", "fsync directory"); SystemError.
void write_private_file(const std::filesystem::path& path, std::string_view bytes,
                        std::string_view what, core::StateFs& fs = store::default_state_fs());

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_PRIVATE_FILE_HPP_
