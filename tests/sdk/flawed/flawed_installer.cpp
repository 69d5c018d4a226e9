// A deliberately flawed installer (tests only) over a directory root: otherwise it follows the
// kit's installer contract (obj-<sha> files, stage-* staging swept at create, active-<digest>
// markers), with one flaw chosen by its config, so the kit's installer suite must fail it in the
// matching test. config {"root": "<dir>", "flaw": "rewrites" | "ignores-identity" |
// "never-polls" | "leaves-staging"}:
//   rewrites          writes the object again on every install
//   ignores-identity  applies whatever content_bytes / material_identity_digest say
//   never-polls       never asks the host whether it is cancelled
//   leaves-staging    never sweeps staging left by a dead writer
#include <ctx/sdk/plugin.hpp>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

std::string material_identity(const std::string& id, const std::string& sha, std::size_t bytes) {
  return sha256_hex(Json{{"capability_id", id},
                         {"content_bytes", bytes},
                         {"content_sha256", sha},
                         {"kind", id.substr(0, id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}}
                        .dump(-1, ' ', true));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

Json parse(std::string_view text) {
  Json value = Json::parse(text, nullptr, false);
  if (!value.is_object()) throw ctx::InvalidArgument("request is not a json object");
  return value;
}

std::string text_of(const Json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_string()) {
    throw ctx::InvalidArgument(std::string("request needs a string ") + key);
  }
  return object[key].get<std::string>();
}

class FlawedInstaller final : public ctx::sdk::Installer {
 public:
  FlawedInstaller(const ctx::sdk::Host& host, std::string_view config) : host_(host) {
    const Json c = parse(config);
    root_ = text_of(c, "root");
    flaw_ = text_of(c, "flaw");
    fs::create_directories(root_);
    if (flaw_ != "leaves-staging") {
      for (const auto& entry : fs::directory_iterator(root_)) {
        if (entry.path().filename().string().rfind("stage-", 0) == 0) fs::remove(entry.path());
      }
    }
  }

  std::string target_identity() override {
    struct stat st {};
    ::lstat(root_.c_str(), &st);
    return Json{{"device", st.st_dev}, {"inode", st.st_ino}, {"owner", st.st_uid},
                {"mode", st.st_mode},  {"path", root_.string()}}
        .dump();
  }

  std::string install(std::string_view request) override {
    const Json r = parse(request);
    const std::string id = text_of(r, "capability_id");
    const std::string expected = text_of(r, "content_sha256");
    static int counter = 0;
    const fs::path stage = root_ / ("stage-" + std::to_string(::getpid()) + "-" +
                                    std::to_string(counter++));
    std::ofstream(stage) << "partial";
    std::string body;
    if (r.contains("content")) {
      body = text_of(r, "content");
      poll();
      poll();
    } else if (r.contains("source") && r["source"].contains("directory")) {
      body = manifest(text_of(r["source"], "directory"));
    } else {
      fs::remove(stage);
      throw ctx::InvalidArgument("flawed-installer reads content or source.directory only");
    }
    const std::string sha = sha256_hex(body);
    const std::string material = material_identity(id, sha, body.size());
    Json out = {{"capability_id", id}, {"observed_material_identity_digest", material}};
    bool ok = sha == expected;
    if (flaw_ != "ignores-identity") {
      if (r.contains("content_bytes") && r["content_bytes"] != body.size()) ok = false;
      if (r.contains("material_identity_digest") && r["material_identity_digest"] != material) {
        ok = false;
      }
    }
    if (!ok) {
      fs::remove(stage);
      out["outcome"] = "failed";
      return out.dump();
    }
    const fs::path object = root_ / ("obj-" + sha);
    if (flaw_ == "rewrites" || !fs::exists(object)) {
      std::ofstream(stage, std::ios::binary | std::ios::trunc) << body;
      fs::remove(object);
      fs::rename(stage, object);
    } else {
      fs::remove(stage);
    }
    out["outcome"] = "applied";
    out["verification_digest"] = sha256_hex("verified " + sha);
    return out.dump();
  }

  std::string activate(std::string_view request) override {
    const Json r = parse(request);
    const std::string id = text_of(r, "capability_id");
    const std::string sha = text_of(r, "content_sha256");
    const fs::path object = root_ / ("obj-" + sha);
    if (!fs::exists(object)) return Json{{"capability_id", id}, {"outcome", "failed"}}.dump();
    std::ofstream(marker(id)) << sha;
    return Json{{"capability_id", id},
                {"outcome", "applied"},
                {"observed_material_identity_digest",
                 material_identity(id, sha, read_file(object).size())},
                {"verification_digest", sha256_hex("active " + sha)}}
        .dump();
  }

  std::string deactivate(std::string_view request) override {
    const std::string id = text_of(parse(request), "capability_id");
    fs::remove(marker(id));
    return Json{{"capability_id", id}, {"outcome", "applied"}}.dump();
  }

  std::string reconcile(std::string_view request) override {
    const Json r = parse(request);
    if (!r.contains("capabilities") || !r["capabilities"].is_array()) {
      throw ctx::InvalidArgument("reconcile needs capabilities");
    }
    Json states = Json::array();
    for (const Json& item : r["capabilities"]) {
      if (!item.is_object()) throw ctx::InvalidArgument("reconcile entries are objects");
      const std::string id = text_of(item, "capability_id");
      const std::string sha = text_of(item, "content_sha256");
      const fs::path object = root_ / ("obj-" + sha);
      const bool installed = fs::exists(object);
      const bool active = installed && fs::exists(marker(id)) && read_file(marker(id)) == sha;
      Json state = {{"capability_id", id}, {"installed", installed}, {"active", active}};
      if (active) {
        state["active_material_identity_digest"] =
            material_identity(id, sha, read_file(object).size());
        state["verification_digest"] = sha256_hex("active " + sha);
      }
      states.push_back(state);
    }
    return Json{{"capabilities", states}}.dump();
  }

 private:
  void poll() {
    if (flaw_ != "never-polls" && host_.cancelled()) {
      throw ctx::Error("cancelled", ctx::ErrorCode::kCancelled);
    }
  }
  fs::path marker(const std::string& id) const { return root_ / ("active-" + sha256_hex(id)); }
  // The tree root of plugin_abi.h (the material: totals and the manifest's digest) over the
  // regular files below `dir`, polling per file.
  std::string manifest(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      poll();
      if (entry.is_regular_file()) {
        files[entry.path().lexically_relative(dir).generic_string()] = read_file(entry.path());
      }
    }
    Json list = Json::array();
    std::size_t total = 0;
    for (const auto& [path, bytes] : files) {
      list.push_back({{"bytes", bytes.size()}, {"path", path}, {"sha256", sha256_hex(bytes)}});
      total += bytes.size();
    }
    const std::string text =
        Json{{"files", list}, {"schema", "ctx.skill-tree-v1"}}.dump(-1, ' ', true);
    return Json{{"bytes", total},
                {"files", files.size()},
                {"manifest_sha256", sha256_hex(text)},
                {"schema", "ctx.skill-tree-root-v1"}}
        .dump(-1, ' ', true);
  }

  ctx::sdk::Host host_;
  fs::path root_;
  std::string flaw_;
};

}  // namespace

CTX_PLUGIN(FlawedInstaller, installer, "flawed-installer", "1.0.0");
