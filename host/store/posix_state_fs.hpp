// store::PosixStateFs: core::StateFs on the POSIX file system, and the process's default
// instance. Stateless; thread-safe.
#ifndef CTX_HOST_STORE_POSIX_STATE_FS_HPP_
#define CTX_HOST_STORE_POSIX_STATE_FS_HPP_

#include "host/core/state_fs.hpp"

namespace ctx::store {

// create_file: open(O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600 or `mode` with umask),
// write (EINTR retried), fchmod, fsync; unlink on failure. rename(2), link(2), unlink(2),
// support::fsync_directory, syncfs(2).
class PosixStateFs final : public core::StateFs {
 public:
  void create_file(const std::filesystem::path& file, std::string_view bytes,
                   const core::NewFile& how) override;
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) override;
  void link(const std::filesystem::path& from, const std::filesystem::path& to) override;
  void remove(const std::filesystem::path& file) noexcept override;
  void sync_dir(const std::filesystem::path& dir, support::Follow follow) override;
  void sync_file_system(const std::filesystem::path& dir) override;
};

// The process's PosixStateFs, which the host's writers use unless a caller (a test) hands them
// another StateFs. Lives for the whole process.
core::StateFs& default_state_fs() noexcept;

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_POSIX_STATE_FS_HPP_
