// plugins.lock.json: the only list of plugins the host may load, each pinned by the sha256 of its
// exact bytes. Stored as canonical JSON:
//   {"entries":[{"abi":{"major":1,"minor":0},"id":"...","kind":"verifier","path":"/abs/x.so",
//                "platform":"linux-x86_64","sha256":"<64 hex>","version":"1.0.0"}, ...],
//    "schema":"ctx.plugins-lock.v1"}
// Entries are kept sorted by (kind, id); (kind, id) is unique. A LockFile is a plain value: not
// synchronised, copyable.
#ifndef CTX_HOST_PLUGINS_LOCK_FILE_HPP_
#define CTX_HOST_PLUGINS_LOCK_FILE_HPP_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/plugins/plugin_identity.hpp"

namespace ctx::plugins {

inline constexpr std::string_view kLockSchema = "ctx.plugins-lock.v1";

struct LockEntry {
  PluginKind kind = PluginKind::kInstaller;
  std::string id;
  std::string version;
  std::string sha256;  // lower-case hex of the exact file bytes
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;  // the minor the plugin was built against
  std::string platform;         // e.g. "linux-x86_64"
  std::string path;             // absolute path of the pinned file

  // The identity this entry pins (everything but platform and path).
  PluginIdentity identity() const;
  // "kind:id".
  std::string label() const { return plugin_label(kind, id); }
  // The entry's canonical JSON object (see the file comment).
  core::Json to_json() const;
  // Parses one entry object. Errors: MalformedLockFile naming the field.
  static LockEntry from_json(const core::Json& value);

  friend bool operator==(const LockEntry&, const LockEntry&) = default;
};

class LockFile {
 public:
  LockFile() = default;

  // Reads and validates `path`. Never modifies the file.
  // Errors: PluginFileNotFound when it does not exist; MalformedLockFile ("malformed lock file
  // <path>: <reason>") for unreadable, truncated, non-JSON or schema-violating content;
  // SystemError for other I/O failures.
  static LockFile load(const std::filesystem::path& path);
  // As load(), but a missing file reads as an empty lock.
  static LockFile load_or_empty(const std::filesystem::path& path);
  // Parses lock-file text (`origin` names it in messages). Errors: MalformedLockFile.
  static LockFile parse(std::string_view text, std::string_view origin);

  // Atomically replaces `path` with canonical_json(to_json()) + "\n": temp file in the same
  // directory, fsync, rename, fsync of the directory. Errors: SystemError.
  void save(const std::filesystem::path& path) const;

  const std::vector<LockEntry>& entries() const noexcept { return entries_; }
  // Inserts `entry`, or replaces the entry with the same (kind, id).
  // Errors: InvalidArgument when the entry is not valid (bad id, version, sha256, path, ...).
  void upsert(LockEntry entry);
  // The entry for (kind, id), or nullptr. The pointer is invalidated by upsert().
  const LockEntry* find(PluginKind kind, std::string_view id) const noexcept;

  // The whole lock as JSON, and the digest of its canonical form.
  core::Json to_json() const;
  std::string digest() const { return core::canonical_digest(to_json()); }

 private:
  std::vector<LockEntry> entries_;  // sorted by (kind, id)
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_LOCK_FILE_HPP_
