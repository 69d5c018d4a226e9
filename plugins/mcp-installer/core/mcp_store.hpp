// MCP installer core: the logic behind the "mcp-installer" plugin, linked straight into tests.
// Installs a catalog MCP server entry (mcp-servers/<name>.json: {"name", "command", "args"?,
// "env"?} or {"name", "url", "type"?}) content-addressed in the state dir
// (plugins/common/single_file_store.hpp), and activates it as one entry of the host's
// configuration file:
//   format "json" (Claude Code .mcp.json or ~/.claude.json): "mcpServers": {"<name>": {"type":
//     "stdio", "command", "args", "env"} | {"type": "http"|"sse", "url"}}
//   format "toml" (Codex config.toml): a [mcp_servers.<name>] block (command, args, url) and its
//     [mcp_servers.<name>.env] table, appended at the end of the file
// Every other byte of the file is kept: the JSON member is inserted into / removed from the text
// (json_text.hpp), the TOML block appended / removed as text, each edit validated by parsing the
// file before and after (nlohmann, toml++). Edits hold a flock on the file's directory (two ctx
// processes activating two servers into one file both land), are written atomically (temporary
// file, fsync, rename) and refused when the file changed between read and write; a symlinked
// file is edited at the end of its chain; the first edit keeps "<file>.ctx-backup". An entry of
// the same name that ctx did not write (no record, or other content than ctx wrote) is never
// overwritten or removed (a failed outcome naming the file). Removing what ctx added restores
// the file's bytes. Replies, errors and records never carry env values, paths or file content.
//
// JSON contract (ctx/conformance/conformance.hpp's installer contract for file material):
//   config  {"root": "<abs dir>", "config_file": "<abs file>", "format": "json"|"toml",
//            "max_material_bytes"?: n (256 KiB), "max_config_bytes"?: n (64 MiB)}
//   install / activate / deactivate / reconcile: as the agent installer (agent_store.hpp), with
//            "file": the config file's name in an applied activation.
#ifndef CTX_PLUGINS_MCP_INSTALLER_CORE_MCP_STORE_HPP_
#define CTX_PLUGINS_MCP_INSTALLER_CORE_MCP_STORE_HPP_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plugins/common/single_file_store.hpp"

namespace ctx::mcp_installer {

using Json = nlohmann::json;

inline constexpr std::string_view kPluginId = "mcp-installer";

// A catalog MCP server entry.
struct McpServer {
  std::string name;
  std::optional<std::string> command;                    // stdio
  std::vector<std::string> args;                         // stdio
  std::vector<std::pair<std::string, std::string>> env;  // stdio, sorted by name
  std::optional<std::string> url;                        // remote
  std::string type;                                      // "stdio", "http" or "sse"
};

// Parses and checks a catalog entry: one JSON object; exactly one of "command" (an absolute path
// or a bare program name) and "url" (http or https); "args" strings; "env" string values under
// names [A-Za-z_][A-Za-z0-9_]*; "type" stdio for a command, http | sse | streamable-http for a
// url. Errors: InvalidArgument with a fixed reason (never the values).
McpServer parse_mcp_server(std::string_view bytes);

class McpStore {
 public:
  enum class Format { kJson, kToml };

  // Errors: InvalidArgument (config malformed), SingleFileStore's.
  explicit McpStore(std::string_view config_json, std::function<bool()> cancelled = {});

  Json target_identity() const { return store_.target_identity(); }
  Json install(std::string_view request_json) { return store_.install(request_json); }
  Json activate(std::string_view request_json);
  Json deactivate(std::string_view request_json);
  Json reconcile(std::string_view request_json) const;

  // The host entry of `server` in this store's format, as canonical JSON (JSON: the member's
  // value; TOML: the [mcp_servers.<name>] table as JSON). Errors: InvalidArgument when the format
  // cannot express the server (Codex reads no SSE servers).
  Json entry_of(const McpServer& server) const;

 private:
  struct Edit;
  struct Observed;
  std::string label() const;
  std::string record_key(const std::string& name, const std::string& file) const;
  // What the file holds under `name` now; nullopt entry when absent. Errors: InvalidArgument
  // with a reason for the user when the file is not valid JSON/TOML or has no usable container.
  Observed observe(const std::string& text, const std::string& name) const;
  std::string verification(const std::string& capability_id, const std::string& material,
                           const std::string& entry_sha) const;
  // activate's edit of the host file's `text` (`observed` in it, `existed` on disk): `server`,
  // whose entry is `desired`, set under `name`; `next_record` takes what deactivate needs to undo
  // it (`record`: the ownership record before). Returns the new text, checked to change only
  // that entry. Errors: the reason for the user (.cpp's Refused).
  // TOML: `text` without the block ctx added for `name` (the record's "inserted", else its
  // "block", the last occurrence). Errors: Refused when neither is there (changed outside ctx).
  std::string without_block(std::string text, const std::optional<Json>& record,
                            const std::string& name) const;
  std::string add_json_entry(std::string text, const Observed& observed, bool existed,
                             const McpServer& server, const Json& desired, const std::string& name,
                             Json& next_record) const;
  std::string add_toml_entry(std::string text, const Observed& observed, bool existed,
                             const std::optional<Json>& record, const McpServer& server,
                             const Json& desired, const std::string& name, Json& next_record) const;

  plugin_common::SingleFileStore store_;
  std::string config_file_;
  Format format_ = Format::kJson;
  std::uint64_t max_config_bytes_ = 0;
};

}  // namespace ctx::mcp_installer

#endif  // CTX_PLUGINS_MCP_INSTALLER_CORE_MCP_STORE_HPP_
