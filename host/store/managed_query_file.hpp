// The file side of store::SqliteManagedQueryStore: its private directory and file, the
// crash-safe creation of a new store (§4.6: the schema built in an O_EXCL stage, then hard-linked
// to the final name), the schema (PRAGMA user_version 4, every table WITHOUT ROWID), its
// migrations from versions 2 and 3 (store::migrate), and the installation-key check of the
// identity row (store::KeyedRows).
// Implementation detail of sqlite_managed_query_store.cpp (and its schema test).
#ifndef CTX_HOST_STORE_MANAGED_QUERY_FILE_HPP_
#define CTX_HOST_STORE_MANAGED_QUERY_FILE_HPP_

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "host/store/sqlite.hpp"

namespace ctx::store::detail {

inline constexpr int kManagedQueryBusyTimeoutMs = 30'000;

// An open, checked store file: the connection (WAL, synchronous FULL, trusted_schema OFF) and the
// (device, inode) of the file authenticated at open.
struct ManagedQueryFile {
  std::filesystem::path path;  // absolute, lexically normal
  std::unique_ptr<Database> db;
  dev_t device = 0;
  ino_t inode = 0;
};

// Opens (creating it crash-safely if missing) the store at absolute `path` under the 32-byte
// `installation_hmac_key`: see open_managed_query_store. Errors: InvalidArgument,
// ManagedQueryStoreUnavailable, ManagedQueryStoreCorruption.
ManagedQueryFile open_managed_query_file(const std::filesystem::path& path,
                                         std::string_view installation_hmac_key);

// The schema digest the open path accepts without building the reference schema, and the
// digest of that reference (a test keeps them equal).
std::string_view pinned_query_store_schema_digest() noexcept;
std::string reference_query_store_schema_digest();

}  // namespace ctx::store::detail

#endif  // CTX_HOST_STORE_MANAGED_QUERY_FILE_HPP_
