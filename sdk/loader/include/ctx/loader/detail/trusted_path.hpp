// Opening files so that nobody but root and us can change what is opened: every directory from
// "/" down is opened with openat(O_NOFOLLOW|O_DIRECTORY) relative to its parent and must be owned
// by root (or us, when allowed) and not writable by group or other unless sticky. Nothing is
// looked up by path string twice. Thread-safe (no shared state).
#ifndef CTX_LOADER_DETAIL_TRUSTED_PATH_HPP_
#define CTX_LOADER_DETAIL_TRUSTED_PATH_HPP_

#include <sys/stat.h>

#include <ctx/loader/detail/unique_fd.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::plugins::detail {

enum class Owners { kRootOrUs, kRootOnly };

// Why `path` is not absolute and normalised (no empty, "." or ".." component, no trailing "/",
// no NUL or control character), or an empty string.
std::string path_problem(std::string_view path);

// `path` made absolute (against the working directory) and lexically normalised, without a
// trailing '/'. Symlinks are not resolved.
std::string absolute_normal(const std::filesystem::path& path);

// True when `path` is `dir` or lies below it (both normalised absolute paths).
bool path_is_within(std::string_view path, std::string_view dir);

struct TrustedFile {
  UniqueFd dir;  // the parent directory
  UniqueFd fd;   // the file, O_RDONLY|O_CLOEXEC|O_NOFOLLOW
  struct stat st {};
  std::string name;  // last component
};

// Opens the directory `path` after walking every ancestor. `what` names it in messages
// ("plugin file", "lock file", ...). Symlinks anywhere are refused.
// Errors: PluginFileNotFound; UnsafePluginFile ("symlink", "owner", "writable", "not a
// directory"); SystemError.
UniqueFd open_trusted_dir(std::string_view path, Owners owners, std::string_view what);

// Walks the parent chain of `path`, then opens the last component O_NOFOLLOW (O_NONBLOCK, so a
// FIFO cannot block) and checks that it is a regular file owned by root or us and not group- or
// other-writable. Errors: as open_trusted_dir, plus "not a regular file".
TrustedFile open_trusted_file(std::string_view path, Owners owners, std::string_view what);

// As open_trusted_file for a system library: follows symlinks (at most 40) the way the kernel
// does, but every directory visited — including the ones holding the symlinks — and the file
// must be root-owned and not writable by others. Returns the fd and, in `real`, the resolved
// path. Errors: as above; PluginFileNotFound when a component does not exist.
// Same as SystemFileOpener().open(path, real).
TrustedFile open_system_file(std::string_view path, std::string* real);

// open_system_file for many files in one check: each directory it walks and checks (from "/",
// symlinks resolved, ownership and mode checked once) is remembered under the path that
// reached it, with its O_PATH descriptor, and a later file below the same directory path
// starts from there instead of walking from "/" again; files are always opened and checked
// anew. Holds those descriptors for its own lifetime only: make one per check and never keep
// it across loads (a later load must see the live filesystem). Remembering is sound within a
// check because a directory that passed is root-owned and not writable by others (or sticky):
// only root can change its mode, owner or entries (sticky: not root's entries), and the
// descriptor keeps naming the directory that was checked. TrustedFile::dir is left empty.
// Not thread-safe.
class SystemFileOpener {
 public:
  SystemFileOpener() = default;
  SystemFileOpener(const SystemFileOpener&) = delete;
  SystemFileOpener& operator=(const SystemFileOpener&) = delete;

  // Errors: as open_system_file.
  TrustedFile open(std::string_view path, std::string* real);

 private:
  struct Walked {
    std::vector<std::shared_ptr<const UniqueFd>> dirs;  // "/" first, then each directory
    std::vector<std::string> names;                     // the real path's components
  };
  std::shared_ptr<const UniqueFd> root_;
  std::map<std::string, Walked, std::less<>> walked_;  // key: a directory path as written
};

}  // namespace ctx::plugins::detail

#endif  // CTX_LOADER_DETAIL_TRUSTED_PATH_HPP_
