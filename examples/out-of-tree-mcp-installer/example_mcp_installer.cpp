// Example out-of-tree MCP installer plugin "example-mcp-installer": installs a catalog MCP server
// entry ({"name", "command", "args"?, "env"?} or {"name", "url"}) as <root>/objects/<sha256>
// (staged in <root>/tmp/<sha256>.<pid>, published by one rename) and activates it as
// "mcpServers"."<name>" of a Claude Code style JSON file (config "config_file"). It keeps a
// record of the entry it wrote in <root>/records/<name>.json and never overwrites or removes an
// entry it did not write. The file is re-serialised (ordered keys, 2-space indentation), so a file
// laid out otherwise changes layout: ctx's own mcp-installer edits the text instead and keeps
// every other byte. Written atomically (temporary file, fsync, rename). Request contract:
// ctx/conformance/conformance.hpp; conformance.json gives the kit its material and host file.
//   config  {"root": "<absolute directory>", "config_file": "<absolute file>"}
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctx/sdk/plugin.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// sha-256 of `bytes`, hashed in 64 KiB chunks; with a `host`, its cancelled() is polled between
// chunks and a cancellation throws ctx::Error(kCancelled).
std::string sha256_hex(const std::string& bytes, const ctx::sdk::Host* host = nullptr) {
  constexpr std::size_t kChunk = 64 * 1024;
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  bool ok = md != nullptr && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1;
  for (std::size_t at = 0; ok && at < bytes.size(); at += kChunk) {
    if (host != nullptr && host->cancelled()) {
      EVP_MD_CTX_free(md);
      throw ctx::Error("install cancelled", ctx::ErrorCode::kCancelled);
    }
    ok = EVP_DigestUpdate(md, bytes.data() + at, std::min(kChunk, bytes.size() - at)) == 1;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  ok = ok && EVP_DigestFinal_ex(md, digest, &size) == 1;
  EVP_MD_CTX_free(md);
  if (!ok) throw ctx::Error("sha-256 failed", ctx::ErrorCode::kInternal);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

Json parse_request(std::string_view request) {
  Json value = Json::parse(request, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) throw ctx::InvalidArgument("request is not a json object");
  return value;
}

std::string string_field(const Json& request, const char* key) {
  const auto it = request.find(key);
  if (it == request.end() || !it->is_string()) {
    throw ctx::InvalidArgument(std::string("request needs a string \"") + key + "\"");
  }
  return it->get<std::string>();
}

// The name part of "<kind>:<name>", validated so it can never escape the root.
std::string capability_name(const Json& request) {
  const std::string id = string_field(request, "capability_id");
  const auto colon = id.find(':');
  const std::string name = colon == std::string::npos ? "" : id.substr(colon + 1);
  bool valid = !name.empty() && name.size() <= 64;
  for (std::size_t i = 0; valid && i < name.size(); ++i) {
    const char c = name[i];
    valid = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            (i > 0 && (c == '.' || c == '_' || c == '-'));
  }
  if (!valid) throw ctx::InvalidArgument("capability_id has an invalid name");
  return name;
}

std::string digest_field(const Json& request) {
  const std::string digest = string_field(request, "content_sha256");
  bool valid = digest.size() == 64;
  for (const char c : digest) valid = valid && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!valid) throw ctx::InvalidArgument("content_sha256 is not a sha-256 hex digest");
  return digest;
}

// Digest of the file's bytes, or empty when it cannot be read.
std::string file_digest(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream buffer;
  buffer << in.rdbuf();
  return sha256_hex(buffer.str());
}

// Writes `bytes` to `path` through `temp`, fsync and a rename.
void write_file(const fs::path& path, const std::string& bytes, const fs::path& temp) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (std::size_t at = 0; ok && at < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    ok = n > 0;
    if (ok) at += static_cast<std::size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw ctx::Error("could not write a file", ctx::ErrorCode::kInternal);
  fs::rename(temp, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The MaterialIdentity digest of plugin_abi.h: sha-256 of the canonical (sorted, compact,
// ASCII-escaped) JSON of the identity fields; kind is the capability id up to its first ':'.
std::string material_identity(const std::string& id, const std::string& sha, std::size_t size) {
  const Json identity = {{"capability_id", id},
                         {"content_bytes", size},
                         {"content_sha256", sha},
                         {"kind", id.substr(0, id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}};
  return sha256_hex(identity.dump(-1, ' ', true));
}

using Ordered = nlohmann::ordered_json;

// The host entry of a catalog MCP server entry; throws InvalidArgument when it is not one.
Ordered host_entry(const std::string& bytes) {
  const Json spec = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object() || spec.contains("command") == spec.contains("url")) {
    throw ctx::InvalidArgument("not an mcp server entry with one of command and url");
  }
  Ordered entry = Ordered::object();
  if (spec.contains("command")) {
    entry["type"] = "stdio";
    entry["command"] = spec.at("command");
    if (spec.contains("args")) entry["args"] = spec.at("args");
    if (spec.contains("env")) entry["env"] = spec.at("env");
  } else {
    entry["type"] = spec.value("type", "http");
    entry["url"] = spec.at("url");
  }
  return entry;
}

class McpStore final : public ctx::sdk::Installer {
 public:
  McpStore(const ctx::sdk::Host& host, std::string_view config) : host_(host) {
    const Json parsed = parse_request(config);
    root_ = string_field(parsed, "root");
    file_ = string_field(parsed, "config_file");
    if (!root_.is_absolute() || !file_.is_absolute()) {
      throw ctx::InvalidArgument("config root and config_file must be absolute");
    }
    for (const char* dir : {"objects", "records", "tmp"}) fs::create_directories(root_ / dir);
    sweep_dead_staging();
  }

  std::string target_identity() override {
    struct stat st {};
    if (::lstat(root_.c_str(), &st) != 0) throw ctx::Error("cannot stat the root");
    return Json{{"device", static_cast<std::uint64_t>(st.st_dev)},
                {"inode", static_cast<std::uint64_t>(st.st_ino)},
                {"owner", static_cast<std::uint64_t>(st.st_uid)},
                {"mode", static_cast<std::uint64_t>(st.st_mode)},
                {"path", root_.string()}}
        .dump();
  }
  std::string install(std::string_view request) override {
    return install_reply(parse_request(request)).dump();
  }
  std::string activate(std::string_view request) override {
    return activate_reply(parse_request(request)).dump();
  }
  std::string deactivate(std::string_view request) override {
    return deactivate_reply(parse_request(request)).dump();
  }
  std::string reconcile(std::string_view request) override {
    return reconcile_reply(parse_request(request)).dump();
  }

 private:
  Json install_reply(const Json& request) const {
    capability_name(request);
    const std::string digest = digest_field(request);
    if (request.contains("content_base64")) {
      throw ctx::Error("base64 content is not supported", ctx::ErrorCode::kUnimplemented);
    }
    const std::string content = string_field(request, "content");
    const std::string id = request["capability_id"];
    const std::string verification = sha256_hex("example-mcp-installer:" + digest);
    if (file_digest(object(digest)) == digest) {
      return {{"capability_id", id},
              {"outcome", "applied"},
              {"verification_digest", verification},
              {"observed_material_identity_digest",
               material_identity(id, digest, fs::file_size(object(digest)))}};
    }
    const std::string observed = sha256_hex(content, &host_);
    const std::string material = material_identity(id, observed, content.size());
    Json reply = {{"capability_id", id}, {"observed_material_identity_digest", material}};
    const bool size_matches = request.value("content_bytes", content.size()) == content.size();
    const bool material_matches = request.value("material_identity_digest", material) == material;
    bool entry = true;
    try {
      host_entry(content);
    } catch (const ctx::InvalidArgument&) {
      entry = false;
    }
    if (observed != digest || !size_matches || !material_matches || !entry) {
      reply["outcome"] = "failed";
      return reply;
    }
    write_file(object(digest), content, staging(digest));
    reply["outcome"] = "applied";
    reply["verification_digest"] = verification;
    return reply;
  }

  // The config document (an empty object when there is no file); nullopt when it is not JSON.
  std::optional<Ordered> document() const {
    if (!fs::exists(file_)) return Ordered::object();
    Ordered parsed = Ordered::parse(read_file(file_), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) return std::nullopt;
    if (parsed.contains("mcpServers") && !parsed["mcpServers"].is_object()) return std::nullopt;
    return parsed;
  }
  // What this installer recorded for `name` ({"created_file", "entry"}), or an empty object.
  Ordered record(const std::string& name) const {
    const fs::path path = root_ / "records" / (name + ".json");
    if (!fs::exists(path)) return Ordered::object();
    Ordered parsed = Ordered::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
    return parsed.is_object() ? parsed : Ordered::object();
  }
  static Ordered entry_of(const Ordered& record) {
    const auto it = record.find("entry");
    return it == record.end() ? Ordered() : *it;
  }

  Json activate_reply(const Json& request) const {
    const std::string name = capability_name(request);
    const std::string digest = digest_field(request);
    const Json failed = {{"capability_id", request["capability_id"]}, {"outcome", "failed"}};
    if (file_digest(object(digest)) != digest) return failed;
    const std::string content = read_file(object(digest));
    const Ordered entry = host_entry(content);
    auto doc = document();
    if (!doc) return failed;  // not JSON: left unchanged
    const Ordered mine = record(name);
    Ordered& servers = (*doc)["mcpServers"];
    if (servers.is_null()) servers = Ordered::object();
    if (servers.contains(name) && servers[name] != entry_of(mine)) return failed;  // the user's
    if (!servers.contains(name) || servers[name] != entry) {
      write_file(
          root_ / "records" / (name + ".json"),
          Ordered{{"created_file", mine.contains("created_file") ? mine.value("created_file", false)
                                                                 : !fs::exists(file_)},
                  {"entry", entry}}
              .dump(),
          staging(digest));
      servers[name] = entry;
      fs::create_directories(file_.parent_path());
      write_file(file_, doc->dump(2) + "\n", file_.string() + ".tmp");
    }
    return {{"capability_id", request["capability_id"]},
            {"outcome", "applied"},
            {"observed_material_identity_digest",
             material_identity(request["capability_id"], digest, content.size())},
            {"verification_digest", sha256_hex("example-mcp-active:" + digest)}};
  }

  Json deactivate_reply(const Json& request) const {
    const std::string name = capability_name(request);
    const Json failed = {{"capability_id", request["capability_id"]}, {"outcome", "failed"}};
    auto doc = document();
    if (!doc) return failed;
    const Ordered mine = record(name);
    const bool present = doc->contains("mcpServers") && (*doc)["mcpServers"].contains(name);
    if (present && (*doc)["mcpServers"][name] != entry_of(mine)) {
      return failed;  // not ours: never removed
    }
    if (present) {
      (*doc)["mcpServers"].erase(name);
      if ((*doc)["mcpServers"].empty()) doc->erase("mcpServers");
      if (doc->empty() && mine.value("created_file", false)) {
        fs::remove(file_);
      } else {
        write_file(file_, doc->dump(2) + "\n", file_.string() + ".tmp");
      }
    }
    fs::remove(root_ / "records" / (name + ".json"));
    return {{"capability_id", request["capability_id"]},
            {"outcome", "applied"},
            {"was_active", present}};
  }

  Json reconcile_reply(const Json& request) const {
    const auto list = request.find("capabilities");
    if (list == request.end() || !list->is_array()) {
      throw ctx::InvalidArgument("request needs an array \"capabilities\"");
    }
    const auto doc = document();
    Json states = Json::array();
    for (const Json& item : *list) {
      if (!item.is_object()) throw ctx::InvalidArgument("capabilities must be objects");
      const std::string name = capability_name(item);
      const std::string digest = digest_field(item);
      const bool installed = file_digest(object(digest)) == digest;
      bool active = false;
      if (installed && doc && doc->contains("mcpServers") && (*doc)["mcpServers"].contains(name)) {
        const Ordered mine = record(name);
        active = (*doc)["mcpServers"][name] == entry_of(mine) &&
                 entry_of(mine) == host_entry(read_file(object(digest)));
      }
      Json state = {
          {"capability_id", item["capability_id"]}, {"installed", installed}, {"active", active}};
      if (active) {
        state["active_material_identity_digest"] =
            material_identity(item["capability_id"], digest, fs::file_size(object(digest)));
        state["verification_digest"] = sha256_hex("example-mcp-active:" + digest);
      }
      states.push_back(std::move(state));
    }
    return {{"capabilities", states}};
  }

  // Removes staging files (tmp/<sha256>.<pid>) whose writer process is gone.
  void sweep_dead_staging() const {
    for (const auto& entry : fs::directory_iterator(root_ / "tmp")) {
      const std::string name = entry.path().filename().string();
      const auto dot = name.rfind('.');
      const pid_t writer = dot == std::string::npos ? 0 : std::atoi(name.c_str() + dot + 1);
      if (writer <= 0 || (::kill(writer, 0) != 0 && errno == ESRCH)) fs::remove(entry.path());
    }
  }

  fs::path object(const std::string& digest) const { return root_ / "objects" / digest; }
  fs::path staging(const std::string& digest) const {
    return root_ / "tmp" / (digest + "." + std::to_string(::getpid()));
  }
  ctx::sdk::Host host_;
  fs::path root_;
  fs::path file_;
};

}  // namespace

CTX_PLUGIN(McpStore, installer, "example-mcp-installer", "1.0.0");
