// Agent installer core: the logic behind the "agent-installer" plugin, linked straight into
// tests. Installs a catalog agent (a Claude Code subagent file: YAML frontmatter with "name" and
// "description", the Markdown body its system prompt) content-addressed in the state dir
// (plugins/common/single_file_store.hpp), and activates it where the host reads agents:
//   format "markdown" (Claude Code): <activation_root>/<name>.md, the material's exact bytes
//   format "toml" (Codex): <activation_root>/<name>.toml, rendered: name, description,
//     developer_instructions = the body (host-formats §3.6)
// A slot file ctx did not write (no record of it, or other bytes than ctx wrote) is never
// overwritten or removed: activate and deactivate fail naming "<name>.md" / "<name>.toml".
// Records (records/<key>.json under the root) name the sha-256 of every file ctx wrote into a
// slot, so deactivate removes exactly what activate wrote. Not thread-safe within one instance.
//
// JSON contract (ctx/conformance/conformance.hpp's installer contract for file material):
//   config  {"root": "<abs dir>", "activation_root": "<abs dir>", "format": "markdown"|"toml",
//            "max_material_bytes"?: n (1 MiB)}
//   install  -> single_file_store.hpp; material that is not an agent file whose frontmatter
//            "name" is the capability's name and which has a "description" is "failed".
//   install_from_source (plugin_abi.h, ABI minor 1): an agent file over 6000 bytes (the engine's
//            material bound) as a one-file tree (ctx/sdk/skill_tree.hpp): {"capability_id",
//            "content_sha256": <the tree root's digest>, "manifest": <the canonical manifest of
//            the one file "AGENT.md">, "content_bytes"?, "material_identity_digest"?} and the
//            host's body source. The root built from the manifest must hash to content_sha256
//            (else failed before any body is read); AGENT.md is read once, capped at its entry's
//            size, and must equal its entry; then it is validated as install's material, stored
//            as objects/<its sha-256>, and records/<root digest>.json keeps the manifest. ->
//            {"outcome", "capability_id", "form": "tree", "observed_material_identity_digest"
//            (the root's MaterialIdentity), "verification_digest" + "rewritten" | "reason"};
//            already installed exactly: applied, rewritten false, the body source is not read.
//            activate and reconcile take either digest form: a content_sha256 naming a tree root
//            activates its file, every link re-verified (the root against the digest, the
//            manifest against the root, the file against the manifest).
//   activate {"capability_id": "agent:<name>", "content_sha256"} -> {"outcome": "applied",
//            "capability_id", "active_sha256", "observed_material_identity_digest",
//            "verification_digest", "file": "<name>.md", "rewritten": bool} | {"outcome":
//            "failed", "capability_id", "reason"}
//   deactivate {"capability_id"} -> {"outcome": "applied", "capability_id", "was_active"} |
//            failed with a reason when the slot holds a file ctx did not write
//   reconcile {"capabilities": [{"capability_id", "content_sha256"}]} -> as the skill installer
//            (installed, install_state, active, activation_state, active_sha256,
//            active_material_identity_digest, verification_digest, reason?)
#ifndef CTX_PLUGINS_AGENT_INSTALLER_CORE_AGENT_STORE_HPP_
#define CTX_PLUGINS_AGENT_INSTALLER_CORE_AGENT_STORE_HPP_

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "plugins/common/single_file_store.hpp"

namespace ctx::agent_installer {

using Json = nlohmann::json;

inline constexpr std::string_view kPluginId = "agent-installer";

// A parsed agent file.
struct AgentFile {
  std::string name;
  std::string description;
  std::string body;  // after the frontmatter, leading blank lines removed
};

// Parses an agent file. Errors: InvalidArgument with a fixed reason (no frontmatter, YAML that
// does not parse, a missing or non-string name or description); never quotes the bytes.
AgentFile parse_agent(std::string_view bytes);

// The Codex agent TOML of `agent` (name, description, developer_instructions).
std::string render_codex_agent(const AgentFile& agent);

class AgentStore {
 public:
  enum class Format { kMarkdown, kToml };

  // Errors: InvalidArgument (config malformed), SingleFileStore's.
  explicit AgentStore(std::string_view config_json, std::function<bool()> cancelled = {});

  // Receives one chunk of a streamed body; throws to stop the stream.
  using ChunkFn = std::function<void(std::string_view chunk)>;
  // Streams the body of the tree file `path` to `chunk`; false when the host has no such file.
  using ReadBody = std::function<bool(const std::string& path, const ChunkFn& chunk)>;

  Json target_identity() const { return store_.target_identity(); }
  Json install(std::string_view request_json) { return store_.install(request_json); }
  // See the header comment. Errors: InvalidArgument (malformed request), kCancelled, "root
  // changed", kInternal; an exception from `read_body`.
  Json install_from_source(std::string_view request_json, const ReadBody& read_body);
  Json activate(std::string_view request_json);
  Json deactivate(std::string_view request_json);
  Json reconcile(std::string_view request_json) const;

 private:
  std::string slot_file_name(const std::string& name) const;
  std::string record_key(const std::string& name) const;
  // The bytes activation writes for verified material `bytes`.
  std::string rendered(std::string_view bytes) const;
  std::string verification(const std::string& capability_id, const std::string& name,
                           const std::string& material, const std::string& written_sha) const;
  // The installed material `hex` names for `capability_id`: an object of the agent file itself
  // (plain form), or a tree root whose record, manifest and file all verify. `identity` is the
  // MaterialIdentity digest of the material (the file, or the root).
  struct Material {
    plugin_common::SingleFileStore::State state = plugin_common::SingleFileStore::State::kAbsent;
    std::string bytes;     // the agent file (kVerified only)
    std::string identity;  // kVerified only
  };
  Material material_of(const std::string& capability_id, const std::string& hex) const;

  plugin_common::SingleFileStore store_;
  std::string activation_root_;
  Format format_ = Format::kMarkdown;
};

}  // namespace ctx::agent_installer

#endif  // CTX_PLUGINS_AGENT_INSTALLER_CORE_AGENT_STORE_HPP_
