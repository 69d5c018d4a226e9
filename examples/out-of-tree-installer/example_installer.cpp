// Example out-of-tree installer plugin "example-installer": stores each capability's content as
// <root>/objects/<sha256> (staged in <root>/tmp/<sha256>.<pid>, published by one rename) and
// activates it by copying to <root>/active/<name>. It follows the installer request contract of
// ctx/conformance/conformance.hpp (file material only: conformance.json opts out of trees):
//   config     {"root": "<absolute directory>"} (created when missing; staging of dead writers
//              is swept at start)
//   install    {"capability_id", "content" | "content_base64", "content_sha256",
//               "content_bytes"?, "material_identity_digest"?} -> {"outcome", ...}
//              Installed material is never rewritten; the body is hashed in 64 KiB chunks and the
//              host's cancelled() is polled between them.
//   activate   {"capability_id", "content_sha256"}
//   deactivate {"capability_id"}
//   reconcile  {"capabilities": [{"capability_id", "content_sha256"}]}
// The whole plugin is the class Store and the CTX_PLUGIN line at the end.
// Capability ids are "<kind>:<name>" with name [a-z0-9][a-z0-9._-]{0,63}. (Base64 content is
// not supported by this example: it answers CTX_UNIMPLEMENTED.)
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

// Writes `bytes` to `path` through `temp` and a rename.
void write_file(const fs::path& path, const std::string& bytes, const fs::path& temp) {
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.flush();
    if (!out) throw ctx::Error("could not write a file", ctx::ErrorCode::kInternal);
  }
  fs::rename(temp, path);
}

// The MaterialIdentity digest of plugin_abi.h: sha-256 of the canonical (sorted, compact,
// ASCII-escaped) JSON of the identity fields; kind is the capability id up to its first ':'.
std::string material_identity(const std::string& id, const std::string& sha, std::size_t size) {
  const Json identity = {{"capability_id", id}, {"content_bytes", size}, {"content_sha256", sha},
                         {"kind", id.substr(0, id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}};
  return sha256_hex(identity.dump(-1, ' ', true));
}

class Store final : public ctx::sdk::Installer {
 public:
  Store(const ctx::sdk::Host& host, std::string_view config) : host_(host) {
    const Json parsed = parse_request(config);
    root_ = string_field(parsed, "root");
    if (!root_.is_absolute()) throw ctx::InvalidArgument("config root must be absolute");
    for (const char* dir : {"objects", "active", "tmp"}) fs::create_directories(root_ / dir);
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

  // Each op parses its request and answers the reply object.
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
    const std::string verification = sha256_hex("example-installer:" + digest);
    if (file_digest(object(digest)) == digest) {  // installed already: rewrite nothing
      return {{"capability_id", id}, {"outcome", "applied"}, {"verification_digest", verification},
              {"observed_material_identity_digest",
               material_identity(id, digest, fs::file_size(object(digest)))}};
    }
    const std::string observed = sha256_hex(content, &host_);
    const std::string material = material_identity(id, observed, content.size());
    Json reply = {{"capability_id", id}, {"observed_material_identity_digest", material}};
    const bool size_matches = request.value("content_bytes", content.size()) == content.size();
    const bool material_matches = request.value("material_identity_digest", material) == material;
    if (observed != digest || !size_matches || !material_matches) {
      reply["outcome"] = "failed";
      return reply;
    }
    write_file(object(digest), content, staging(digest));
    const bool verified = file_digest(object(digest)) == digest;
    reply["outcome"] = verified ? "applied" : "indeterminate";
    if (verified) reply["verification_digest"] = verification;
    return reply;
  }

  Json activate_reply(const Json& request) const {
    const std::string name = capability_name(request);
    const std::string digest = digest_field(request);
    if (file_digest(object(digest)) != digest) {
      return {{"capability_id", request["capability_id"]}, {"outcome", "failed"}};
    }
    std::ifstream in(object(digest), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    write_file(root_ / "active" / name, buffer.str(), staging(digest));
    return {{"capability_id", request["capability_id"]},
            {"outcome", "applied"},
            {"observed_material_identity_digest",
             material_identity(request["capability_id"], digest, buffer.str().size())},
            {"verification_digest", sha256_hex("example-installer-active:" + digest)}};
  }

  Json deactivate_reply(const Json& request) const {
    const std::string name = capability_name(request);
    const bool removed = fs::remove(root_ / "active" / name);
    return {{"capability_id", request["capability_id"]},
            {"outcome", "applied"},
            {"was_active", removed}};
  }

  Json reconcile_reply(const Json& request) const {
    const auto list = request.find("capabilities");
    if (list == request.end() || !list->is_array()) {
      throw ctx::InvalidArgument("request needs an array \"capabilities\"");
    }
    Json states = Json::array();
    for (const Json& item : *list) {
      if (!item.is_object()) throw ctx::InvalidArgument("capabilities must be objects");
      const std::string name = capability_name(item);
      const std::string digest = digest_field(item);
      const bool installed = file_digest(object(digest)) == digest;
      const bool active = installed && file_digest(root_ / "active" / name) == digest;
      Json state = {{"capability_id", item["capability_id"]},
                    {"installed", installed},
                    {"active", active}};
      if (active) {
        state["active_material_identity_digest"] = material_identity(
            item["capability_id"], digest, fs::file_size(root_ / "active" / name));
        state["verification_digest"] = sha256_hex("example-installer-active:" + digest);
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
};

}  // namespace

CTX_PLUGIN(Store, installer, "example-installer", "1.0.0");
