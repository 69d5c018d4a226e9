#include "plugins/mcp-installer/core/mcp_store.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <ctx/sdk/error.hpp>
#include <filesystem>
#include <sstream>

#include "plugins/common/bytes.hpp"
#include "plugins/common/host_file.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/common/toml_text.hpp"
#include "plugins/mcp-installer/core/json_text.hpp"

namespace ctx::mcp_installer {
namespace {

namespace fs = std::filesystem;
namespace pc = ctx::plugin_common;
using Ordered = nlohmann::ordered_json;

constexpr std::string_view kVerificationSchema = "ctx.mcp-installer.verification.v1";
constexpr std::string_view kActivationSchema = "ctx.mcp-installer.activation-verification.v1";
constexpr std::uint64_t kDefaultMaxBytes = 256u << 10;
constexpr std::uint64_t kDefaultMaxConfigBytes = 64u << 20;
constexpr std::size_t kMaxArgs = 1024;
constexpr std::size_t kMaxEnv = 256;
constexpr char kServersKey[] = "mcpServers";
constexpr char kTomlServersKey[] = "mcp_servers";

// A refusal that leaves the host file unchanged: a failed outcome with this reason.
struct Refused {
  std::string reason;
};

// Throws Refused unless `after` is `before` with only the object at `object` changed, to `expect`.
void require_splice(const std::string& label, std::string_view before, std::string_view after,
                    const JsonObjectSpan& object, const Json& expect) {
  if (!only_object_changed(before, after, object, expect)) {
    throw Refused{label + " could not be edited without rewriting it; it was left unchanged"};
  }
}

std::string absolute(const Json& config, const char* key) {
  const std::string& path = pc::require_string(config, key, "mcp-installer config");
  if (path.empty() || path.front() != '/' || path.back() == '/' ||
      path.find('\0') != std::string::npos) {
    throw InvalidArgument("mcp-installer config " + std::string(key) + " must be an absolute path");
  }
  return path;
}

Json parse_config(std::string_view text) {
  const Json config = pc::parse_object(text, "mcp-installer config");
  for (const auto& [key, value] : config.items()) {
    if (key != "root" && key != "config_file" && key != "format" && key != "max_material_bytes" &&
        key != "max_config_bytes") {
      throw InvalidArgument("mcp-installer config has an unknown field");
    }
  }
  return config;
}

std::uint64_t positive(const Json& config, const char* key, std::uint64_t fallback) {
  const auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0) {
    throw InvalidArgument("mcp-installer config " + std::string(key) +
                          " must be a positive integer");
  }
  return it->get<std::uint64_t>();
}

bool is_env_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 128) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool has_nul(std::string_view text) noexcept { return text.find('\0') != std::string_view::npos; }

// sha-256 of the canonical (sorted, compact) JSON of an entry.
std::string entry_sha(const Json& entry) { return pc::sha256_hex(entry.dump()); }

bool listed(const Json& record, const std::string& sha) {
  const auto it = record.find("entries");
  if (it == record.end() || !it->is_array()) return false;
  return std::any_of(it->begin(), it->end(), [&](const Json& item) {
    return item.is_string() && item.get_ref<const std::string&>() == sha;
  });
}

std::string record_string(const std::optional<Json>& record, const char* key) {
  if (!record) return {};
  const auto it = record->find(key);
  return it != record->end() && it->is_string() ? it->get<std::string>() : std::string();
}

Json toml_to_json(const toml::node& node) {
  if (const auto* table = node.as_table()) {
    Json out = Json::object();
    for (const auto& [key, value] : *table) out[std::string(key.str())] = toml_to_json(value);
    return out;
  }
  if (const auto* array = node.as_array()) {
    Json out = Json::array();
    for (const auto& value : *array) out.push_back(toml_to_json(value));
    return out;
  }
  if (const auto* text = node.as_string()) return text->get();
  if (const auto* integer = node.as_integer()) return integer->get();
  if (const auto* number = node.as_floating_point()) return number->get();
  if (const auto* boolean = node.as_boolean()) return boolean->get();
  // Dates and times: their TOML text (toml++ prints a node through its own formatter).
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

std::string_view eol_of(std::string_view text) {
  return text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
}

// The [mcp_servers.<name>] block of `server`, lines ended with `eol`.
std::string toml_block(const McpServer& server, std::string_view eol) {
  const std::string e(eol);
  std::string out = "[" + std::string(kTomlServersKey) + "." + server.name + "]" + e;
  if (server.command) {
    out += "command = " + pc::toml_basic_string(*server.command) + e;
    if (!server.args.empty()) {
      out += "args = [";
      for (std::size_t i = 0; i < server.args.size(); ++i) {
        if (i > 0) out += ", ";
        out += pc::toml_basic_string(server.args[i]);
      }
      out += "]" + e;
    }
    if (!server.env.empty()) {
      out += e + "[" + std::string(kTomlServersKey) + "." + server.name + ".env]" + e;
      for (const auto& [key, value] : server.env) {
        out += key + " = " + pc::toml_basic_string(value) + e;
      }
    }
  } else {
    out += "url = " + pc::toml_basic_string(*server.url) + e;
  }
  return out;
}

// The JSON member value of `server` in its natural key order.
Ordered json_entry(const McpServer& server) {
  Ordered entry = Ordered::object();
  entry["type"] = server.type;
  if (server.command) {
    entry["command"] = *server.command;
    if (!server.args.empty()) entry["args"] = server.args;
    if (!server.env.empty()) {
      Ordered env = Ordered::object();
      for (const auto& [key, value] : server.env) env[key] = value;
      entry["env"] = env;
    }
  } else {
    entry["url"] = *server.url;
  }
  return entry;
}

}  // namespace

McpServer parse_mcp_server(std::string_view bytes) {
  Json spec;
  try {
    spec = pc::parse_object(bytes, "mcp server entry");
  } catch (const InvalidArgument&) {
    throw InvalidArgument("mcp server entry is not one json object");
  }
  McpServer server;
  const auto name = spec.find("name");
  if (name == spec.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    throw InvalidArgument("mcp server entry has no name");
  }
  server.name = name->get<std::string>();
  const bool has_command = spec.contains("command");
  const bool has_url = spec.contains("url");
  if (has_command == has_url) {
    throw InvalidArgument("mcp server entry needs exactly one of command and url");
  }
  std::string type;
  if (const auto it = spec.find("type"); it != spec.end()) {
    if (!it->is_string()) throw InvalidArgument("mcp server entry type is not a string");
    type = it->get<std::string>();
  }
  if (has_command) {
    const Json& command = spec.at("command");
    if (!command.is_string() || command.get_ref<const std::string&>().empty() ||
        has_nul(command.get_ref<const std::string&>())) {
      throw InvalidArgument("mcp server entry command is not a non-empty string");
    }
    const std::string& text = command.get_ref<const std::string&>();
    if (text.front() != '/' && text.find('/') != std::string::npos) {
      throw InvalidArgument(
          "mcp server entry command is a relative path (name a program or an absolute path)");
    }
    server.command = text;
    if (const auto args = spec.find("args"); args != spec.end()) {
      if (!args->is_array() || args->size() > kMaxArgs) {
        throw InvalidArgument("mcp server entry args is not an array of at most 1024 strings");
      }
      for (const Json& arg : *args) {
        if (!arg.is_string() || has_nul(arg.get_ref<const std::string&>())) {
          throw InvalidArgument("mcp server entry args holds something other than a string");
        }
        server.args.push_back(arg.get<std::string>());
      }
    }
    if (const auto env = spec.find("env"); env != spec.end()) {
      if (!env->is_object() || env->size() > kMaxEnv) {
        throw InvalidArgument("mcp server entry env is not an object of at most 256 variables");
      }
      for (const auto& [key, value] : env->items()) {
        if (!is_env_name(key)) {
          throw InvalidArgument("mcp server entry env has an invalid variable name");
        }
        if (!value.is_string() || has_nul(value.get_ref<const std::string&>())) {
          throw InvalidArgument("mcp server entry env has a value that is not a string");
        }
        server.env.emplace_back(key, value.get<std::string>());
      }
    }
    if (!type.empty() && type != "stdio") {
      throw InvalidArgument("mcp server entry with a command must have type stdio");
    }
    server.type = "stdio";
  } else {
    for (const char* key : {"args", "env"}) {
      if (spec.contains(key)) {
        throw InvalidArgument("mcp server entry with a url takes no " + std::string(key));
      }
    }
    const Json& url = spec.at("url");
    if (!url.is_string()) throw InvalidArgument("mcp server entry url is not a string");
    const std::string& text = url.get_ref<const std::string&>();
    if ((text.rfind("https://", 0) != 0 && text.rfind("http://", 0) != 0) || has_nul(text) ||
        text.find_first_of(" \t\r\n") != std::string::npos) {
      throw InvalidArgument("mcp server entry url is not an http or https url");
    }
    server.url = text;
    if (type.empty() || type == "http" || type == "streamable-http") {
      server.type = "http";
    } else if (type == "sse") {
      server.type = "sse";
    } else {
      throw InvalidArgument("mcp server entry type must be http, streamable-http or sse");
    }
  }
  std::sort(server.env.begin(), server.env.end());
  return server;
}

struct McpStore::Observed {
  JsonObjectSpan top;             // JSON format: the spans of the file's top-level object
  Json servers = Json::object();  // JSON format: the parsed mcpServers object (empty when absent)
  std::optional<Json> entry;      // canonical JSON of the entry under the name
};

McpStore::McpStore(std::string_view config_json, std::function<bool()> cancelled)
    : store_(
          [&] {
            const Json config = parse_config(config_json);
            return absolute(config, "root");
          }(),
          pc::SingleFileStore::Options{
              std::string(kPluginId), "mcp-server", std::string(kVerificationSchema),
              positive(parse_config(config_json), "max_material_bytes", kDefaultMaxBytes),
              [](const std::string& name, std::string_view bytes) -> std::optional<std::string> {
                try {
                  if (parse_mcp_server(bytes).name != name) {
                    return "mcp server entry name is not the capability's name";
                  }
                } catch (const InvalidArgument& e) {
                  return std::string(e.what());
                }
                return std::nullopt;
              },
              std::move(cancelled)}) {
  const Json config = parse_config(config_json);
  config_file_ = absolute(config, "config_file");
  const std::string& format = pc::require_string(config, "format", "mcp-installer config");
  if (format == "json") {
    format_ = Format::kJson;
  } else if (format == "toml") {
    format_ = Format::kToml;
  } else {
    throw InvalidArgument("mcp-installer config format must be \"json\" or \"toml\"");
  }
  max_config_bytes_ = positive(config, "max_config_bytes", kDefaultMaxConfigBytes);
}

std::string McpStore::label() const { return fs::path(config_file_).filename().string(); }

std::string McpStore::record_key(const std::string& name, const std::string& file) const {
  return pc::sha256_hex("mcp-entry\n" + file + "\n" + name);
}

Json McpStore::entry_of(const McpServer& server) const {
  if (format_ == Format::kJson) return Json::parse(json_entry(server).dump());
  if (server.type == "sse") {
    throw InvalidArgument("codex reads no sse mcp servers (only stdio and streamable http)");
  }
  Json entry = Json::object();
  if (server.command) {
    entry["command"] = *server.command;
    if (!server.args.empty()) entry["args"] = server.args;
    if (!server.env.empty()) {
      Json env = Json::object();
      for (const auto& [key, value] : server.env) env[key] = value;
      entry["env"] = env;
    }
  } else {
    entry["url"] = *server.url;
  }
  return entry;
}

McpStore::Observed McpStore::observe(const std::string& text, const std::string& name) const {
  Observed out;
  if (text.empty()) return out;
  if (format_ == Format::kJson) {
    // A host file can be large (~/.claude.json keeps every project's history): it is checked
    // whole but only its mcpServers value is parsed.
    try {
      pc::check_object(text, "config");
    } catch (const InvalidArgument&) {
      throw Refused{label() +
                    " is not one valid JSON object (or repeats a key); it was left unchanged"};
    }
    out.top = scan_object(text, top_level_object(text));
    const JsonMember* servers = out.top.find(kServersKey);
    if (servers == nullptr) return out;
    out.servers = Json::parse(std::string_view(text).substr(
        servers->value_begin, servers->value_end - servers->value_begin));
    if (!out.servers.is_object()) {
      throw Refused{label() + " has an mcpServers that is not an object; it was left unchanged"};
    }
    if (const auto entry = out.servers.find(name); entry != out.servers.end()) out.entry = *entry;
    return out;
  }
  toml::table table;
  try {
    table = toml::parse(text);
  } catch (const toml::parse_error&) {
    throw Refused{label() + " is not valid TOML; it was left unchanged"};
  }
  const toml::node* servers = table.get(kTomlServersKey);
  if (servers == nullptr) return out;
  if (!servers->is_table()) {
    throw Refused{label() + " has an mcp_servers that is not a table; it was left unchanged"};
  }
  if (const toml::node* entry = servers->as_table()->get(name)) out.entry = toml_to_json(*entry);
  return out;
}

std::string McpStore::verification(const std::string& capability_id, const std::string& material,
                                   const std::string& sha) const {
  return pc::sha256_hex(pc::dump({{"activation", label()},
                                  {"capability_id", capability_id},
                                  {"entry_sha256", sha},
                                  {"material_identity_digest", material},
                                  {"schema", kActivationSchema}}));
}

std::string McpStore::without_block(std::string text, const std::optional<Json>& record,
                                    const std::string& name) const {
  const std::string inserted = record_string(record, "inserted");
  const std::string block = record_string(record, "block");
  std::size_t at = inserted.empty() ? std::string::npos : text.rfind(inserted);
  std::size_t length = inserted.size();
  if (at == std::string::npos && !block.empty()) {
    at = text.rfind(block);
    length = block.size();
  }
  if (at == std::string::npos) {
    throw Refused{"the mcp server \"" + name + "\" in " + label() +
                  " was changed outside ctx; it was left unchanged"};
  }
  return text.erase(at, length);
}

std::string McpStore::add_json_entry(std::string text, const Observed& observed, bool existed,
                                     const McpServer& server, const Json& desired,
                                     const std::string& name, Json& next_record) const {
  const bool fresh = text.empty();
  if (fresh) {
    text = "{}\n";
    next_record["created_file"] = existed ? "empty" : "absent";
  }
  // The spans observe() found, unless the file was empty and is now "{}\n".
  const JsonObjectSpan top = fresh ? scan_object(text, top_level_object(text)) : observed.top;
  const Ordered value = json_entry(server);
  Json servers = observed.servers;
  servers[name] = desired;
  std::string next;
  if (const JsonMember* member = top.find(kServersKey)) {
    const JsonObjectSpan inner = scan_object(text, member->value_begin);
    if (const JsonMember* mine = inner.find(name)) {
      next = replace_member_value(text, *mine, value);
    } else {
      if (inner.members.empty()) {
        next_record["inside"] = text.substr(inner.open + 1, inner.close - inner.open - 1);
      }
      next = insert_member(text, inner, name, value);
    }
    require_splice(label(), text, next, inner, servers);
  } else {
    if (top.members.empty() && !fresh) {
      next_record["inside"] = text.substr(top.open + 1, top.close - top.open - 1);
    }
    next_record["created_container"] = true;
    next = insert_member(text, top, kServersKey, Ordered{{name, value}});
    Json document = pc::parse_object(text, "config");  // checked by observe
    document[kServersKey] = std::move(servers);
    require_splice(label(), text, next, top, document);
  }
  return next;
}

std::string McpStore::add_toml_entry(std::string text, const Observed& observed, bool existed,
                                     const std::optional<Json>& record, const McpServer& server,
                                     const Json& desired, const std::string& name,
                                     Json& next_record) const {
  if (observed.entry) text = without_block(std::move(text), record, name);
  const std::string_view eol = eol_of(text);
  const std::string block = toml_block(server, eol);
  std::string prefix;
  if (!text.empty()) {
    prefix = text.back() == '\n' ? std::string(eol) : std::string(eol) + std::string(eol);
  }
  std::string next = text + prefix + block;
  next_record["inserted"] = prefix + block;
  next_record["block"] = block;
  if (!existed) next_record["created_file"] = "absent";
  toml::table after;
  try {
    after = toml::parse(next);
  } catch (const toml::parse_error&) {
    throw Refused{label() +
                  " defines mcp_servers in a form ctx cannot append a server to; it was left "
                  "unchanged"};
  }
  const toml::node* entry = after.at_path(std::string(kTomlServersKey) + "." + name).node();
  if (entry == nullptr || toml_to_json(*entry) != desired) {
    throw Refused{label() + " could not be edited without rewriting it; it was left unchanged"};
  }
  return next;
}

Json McpStore::activate(std::string_view request_json) {
  constexpr std::string_view kWhat = "activate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = store_.name_of(capability_id);
  const std::string& hex = pc::require_string(request, "content_sha256", kWhat);
  if (!pc::is_sha256_hex(hex)) {
    throw InvalidArgument("activate request content_sha256 is not a lower-case sha-256 digest");
  }
  Json reply = {{"capability_id", capability_id}};
  const auto refuse = [&](const std::string& reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };
  store_.require_same_root();
  const auto object = store_.read(hex);
  if (object.state == pc::SingleFileStore::State::kAbsent) {
    return refuse("material is not installed");
  }
  if (object.state == pc::SingleFileStore::State::kCorrupt) {
    return refuse("installed material does not verify");
  }
  const McpServer server = parse_mcp_server(object.bytes);
  Json desired;
  try {
    desired = entry_of(server);
  } catch (const InvalidArgument& e) {
    return refuse(e.what());
  }
  const std::string desired_sha = entry_sha(desired);
  const std::string material = pc::SingleFileStore::material_identity(capability_id, object.bytes);
  const auto applied = [&](bool rewritten) {
    reply["outcome"] = "applied";
    reply["active_sha256"] = hex;
    reply["file"] = label();
    reply["rewritten"] = rewritten;
    reply["observed_material_identity_digest"] = material;
    reply["verification_digest"] = verification(capability_id, material, desired_sha);
    return reply;
  };

  const fs::path file = pc::end_of_symlink_chain(config_file_);
  const pc::DirectoryLock lock(file.parent_path());
  const pc::HostFileSnapshot before = pc::read_host_file(file, label(), max_config_bytes_);
  const std::string key = record_key(name, file.string());
  const auto record = store_.read_record(key);
  try {
    const Observed observed = observe(before.bytes, name);
    Json next_record = {{"content_sha256", hex}, {"entries", Json::array({desired_sha})}};
    for (const char* kept : {"created_file", "created_container", "inside", "inserted", "block"}) {
      if (record && record->contains(kept)) next_record[kept] = record->at(kept);
    }
    std::string text = before.bytes;
    if (observed.entry) {
      const std::string current = entry_sha(*observed.entry);
      if (!record || !listed(*record, current)) {
        throw Refused{label() + " already has an mcp server named \"" + name +
                      "\" that ctx did not add; it was left unchanged"};
      }
      if (current == desired_sha) {
        if (*record != next_record) store_.write_record(key, next_record);
        return applied(false);
      }
      next_record["entries"] = Json::array({current, desired_sha});
    }

    const std::string next = format_ == Format::kJson
                                 ? add_json_entry(std::move(text), observed, before.exists, server,
                                                  desired, name, next_record)
                                 : add_toml_entry(std::move(text), observed, before.exists, record,
                                                  server, desired, name, next_record);
    pc::backup_host_file_once(file, before);
    store_.write_record(key, next_record);
    pc::replace_host_file(file, next, before.exists ? before.mode : 0644, before, label());
    if (next_record["entries"].size() > 1) {
      next_record["entries"] = Json::array({desired_sha});
      store_.write_record(key, next_record);
    }
    return applied(true);
  } catch (const Refused& refused) {
    return refuse(refused.reason);
  }
}

Json McpStore::deactivate(std::string_view request_json) {
  constexpr std::string_view kWhat = "deactivate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = store_.name_of(capability_id);
  store_.require_same_root();
  const fs::path file = pc::end_of_symlink_chain(config_file_);
  const pc::DirectoryLock lock(file.parent_path());
  const pc::HostFileSnapshot before = pc::read_host_file(file, label(), max_config_bytes_);
  const std::string key = record_key(name, file.string());
  const auto record = store_.read_record(key);
  const auto done = [&](bool was_active) {
    store_.remove_record(key);
    return Json{
        {"capability_id", capability_id}, {"outcome", "applied"}, {"was_active", was_active}};
  };
  try {
    const Observed observed = observe(before.bytes, name);
    if (!observed.entry) return done(false);
    if (!record || !listed(*record, entry_sha(*observed.entry))) {
      throw Refused{"the mcp server \"" + name + "\" in " + label() +
                    " was not added by ctx (or was changed since); it was left unchanged"};
    }
    const std::string created_file = record_string(record, "created_file");
    std::string next;
    bool remove_file = false;
    if (format_ == Format::kJson) {
      const std::string& text = before.bytes;
      const JsonObjectSpan& top = observed.top;
      const JsonMember* servers_member = top.find(kServersKey);
      const JsonObjectSpan servers = scan_object(text, servers_member->value_begin);
      const auto index = static_cast<std::size_t>(
          std::find_if(servers.members.begin(), servers.members.end(),
                       [&](const JsonMember& m) { return m.key == name; }) -
          servers.members.begin());
      const bool created_container = record->value("created_container", false);
      const std::string inside = record_string(record, "inside");
      Json rest = observed.servers;
      rest.erase(name);
      if (servers.members.size() == 1 && created_container) {
        const auto top_index = static_cast<std::size_t>(servers_member - top.members.data());
        if (top.members.size() == 1 && !created_file.empty()) {
          remove_file = created_file == "absent";
          next = "";
        } else {
          next = remove_member(text, top, top_index, inside);
          Json document = pc::parse_object(text, "config");  // checked by observe
          document.erase(kServersKey);
          require_splice(label(), text, next, top, document);
        }
      } else {
        next = remove_member(text, servers, index, inside);
        require_splice(label(), text, next, servers, rest);
      }
    } else {
      next = without_block(before.bytes, record, name);
      remove_file = next.empty() && created_file == "absent";
      try {
        const toml::table after = toml::parse(next);
        if (after.at_path(std::string(kTomlServersKey) + "." + name).node() != nullptr) {
          throw Refused{"the mcp server \"" + name + "\" in " + label() +
                        " is defined more than once; it was left unchanged"};
        }
      } catch (const toml::parse_error&) {
        throw Refused{label() + " could not be edited without rewriting it; it was left unchanged"};
      }
    }
    if (remove_file) {
      pc::remove_host_file(file, before, label());
    } else {
      pc::replace_host_file(file, next, before.mode, before, label());
    }
    return done(true);
  } catch (const Refused& refused) {
    return Json{
        {"capability_id", capability_id}, {"outcome", "failed"}, {"reason", refused.reason}};
  }
}

Json McpStore::reconcile(std::string_view request_json) const {
  constexpr std::string_view kWhat = "reconcile request";
  const Json request = pc::parse_object(request_json, kWhat);
  const auto list = request.find("capabilities");
  if (list == request.end() || !list->is_array()) {
    throw InvalidArgument("reconcile request needs an array \"capabilities\"");
  }
  store_.require_same_root();
  const fs::path file = pc::end_of_symlink_chain(config_file_);
  std::optional<pc::HostFileSnapshot> now;
  try {
    now = pc::read_host_file(file, label(), max_config_bytes_);
  } catch (const InvalidArgument&) {
  }
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
    const auto object = store_.read(hex);
    if (object.state == pc::SingleFileStore::State::kVerified) {
      state["installed"] = true;
      state["install_state"] = "applied";
    } else if (object.state == pc::SingleFileStore::State::kCorrupt) {
      state["install_state"] = "indeterminate";
      reasons.emplace_back("installed material does not verify");
    } else {
      state["install_state"] = "absent";
    }
    const auto record = store_.read_record(record_key(name, file.string()));
    std::optional<Observed> observed;
    if (!now) {
      state["activation_state"] = "indeterminate";
      reasons.emplace_back(label() + " is not a regular file");
    } else {
      try {
        observed = observe(now->bytes, name);
      } catch (const Refused& refused) {
        state["activation_state"] = "indeterminate";
        reasons.push_back(refused.reason);
      }
    }
    if (observed) {
      if (!observed->entry) {
        state["activation_state"] = "absent";
      } else if (!record || !listed(*record, entry_sha(*observed->entry))) {
        state["activation_state"] = "indeterminate";
        reasons.emplace_back("the mcp server \"" + name + "\" in " + label() +
                             " was not added by ctx");
      } else {
        std::optional<std::string> desired_sha;
        if (object.state == pc::SingleFileStore::State::kVerified) {
          try {
            desired_sha = entry_sha(entry_of(parse_mcp_server(object.bytes)));
          } catch (const InvalidArgument&) {
          }
        }
        if (desired_sha && *desired_sha == entry_sha(*observed->entry)) {
          const std::string material =
              pc::SingleFileStore::material_identity(capability_id, object.bytes);
          state["active"] = true;
          state["activation_state"] = "applied";
          state["active_sha256"] = hex;
          state["active_material_identity_digest"] = material;
          state["verification_digest"] = verification(capability_id, material, *desired_sha);
        } else {
          state["activation_state"] = "absent";
          const std::string other = record_string(record, "content_sha256");
          if (!other.empty()) state["active_sha256"] = other;
        }
      }
    }
    if (!reasons.empty()) state["reason"] = reasons.front();
    states.push_back(std::move(state));
  }
  return Json{{"capabilities", states}};
}

}  // namespace ctx::mcp_installer
