// What identifies one version of a file without reading it, for the server's caches: an atomic
// replace changes the inode, an in-place edit the size or mtime; owner and mode are part of its
// trust. Thread-safe (pure).
#ifndef CTX_HOST_SERVER_FILE_SIGNATURE_HPP_
#define CTX_HOST_SERVER_FILE_SIGNATURE_HPP_

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "host/core/error.hpp"

namespace ctx::server {

struct FileSignature {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  uid_t owner = 0;
  mode_t mode = 0;
  friend bool operator==(const FileSignature&, const FileSignature&) = default;
};

// nullopt when `path` does not exist. Errors: SystemError for any other lstat failure.
inline std::optional<FileSignature> file_signature(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw SystemError("cannot stat " + path.filename().string() + ": " + std::strerror(errno));
  }
  return FileSignature{
      st.st_dev,  st.st_ino,
      st.st_size, static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
      st.st_uid,  st.st_mode};
}

}  // namespace ctx::server

#endif  // CTX_HOST_SERVER_FILE_SIGNATURE_HPP_
