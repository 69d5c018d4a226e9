// Edits of files a coding host reads (its agents directory, its MCP configuration): the end of a
// symlink chain, an exclusive lock on the file's directory, a snapshot of the bytes read, and an
// atomic replacement (temporary file, fsync, rename, directory fsync) that refuses to write when
// the file changed since its snapshot. Shared by the agent and MCP installer cores.
// Errors never contain a path or file content. Thread-compatible (no shared state).
#ifndef CTX_PLUGINS_COMMON_HOST_FILE_HPP_
#define CTX_PLUGINS_COMMON_HOST_FILE_HPP_

#include <sys/stat.h>
#include <sys/types.h>

#include <ctx/sdk/error.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ctx::plugin_common {

// The file changed between its snapshot and the replacement: nothing was written.
// Code: kAborted. Retry: yes, read it again.
class HostFileChanged : public Error {
 public:
  explicit HostFileChanged(const std::string& message) : Error(message, ErrorCode::kAborted) {}
};

// Throws ctx::Error kInternal "<who> could not <action>: <strerror(errno)>".
[[noreturn]] void throw_errno(std::string_view who, std::string_view action);

// The end of the chain of symlinks starting at `file` (a dangling chain ends at the path the file
// is to be created at); `file` itself when it is no symlink. Errors: kInternal past 40 links.
std::filesystem::path end_of_symlink_chain(const std::filesystem::path& file);

// What a file held when it was read: absent, or its bytes, mode and identity.
struct HostFileSnapshot {
  bool exists = false;
  std::string bytes;
  dev_t device = 0;
  ino_t inode = 0;
  mode_t mode = 0;
  off_t size = 0;
  struct timespec modified {};
};

// Reads `file` (not following a final symlink) up to `max_bytes`.
// Errors: InvalidArgument when it is not a regular file or is larger than max_bytes (the
// message names `label`, e.g. ".mcp.json"); kInternal for operating-system failures.
HostFileSnapshot read_host_file(const std::filesystem::path& file, std::string_view label,
                                std::size_t max_bytes);

// Holds flock(LOCK_EX) on a directory (created 0755 with its parents when missing) while it
// lives: every ctx process editing a file of that directory takes it first.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& directory);
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

// Replaces `file` with `bytes` atomically: a temporary file in its directory with `mode`, fsync,
// then — only when `file` still is what `before` saw (absent, or same inode, size, mtime and
// bytes) — rename over it and fsync the directory. Errors: HostFileChanged (the temporary file is
// removed, `file` untouched); kInternal.
void replace_host_file(const std::filesystem::path& file, std::string_view bytes, mode_t mode,
                       const HostFileSnapshot& before, std::string_view label);

// Removes `file` when it still is what `before` saw, then fsyncs its directory.
// Errors: HostFileChanged; kInternal.
void remove_host_file(const std::filesystem::path& file, const HostFileSnapshot& before,
                      std::string_view label);

// Writes `<file>.ctx-backup` (0600) with `before`'s bytes unless a backup is already there; no
// backup for a file that did not exist. Returns true when it wrote one. Errors: kInternal.
bool backup_host_file_once(const std::filesystem::path& file, const HostFileSnapshot& before);

// Writes a small private file (0600) atomically: temporary file, fsync, rename, directory fsync.
void write_private_file(const std::filesystem::path& file, std::string_view bytes);

}  // namespace ctx::plugin_common

#endif  // CTX_PLUGINS_COMMON_HOST_FILE_HPP_
