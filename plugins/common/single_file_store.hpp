// Content-addressed store of single-file material (an agent file, an MCP server entry) and the
// activation records of what an installer wrote into a host's files: the shared half of the
// agent and MCP installer cores. Not thread-safe within one instance (the host serialises calls,
// plugin_abi.h rule 7); several instances and processes may share one root.
//
// Layout under the root (created 0700 when missing; a directory owned by this euid, not writable
// by group or others, never a symlink):
//   objects/<hex>      one installed material (0444), named by the sha-256 of its bytes
//   tmp/<hex>.<pid>.<n>.stage   the staging of one install, flock'ed by its writer while it
//                      writes; published by one rename. Unlocked staging is swept when an
//                      instance starts.
//   records/<key>.json what an installer activated into a host file (0600, JSON), see
//                      read_record / write_record.
// install's JSON contract is the installer contract of ctx/conformance/conformance.hpp for file
// material: {"capability_id": "<kind>:<name>", "content_sha256", exactly one body source:
// "content" (utf-8) | "content_base64" | "source": {"file": "<abs path>"}, "content_bytes"?,
// "material_identity_digest"?} -> {"outcome": "applied"|"failed", "capability_id", "form":
// "file", "observed_material_identity_digest" (whenever material was observed), and when applied
// "verification_digest" + "rewritten": bool, else "reason"}. Bodies are written in 64 KiB
// chunks, the host's cancellation polled before each. Messages never contain paths or content.
#ifndef CTX_PLUGINS_COMMON_SINGLE_FILE_STORE_HPP_
#define CTX_PLUGINS_COMMON_SINGLE_FILE_STORE_HPP_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ctx::plugin_common {

class SingleFileStore {
 public:
  using Json = nlohmann::json;
  // Why `bytes` is not acceptable material for capability `name`, or nullopt when it is.
  using Validator =
      std::function<std::optional<std::string>(const std::string& name, std::string_view bytes)>;

  struct Options {
    std::string plugin_id;            // e.g. "agent-installer", in messages
    std::string kind;                 // the capability kind: ids are "<kind>:<name>"
    std::string verification_schema;  // schema of the install verification digest
    std::uint64_t max_bytes = 1u << 20;
    Validator validate;               // may be empty
    std::function<bool()> cancelled;  // may be empty
  };

  // Opens (creating when missing) the root and its layout; sweeps dead writers' staging.
  // Errors: InvalidArgument (not absolute, not a directory, a symlink), ctx::Error
  // kPermissionDenied (owned by another user or writable by group or others), kInternal.
  SingleFileStore(const std::string& root, Options options);

  // {"device","inode","owner","mode","path"} of the root (lstat).
  Json target_identity() const;
  // Errors: ctx::Error kFailedPrecondition "root changed" when the root path no longer names the
  // directory opened at construction (or its owner or mode changed).
  void require_same_root() const;

  // The name of "<kind>:<name>". Errors: InvalidArgument (other kind, or the name is not
  // [a-z0-9][a-z0-9_-]{0,63}).
  std::string name_of(std::string_view capability_id) const;

  // See the header comment. Errors: InvalidArgument (malformed request), kCancelled, "root
  // changed", kInternal.
  Json install(std::string_view request_json);

  // Publishes `body` as objects/<sha256 of body> for the capability named `name`, for a caller
  // that verified `body` against its own material form (an agent's one-file tree): refused over
  // the size cap or by the validator, else written unless that object already verifies.
  // Errors: kCancelled, "root changed", kInternal.
  struct Stored {
    std::optional<std::string> refused;  // why, when refused
    bool rewritten = false;              // written by this call
  };
  Stored store(const std::string& name, const std::string& body);

  enum class State { kAbsent, kVerified, kCorrupt };
  struct Object {
    State state = State::kAbsent;
    std::string bytes;  // verified bytes (kVerified only)
  };
  // objects/<hex>, re-hashed.
  Object read(const std::string& hex) const;

  // The record `key` (a lower-case hex digest), nullopt when absent or unreadable.
  std::optional<Json> read_record(const std::string& key) const;
  void write_record(const std::string& key, const Json& record);
  void remove_record(const std::string& key);

  // MaterialIdentity digest of the capability's material of `bytes` (plugin_abi.h).
  static std::string material_identity(std::string_view capability_id, std::string_view bytes);

  const std::string& root() const noexcept { return root_; }
  const Options& options() const noexcept { return options_; }

  // Removes unlocked staging; returns how many entries it removed.
  int sweep_stale_staging();

 private:
  std::string path(std::string_view sub) const { return root_ + "/" + std::string(sub); }
  // An install request's body: its "content", its decoded "content_base64", or the regular file
  // its "source" names (nullopt when that cannot be read or exceeds the size cap). Errors:
  // InvalidArgument for a malformed member.
  std::optional<std::string> request_body(const Json& request) const;
  // Writes `body` as objects/<expected>: an exclusive, flock'ed staging file in tmp/, written in
  // chunks, sealed and synced, then renamed into place, both directories synced.
  void publish(const std::string& expected, const std::string& body) const;

  std::string root_;
  Options options_;
  struct stat_identity {
    std::uint64_t device = 0, inode = 0, owner = 0, mode = 0;
  } opened_;
};

}  // namespace ctx::plugin_common

#endif  // CTX_PLUGINS_COMMON_SINGLE_FILE_STORE_HPP_
