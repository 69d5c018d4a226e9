// StateWatch: a cheap, cross-process "has anything a hook reply depends on changed?" check over
// one state directory, for HookRunner's exact-retry replies. capture() returns an opaque
// fingerprint; two equal fingerprints taken by the same StateWatch mean that between them
//   - no SQLite database directly in <state>/service/ (journal, audit, query store, consent
//     store, any later one) had a transaction committed by any connection of any process
//     (PRAGMA data_version on a connection this object keeps open to each file; the file's
//     identity is part of the fingerprint, so a replaced file is seen too), and
//   - no entry of the state dir, of its subdirectories (one level down; registry/ and
//     service/inputs/ only as directories: they grow with every plan) or of `files` was
//     created, removed, renamed, rewritten or re-moded (device, inode, size, mtime, ctime,
//     owner, mode; ctime cannot be set back from user space).
// Entries whose content the databases already cover (SQLite's -wal/-shm/-journal sidecars) and
// registry/artifacts/ (its scratch copies come and go with every composition) are left out.
// Thread-safe. Process-bound (the probes are SQLite connections).
#ifndef CTX_HOST_RUNTIME_HOOKS_STATE_WATCH_HPP_
#define CTX_HOST_RUNTIME_HOOKS_STATE_WATCH_HPP_

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ctx::store {
class Database;
}  // namespace ctx::store

namespace ctx::runtime::hooks {

class StateWatch {
 public:
  // `state_dir` must be absolute. Nothing is opened until the first capture().
  explicit StateWatch(std::filesystem::path state_dir);
  ~StateWatch();
  StateWatch(const StateWatch&) = delete;
  StateWatch& operator=(const StateWatch&) = delete;

  // The fingerprint now, covering `files` (absolute paths; a missing one is recorded as
  // missing) besides the layout above; nullopt when an entry (other than a database, whose
  // content its data version covers) changed less than 50 ms ago: on a file system with coarse
  // timestamps a second change within the same clock tick could leave every stat field as it
  // was (git's "racy" entries), so such a state is never vouched for. Errors: the databases'
  // (engine::StoreBusy, EngineStoreError) — callers treat any error as "changed".
  // With `wait` false it never waits: a lock another thread holds, or a database another
  // connection is writing (SQLITE_BUSY at once), is nullopt too.
  std::optional<std::string> capture(const std::vector<std::filesystem::path>& files,
                                     bool wait = true);

 private:
  struct Probe {
    std::string identity;  // device + inode of the file the connection was opened on
    std::uint64_t generation = 0;
    std::unique_ptr<store::Database> db;
  };
  // The state directory held open (O_PATH), and its identity when it was opened.
  struct Root {
    int fd = -1;
    dev_t device = 0;
    ino_t inode = 0;
    Root() = default;
    Root(const Root&) = delete;
    Root& operator=(const Root&) = delete;
    ~Root();
  };
  // Appends the data version of the database at `path` (stat `st`, taken by this capture).
  void add_database(const std::filesystem::path& path, const struct stat& st, bool wait,
                    std::string& out);
  // The names in `dir` (relative to `root`; stat `st`), remembered while its stat fields stay
  // the same.
  std::vector<std::string> listing(int root, const std::string& dir, const struct stat& st,
                                   std::int64_t now_ns);
  // The held state directory; reopened when `st` (the state dir's path, stat'ed now) names
  // another one. Errors: SystemError.
  std::shared_ptr<const Root> root(const struct stat& st);

  std::filesystem::path state_dir_;
  std::mutex mutex_;
  std::uint64_t generations_ = 0;            // GUARDED_BY(mutex_)
  std::map<std::string, Probe> probes_;      // GUARDED_BY(mutex_), by file name in service/
  std::mutex listings_mutex_;
  std::shared_ptr<const Root> root_;  // GUARDED_BY(listings_mutex_)
  // directory -> (its stat identity, its sorted names)
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> listings_;  // GUARDED_BY
};

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_RUNTIME_HOOKS_STATE_WATCH_HPP_
