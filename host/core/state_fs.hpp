// The port through which the host writes durable files: a file created whole (O_EXCL, no
// symlink followed) then renamed or linked into place, and the directory fsynced; the real one is
// store::PosixStateFs, tests wrap it to fail or "crash" at one step (leveldb's Env/EnvWrapper).
// Thread-safety: implementations are thread-safe; the port itself has no state.
#ifndef CTX_HOST_CORE_STATE_FS_HPP_
#define CTX_HOST_CORE_STATE_FS_HPP_

#include <sys/types.h>

#include <ctx/support/fs.hpp>
#include <filesystem>
#include <string>
#include <string_view>

#include "host/core/error.hpp"

namespace ctx::core {

// One step of a StateFs operation: what a StateFsError names and what a fault targets.
enum class StateFsStep {
  kCreate,   // create_file: opening the new file
  kWrite,    // create_file: writing its bytes
  kSync,     // create_file: setting its mode and fsyncing it
  kRename,   // rename
  kLink,     // link
  kSyncDir,  // sync_dir
  kSyncFs,   // sync_file_system
};

// "create", "write", "fsync", "rename", "link", "fsync directory", "syncfs".
std::string_view to_string(StateFsStep step) noexcept;

// A StateFs step failed with errno `error()`; whatever the operation was replacing is unchanged
// (a rename or link did not happen; a created file was removed). Code: kResourceExhausted when
// space or descriptors ran out (ENOSPC, EDQUOT, EMFILE, ENFILE, ENOMEM) — retry once they are
// freed, not at once; kInternal otherwise — retry: no.
class StateFsError : public SystemError {
 public:
  // "<step> <path> failed: <strerror(error)>".
  StateFsError(StateFsStep step, const std::filesystem::path& path, int error);
  // The same failure (step, errno, code) told in a caller's own words.
  StateFsError(const StateFsError& cause, const std::string& message);

  StateFsStep step() const noexcept { return step_; }
  int error() const noexcept { return error_; }

 private:
  StateFsStep step_;
  int error_;
};

// How create_file makes a file.
struct NewFile {
  mode_t mode = 0600;  // its permission bits, set with fchmod once written (no umask)
  bool umask = false;  // instead: created with `mode` less the process umask, no fchmod
  bool sync = true;    // fsynced (false: the caller syncs the file system once, sync_file_system)
};

class StateFs {
 public:
  StateFs() = default;
  StateFs(const StateFs&) = delete;
  StateFs& operator=(const StateFs&) = delete;
  virtual ~StateFs() = default;

  // Creates `file`, which must not exist (a symlink there is not followed: EEXIST), writes all of
  // `bytes`, sets the mode and fsyncs it as `how` says. On failure nothing is left at `file`.
  // Errors: StateFsError (kCreate, kWrite, kSync).
  virtual void create_file(const std::filesystem::path& file, std::string_view bytes,
                           const NewFile& how) = 0;
  // Renames `from` (a file or directory) to `to` in one step, replacing `to` (the name itself:
  // a symlink there is replaced, not followed). Errors: StateFsError (kRename).
  virtual void rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // Gives the file `from` the second name `to`, which must not exist (EEXIST: nothing replaced).
  // Errors: StateFsError (kLink).
  virtual void link(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // Removes the file `file` if it is there (stage clean-up); failures are ignored.
  virtual void remove(const std::filesystem::path& file) noexcept = 0;
  // Makes the entries of `dir` (renames, links, removals in it) durable; with kNoSymlinks a
  // symlink at `dir` is refused. Errors: StateFsError (kSyncDir).
  virtual void sync_dir(const std::filesystem::path& dir, support::Follow follow) = 0;
  // Makes every file written to the file system holding `dir` durable (many create_file calls
  // with sync = false, then one of this). Errors: StateFsError (kSyncFs).
  virtual void sync_file_system(const std::filesystem::path& dir) = 0;
};

// Replaces `file` with `bytes` atomically through `fs`: creates `stage` (a new name in the same
// directory) as `how` says, renames it over `file` (removing the stage when that fails), then
// syncs the directory (`follow`). A crash before the rename leaves `file` as it was and the stage
// behind; after it, `file` whole. Errors: StateFsError.
void replace_file(StateFs& fs, const std::filesystem::path& file,
                  const std::filesystem::path& stage, std::string_view bytes, const NewFile& how,
                  support::Follow follow);

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_STATE_FS_HPP_
