// StateWatch: a cheap, cross-process "has anything a hook reply depends on changed?" check over
// one state directory, for HookRunner's exact-retry replies. capture() returns an opaque
// fingerprint; two equal fingerprints taken by the same StateWatch mean that between them
//   - no entry of the state dir, of its subdirectories or of theirs (registry/artifacts/ left
//     out: its scratch copies come and go with every composition) was created, removed,
//     renamed, written or had its attributes changed: an inotify watch on each of those
//     directories (the kernel queues an event in the writer's own system call, so a change
//     made before capture() is called is always seen; a full queue counts as a change). SQLite's
//     sidecars (-wal, -shm, -journal) are the exception: their creation, removal and mode
//     changes come with every connection's open and close and are not changes, but a write to
//     a -wal file is — it is how any connection of any process commits to a WAL database, as
//     every database in <state>/service/ is (a checkpoint writes the database file itself) —
//     and
//   - the connection this object keeps open to each database in service/ (so that the stores'
//     own connections are never the last, which would create and remove the sidecars on every
//     open) is still on the same file and saw no commit become visible: read at every capture
//     (a commit's -wal write raises its event before readers can see the commit), from the
//     WAL-index header in that connection's own mapping of the -shm file, without a system call
//     (PRAGMA data_version, a read transaction, for a database not in WAL mode), and the state
//     dir's path still names the directory the watches are on, and
//   - no file of `files` was created, removed, renamed, rewritten or re-moded (device, inode,
//     size, mtime, ctime, owner, mode; ctime cannot be set back from user space).
// Thread-safe. Process-bound (the probes are SQLite connections, the watches one inotify
// instance): in a forked child capture() is always nullopt.
#ifndef CTX_HOST_APP_HOOK_STATE_WATCH_HPP_
#define CTX_HOST_APP_HOOK_STATE_WATCH_HPP_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3_file;

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
  // missing) besides the layout above; nullopt when a file of `files` changed less than 50 ms
  // ago (on a file system with coarse timestamps a second change within the same clock tick
  // could leave every stat field as it was: git's "racy" entries), when the state dir is
  // missing or no inotify instance can be had, and in a forked child. Errors: the databases'
  // (engine::StoreBusy, EngineStoreError) — callers treat any error as "changed".
  // nullopt too while a commit is writing a WAL-index header (after a few re-reads when
  // waiting). With `wait` false it never waits: a lock another thread holds, or a database not
  // in WAL mode that another connection is writing (SQLITE_BUSY at once), is nullopt too.
  std::optional<std::string> capture(const std::vector<std::filesystem::path>& files,
                                     bool wait = true);

 private:
  struct Probe {
    std::string identity;  // device + inode of the file the connection was opened on
    std::uint64_t generation = 0;
    std::unique_ptr<store::Database> db;
    bool looked_for_wal_index = false;
    sqlite3_file* file = nullptr;                       // db's main file, once mapped
    const volatile std::uint32_t* wal_index = nullptr;  // its -shm region 0, in WAL mode
  };
  // The inotify instance and what it watches. GUARDED_BY(mutex_)
  struct Watches {
    int fd = -1;
    dev_t device = 0;  // of the state dir the watches were set on
    ino_t inode = 0;
    std::uint64_t generation = 0;  // bumped by every drained event (and every re-watch)
    bool complete = false;         // every directory of the layout is watched
  };
  // Drains the queued events (a change: the generation moves) and re-watches the layout after
  // a directory was created, moved in or removed. False: no inotify instance.
  bool refresh_watches(const struct stat& state);
  // Watches every directory of the layout and opens a probe on each database in service/.
  void watch_layout();
  // Maps `probe`'s WAL-index when its database is in WAL mode (once). Errors: the database's.
  void map_wal_index(Probe& probe, bool wait);
  // Appends `probe`'s generation and what its database has made visible; false when that
  // cannot be told now (a commit is writing the WAL-index header, or !wait and the database is
  // busy). Errors: the database's.
  bool add_database(Probe& probe, bool wait, std::string& out);

  std::filesystem::path state_dir_;
  pid_t owner_pid_;
  std::mutex mutex_;
  Watches watches_;                      // GUARDED_BY(mutex_)
  std::uint64_t generations_ = 0;        // GUARDED_BY(mutex_)
  std::map<std::string, Probe> probes_;  // GUARDED_BY(mutex_), by file name in service/
};

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_APP_HOOK_STATE_WATCH_HPP_
