#include "host/store/file_policy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "host/engine/journal_store.hpp"

namespace ctx::store {
namespace {

[[noreturn]] void refuse_path(const std::string& what) {
  throw engine::EngineStoreError("journal path refused: " + what, ErrorCode::kPermissionDenied);
}

}  // namespace

void secure_store_file(const std::filesystem::path& path) {
  std::filesystem::path parent = path.parent_path();
  if (parent.empty()) parent = ".";
  struct stat info{};
  if (::lstat(parent.c_str(), &info) != 0) {
    if (errno != ENOENT) refuse_path("parent directory cannot be inspected");
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) refuse_path("parent directory cannot be created");
    ::chmod(parent.c_str(), 0700);
    if (::lstat(parent.c_str(), &info) != 0) refuse_path("parent directory cannot be inspected");
  }
  if (S_ISLNK(info.st_mode)) refuse_path("parent directory is a symlink");
  if (!S_ISDIR(info.st_mode)) refuse_path("parent is not a directory");
  if (info.st_uid != ::geteuid()) refuse_path("parent directory is not owned by this user");
  if ((info.st_mode & 022) != 0) refuse_path("parent directory is writable by others");

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    refuse_path("journal file cannot be created");
  }
  if (::lstat(path.c_str(), &info) != 0) refuse_path("journal file cannot be inspected");
  if (S_ISLNK(info.st_mode)) refuse_path("journal file is a symlink");
  if (!S_ISREG(info.st_mode)) refuse_path("journal file is not a regular file");
  if (info.st_uid != ::geteuid()) refuse_path("journal file is not owned by this user");
  if ((info.st_mode & 077) != 0) refuse_path("journal file must have mode 0600");
}

void secure_sidecars(const std::filesystem::path& path) {
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string sidecar = path.string() + suffix;
    struct stat info{};
    if (::lstat(sidecar.c_str(), &info) != 0) continue;
    if (S_ISLNK(info.st_mode) || !S_ISREG(info.st_mode)) refuse_path("sqlite sidecar is unsafe");
    if ((info.st_mode & 0777) != 0600) ::chmod(sidecar.c_str(), 0600);
  }
}

}  // namespace ctx::store
