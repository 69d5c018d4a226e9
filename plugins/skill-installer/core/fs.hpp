// Descriptor-relative file-system helpers for the skill store: an owning descriptor, fsync,
// O_NOFOLLOW directory opening, non-blocking flock probes, recursive removal and a streaming
// SHA-256 (OpenSSL EVP). Errors: ctx::Error kInternal naming the action and errno's text, never a
// path. Thread-compatible (no shared state).
#ifndef CTX_PLUGINS_SKILL_INSTALLER_CORE_FS_HPP_
#define CTX_PLUGINS_SKILL_INSTALLER_CORE_FS_HPP_

#include <sys/stat.h>

#include <ctx/support/unique_fd.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::skill_installer {

// An owning descriptor: the one fd RAII type of ctx.
using FileDescriptor = support::UniqueFd;

// Throws ctx::Error kInternal "skill-installer could not <action>: <strerror(errno)>".
[[noreturn]] void throw_os(std::string_view action);

void fsync_or_throw(int fd, std::string_view what);
struct stat fstat_or_throw(int fd);

// Creates `name` under `parent` with `mode` unless present (fsyncing `parent` when it created it)
// and opens it O_DIRECTORY|O_NOFOLLOW. Errors: InvalidArgument when something other than a
// directory is there.
FileDescriptor open_directory_at(int parent, const std::string& name, mode_t mode);

// Opens `name` under `dir` with `flags` | O_CLOEXEC | O_NOFOLLOW; nullopt when it does not exist
// or is a symlink / not a directory where one was asked for.
std::optional<FileDescriptor> open_optional(int dir, const std::string& name, int flags);

// Entry names of the directory `dir` (without "." and ".."), sorted bytewise.
std::vector<std::string> list_directory(int dir);

// Takes flock(LOCK_EX | LOCK_NB) on `fd`: true when taken, false when another holder has it.
bool try_lock(int fd);

// Removes `name` under `parent` and everything below it (no symlink is followed; read-only
// directories are made writable first). A missing entry is not an error.
void remove_tree_at(int parent, const std::string& name);

// Reads everything from `fd`.
std::string read_all(int fd);
void write_all(int fd, std::string_view bytes);

// Incremental SHA-256 over EVP.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::string_view bytes);
  // Lower-case hex of the digest; the stream is finished afterwards.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace ctx::skill_installer

#endif  // CTX_PLUGINS_SKILL_INSTALLER_CORE_FS_HPP_
