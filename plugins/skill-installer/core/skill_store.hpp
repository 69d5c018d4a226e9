// Content-addressed skill store: the logic behind the "skill-installer" plugin, linked straight
// into tests. Not thread-safe: the host serialises calls per instance (plugin_abi.h rule 7).
//
// Layout under the configured root (created 0700 when missing; never a symlink):
//   sha256/<hex>            immutable object (mode 0444) whose SHA-256 is <hex>
//   active/<name>/SKILL.md  relative symlink to ../../sha256/<hex>: the activated skill
//   tmp/                    private staging for atomic writes
// Every write is temp file + fsync + rename + directory fsync. Mutations first check that the
// root path still names the directory opened at construction ("root changed" otherwise).
//
// JSON contract (the kit's installer suite, sdk/conformance, exercises exactly these fields):
//   config             {"root": "<absolute directory>"}
//   target_identity -> {"device": u64, "inode": u64, "owner": uid, "mode": st_mode, "path": root}
//   install  {"capability_id": "skill:<name>", "content": "<utf-8>" | "content_base64": "<b64>",
//             "content_sha256": "<hex>"}
//         -> {"outcome": "applied" | "failed", "capability_id",
//             "observed_material_identity_digest": <MaterialIdentity digest (plugin_abi.h) of the
//             bytes received>, "verification_digest": <digest of {capability_id, material_sha256
//             read back from disk, object, schema}; only when applied>, "reason": <only when failed>}
//   activate   {"capability_id", "content_sha256"}
//         -> {"outcome": "applied" | "failed", "capability_id", "active_sha256",
//             "observed_material_identity_digest": <MaterialIdentity digest of the object now
//             active>, "verification_digest": <activation verification digest>} | {..., "reason"}
//   deactivate {"capability_id"} -> {"outcome": "applied", "capability_id", "was_active": bool}
//   reconcile  {"capabilities": [{"capability_id", "content_sha256"}, ...]}
//         -> {"capabilities": [{"capability_id", "content_sha256", "installed": bool,
//             "active": bool, "active_sha256": <hex of what SKILL.md holds> | null,
//             "active_material_identity_digest": <its MaterialIdentity digest> | null,
//             "verification_digest": <activation verification digest> | null}, ...]}
//   activation verification digest: sha256 of the compact JSON {capability_id,
//   material_identity_digest, object: "sha256/<hex>", schema: kActivationVerificationSchema}.
//   <name> must match [a-z0-9][a-z0-9._@-]{0,127}; messages never contain paths or content.
#ifndef CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_
#define CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ctx::skill_installer {

using Json = nlohmann::json;

inline constexpr std::string_view kPluginId = "skill-installer";
inline constexpr std::string_view kVerificationSchema = "ctx.skill-installer.verification.v1";
inline constexpr std::string_view kActivationVerificationSchema =
    "ctx.skill-installer.activation-verification.v1";


// Returns the skill name of "skill:<name>". Errors: InvalidArgument when the prefix is not
// "skill:" or the name does not match [a-z0-9][a-z0-9._@-]{0,127}.
std::string skill_name(std::string_view capability_id);

// Owns a file descriptor; closes it on destruction. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();
  int get() const noexcept { return fd_; }
  int release() noexcept;

 private:
  int fd_ = -1;
};

class SkillStore {
 public:
  // Opens (creating 0700 when missing) the root named by `config_json`.
  // Errors: InvalidArgument (config malformed, root not absolute, not a directory or a symlink),
  // ctx::Error kInternal when the operating system refuses.
  explicit SkillStore(std::string_view config_json);

  // Identity of the root as the path names it now (lstat), see the header comment.
  Json target_identity() const;

  // Each operation takes the request JSON and returns the reply object documented above.
  // Errors: InvalidArgument for a malformed request; FailedPrecondition-coded ctx::Error
  // "root changed"; ctx::Error kInternal for operating-system failures.
  Json install(std::string_view request_json);
  Json activate(std::string_view request_json);
  Json deactivate(std::string_view request_json);
  Json reconcile(std::string_view request_json) const;

 private:
  void require_same_root() const;
  // Hex SHA-256 and size of the object sha256/<hex>; sha256 empty when it does not exist.
  struct Object {
    std::string sha256;
    std::uint64_t bytes = 0;
  };
  Object read_object(const std::string& hex) const;
  std::string hash_object(const std::string& hex) const { return read_object(hex).sha256; }

  std::string root_;
  FileDescriptor root_fd_;
  FileDescriptor objects_fd_;  // sha256/
  FileDescriptor active_fd_;   // active/
  FileDescriptor tmp_fd_;      // tmp/
};

}  // namespace ctx::skill_installer

#endif  // CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_
