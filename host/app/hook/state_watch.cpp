#include "host/app/hook/state_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string_view>
#include <thread>
#include <utility>

#include "host/app/state_layout.hpp"
#include "host/core/error.hpp"
#include "host/engine/journal_store.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;

constexpr int kProbeBusyTimeoutMs = 5000;
// Changes this recent are not trusted to show in stat fields (see add_signature).
constexpr std::int64_t kRacyNs = 50'000'000;
// What a watched directory reports: anything but reads, opens and closes.
constexpr std::uint32_t kWatchMask = IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                     IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                                     IN_DONT_FOLLOW;

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// SQLite's sidecars come and go, and are re-moded, with every connection that opens or closes
// a database (and the -shm file is written through a mapping by readers too): not changes.
bool is_sqlite_sidecar(std::string_view name) {
  return ends_with(name, ".sqlite3-wal") || ends_with(name, ".sqlite3-shm") ||
         ends_with(name, ".sqlite3-journal");
}

// A write to a database's write-ahead log: how every transaction of a WAL database commits
// (each connection of each process appends its frames with write(2), never through a mapping),
// and the only thing done to that file besides its creation and removal. A change.
bool is_wal_write(const inotify_event& event) {
  return (event.mask & IN_MODIFY) != 0 && ends_with(event.name, ".sqlite3-wal");
}

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

std::int64_t nanoseconds(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Appends `path`'s identity and stat fields. A file changed less than kRacyNs before `now_ns`
// makes the capture racy: a file system whose timestamps are coarse (one clock tick) could
// change it again within the same tick, leaving the same fields.
void add_signature(const fs::path& path, std::int64_t now_ns, bool& racy, std::string& out) {
  out += path.native();
  out.push_back('\0');
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      throw SystemError("cannot stat a state file: " + std::string(std::strerror(errno)));
    }
    out.push_back('-');
    return;
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
}

// The subdirectories of `dir` (symlinks are not followed), sorted.
std::vector<std::string> subdirectories(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    bool directory = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      directory = ::fstatat(::dirfd(handle), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode);
    }
    if (directory) names.emplace_back(name);
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

StateWatch::StateWatch(fs::path state_dir)
    : state_dir_(std::move(state_dir)), owner_pid_(::getpid()) {
  if (!state_dir_.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
}

StateWatch::~StateWatch() {
  if (watches_.fd >= 0 && ::getpid() == owner_pid_) ::close(watches_.fd);
}

void StateWatch::watch_layout() {
  // The watches are set before the directories' entries are read, so a change after this is
  // queued; one before it has already moved the generation (it is why the layout is re-read).
  const auto watch = [&](const fs::path& dir) {
    return ::inotify_add_watch(watches_.fd, dir.c_str(), kWatchMask) >= 0;
  };
  watches_.complete = watch(state_dir_);
  for (const std::string& top : subdirectories(state_dir_)) {
    const fs::path top_path = state_dir_ / top;
    if (!watch(top_path)) watches_.complete = false;
    for (const std::string& name : subdirectories(top_path)) {
      if (top == runtime::kRegistryDir && name == runtime::kRegistryArtifactsDir) continue;
      if (!watch(top_path / name)) watches_.complete = false;
    }
  }
  // Probes follow the databases now in service/ (a replaced file gets a new connection).
  std::vector<std::string> databases;
  if (DIR* handle = ::opendir((state_dir_ / runtime::kServiceDir).c_str())) {
    while (const dirent* entry = ::readdir(handle)) {
      const std::string_view name = entry->d_name;
      if (ends_with(name, ".sqlite3")) databases.emplace_back(name);
    }
    ::closedir(handle);
  }
  for (auto it = probes_.begin(); it != probes_.end();) {
    const bool present =
        std::find(databases.begin(), databases.end(), it->first) != databases.end();
    it = present ? std::next(it) : probes_.erase(it);
  }
  for (const std::string& name : databases) {
    const fs::path path = state_dir_ / runtime::kServiceDir / name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      probes_.erase(name);
      continue;
    }
    std::string identity;
    put(identity, st.st_dev);
    put(identity, st.st_ino);
    Probe& probe = probes_[name];
    if (!probe.db || probe.identity != identity) {
      probe = Probe{};  // the old connection, and its mapping, go first
      try {
        probe.db = std::make_unique<store::Database>(path, store::Database::Mode::kReadWrite,
                                                     kProbeBusyTimeoutMs);
      } catch (...) {
        probes_.erase(name);  // no probe without a connection: the layout is read again
        watches_.complete = false;
        throw;
      }
      probe.identity = std::move(identity);
      probe.generation = ++generations_;
    }
  }
}

bool StateWatch::refresh_watches(const struct stat& state) {
  if (watches_.fd < 0 || watches_.device != state.st_dev || watches_.inode != state.st_ino) {
    // First use, or the state dir's path names another directory now: watch that one afresh.
    if (watches_.fd >= 0) ::close(watches_.fd);
    watches_.fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (watches_.fd < 0) return false;
    watches_.device = state.st_dev;
    watches_.inode = state.st_ino;
    watches_.complete = false;
    ++watches_.generation;
  }
  alignas(inotify_event) char buffer[8192];
  bool changed = false;
  for (;;) {
    const ssize_t n = ::read(watches_.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {  // the instance is unusable: start again next time
      ::close(watches_.fd);
      watches_.fd = -1;
      return false;
    }
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      // A sidecar's own comings and goings are not changes, a commit's write to a log is;
      // anything else is a change, a full queue (IN_Q_OVERFLOW) or a removed watch (IN_IGNORED)
      // included.
      const bool overflow = (event->mask & IN_Q_OVERFLOW) != 0;
      if (event->len > 0 && !overflow && is_sqlite_sidecar(event->name) &&
          !is_wal_write(*event)) {
        continue;
      }
      changed = true;
    }
  }
  if (changed) {
    ++watches_.generation;
    watches_.complete = false;
  }
  if (!watches_.complete) watch_layout();
  return watches_.complete;
}

namespace {

// SQLite's WAL-index (the -shm file; https://www.sqlite.org/walformat.html, "The WAL-Index
// Header"): region 0 begins with two copies of a 48-byte header, the one thing a reader reads to
// learn which commits it may see. A committer publishes a commit by writing the second copy and
// then, after a memory barrier, the first; equal copies read first-then-second are a consistent
// header, and every commit changes it (iChange counts transactions, mxFrame the log's frames,
// the salts change when the log restarts).
constexpr int kWalIndexRegionBytes = 32768;
constexpr std::size_t kWalIndexHeaderWords = 12;
// Reads of a header a commit is writing (a few instructions' window) before giving up.
constexpr int kWalIndexHeaderTries = 100;

using WalIndexHeader = std::array<std::uint32_t, kWalIndexHeaderWords>;

WalIndexHeader read_header(const volatile std::uint32_t* words) {
  WalIndexHeader header{};
  for (std::size_t i = 0; i < kWalIndexHeaderWords; ++i) header[i] = words[i];
  return header;
}

}  // namespace

void StateWatch::map_wal_index(Probe& probe, bool wait) {
  ::sqlite3_busy_timeout(probe.db->handle(), wait ? kProbeBusyTimeoutMs : 0);
  {
    // Asked again at the next capture while not in WAL mode: a store converts its database to
    // WAL when it first opens it, perhaps after this probe did.
    auto mode = probe.db->cached("PRAGMA journal_mode");
    if (!mode->step() || mode->text(0) != "wal") return;
  }
  probe.looked_for_wal_index = true;
  {
    // A read transaction opens the log and maps the connection's -shm region 0. (Not asked of a
    // database in another mode: for it xShmMap would create a -shm file.)
    auto version = probe.db->cached("PRAGMA data_version");
    if (!version->step()) throw SystemError("PRAGMA data_version returned no row");
  }
  sqlite3_file* file = nullptr;
  void volatile* region = nullptr;
  if (::sqlite3_file_control(probe.db->handle(), "main", SQLITE_FCNTL_FILE_POINTER, &file) ==
          SQLITE_OK &&
      file != nullptr && file->pMethods != nullptr && file->pMethods->iVersion >= 2 &&
      file->pMethods->xShmMap(file, 0, kWalIndexRegionBytes, 0, &region) == SQLITE_OK &&
      region != nullptr) {
    probe.file = file;
    probe.wal_index = static_cast<const volatile std::uint32_t*>(region);
  }
}

bool StateWatch::add_database(Probe& probe, bool wait, std::string& out) {
  put(out, probe.generation);
  if (!probe.looked_for_wal_index) map_wal_index(probe, wait);
  if (probe.wal_index != nullptr) {
    for (int attempt = 0; attempt < (wait ? kWalIndexHeaderTries : 1); ++attempt) {
      if (attempt > 0) std::this_thread::yield();
      const WalIndexHeader first = read_header(probe.wal_index);
      probe.file->pMethods->xShmBarrier(probe.file);
      const WalIndexHeader second = read_header(probe.wal_index + kWalIndexHeaderWords);
      if (first == second) {
        put(out, first);
        return true;
      }
    }
    return false;
  }
  // Not in WAL mode (or its index not mapped): PRAGMA data_version, in a read transaction of its
  // own, moves once another connection's commit is visible to this one.
  ::sqlite3_busy_timeout(probe.db->handle(), wait ? kProbeBusyTimeoutMs : 0);
  auto statement = probe.db->cached("PRAGMA data_version");
  if (!statement->step()) throw SystemError("PRAGMA data_version returned no row");
  put(out, statement->integer(0));
  return true;
}

std::optional<std::string> StateWatch::capture(const std::vector<fs::path>& files, bool wait) {
  if (::getpid() != owner_pid_) return std::nullopt;  // the watches and probes are the parent's
  std::unique_lock lock(mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return std::nullopt;
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t now_ns = nanoseconds(now);
  struct stat state {};
  if (::lstat(state_dir_.c_str(), &state) != 0 || !S_ISDIR(state.st_mode)) return std::nullopt;
  if (!refresh_watches(state)) return std::nullopt;
  std::string out;
  out.reserve(256);
  put(out, state.st_dev);
  put(out, state.st_ino);
  put(out, watches_.generation);
  bool racy = false;
  for (const fs::path& file : files) add_signature(file, now_ns, racy, out);
  // (Probes are opened even for a racy capture: while they are open, the stores' own
  // connections never are the last, so SQLite stops creating and deleting sidecars in service/
  // on every open, and checkpointing the log into the database on every close.)
  try {
    for (auto& [name, probe] : probes_) {
      if (!add_database(probe, wait, out)) return std::nullopt;
    }
  } catch (const engine::StoreBusy&) {
    if (wait) throw;
    return std::nullopt;
  }
  if (racy) return std::nullopt;
  return out;
}

}  // namespace ctx::runtime::hooks
