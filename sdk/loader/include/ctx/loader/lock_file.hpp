// plugins.lock.json: the only list of plugins the host may load, and a trust root. Each entry
// pins the sha256 and size of a plugin's exact bytes, the identity its ELF note declares, and
// the sonames it needs. Stored as strictly canonical JSON plus one newline:
//   {"entries":[{"abi":{"major":1,"minor":0},"id":"...","kind":"verifier",
//                "needed":["libc.so.6"],"path":"/abs/x.so","platform":"linux-x86_64",
//                "sha256":"<64 hex>","size":12345,"version":"1.0.0"}, ...],
//    "schema":"ctx.plugins-lock.v2"}
// Entries are sorted by (kind, id), which is unique (a flat map: lookups are O(log n), parsing
// and listing linear). A LockFile is a plain value: not synchronised, copyable. Files are read
// and written only through trusted paths (see detail/trusted_path.hpp).
#ifndef CTX_LOADER_LOCK_FILE_HPP_
#define CTX_LOADER_LOCK_FILE_HPP_

#include <cstdint>
#include <ctx/loader/plugin_identity.hpp>
#include <ctx/support/canonical_json.hpp>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::plugins {

inline constexpr std::string_view kLockSchema = "ctx.plugins-lock.v2";
inline constexpr std::uint64_t kMaxLockFileBytes = 16ull << 20;
// Largest plugin file the loader accepts.
inline constexpr std::uint64_t kMaxPluginBytes = 256ull << 20;

struct LockEntry {
  PluginKind kind = PluginKind::kInstaller;
  std::string id;
  std::string version;
  std::string sha256;      // lower-case hex of the exact file bytes
  std::uint64_t size = 0;  // byte size of the pinned file
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;      // the minor the plugin requires (its note's abi.minor)
  std::vector<std::string> needed;  // DT_NEEDED sonames, in the file's order
  std::string platform;             // e.g. "linux-x86_64"
  std::string path;                 // absolute, normalised path of the pinned file

  // The identity this entry pins (everything but size, needed, platform and path).
  PluginIdentity identity() const;
  // "kind:id".
  std::string label() const { return plugin_label(kind, id); }
  // The entry's canonical JSON object (see the file comment).
  Json to_json() const;
  // Parses one entry object. Errors: MalformedLockFile naming the field.
  static LockEntry from_json(const Json& value);

  friend bool operator==(const LockEntry&, const LockEntry&) = default;
};

class LockFile {
 public:
  LockFile() = default;

  // Reads `path` as a trust root: it is made absolute and normalised, every directory from "/"
  // is walked O_NOFOLLOW (owned by root or us, not group/other-writable unless sticky), the file
  // is opened O_NOFOLLOW and must be a regular file owned by root or us, not group/other-
  // writable, at most 16 MiB (from fstat, before reading), and strictly canonical.
  // Errors: PluginFileNotFound; UnsafePluginFile; MalformedLockFile ("malformed lock file
  // <path>: <reason>", with how to fix it); SystemError.
  static LockFile load(const std::filesystem::path& path);
  // As load(), but a missing file reads as an empty lock.
  static LockFile load_or_empty(const std::filesystem::path& path);
  // Parses lock-file text, which must be exactly canonical_json(to_json()) + "\n".
  // `origin` names it in messages. Errors: MalformedLockFile.
  static LockFile parse(std::string_view text, std::string_view origin);

  // Read-modify-write under an exclusive flock on the lock's directory: loads the lock (empty
  // when missing), applies `change`, and saves the result. Concurrent updates serialise; none is
  // lost. Returns what was written. Errors: as load(), save(), and whatever `change` throws (the
  // file is then left as it was).
  static LockFile update(const std::filesystem::path& path,
                         const std::function<void(LockFile&)>& change);

  // Atomically replaces `path` with canonical_json(to_json()) + "\n" (mode 0644): temp file in
  // the same (trusted) directory, fsync, rename, fsync of the directory. Does not lock; use
  // update() when others may write concurrently. Errors: UnsafePluginFile; SystemError.
  void save(const std::filesystem::path& path) const;

  const std::vector<LockEntry>& entries() const noexcept { return entries_; }
  // Inserts `entry`, or replaces the entry with the same (kind, id).
  // Errors: InvalidArgument when the entry is not valid (bad id, version, sha256, path, ...).
  void upsert(LockEntry entry);
  // The entry for (kind, id), or nullptr. The pointer is invalidated by upsert().
  const LockEntry* find(PluginKind kind, std::string_view id) const noexcept;

  // The whole lock as JSON, and the digest of its canonical form.
  Json to_json() const;
  std::string digest() const { return support::canonical_digest(to_json()); }

 private:
  std::vector<LockEntry> entries_;  // sorted by (kind, id)
};

}  // namespace ctx::plugins

#endif  // CTX_LOADER_LOCK_FILE_HPP_
