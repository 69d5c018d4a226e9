#include "ctx/support/fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "ctx/support/unique_fd.hpp"

namespace ctx::support {

int fsync_directory(const std::filesystem::path& dir, Follow follow) noexcept {
  const int flags =
      O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow == Follow::kNoSymlinks ? O_NOFOLLOW : 0);
  const UniqueFd fd(::open(dir.c_str(), flags));
  if (!fd.valid()) return errno;
  if (::fsync(fd.get()) != 0) return errno;
  return 0;
}

}  // namespace ctx::support
