// The file rules for a store's SQLite file (spec §6.1): a private regular file (0600, owned by
// this user, no symlink) in a directory owned by this user and not writable by others (created
// 0700 when missing); the -wal / -shm sidecars are regular files kept at 0600.
#ifndef CTX_HOST_STORE_FILE_POLICY_HPP_
#define CTX_HOST_STORE_FILE_POLICY_HPP_

#include <filesystem>

namespace ctx::store {

// Creates the file (0600) when missing and checks the rules above.
// Errors: EngineStoreError (kPermissionDenied) "journal path refused: <which rule>".
void secure_store_file(const std::filesystem::path& path);

// Checks the sidecars of an open database and tightens their mode to 0600.
// Errors: EngineStoreError (kPermissionDenied) "journal path refused: sqlite sidecar is unsafe".
void secure_sidecars(const std::filesystem::path& path);

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_FILE_POLICY_HPP_
