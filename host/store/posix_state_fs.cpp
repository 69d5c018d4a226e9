#include "host/store/posix_state_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctx/support/unique_fd.hpp>

namespace ctx::store {

using core::StateFsError;
using core::StateFsStep;

void PosixStateFs::create_file(const std::filesystem::path& file, std::string_view bytes,
                               const core::NewFile& how) {
  support::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                              how.umask ? how.mode : 0600));
  if (fd.get() < 0) throw StateFsError(StateFsStep::kCreate, file, errno);
  const auto fail = [&](StateFsStep step, int error) {
    fd.reset();
    ::unlink(file.c_str());
    throw StateFsError(step, file, error);
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(StateFsStep::kWrite, errno);
    if (n == 0) fail(StateFsStep::kWrite, EIO);
    done += static_cast<std::size_t>(n);
  }
  if ((!how.umask && ::fchmod(fd.get(), how.mode) != 0) || (how.sync && ::fsync(fd.get()) != 0)) {
    fail(StateFsStep::kSync, errno);
  }
}

void PosixStateFs::rename(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw StateFsError(StateFsStep::kRename, to, errno);
}

void PosixStateFs::link(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (::link(from.c_str(), to.c_str()) != 0) throw StateFsError(StateFsStep::kLink, to, errno);
}

void PosixStateFs::remove(const std::filesystem::path& file) noexcept { ::unlink(file.c_str()); }

void PosixStateFs::sync_dir(const std::filesystem::path& dir, support::Follow follow) {
  if (const int error = support::fsync_directory(dir, follow)) {
    throw StateFsError(StateFsStep::kSyncDir, dir, error);
  }
}

void PosixStateFs::sync_file_system(const std::filesystem::path& dir) {
  support::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::syncfs(fd.get()) != 0) {
    throw StateFsError(StateFsStep::kSyncFs, dir, errno);
  }
}

core::StateFs& default_state_fs() noexcept {
  static PosixStateFs fs;
  return fs;
}

}  // namespace ctx::store
