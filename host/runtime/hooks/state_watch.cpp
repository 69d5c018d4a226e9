#include "host/runtime/hooks/state_watch.hpp"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

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

// Appends `path`'s identity and stat fields; returns the stat (nullopt: missing). A file changed
// less than kRacyNs before `now_ns` makes the capture racy: a file system whose timestamps are
// coarse (one clock tick) could change it again within the same tick, leaving the same fields.
std::optional<struct stat> add_signature(const fs::path& path, std::int64_t now_ns, bool& racy,
                                         std::string& out) {
  out += path.native();
  out.push_back('\0');
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
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

// The names in `dir`, sorted ("." and ".." left out); empty when it cannot be listed (its own
// signature, taken by the caller, records why).
std::vector<std::string> list_directory(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return names;
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

void StateWatch::add_database(const fs::path& path, bool wait, std::string& out) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // the signature says so
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

std::vector<std::string> StateWatch::listing(const fs::path& dir, const struct stat& st,
                                             std::int64_t now_ns) {
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
    if (const auto it = listings_.find(dir.native());
        it != listings_.end() && it->second.first == identity) {
      return it->second.second;
    }
  }
  std::vector<std::string> names = list_directory(dir);
  if (settled) {
    const std::lock_guard lock(listings_mutex_);
    listings_[dir.native()] = {std::move(identity), names};
  }
  return names;
}

std::optional<std::string> StateWatch::capture(const std::vector<fs::path>& files, bool wait) {
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t now_ns = nanoseconds(now);
  bool racy = false;
  std::string out;
  out.reserve(4096);
  const auto state = add_signature(state_dir_, now_ns, racy, out);
  if (!state || !S_ISDIR(state->st_mode)) return std::nullopt;
  std::vector<std::string> databases;
  for (const std::string& top : listing(state_dir_, *state, now_ns)) {
    if (is_sqlite_sidecar(top)) continue;
    const fs::path top_path = state_dir_ / top;
    const auto st = add_signature(top_path, now_ns, racy, out);
    if (!st || !S_ISDIR(st->st_mode)) continue;
    for (const std::string& name : listing(top_path, *st, now_ns)) {
      if (is_sqlite_sidecar(name)) continue;
      if (top == "registry" && name == "artifacts") continue;
      bool db_racy = false;  // a database's content is what its data version reports on
      const bool database = top == "service" && ends_with(name, ".sqlite3");
      add_signature(top_path / name, now_ns, database ? db_racy : racy, out);
      if (database) databases.push_back(name);
    }
  }
  for (const fs::path& file : files) add_signature(file, now_ns, racy, out);
  // Probes of databases that are gone are closed; the others report their data version (each
  // connection is used by one thread at a time: the stat calls above run unlocked).
  std::unique_lock lock(mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return std::nullopt;
  }
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (std::find(databases.begin(), databases.end(), it->first) == databases.end()) {
      it = probes_.erase(it);
    } else {
      ++it;
    }
  }
  // (Opened even for a racy capture: while they are open, the stores' own connections never
  // are the last, so SQLite stops creating and deleting sidecars in service/ on every open.)
  try {
    for (const std::string& name : databases) {
      add_database(state_dir_ / "service" / name, wait, out);
    }
  } catch (const engine::StoreBusy&) {
    if (wait) throw;
    return std::nullopt;
  }
  if (racy) return std::nullopt;
  return out;
}

}  // namespace ctx::runtime::hooks
