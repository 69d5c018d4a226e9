// Content-addressed skill store: the logic behind the "skill-installer" plugin, linked straight
// into tests. Not thread-safe within one instance (the host serialises calls, plugin_abi.h rule 7);
// several instances and processes may share one root (staging is per process and flock-guarded).
//
// Layout under the configured root (created 0700 when missing; owned by this euid and not
// writable by group or others, else refused; never a symlink):
//   objects/<hex>/          one installed material, immutable (dirs 0555, files 0444), named by
//                           its material content_sha256 (file form: sha256 of SKILL.md; tree
//                           form: the tree digest = sha256 of the tree root text, plugin_abi.h
//                           "Tree material"; verified by re-hashing every file, rebuilding the
//                           manifest and the root)
//   tmp/<hex>.<pid>.<n>.stage/  staging of one install, flock'ed by its writer for its lifetime;
//                           published by one rename into objects/. Unlocked staging belongs to a
//                           dead writer and is swept when an instance starts.
//   <activation root>/<name>    symlink to <root>/objects/<hex>: the active skill, where the host
//                           adapter says skills live (config "activation_root", default
//                           <root>/active; same owner and mode rules as the root).
// Every file is created O_EXCL and fsynced, every directory created or renamed into is fsynced,
// publication is an atomic rename. The files of one staging are all written before the first is
// fsynced (each one's writeback is started when it is written), all synced before the rename. Mutations first check that the root path still names the
// directory opened at construction, with its owner and mode ("root changed" otherwise).
//
// JSON contract (sdk/conformance's installer suite checks it; ctx's runtime sends these fields):
//   config  {"root": "<abs dir>", "activation_root"?: "<abs dir>",
//            "max_file_bytes"?: n (16 MiB), "max_tree_bytes"?: n (64 MiB), "max_files"?: n (1000)}
//            (the defaults are sdk::kMaxTreeFileBytes / kMaxTreeBytes / kMaxTreeFiles, the bounds
//            ctx's catalog imports under, ctx/sdk/skill_tree.hpp)
//   target_identity -> {"device", "inode", "owner", "mode", "path"} of the root (lstat)
//   install {"capability_id": "skill:<name>", "content_sha256": <hex of the material>,
//            exactly one body source: "content" (utf-8) | "content_base64" |
//            "source": {"file": "<abs path of SKILL.md>"} (file form) |
//            "source": {"directory": "<abs dir holding SKILL.md and resources>"} (tree form,
//            with "manifest": <the tree's canonical manifest text>, ctx/sdk/skill_tree.hpp),
//            "content_bytes"?: n, "material_identity_digest"?: <expected MaterialIdentity digest>}
//      Tree form: the root built from "manifest" must hash to content_sha256 (else failed before
//      any body is read), every file read must equal its manifest entry and the directory hold
//      exactly the listed files; the reply reports the root's MaterialIdentity digest.
//      -> {"outcome": "applied"|"failed", "capability_id", "form": "file"|"tree",
//          "observed_material_identity_digest" (whenever material was observed),
//          "verification_digest" + "rewritten": bool (applied), "reason" (failed)}
//      Already installed exactly: applied with rewritten false, the body source is not read.
//   install_from_source (plugin_abi.h, ABI minor 1): the tree form's request without "source"
//      (no "content" / "content_base64" either) and the host's bodies: each listed file is read
//      once from the body source by its manifest path, hashed and capped at its entry's size as
//      it streams, and the observed root is built from exactly those bytes; same reply.
//      Bodies are streamed (64 KiB chunks, host cancellation polled per chunk) under the caps;
//      anything over a cap, a digest, size or material identity mismatch, or a source holding
//      anything but regular files and directories fails with nothing published.
//   activate {"capability_id", "content_sha256", ...}
//      -> {"outcome": "applied"|"failed", "capability_id", and when applied "active_sha256",
//          "observed_material_identity_digest", "verification_digest"; "reason" when failed}
//   deactivate {"capability_id", ...} -> {"outcome": "applied", "capability_id", "was_active"} |
//          {"outcome": "failed", "reason"} when the slot holds something ctx did not create
//   reconcile {"capabilities": [{"capability_id", "content_sha256", ...}]}
//      -> {"capabilities": [{"capability_id", "content_sha256",
//          "installed": bool, "install_state": "applied"|"absent"|"indeterminate",
//          "active": bool, "activation_state": "applied"|"absent"|"indeterminate",
//          "active_sha256": <hex the slot names> | null,
//          "active_material_identity_digest": <MaterialIdentity digest of it> | null,
//          "verification_digest": <activation verification digest> | null, "reason"?}]}
//      indeterminate = cannot tell: an object that does not verify (partial or tampered tree),
//      a live staging of the material in another process, a slot ctx did not create.
//   verification digests: sha256 of the compact JSON {capability_id, material_identity_digest,
//   object: "objects/<hex>", schema: kVerificationSchema} (install) and the same plus
//   "activation": <name> under kActivationVerificationSchema (activate / reconcile).
//   <name> matches [a-z0-9][a-z0-9._@-]{0,127}; messages never contain paths or content.
#ifndef CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_
#define CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_

#include <cstdint>
#include <ctx/sdk/skill_tree.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/skill-installer/core/fs.hpp"

namespace ctx::skill_installer {

using Json = nlohmann::json;

inline constexpr std::string_view kPluginId = "skill-installer";
inline constexpr std::string_view kVerificationSchema = "ctx.skill-installer.verification.v2";
inline constexpr std::string_view kActivationVerificationSchema =
    "ctx.skill-installer.activation-verification.v2";

// Returns the skill name of "skill:<name>". Errors: InvalidArgument when the prefix is not
// "skill:" or the name does not match [a-z0-9][a-z0-9._@-]{0,127}.
std::string skill_name(std::string_view capability_id);

class SkillStore {
 public:
  // Polled between streamed chunks; true asks the install to stop (ctx::Error kCancelled).
  using CancelCheck = std::function<bool()>;
  // Receives one chunk of a streamed body; throws to stop the stream.
  using ChunkFn = std::function<void(std::string_view chunk)>;
  // The host's bodies (install_from_source): streams the bytes of tree path `path` to `chunk`,
  // in order; false when the host has no such file. Its errors propagate.
  using BodyReader = std::function<bool(const std::string& path, const ChunkFn& chunk)>;

  // Opens (creating 0700 when missing) the root and the activation root named by `config_json`,
  // checks their owner and mode, and sweeps staging left by dead writers.
  // Errors: InvalidArgument (config malformed, a root not absolute, not a directory or a
  // symlink), ctx::Error kPermissionDenied (a root owned by another user or writable by group or
  // others), ctx::Error kInternal when the operating system refuses.
  explicit SkillStore(std::string_view config_json, CancelCheck cancelled = {});

  // Identity of the root as the path names it now (lstat), see the header comment.
  Json target_identity() const;

  // Each operation takes the request JSON and returns the reply object documented above.
  // Errors: InvalidArgument for a malformed request; kFailedPrecondition "root changed";
  // kCancelled when the host cancelled an install; kInternal for operating-system failures.
  Json install(std::string_view request_json);
  Json activate(std::string_view request_json);
  Json deactivate(std::string_view request_json);
  Json reconcile(std::string_view request_json) const;
  // install's tree form with the file bodies read from `bodies` (see the header comment).
  Json install_from_source(std::string_view request_json, const BodyReader& bodies);

  // Removes staging whose writer is gone (unlocked); returns how many entries it removed.
  int sweep_stale_staging();

 private:
  enum class Form { kFile, kTree };
  // What objects/<hex> holds.
  struct Object {
    enum class State { kAbsent, kVerified, kCorrupt } state = State::kAbsent;
    Form form = Form::kFile;
    std::uint64_t material_bytes = 0;  // the MaterialIdentity content_bytes
  };
  struct Caps {
    std::uint64_t file_bytes = 0, tree_bytes = 0, files = 0;
  };
  struct Staged;
  class StageWriter;  // writes one staging directory's files (stage's parts)

  void require_same_root() const;
  Object inspect_object(const std::string& hex) const;
  bool live_staging_for(const std::string& hex) const;
  std::optional<std::string> slot_target(const std::string& name) const;
  // Stages the request's body; `listed` (tree form) is the manifest every file must match.
  // `bodies` (install_from_source only) supplies the listed files instead of the request.
  Staged stage(const Json& request, Form form, const std::vector<sdk::TreeFile>* listed,
               const BodyReader* bodies);
  Json install_request(std::string_view request_json, const BodyReader* bodies);
  // An install request's fields, checked (install_request's first step).
  struct Request;
  Request read_request(const Json& request, bool from_host) const;
  // Why a manifest's tree cannot be the authorised material within the caps; nullopt when it can.
  std::optional<std::string> refuse_manifest(const Request& request) const;
  // Publishes `staged` as objects/<expected> (one rename; an object already there either verifies,
  // another writer having won: false, or is moved aside and replaced). True when this call
  // published it.
  bool publish(Staged& staged, const std::string& expected, Form form);
  std::string object_link(const std::string& hex) const;

  std::string root_;
  std::string activation_root_;
  Caps caps_;
  CancelCheck cancelled_;
  FileDescriptor root_fd_;
  FileDescriptor objects_fd_;     // objects/
  FileDescriptor tmp_fd_;         // tmp/
  FileDescriptor activation_fd_;  // the activation root
};

}  // namespace ctx::skill_installer

#endif  // CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_STORE_HPP_
