#include "host/runtime/hooks/state_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "host/core/error.hpp"
#include "host/engine/journal_store.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;

constexpr int kProbeBusyTimeoutMs = 5000;
// Changes this recent are not trusted to show in stat fields (see add_signature).
constexpr std::int64_t kRacyNs = 50'000'000;

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// SQLite's sidecars: their content is what data_version reports on.
bool is_sqlite_sidecar(std::string_view name) {
  return ends_with(name, ".sqlite3-wal") || ends_with(name, ".sqlite3-shm") ||
         ends_with(name, ".sqlite3-journal");
}

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

std::int64_t nanoseconds(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Appends `name`'s identity and stat fields (`name` relative to the directory `at`, or absolute
// with AT_FDCWD); returns the stat (nullopt: missing). A file changed less than kRacyNs before
// `now_ns` makes the capture racy: a file system whose timestamps are coarse (one clock tick)
// could change it again within the same tick, leaving the same fields.
std::optional<struct stat> add_signature(int at, const std::string& name, std::int64_t now_ns,
                                         bool& racy, std::string& out) {
  out += name;
  out.push_back('\0');
  struct stat st {};
  if (::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      throw SystemError("cannot stat a state file: " + std::string(std::strerror(errno)));
    }
    out.push_back('-');
    return std::nullopt;
  }
  out.push_back('+');
  put(out, st.st_dev);
  put(out, st.st_ino);
  put(out, st.st_size);
  put(out, st.st_mtim.tv_sec);
  put(out, st.st_mtim.tv_nsec);
  put(out, st.st_ctim.tv_sec);
  put(out, st.st_ctim.tv_nsec);
  put(out, st.st_uid);
  put(out, st.st_mode);
  put(out, st.st_nlink);
  if (std::max(nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)) > now_ns - kRacyNs) racy = true;
  return st;
}

// The names in `dir` (relative to the directory `at`), sorted ("." and ".." left out); empty
// when it cannot be listed (its own signature, taken by the caller, records why).
std::vector<std::string> list_directory(int at, const std::string& dir) {
  std::vector<std::string> names;
  const int fd = ::openat(at, dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* handle = ::fdopendir(fd);
  if (handle == nullptr) {
    ::close(fd);
    return names;
  }
  while (const dirent* entry = ::readdir(handle)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

StateWatch::StateWatch(fs::path state_dir) : state_dir_(std::move(state_dir)) {
  if (!state_dir_.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
}

StateWatch::~StateWatch() = default;

void StateWatch::add_database(const fs::path& path, const struct stat& st, bool wait,
                              std::string& out) {
  if (!S_ISREG(st.st_mode)) return;  // its signature says so
  std::string identity;
  put(identity, st.st_dev);
  put(identity, st.st_ino);
  Probe& probe = probes_[path.filename().string()];
  if (!probe.db || probe.identity != identity) {
    probe.db.reset();
    probe.db = std::make_unique<store::Database>(path, store::Database::Mode::kReadWrite,
                                                 kProbeBusyTimeoutMs);
    probe.identity = std::move(identity);
    probe.generation = ++generations_;
  }
  ::sqlite3_busy_timeout(probe.db->handle(), wait ? kProbeBusyTimeoutMs : 0);
  auto statement = probe.db->cached("PRAGMA data_version");
  if (!statement->step()) throw SystemError("PRAGMA data_version returned no row");
  put(out, probe.generation);
  put(out, statement->integer(0));
}

std::vector<std::string> StateWatch::listing(int root, const std::string& dir,
                                             const struct stat& st, std::int64_t now_ns) {
  // A directory's names change only with its mtime (and ctime); a recent one is listed afresh.
  std::string identity;
  put(identity, st.st_dev);
  put(identity, st.st_ino);
  put(identity, st.st_size);
  put(identity, st.st_mtim.tv_sec);
  put(identity, st.st_mtim.tv_nsec);
  put(identity, st.st_ctim.tv_sec);
  put(identity, st.st_ctim.tv_nsec);
  const bool settled =
      std::max(nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)) <= now_ns - kRacyNs;
  if (settled) {
    const std::lock_guard lock(listings_mutex_);
    const auto it = listings_.find(dir);
    if (it != listings_.end() && it->second.first == identity) {
      return it->second.second;
    }
  }
  std::vector<std::string> names = list_directory(root, dir);
  if (settled) {
    const std::lock_guard lock(listings_mutex_);
    listings_[dir] = {std::move(identity), names};
  }
  return names;
}

std::shared_ptr<const StateWatch::Root> StateWatch::root(const struct stat& st) {
  const std::lock_guard lock(listings_mutex_);
  if (!root_ || root_->device != st.st_dev || root_->inode != st.st_ino) {
    // The state dir, by path, is another directory than the one held (or none is yet): hold it.
    auto fresh = std::make_shared<Root>();
    fresh->fd = ::open(state_dir_.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat held {};
    if (fresh->fd < 0 || ::fstat(fresh->fd, &held) != 0) {
      throw SystemError("cannot open the state directory: " + std::string(std::strerror(errno)));
    }
    fresh->device = held.st_dev;
    fresh->inode = held.st_ino;
    root_ = std::move(fresh);
    listings_.clear();
  }
  return root_;
}

StateWatch::Root::~Root() {
  if (fd >= 0) ::close(fd);
}

std::optional<std::string> StateWatch::capture(const std::vector<fs::path>& files, bool wait) {
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t now_ns = nanoseconds(now);
  bool racy = false;
  std::string out;
  out.reserve(4096);
  const auto state = add_signature(AT_FDCWD, state_dir_.native(), now_ns, racy, out);
  if (!state || !S_ISDIR(state->st_mode)) return std::nullopt;
  // Entries are stat'ed relative to the state dir held open (no path walk from / per entry);
  // it is the directory the path names now, or the capture differs (its signature above).
  const auto held = root(*state);
  if (held->device != state->st_dev || held->inode != state->st_ino) return std::nullopt;
  const int at = held->fd;
  std::vector<std::pair<std::string, struct stat>> databases;  // name in service/, its stat
  std::string name_path;
  for (const std::string& top : listing(at, ".", *state, now_ns)) {
    if (is_sqlite_sidecar(top)) continue;
    const auto st = add_signature(at, top, now_ns, racy, out);
    if (!st || !S_ISDIR(st->st_mode)) continue;
    for (const std::string& name : listing(at, top, *st, now_ns)) {
      if (is_sqlite_sidecar(name)) continue;
      if (top == "registry" && name == "artifacts") continue;
      bool db_racy = false;  // a database's content is what its data version reports on
      const bool database = top == "service" && ends_with(name, ".sqlite3");
      name_path.assign(top).append("/").append(name);
      const auto entry = add_signature(at, name_path, now_ns, database ? db_racy : racy, out);
      if (database && entry) databases.emplace_back(name, *entry);
    }
  }
  // A file inside the state dir is stat'ed relative to it too.
  const std::string_view prefix = state_dir_.native();
  for (const fs::path& file : files) {
    const std::string_view path = file.native();
    if (path.size() > prefix.size() + 1 && path.substr(0, prefix.size()) == prefix &&
        path[prefix.size()] == '/') {
      add_signature(at, std::string(path.substr(prefix.size() + 1)), now_ns, racy, out);
    } else {
      add_signature(AT_FDCWD, file.native(), now_ns, racy, out);
    }
  }
  // Probes of databases that are gone are closed; the others report their data version (each
  // connection is used by one thread at a time: the stat calls above run unlocked).
  std::unique_lock lock(mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return std::nullopt;
  }
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (std::none_of(databases.begin(), databases.end(),
                     [&](const auto& database) { return database.first == it->first; })) {
      it = probes_.erase(it);
    } else {
      ++it;
    }
  }
  // (Opened even for a racy capture: while they are open, the stores' own connections never
  // are the last, so SQLite stops creating and deleting sidecars in service/ on every open.)
  try {
    for (const auto& [name, st] : databases) {
      add_database(state_dir_ / "service" / name, st, wait, out);
    }
  } catch (const engine::StoreBusy&) {
    if (wait) throw;
    return std::nullopt;
  }
  if (racy) return std::nullopt;
  return out;
}

}  // namespace ctx::runtime::hooks
