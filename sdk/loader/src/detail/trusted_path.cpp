#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctx/loader/detail/trusted_path.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/sdk/error.hpp>
#include <memory>
#include <vector>

namespace ctx::plugins::detail {
namespace {

constexpr int kMaxSymlinkHops = 40;

std::string errno_text(int error) { return std::strerror(error); }

std::string join(const std::vector<std::string>& parts, std::size_t count) {
  if (count == 0) return "/";
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += "/" + parts[i];
  return out;
}

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = path.find('/', start);
    const std::string_view part =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!part.empty()) parts.emplace_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

bool owner_ok(const struct stat& st, Owners owners) {
  return st.st_uid == 0 || (owners == Owners::kRootOrUs && st.st_uid == ::geteuid());
}

std::string owner_text(Owners owners) {
  return owners == Owners::kRootOnly ? "root" : "root or uid " + std::to_string(::geteuid());
}

// Checks a directory fd reached while walking `shown` (its path).
void check_dir(int fd, const std::string& shown, Owners owners, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw SystemError("cannot stat " + shown + ": " + errno_text(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw UnsafePluginFile(std::string(what) + ": " + shown + " is not a directory");
  }
  if (!owner_ok(st, owners)) {
    throw UnsafePluginFile(std::string(what) + ": directory " + shown +
                           " has the wrong owner (uid " + std::to_string(st.st_uid) + "; want " +
                           owner_text(owners) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    throw UnsafePluginFile(std::string(what) + ": directory " + shown +
                           " is writable by group or other and not sticky");
  }
}

void check_file(const struct stat& st, const std::string& shown, Owners owners,
                std::string_view what) {
  if (!S_ISREG(st.st_mode)) {
    throw UnsafePluginFile(std::string(what) + " " + shown + " is not a regular file");
  }
  if (!owner_ok(st, owners)) {
    throw UnsafePluginFile(std::string(what) + " " + shown + " has the wrong owner (uid " +
                           std::to_string(st.st_uid) + "; want " + owner_text(owners) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UnsafePluginFile(std::string(what) + " " + shown + " is group- or world-writable");
  }
}

UniqueFd open_root(Owners owners, std::string_view what) {
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw SystemError("cannot open /: " + errno_text(errno));
  check_dir(fd.get(), "/", owners, what);
  return fd;
}

// openat failure of `name` below `parent` while walking: a typed error.
[[noreturn]] void walk_error(int parent, const std::string& name, const std::string& shown,
                             int error, std::string_view what) {
  if (error == ENOENT) {
    throw PluginFileNotFound(std::string(what) + " " + shown + " not found");
  }
  struct stat st {};
  if (error == ELOOP || error == ENOTDIR) {
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      throw UnsafePluginFile(std::string(what) + ": " + shown + " is a symlink");
    }
    if (error == ENOTDIR) {
      throw UnsafePluginFile(std::string(what) + ": " + shown + " is not a directory");
    }
  }
  throw SystemError("cannot open " + shown + ": " + errno_text(error));
}

// Walks the directories of `parts[0..count)` from "/"; returns the last one.
UniqueFd walk(const std::vector<std::string>& parts, std::size_t count, Owners owners,
              std::string_view what) {
  UniqueFd dir = open_root(owners, what);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string shown = join(parts, i + 1);
    UniqueFd next(
        ::openat(dir.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) walk_error(dir.get(), parts[i], shown, errno, what);
    check_dir(next.get(), shown, owners, what);
    dir = std::move(next);
  }
  return dir;
}

void require_normalised(std::string_view path, std::string_view what) {
  if (const std::string problem = path_problem(path); !problem.empty()) {
    throw UnsafePluginFile(std::string(what) + " path " + problem);
  }
}

}  // namespace

std::string path_problem(std::string_view path) {
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "contains a NUL or control character";
  }
  if (path.empty() || path.front() != '/') return "is not absolute";
  if (path == "/") return {};
  if (path.back() == '/') return "ends with '/'";
  std::size_t start = 1;
  for (;;) {
    const std::size_t end = path.find('/', start);
    const std::string_view part = path.substr(start, end - start);
    if (part.empty()) return "contains '//'";
    if (part == "." || part == "..") return "contains a '.' or '..' component";
    if (end == std::string_view::npos) return {};
    start = end + 1;
  }
}

std::string absolute_normal(const std::filesystem::path& path) {
  std::string text = std::filesystem::absolute(path).lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

bool path_is_within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  if (path.substr(0, dir.size()) != dir) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

UniqueFd open_trusted_dir(std::string_view path, Owners owners, std::string_view what) {
  require_normalised(path, what);
  const std::vector<std::string> parts = split(path);
  return walk(parts, parts.size(), owners, what);
}

TrustedFile open_trusted_file(std::string_view path, Owners owners, std::string_view what) {
  require_normalised(path, what);
  const std::vector<std::string> parts = split(path);
  if (parts.empty()) throw UnsafePluginFile(std::string(what) + " path is \"/\"");
  TrustedFile out;
  out.dir = walk(parts, parts.size() - 1, owners, what);
  out.name = parts.back();
  const std::string shown(path);
  out.fd = UniqueFd(::openat(out.dir.get(), out.name.c_str(),
                             O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!out.fd) {
    const int error = errno;
    if (error == ELOOP) throw UnsafePluginFile(std::string(what) + " " + shown + " is a symlink");
    if (error == ENOENT) throw PluginFileNotFound(std::string(what) + " " + shown + " not found");
    throw SystemError("cannot open " + std::string(what) + " " + shown + ": " + errno_text(error));
  }
  if (::fstat(out.fd.get(), &out.st) != 0) {
    throw SystemError("cannot stat " + shown + ": " + errno_text(errno));
  }
  check_file(out.st, shown, owners, what);
  return out;
}

namespace {

// The target of the symlink `name` in `parent` (`shown`: its path for errors).
std::string read_link(int parent, const std::string& name, const std::string& shown) {
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlinkat(parent, name.c_str(), target.data(), target.size());
  if (n < 0) throw SystemError("cannot read symlink " + shown + ": " + errno_text(errno));
  target.resize(static_cast<std::size_t>(n));
  return target;
}

// The regular file `name` in the walked directory `parent`, opened and checked.
TrustedFile open_walked_file(int parent, const std::string& name, const std::string& shown,
                             Owners owners, std::string_view what) {
  TrustedFile out;
  out.fd = UniqueFd(
      ::openat(parent, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!out.fd) walk_error(parent, name, shown, errno, what);
  if (::fstat(out.fd.get(), &out.st) != 0) {
    throw SystemError("cannot stat " + shown + ": " + errno_text(errno));
  }
  check_file(out.st, shown, owners, what);
  out.name = name;
  return out;
}

}  // namespace

TrustedFile open_system_file(std::string_view path, std::string* real) {
  return SystemFileOpener().open(path, real);
}

TrustedFile SystemFileOpener::open(std::string_view path, std::string* real) {
  constexpr std::string_view kWhat = "library";
  constexpr Owners kRoot = Owners::kRootOnly;
  if (path.empty() || path.front() != '/') {
    throw UnsafePluginFile(std::string(kWhat) + " path " + std::string(path) + " is not absolute");
  }
  const std::vector<std::string> parts = split(path);
  // Start below the deepest directory of `path` already walked, else at "/".
  std::size_t first = 0;  // components of `path` consumed by the starting state
  Walked state;
  for (std::size_t j = parts.empty() ? 0 : parts.size() - 1; j > 0; --j) {
    if (const auto it = walked_.find(join(parts, j)); it != walked_.end()) {
      state = it->second;
      first = j;
      break;
    }
  }
  if (first == 0) {
    if (!root_) root_ = std::make_shared<const UniqueFd>(open_root(kRoot, kWhat));
    state.dirs.push_back(root_);
  }
  // Pending components, next last; `original` marks those of `path` itself (by index), the
  // others come from symlink targets.
  struct Part {
    std::string name;
    std::size_t original;  // index in `parts`, or kTarget
  };
  constexpr std::size_t kTarget = static_cast<std::size_t>(-1);
  std::vector<Part> todo;
  for (std::size_t i = parts.size(); i > first; --i) todo.push_back({parts[i - 1], i - 1});
  std::vector<std::shared_ptr<const UniqueFd>>& dirs = state.dirs;
  std::vector<std::string>& names = state.names;
  int hops = 0;
  while (!todo.empty()) {
    // About to take component j of `path` with every earlier one (and its targets) resolved:
    // the state is that of the directory path parts[0..j).
    if (const std::size_t j = todo.back().original; j != kTarget && j > first) {
      walked_.try_emplace(join(parts, j), state);
    }
    // Taken by swap: moving the string out made GCC 12 -O3 report a maybe-uninitialized read of
    // it (a false positive that failed the Release build under -Werror).
    std::string name;
    name.swap(todo.back().name);
    todo.pop_back();
    if (name == ".") continue;
    if (name == "..") {
      if (dirs.size() > 1) {
        dirs.pop_back();
        names.pop_back();
      }
      continue;
    }
    names.push_back(name);
    const std::string shown = join(names, names.size());
    const int parent = dirs.back()->get();
    struct stat st {};
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      walk_error(parent, name, shown, errno, kWhat);
    }
    if (S_ISLNK(st.st_mode)) {
      if (++hops > kMaxSymlinkHops) {
        throw UnsafePluginFile(std::string(kWhat) + " " + std::string(path) +
                               ": too many symlinks");
      }
      const std::string target = read_link(parent, name, shown);
      names.pop_back();
      if (!target.empty() && target.front() == '/') {
        dirs.resize(1);
        names.clear();
      }
      const std::vector<std::string> more = split(target);
      for (auto it = more.rbegin(); it != more.rend(); ++it) todo.push_back({*it, kTarget});
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      UniqueFd next(::openat(parent, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!next) walk_error(parent, name, shown, errno, kWhat);
      check_dir(next.get(), shown, kRoot, kWhat);
      dirs.push_back(std::make_shared<const UniqueFd>(std::move(next)));
      continue;
    }
    if (!todo.empty()) {
      throw UnsafePluginFile(std::string(kWhat) + ": " + shown + " is not a directory");
    }
    TrustedFile out = open_walked_file(parent, name, shown, kRoot, kWhat);
    if (real != nullptr) *real = shown;
    return out;
  }
  throw UnsafePluginFile(std::string(kWhat) + " " + std::string(path) + " is a directory");
}

}  // namespace ctx::plugins::detail
