#include "plugins/agent-installer/core/agent_store.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <ctx/sdk/error.hpp>
#include <ctx/sdk/skill_tree.hpp>
#include <filesystem>
#include <vector>

#include "plugins/common/bytes.hpp"
#include "plugins/common/host_file.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/common/toml_text.hpp"

namespace ctx::agent_installer {
namespace {

namespace fs = std::filesystem;
namespace pc = ctx::plugin_common;

constexpr std::string_view kVerificationSchema = "ctx.agent-installer.verification.v1";
constexpr std::string_view kActivationSchema = "ctx.agent-installer.activation-verification.v1";
constexpr std::uint64_t kDefaultMaxBytes = 1u << 20;

std::string absolute(const Json& config, const char* key) {
  const std::string& path = pc::require_string(config, key, "agent-installer config");
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    throw InvalidArgument("agent-installer config " + std::string(key) +
                          " must be an absolute path");
  }
  std::string out = path;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Json parse_config(std::string_view text) {
  const Json config = pc::parse_object(text, "agent-installer config");
  for (const auto& [key, value] : config.items()) {
    if (key != "root" && key != "activation_root" && key != "format" &&
        key != "max_material_bytes") {
      throw InvalidArgument("agent-installer config has an unknown field");
    }
  }
  return config;
}

std::uint64_t max_bytes(const Json& config) {
  const auto it = config.find("max_material_bytes");
  if (it == config.end()) return kDefaultMaxBytes;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0) {
    throw InvalidArgument("agent-installer config max_material_bytes must be a positive integer");
  }
  return it->get<std::uint64_t>();
}

// One line of `text` from `at`: [at, end of line) and the offset after its line break.
std::pair<std::string_view, std::size_t> line_at(std::string_view text, std::size_t at) {
  const std::size_t nl = text.find('\n', at);
  std::string_view line = text.substr(at, nl == std::string_view::npos ? text.npos : nl - at);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return {line, nl == std::string_view::npos ? text.size() : nl + 1};
}

std::optional<std::string> scalar(const YAML::Node& map, const char* key) {
  const YAML::Node node = map[key];
  if (!node || !node.IsScalar()) return std::nullopt;
  return node.as<std::string>();
}

// Whether the directory's owner and mode let ctx write agents into it.
void require_safe_directory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) pc::throw_errno(kPluginId, "stat the agents directory");
  if (!S_ISDIR(st.st_mode))
    throw InvalidArgument("agent-installer activation root is not a directory");
  if (st.st_uid != ::geteuid()) {
    throw Error("agent-installer activation root is owned by another user",
                ErrorCode::kPermissionDenied);
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    throw Error("agent-installer activation root is writable by others",
                ErrorCode::kPermissionDenied);
  }
}

// The one file of the agent tree manifest `text` (ctx/sdk/skill_tree.hpp: one file, AGENT.md, in
// canonical form), or nullopt when `text` is not exactly such a manifest.
std::optional<sdk::TreeFile> agent_tree_file(std::string_view text) {
  Json value;
  try {
    value = Json::parse(text);
  } catch (const Json::exception&) {
    return std::nullopt;
  }
  const auto files = value.find("files");  // end() for a value that is no object
  if (files == value.end() || !files->is_array() || files->size() != 1) return std::nullopt;
  const Json& entry = files->front();
  if (!entry.is_object() || !entry.contains("bytes") || !entry.at("bytes").is_number_unsigned() ||
      !entry.contains("path") || !entry.at("path").is_string() || !entry.contains("sha256") ||
      !entry.at("sha256").is_string()) {
    return std::nullopt;
  }
  sdk::TreeFile file{entry.at("path").get<std::string>(), entry.at("bytes").get<std::uint64_t>(),
                     entry.at("sha256").get<std::string>()};
  try {
    if (sdk::tree_manifest_text({file}, sdk::kAgentFile) != text) return std::nullopt;
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
  return file;
}

bool listed(const Json& record, const std::string& sha) {
  const auto it = record.find("written");
  if (it == record.end() || !it->is_array()) return false;
  for (const Json& item : *it) {
    if (item.is_string() && item.get_ref<const std::string&>() == sha) return true;
  }
  return false;
}

}  // namespace

AgentFile parse_agent(std::string_view bytes) {
  auto [first, at] = line_at(bytes, 0);
  if (first != "---") throw InvalidArgument("agent file has no YAML frontmatter");
  const std::size_t yaml_begin = at;
  std::size_t yaml_end = std::string_view::npos;
  while (at < bytes.size()) {
    const auto [line, next] = line_at(bytes, at);
    if (line == "---") {
      yaml_end = at;
      at = next;
      break;
    }
    at = next;
  }
  if (yaml_end == std::string_view::npos) {
    throw InvalidArgument("agent file frontmatter is not closed");
  }
  YAML::Node front;
  try {
    front = YAML::Load(std::string(bytes.substr(yaml_begin, yaml_end - yaml_begin)));
  } catch (const YAML::Exception&) {
    throw InvalidArgument("agent file frontmatter is not valid YAML");
  }
  if (!front.IsMap()) throw InvalidArgument("agent file frontmatter is not a mapping");
  AgentFile agent;
  try {
    const auto name = scalar(front, "name");
    const auto description = scalar(front, "description");
    if (!name || name->empty()) throw InvalidArgument("agent file has no name");
    if (!description || description->empty()) {
      throw InvalidArgument("agent file has no description");
    }
    agent.name = *name;
    agent.description = *description;
  } catch (const YAML::Exception&) {
    throw InvalidArgument("agent file frontmatter is not valid YAML");
  }
  std::string_view body = bytes.substr(at);
  while (!body.empty() && (body.front() == '\n' || body.substr(0, 2) == "\r\n")) {
    body.remove_prefix(body.front() == '\n' ? 1 : 2);
  }
  agent.body = std::string(body);
  return agent;
}

std::string render_codex_agent(const AgentFile& agent) {
  return "name = " + pc::toml_basic_string(agent.name) + "\n" +
         "description = " + pc::toml_basic_string(agent.description) + "\n" +
         "developer_instructions = " + pc::toml_multiline_string(agent.body) + "\n";
}

AgentStore::AgentStore(std::string_view config_json, std::function<bool()> cancelled)
    : store_(absolute(parse_config(config_json), "root"),
             pc::SingleFileStore::Options{
                 std::string(kPluginId), "agent", std::string(kVerificationSchema),
                 max_bytes(parse_config(config_json)),
                 [](const std::string& name, std::string_view bytes) -> std::optional<std::string> {
                   try {
                     const AgentFile agent = parse_agent(bytes);
                     if (agent.name != name) {
                       return "agent file name is not the capability's name";
                     }
                   } catch (const InvalidArgument& e) {
                     return std::string(e.what());
                   }
                   return std::nullopt;
                 },
                 std::move(cancelled)}) {
  const Json config = parse_config(config_json);
  activation_root_ = absolute(config, "activation_root");
  const std::string format = pc::require_string(config, "format", "agent-installer config");
  if (format == "markdown") {
    format_ = Format::kMarkdown;
  } else if (format == "toml") {
    format_ = Format::kToml;
  } else {
    throw InvalidArgument("agent-installer config format must be \"markdown\" or \"toml\"");
  }
}

std::string AgentStore::slot_file_name(const std::string& name) const {
  return name + (format_ == Format::kMarkdown ? ".md" : ".toml");
}

std::string AgentStore::record_key(const std::string& name) const {
  return pc::sha256_hex("agent-slot\n" + activation_root_ + "\n" + slot_file_name(name));
}

std::string AgentStore::rendered(std::string_view bytes) const {
  if (format_ == Format::kMarkdown) return std::string(bytes);
  return render_codex_agent(parse_agent(bytes));
}

std::string AgentStore::verification(const std::string& capability_id, const std::string& name,
                                     const std::string& material,
                                     const std::string& written_sha) const {
  return pc::sha256_hex(pc::dump({{"activation", slot_file_name(name)},
                                  {"capability_id", capability_id},
                                  {"material_identity_digest", material},
                                  {"schema", kActivationSchema},
                                  {"written_sha256", written_sha}}));
}

AgentStore::Material AgentStore::material_of(const std::string& capability_id,
                                             const std::string& hex) const {
  using State = pc::SingleFileStore::State;
  Material out;
  auto object = store_.read(hex);
  if (object.state != State::kAbsent) {
    out.state = object.state;
    if (object.state == State::kVerified) {
      out.identity = pc::SingleFileStore::material_identity(capability_id, object.bytes);
      out.bytes = std::move(object.bytes);
    }
    return out;
  }
  // A tree root: its record names the manifest (written after the file was published).
  const auto record = store_.read_record(hex);
  if (!record) return out;
  const auto manifest = record->find("manifest");
  if (manifest == record->end() || !manifest->is_string()) return out;
  out.state = State::kCorrupt;
  const std::string& text = manifest->get_ref<const std::string&>();
  const auto file = agent_tree_file(text);
  if (!file) return out;
  const std::string root = sdk::tree_root_text({*file}, pc::sha256_hex(text));
  if (pc::sha256_hex(root) != hex) return out;
  auto agent = store_.read(file->sha256);
  if (agent.state != State::kVerified || agent.bytes.size() != file->bytes) return out;
  out.state = State::kVerified;
  out.identity = pc::material_identity_digest(capability_id, hex, root.size());
  out.bytes = std::move(agent.bytes);
  return out;
}

Json AgentStore::install_from_source(std::string_view request_json, const ReadBody& read_body) {
  constexpr std::string_view kWhat = "install request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = store_.name_of(capability_id);
  const std::string& hex = pc::require_string(request, "content_sha256", kWhat);
  if (!pc::is_sha256_hex(hex)) {
    throw InvalidArgument("install request content_sha256 is not a lower-case sha-256 digest");
  }
  const std::string& manifest = pc::require_string(request, "manifest", kWhat);
  for (const char* key : {"content", "content_base64", "source"}) {
    if (request.contains(key)) {
      throw InvalidArgument("install_from_source request reads its body from the host only");
    }
  }
  std::optional<std::uint64_t> expected_bytes;
  if (const auto it = request.find("content_bytes"); it != request.end()) {
    if (!it->is_number_unsigned()) {
      throw InvalidArgument("install request content_bytes must be an unsigned integer");
    }
    expected_bytes = it->get<std::uint64_t>();
  }
  const auto expected_material = pc::optional_string(request, "material_identity_digest", kWhat);

  Json reply = {{"capability_id", capability_id}, {"form", "tree"}};
  const auto refuse = [&](const std::string& reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };
  const auto file = agent_tree_file(manifest);
  if (!file) return refuse("manifest is not that of one agent file AGENT.md");
  const std::string root = sdk::tree_root_text({*file}, pc::sha256_hex(manifest));
  if (pc::sha256_hex(root) != hex) return refuse("manifest does not match content_sha256");
  const std::string material = pc::material_identity_digest(capability_id, hex, root.size());
  if (expected_bytes && *expected_bytes != root.size()) return refuse("content size mismatch");
  if (expected_material && *expected_material != material) {
    return refuse("material identity digest mismatch");
  }
  if (file->bytes > store_.options().max_bytes) return refuse("material exceeds the size cap");
  const auto applied = [&](bool rewritten) {
    reply["outcome"] = "applied";
    reply["rewritten"] = rewritten;
    reply["observed_material_identity_digest"] = material;
    reply["verification_digest"] = pc::sha256_hex(pc::dump({{"capability_id", capability_id},
                                                            {"material_identity_digest", material},
                                                            {"object", "objects/" + file->sha256},
                                                            {"record", "records/" + hex + ".json"},
                                                            {"schema", kVerificationSchema}}));
    return reply;
  };

  store_.require_same_root();
  if (material_of(capability_id, hex).state == pc::SingleFileStore::State::kVerified) {
    return applied(false);
  }
  // AGENT.md, read once and capped at its entry's size as it streams.
  struct OverEntry {};
  std::string body;
  bool found = false;
  try {
    found = read_body(sdk::kAgentFile, [&](std::string_view chunk) {
      if (chunk.size() > file->bytes - body.size()) throw OverEntry{};
      if (store_.options().cancelled && store_.options().cancelled()) {
        throw Error(std::string(kPluginId) + " install was cancelled", ErrorCode::kCancelled);
      }
      body.append(chunk);
    });
  } catch (const OverEntry&) {
    return refuse("AGENT.md is longer than its manifest entry");
  }
  if (!found) return refuse("the host's body source has no AGENT.md");
  if (body.size() != file->bytes || pc::sha256_hex(body) != file->sha256) {
    return refuse("AGENT.md does not match its manifest entry");
  }
  reply["observed_material_identity_digest"] = material;
  const auto stored = store_.store(name, body);
  if (stored.refused) return refuse(*stored.refused);
  // The record last: it names the published file, so a crash before it leaves no tree behind.
  store_.write_record(hex, {{"manifest", manifest}});
  return applied(true);
}

Json AgentStore::activate(std::string_view request_json) {
  constexpr std::string_view kWhat = "activate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = store_.name_of(capability_id);
  const std::string& hex = pc::require_string(request, "content_sha256", kWhat);
  if (!pc::is_sha256_hex(hex)) {
    throw InvalidArgument("activate request content_sha256 is not a lower-case sha-256 digest");
  }
  const std::string file_name = slot_file_name(name);
  Json reply = {{"capability_id", capability_id}};
  const auto refuse = [&](const std::string& reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };
  store_.require_same_root();
  const Material object = material_of(capability_id, hex);
  if (object.state == pc::SingleFileStore::State::kAbsent) {
    return refuse("material is not installed");
  }
  if (object.state == pc::SingleFileStore::State::kCorrupt) {
    return refuse("installed material does not verify");
  }
  const std::string bytes = rendered(object.bytes);
  const std::string written_sha = pc::sha256_hex(bytes);
  const std::string& material = object.identity;

  const pc::DirectoryLock lock(activation_root_);
  require_safe_directory(activation_root_);
  const fs::path file = fs::path(activation_root_) / file_name;
  const pc::HostFileSnapshot before = pc::read_host_file(file, file_name, 4 * kDefaultMaxBytes);
  const std::string key = record_key(name);
  const auto record = store_.read_record(key);
  bool rewritten = false;
  if (before.exists) {
    const std::string current = pc::sha256_hex(before.bytes);
    if (!record || !listed(*record, current)) {
      return refuse("the agents directory already has " + file_name + " and ctx did not write it");
    }
    if (current != written_sha) {
      // Another material of ours is there: the record names both while the file is replaced.
      store_.write_record(key, {{"content_sha256", hex}, {"written", {current, written_sha}}});
      pc::replace_host_file(file, bytes, 0644, before, file_name);
      rewritten = true;
    }
  } else {
    store_.write_record(key, {{"content_sha256", hex}, {"written", {written_sha}}});
    pc::replace_host_file(file, bytes, 0644, before, file_name);
    rewritten = true;
  }
  const Json settled = {{"content_sha256", hex}, {"written", {written_sha}}};
  if (rewritten || !record || *record != settled) store_.write_record(key, settled);
  reply["outcome"] = "applied";
  reply["active_sha256"] = hex;
  reply["file"] = file_name;
  reply["rewritten"] = rewritten;
  reply["observed_material_identity_digest"] = material;
  reply["verification_digest"] = verification(capability_id, name, material, written_sha);
  return reply;
}

Json AgentStore::deactivate(std::string_view request_json) {
  constexpr std::string_view kWhat = "deactivate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = store_.name_of(capability_id);
  const std::string file_name = slot_file_name(name);
  store_.require_same_root();
  const pc::DirectoryLock lock(activation_root_);
  const fs::path file = fs::path(activation_root_) / file_name;
  const pc::HostFileSnapshot before = pc::read_host_file(file, file_name, 4 * kDefaultMaxBytes);
  const std::string key = record_key(name);
  const auto record = store_.read_record(key);
  bool was_active = false;
  if (before.exists) {
    if (!record || !listed(*record, pc::sha256_hex(before.bytes))) {
      return Json{{"capability_id", capability_id},
                  {"outcome", "failed"},
                  {"reason", file_name + " in the agents directory was not written by ctx (or was "
                                         "changed since); it is left in place"}};
    }
    pc::remove_host_file(file, before, file_name);
    was_active = true;
  }
  store_.remove_record(key);
  return Json{{"capability_id", capability_id}, {"outcome", "applied"}, {"was_active", was_active}};
}

Json AgentStore::reconcile(std::string_view request_json) const {
  constexpr std::string_view kWhat = "reconcile request";
  const Json request = pc::parse_object(request_json, kWhat);
  const auto list = request.find("capabilities");
  if (list == request.end() || !list->is_array()) {
    throw InvalidArgument("reconcile request needs an array \"capabilities\"");
  }
  store_.require_same_root();
  Json states = Json::array();
  for (const Json& item : *list) {
    if (!item.is_object()) throw InvalidArgument("reconcile request capabilities must be objects");
    const std::string& capability_id = pc::require_string(item, "capability_id", kWhat);
    const std::string name = store_.name_of(capability_id);
    const std::string& hex = pc::require_string(item, "content_sha256", kWhat);
    if (!pc::is_sha256_hex(hex)) {
      throw InvalidArgument("reconcile request content_sha256 is not a sha-256 digest");
    }
    Json state = {{"capability_id", capability_id},
                  {"content_sha256", hex},
                  {"installed", false},
                  {"active", false},
                  {"active_sha256", nullptr},
                  {"active_material_identity_digest", nullptr},
                  {"verification_digest", nullptr}};
    std::vector<std::string> reasons;
    const Material object = material_of(capability_id, hex);
    if (object.state == pc::SingleFileStore::State::kVerified) {
      state["installed"] = true;
      state["install_state"] = "applied";
    } else if (object.state == pc::SingleFileStore::State::kCorrupt) {
      state["install_state"] = "indeterminate";
      reasons.emplace_back("installed material does not verify");
    } else {
      state["install_state"] = "absent";
    }
    const std::string file_name = slot_file_name(name);
    const fs::path file = fs::path(activation_root_) / file_name;
    pc::HostFileSnapshot now;
    try {
      now = pc::read_host_file(file, file_name, 4 * kDefaultMaxBytes);
    } catch (const InvalidArgument&) {
      now.exists = true;  // something that is not a regular file: not ours
      now.bytes.clear();
    }
    const auto record = store_.read_record(record_key(name));
    if (!now.exists) {
      state["activation_state"] = "absent";
    } else if (!record || !listed(*record, pc::sha256_hex(now.bytes))) {
      state["activation_state"] = "indeterminate";
      reasons.emplace_back(file_name + " in the agents directory was not written by ctx");
    } else if (object.state == pc::SingleFileStore::State::kVerified &&
               pc::sha256_hex(rendered(object.bytes)) == pc::sha256_hex(now.bytes)) {
      const std::string& material = object.identity;
      state["active"] = true;
      state["activation_state"] = "applied";
      state["active_sha256"] = hex;
      state["active_material_identity_digest"] = material;
      state["verification_digest"] =
          verification(capability_id, name, material, pc::sha256_hex(now.bytes));
    } else {
      // ctx's file of another material (or of material no longer installed) is active.
      state["activation_state"] = "absent";
      const auto other = record->find("content_sha256");
      if (other != record->end() && other->is_string()) state["active_sha256"] = *other;
    }
    if (!reasons.empty()) state["reason"] = reasons.front();
    states.push_back(std::move(state));
  }
  return Json{{"capabilities", states}};
}

}  // namespace ctx::agent_installer
