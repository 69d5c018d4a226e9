// The installer suite (for any installer kind: its material and host file come from the kit
// config): target identity, an install/activate/reconcile round trip in a fresh root,
// idempotent install (nothing rewritten), refusal of mismatched material, the MaterialIdentity
// schema of file and tree material, install_from_source (when offered: streamed bodies verified,
// capped and read once), and recovery after a writer killed mid-staging, using the
// request contract documented in ctx/conformance/conformance.hpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/digest.hpp>
#include <ctx/support/text.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance::detail {
namespace {

// The material the suite installs: a skill by default; the kit config's "installer" section names
// another kind's (an agent file, an MCP server entry) for installers of that kind.
struct KindMaterial {
  std::string capability_id = "skill:ctx-conformance";
  std::string body =
      "---\nname: ctx-conformance\ndescription: conformance kit fixture\n---\nSay hello.\n";
  // A body of several 64 KiB chunks: "@PADDING@" in `large` becomes `padding` bytes of 'x'.
  std::string large =
      "---\nname: ctx-conformance\ndescription: conformance kit fixture\n---\n@PADDING@\n";
  std::size_t padding = 1u << 19;
  std::string large_body() const {
    std::string out = large;
    const auto at = out.find("@PADDING@");
    if (at != std::string::npos) out.replace(at, 9, std::string(padding, 'x'));
    return out;
  }
};

// A file of the host an activation edits (kit config "installer"."host_file").
struct HostFile {
  std::string path;                    // "@TEMP_DIR@" is the instance directory
  std::optional<std::string> content;  // the user's content before activation; absent: no file
  std::string conflicting;             // the user's own entry of the capability's name
};

KindMaterial& kind() {
  static KindMaterial material;
  return material;
}

// The MaterialIdentity digest plugin_abi.h states, computed here independently of any installer.
std::string material_identity_digest(const std::string& capability_id, const std::string& bytes) {
  const Json identity = {{"capability_id", capability_id},
                         {"content_bytes", bytes.size()},
                         {"content_sha256", support::sha256_hex(bytes)},
                         {"kind", capability_id.substr(0, capability_id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}};
  return support::canonical_digest(identity, support::Encoding::kAscii);
}

namespace fs = std::filesystem;

// The tree manifest of plugin_abi.h ("Tree material"): the canonical JSON manifest of `files`
// (path -> bytes), computed here independently of any installer.
std::string tree_manifest(const std::map<std::string, std::string>& files) {
  Json list = Json::array();
  for (const auto& [path, bytes] : files) {  // std::map: bytewise path order
    list.push_back(
        {{"bytes", bytes.size()}, {"path", path}, {"sha256", support::sha256_hex(bytes)}});
  }
  return support::canonical_json(Json{{"files", list}, {"schema", "ctx.skill-tree-v1"}},
                                 support::Encoding::kAscii);
}

// The tree root of plugin_abi.h ("Tree material"), the tree's material: totals of `files` and the
// digest of `manifest` (their manifest, or another one for a mismatched root).
std::string tree_root(const std::map<std::string, std::string>& files,
                      const std::string& manifest) {
  std::size_t bytes = 0;
  for (const auto& [path, content] : files) bytes += content.size();
  return support::canonical_json(Json{{"bytes", bytes},
                                      {"files", files.size()},
                                      {"manifest_sha256", support::sha256_hex(manifest)},
                                      {"schema", "ctx.skill-tree-root-v1"}},
                                 support::Encoding::kAscii);
}

std::map<std::string, std::string> sample_tree(std::size_t resource_bytes) {
  return {{"SKILL.md", kind().body},
          {"reference.md", "# Reference\n" + std::string(resource_bytes, 'r') + "\n"},
          {"scripts/run.sh", "#!/bin/sh\necho conformance\n"}};
}

// Writes `files` below `dir`.
void write_tree(const fs::path& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [path, bytes] : files) {
    fs::create_directories((dir / path).parent_path());
    std::ofstream(dir / path, std::ios::binary) << bytes;
  }
}

// The install request of tree material read from `source`: the root is the material, the
// manifest travels beside it.
Json tree_request(const fs::path& source, const std::map<std::string, std::string>& files) {
  const std::string manifest = tree_manifest(files);
  const std::string root = tree_root(files, manifest);
  return {{"capability_id", kind().capability_id},
          {"content_sha256", support::sha256_hex(root)},
          {"content_bytes", root.size()},
          {"manifest", manifest},
          {"material_identity_digest", material_identity_digest(kind().capability_id, root)},
          {"source", {{"directory", source.string()}}}};
}

Json file_request() {
  return {{"capability_id", kind().capability_id},
          {"content", kind().body},
          {"content_sha256", support::sha256_hex(kind().body)}};
}

// Every entry below `dir` (not following symlinks) with what a rewrite would change.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    out[it->path().lexically_relative(dir).string()] =
        std::to_string(st.st_ino) + "/" + std::to_string(st.st_size) + "/" +
        std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }
  return out;
}

std::set<std::string> paths_of(const std::map<std::string, std::string>& snapshot) {
  std::set<std::string> out;
  for (const auto& [path, state] : snapshot) out.insert(path);
  return out;
}

bool tree_material_enabled(const PluginUnderTest& plugin) {
  const Json& config = plugin.kit_config();
  const auto installer = config.find("installer");
  if (installer == config.end()) return true;
  return installer->value("tree_material", true);
}

ctx_bytes bytes_of(const std::string& text) {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// A host body source (ctx_body_source) over `files`, handing each file over in 4 KiB writes so
// that a plugin's cap can stop it mid-file. Counts reads and remembers the first refused write.
struct HostBodies {
  std::map<std::string, std::string> files;
  int reads = 0;
  ctx_code refused = CTX_OK;

  ctx_body_source source() {
    return ctx_body_source{sizeof(ctx_body_source), this, &HostBodies::read};
  }
  static ctx_code read(void* context, ctx_bytes path, ctx_sink* out) noexcept {
    auto& self = *static_cast<HostBodies*>(context);
    ++self.reads;
    const auto it = self.files.find(
        std::string(reinterpret_cast<const char*>(path.data), path.data ? path.size : 0));
    if (it == self.files.end()) return CTX_NOT_FOUND;
    const std::string& bytes = it->second;
    for (std::size_t at = 0; at < bytes.size(); at += 4096) {
      const std::size_t n = std::min<std::size_t>(4096, bytes.size() - at);
      const ctx_code code =
          out->write(out->context, reinterpret_cast<const uint8_t*>(bytes.data() + at), n);
      if (code != CTX_OK) {
        if (self.refused == CTX_OK) self.refused = code;
        return code;
      }
    }
    return CTX_OK;
  }
};

// Calls one request op and returns its reply object (recording failures).
class Installer {
 public:
  explicit Installer(PluginUnderTest& plugin) : Installer(plugin, plugin.fresh_config()) {}
  Installer(PluginUnderTest& plugin, const std::string& config)
      : ops_(*plugin.loaded().installer_ops()), instance_(plugin, config) {}

  bool created() const { return instance_.created().code == CTX_OK; }
  const std::string& create_message() const { return instance_.created().message; }

  Json target_identity() {
    return call("target_identity", [&](ctx_sink* out, ctx_error* err) {
      return ops_.target_identity(instance_.handle(), out, err);
    });
  }
  Json install(const Json& request) { return request_op("install", ops_.install, request); }
  Json activate(const Json& request) { return request_op("activate", ops_.activate, request); }
  Json deactivate(const Json& request) {
    return request_op("deactivate", ops_.deactivate, request);
  }
  Json reconcile(const Json& request) { return request_op("reconcile", ops_.reconcile, request); }
  // install_from_source (ABI minor 1) with `bodies` as the host's body source.
  Json install_from_source(const Json& request, HostBodies& bodies) {
    const std::string text = request.dump();
    const ctx_body_source source = bodies.source();
    return call("install_from_source", [&](ctx_sink* out, ctx_error* err) {
      return ops_.install_from_source(instance_.handle(), bytes_of(text), &source, out, err);
    });
  }

 private:
  using RequestFn = ctx_code (*)(void*, ctx_bytes, ctx_sink*, ctx_error*);

  Json request_op(const std::string& name, RequestFn fn, const Json& request) {
    const std::string text = request.dump();
    return call(name, [&](ctx_sink* out, ctx_error* err) {
      return fn(instance_.handle(), bytes_of(text), out, err);
    });
  }

  Json call(const std::string& name, const std::function<ctx_code(ctx_sink*, ctx_error*)>& op) {
    Sink sink;
    CallResult result = invoke(name, [&](ctx_error* err) { return op(sink.get(), err); });
    result.output = sink.text();
    return expect_ok_object(result, name);
  }

  const ctx_installer_ops& ops_;
  RawInstance instance_;
};

// State of kind().capability_id in a reconcile reply, or null when the reply does not list it.
Json state_of(const Json& reply) {
  if (!reply.is_object() || !reply.contains("capabilities") || !reply["capabilities"].is_array()) {
    ADD_FAILURE() << "reconcile reply has no \"capabilities\" array";
    return nullptr;
  }
  for (const Json& item : reply["capabilities"]) {
    if (item.is_object() && item.value("capability_id", "") == kind().capability_id) return item;
  }
  ADD_FAILURE() << "reconcile reply does not list " << kind().capability_id;
  return nullptr;
}

bool flag(const Json& state, const char* name) {
  if (!state.is_object() || !state.contains(name) || !state[name].is_boolean()) {
    ADD_FAILURE() << "reconcile state has no boolean \"" << name << "\"";
    return false;
  }
  return state[name].get<bool>();
}

// Grandchild host services for the crash test: the second cancellation poll kills the process.
int32_t kill_on_second_poll(void*) noexcept {
  static int polls = 0;
  if (++polls == 2) ::kill(::getpid(), SIGKILL);
  return 0;
}
void quiet_log(void*, int32_t, const char*, size_t) noexcept {}
void quiet_progress(void*, uint64_t, uint64_t) noexcept {}
int64_t zero_clock(void*) noexcept { return 0; }

// Runs `request` through a new instance created from `config` in a forked child whose host
// kills it (SIGKILL) at its second cancellation poll. Returns the child's wait status. The child
// calls the raw ABI only (no kit machinery) and never returns.
int install_in_doomed_child(PluginUnderTest& plugin, const std::string& config,
                            const std::string& request) {
  const ctx_plugin_descriptor& descriptor = plugin.descriptor();
  const ctx_installer_ops& ops = *plugin.loaded().installer_ops();
  const pid_t pid = ::fork();
  if (pid == 0) {
    static const ctx_host_api host = {sizeof(ctx_host_api), nullptr,         &quiet_log,
                                      &quiet_progress,      &kill_on_second_poll, &zero_clock};
    ctx_error err;
    void* instance = nullptr;
    if (descriptor.create(&host, bytes_of(config), &instance, &err) != CTX_OK) ::_exit(3);
    Sink sink;
    const ctx_code code = ops.install(instance, bytes_of(request), sink.get(), &err);
    ::_exit(code == CTX_OK ? 0 : 4);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

// The kit config's "installer" section (conformance.hpp). Returns what is wrong with it, or "".
std::string configure_kind(const Json& installer, std::optional<HostFile>& host_file) {
  if (!installer.is_object()) return "needs to be an object";
  if (installer.contains("tree_material") && !installer.at("tree_material").is_boolean()) {
    return "\"tree_material\" needs to be a boolean";
  }
  KindMaterial& material = kind();
  for (const auto& [key, target] :
       {std::pair{"capability_id", &material.capability_id}, std::pair{"material", &material.body},
        std::pair{"large_material", &material.large}}) {
    if (!installer.contains(key)) continue;
    if (!installer.at(key).is_string() || installer.at(key).get_ref<const std::string&>().empty()) {
      return std::string("\"") + key + "\" needs to be a non-empty string";
    }
    *target = installer.at(key).get<std::string>();
  }
  if (installer.contains("material") != installer.contains("capability_id") ||
      installer.contains("material") != installer.contains("large_material")) {
    return "names \"capability_id\", \"material\" and \"large_material\" together";
  }
  if (material.capability_id.find(':') == std::string::npos) {
    return "\"capability_id\" needs to be <kind>:<name>";
  }
  if (const auto it = installer.find("padding_bytes"); it != installer.end()) {
    if (!it->is_number_unsigned() || it->get<std::size_t>() < (1u << 17) ||
        it->get<std::size_t>() > (64u << 20)) {
      return "\"padding_bytes\" needs to be an integer from 131072 to 67108864";
    }
    material.padding = it->get<std::size_t>();
  }
  if (const auto it = installer.find("host_file"); it != installer.end()) {
    if (!it->is_object() || !it->contains("path") || !it->at("path").is_string() ||
        !it->contains("conflicting_content") || !it->at("conflicting_content").is_string() ||
        (it->contains("content") && !it->at("content").is_string())) {
      return "\"host_file\" needs a string \"path\", a string \"conflicting_content\" and an "
             "optional string \"content\"";
    }
    HostFile file;
    file.path = it->at("path").get<std::string>();
    if (it->contains("content")) file.content = it->at("content").get<std::string>();
    file.conflicting = it->at("conflicting_content").get<std::string>();
    host_file = std::move(file);
  }
  return "";
}

// The host file under the instance directory of the config made last.
fs::path host_file_path(const PluginUnderTest& plugin, const HostFile& file) {
  std::string path = file.path;
  const auto at = path.find("@TEMP_DIR@");
  if (at != std::string::npos) path.replace(at, 10, plugin.last_instance_dir().string());
  return path;
}

std::optional<std::string> read_optional(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

}  // namespace

void register_installer_suite(const std::shared_ptr<PluginUnderTest>& plugin) {
  std::optional<HostFile> host_file;
  {
    const Json& config = plugin->kit_config();
    const auto installer = config.find("installer");
    std::string problem;
    if (installer != config.end()) {
      problem = configure_kind(*installer, host_file);
    }
    if (!problem.empty()) {
      add_kit_test("KitConfig", "IsUsable",
                   [problem] { FAIL() << "kit config installer " << problem; });
      return;
    }
  }
  add_plugin_test(plugin, "Installer", "TargetIdentityDescribesTheRoot", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const Json identity = installer.target_identity();
    for (const char* field : {"device", "inode", "owner", "mode"}) {
      EXPECT_TRUE(identity.contains(field) && identity[field].is_number_unsigned())
          << "target identity needs an unsigned integer \"" << field << "\"";
    }
    EXPECT_TRUE(identity.contains("path") && identity["path"].is_string() &&
                !identity["path"].get<std::string>().empty())
        << "target identity needs a non-empty string \"path\"";
    EXPECT_EQ(installer.target_identity(), identity) << "target identity is not stable";
  });

  add_plugin_test(plugin, "Installer", "InstallActivateReconcileRoundTrip", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const std::string digest = support::sha256_hex(kind().body);
    const Json entry = {{"capability_id", kind().capability_id}, {"content_sha256", digest}};
    const Json reconcile = {{"capabilities", Json::array({entry})}};

    Json state = state_of(installer.reconcile(reconcile));
    EXPECT_FALSE(flag(state, "installed")) << "a fresh root reports the capability installed";
    EXPECT_FALSE(flag(state, "active")) << "a fresh root reports the capability active";

    const std::string material = material_identity_digest(kind().capability_id, kind().body);
    const Json installed = installer.install({{"capability_id", kind().capability_id},
                                              {"content", kind().body},
                                              {"content_sha256", digest}});
    EXPECT_EQ(installed.value("outcome", ""), "applied");
    EXPECT_EQ(installed.value("observed_material_identity_digest", ""), material)
        << "install must report the MaterialIdentity digest (plugin_abi.h), not a content hash";
    EXPECT_TRUE(support::is_sha256_hex(installed.value("verification_digest", "")))
        << "an applied install needs a sha-256 \"verification_digest\"";
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_FALSE(flag(state, "active"));

    const Json activated = installer.activate(entry);
    EXPECT_EQ(activated.value("outcome", ""), "applied");
    EXPECT_EQ(activated.value("observed_material_identity_digest", ""), material)
        << "activate must report the MaterialIdentity digest of the active material";
    EXPECT_TRUE(support::is_sha256_hex(activated.value("verification_digest", "")))
        << "an applied activation needs a sha-256 \"verification_digest\"";
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_TRUE(flag(state, "active"));
    EXPECT_EQ(state.value("active_material_identity_digest", Json()), material)
        << "reconcile must report the MaterialIdentity digest of the active material";
    EXPECT_TRUE(support::is_sha256_hex(state.value("verification_digest", "")))
        << "an active reconcile entry needs a sha-256 \"verification_digest\"";

    EXPECT_EQ(installer.deactivate({{"capability_id", kind().capability_id}}).value("outcome", ""),
              "applied");
    state = state_of(installer.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));
    EXPECT_FALSE(flag(state, "active"));
  });

  add_plugin_test(plugin, "Installer", "DigestMismatchIsNeverApplied", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const std::string wrong = support::sha256_hex("other bytes");
    const Json reply = installer.install({{"capability_id", kind().capability_id},
                                          {"content", kind().body},
                                          {"content_sha256", wrong}});
    EXPECT_NE(reply.value("outcome", ""), "applied");
    const Json entry = {{"capability_id", kind().capability_id}, {"content_sha256", wrong}};
    const Json state = state_of(installer.reconcile({{"capabilities", Json::array({entry})}}));
    EXPECT_FALSE(flag(state, "installed"))
        << "material that failed its digest is reported installed";
  });

  add_plugin_test(plugin, "Installer", "InstallIsIdempotent", [plugin] {
    const std::string config = plugin->fresh_config();
    const fs::path root = plugin->last_instance_dir();
    Installer installer(*plugin, config);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const Json first = installer.install(file_request());
    ASSERT_EQ(first.value("outcome", ""), "applied") << first.dump();
    const auto before = snapshot(root);
    const Json second = installer.install(file_request());
    EXPECT_EQ(second.value("outcome", ""), "applied")
        << "a second install of installed material must be applied";
    EXPECT_EQ(second.value("observed_material_identity_digest", ""),
              first.value("observed_material_identity_digest", ""));
    EXPECT_EQ(second.value("verification_digest", ""), first.value("verification_digest", ""));
    EXPECT_EQ(snapshot(root), before)
        << "a second install of installed material rewrote files (inode, size or mtime changed)";
    const Json entry = {{"capability_id", kind().capability_id},
                        {"content_sha256", support::sha256_hex(kind().body)}};
    EXPECT_TRUE(flag(state_of(installer.reconcile({{"capabilities", Json::array({entry})}})),
                     "installed"));
  });

  add_plugin_test(plugin, "Installer", "RefusesAMismatchedMaterialDigest", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    const std::string digest = support::sha256_hex(kind().body);
    Json other_identity = file_request();
    other_identity["material_identity_digest"] =
        material_identity_digest(kind().capability_id + "-other", kind().body);
    Json other_size = file_request();
    other_size["content_bytes"] = kind().body.size() + 1;
    for (const auto& [what, request] :
         {std::pair{"a material identity digest of other material", other_identity},
          std::pair{"a content_bytes that is not the body's", other_size}}) {
      const Json reply = installer.install(request);
      EXPECT_NE(reply.value("outcome", ""), "applied") << "an install with " << what
                                                       << " was applied";
      const Json entry = {{"capability_id", kind().capability_id}, {"content_sha256", digest}};
      EXPECT_FALSE(flag(state_of(installer.reconcile({{"capabilities", Json::array({entry})}})),
                        "installed"))
          << "an install with " << what << " left the material installed";
    }
    Json matching = file_request();
    matching["material_identity_digest"] =
        material_identity_digest(kind().capability_id, kind().body);
    matching["content_bytes"] = kind().body.size();
    EXPECT_EQ(installer.install(matching).value("outcome", ""), "applied")
        << "an install whose material_identity_digest and content_bytes match was not applied";
  });

  if (tree_material_enabled(*plugin)) {
    add_plugin_test(plugin, "Installer", "TreeMaterialIdentityFollowsTheSchema", [plugin] {
      Installer installer(*plugin);
      ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
      const auto files = sample_tree(300);
      const fs::path source = plugin->fresh_directory();
      write_tree(source, files);
      const Json request = tree_request(source, files);
      const std::string material = request.at("material_identity_digest");
      const Json installed = installer.install(request);
      EXPECT_EQ(installed.value("outcome", ""), "applied") << installed.dump();
      EXPECT_EQ(installed.value("observed_material_identity_digest", ""), material)
          << "tree material must be reported as the MaterialIdentity digest of its tree root "
             "(plugin_abi.h, \"Tree material\")";
      const Json entry = {{"capability_id", kind().capability_id},
                          {"content_sha256", request.at("content_sha256")}};
      const Json activated = installer.activate(entry);
      EXPECT_EQ(activated.value("outcome", ""), "applied");
      EXPECT_EQ(activated.value("observed_material_identity_digest", ""), material);
      const Json state = state_of(installer.reconcile({{"capabilities", Json::array({entry})}}));
      EXPECT_TRUE(flag(state, "installed"));
      EXPECT_TRUE(flag(state, "active"));
      EXPECT_EQ(state.value("active_material_identity_digest", Json()), material);

      // One changed resource byte is other material: never applied under this digest.
      std::map<std::string, std::string> altered = files;
      altered["reference.md"].back() = '!';
      const fs::path other = plugin->fresh_directory();
      write_tree(other, altered);
      Json wrong = request;
      wrong["source"]["directory"] = other.string();
      Installer fresh(*plugin);
      ASSERT_TRUE(fresh.created());
      EXPECT_NE(fresh.install(wrong).value("outcome", ""), "applied")
          << "a tree whose bytes do not match content_sha256 was applied";
      EXPECT_FALSE(
          flag(state_of(fresh.reconcile({{"capabilities", Json::array({entry})}})), "installed"));

      // The manifest must be the one the authorised root names, and the root the authorised one.
      // The altered tree's own manifest under the original root: its files match it, the root
      // does not.
      Json other_manifest = wrong;
      other_manifest["manifest"] = tree_manifest(altered);
      // The original files and manifest under a root naming another manifest (digest, size and
      // identity all consistent with that root).
      const std::string mismatched_root = tree_root(files, tree_manifest(altered));
      Json other_root = request;
      other_root["content_sha256"] = support::sha256_hex(mismatched_root);
      other_root["content_bytes"] = mismatched_root.size();
      other_root["material_identity_digest"] =
          material_identity_digest(kind().capability_id, mismatched_root);
      for (const auto& [what, bad] :
           {std::pair{"a manifest the authorised root does not name", other_manifest},
            std::pair{"a root whose manifest_sha256 is not the manifest's", other_root}}) {
        Installer again(*plugin);
        ASSERT_TRUE(again.created());
        EXPECT_NE(again.install(bad).value("outcome", ""), "applied")
            << "a tree install with " << what << " was applied";
        for (const Json& digest : {request.at("content_sha256"), bad.at("content_sha256")}) {
          const Json probe = {{"capability_id", kind().capability_id}, {"content_sha256", digest}};
          EXPECT_FALSE(flag(
              state_of(again.reconcile({{"capabilities", Json::array({probe})}})), "installed"))
              << "a tree install with " << what << " left material installed";
        }
      }
    });
  }

  if (tree_material_enabled(*plugin) && plugin->has_install_from_source()) {
    // install_from_source: the tree form with every listed file read once from the host's body
    // source, verified as it streams; installed material is not read again.
    add_plugin_test(plugin, "Installer", "InstallFromSourceVerifiesTheStreamedBodies", [plugin] {
      const auto files = sample_tree(20000);  // several 4 KiB writes per resource
      Json request = tree_request("/unused", files);
      request.erase("source");
      const Json entry = {{"capability_id", kind().capability_id},
                          {"content_sha256", request.at("content_sha256")}};
      const Json reconcile = {{"capabilities", Json::array({entry})}};
      const auto refused_and_absent = [&](const char* what, HostBodies& bodies) {
        Installer installer(*plugin);
        ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
        EXPECT_NE(installer.install_from_source(request, bodies).value("outcome", ""), "applied")
            << "install_from_source with " << what << " was applied";
        EXPECT_FALSE(flag(state_of(installer.reconcile(reconcile)), "installed"))
            << "install_from_source with " << what << " left the material installed";
      };

      // One altered byte, a missing file, and a file longer than its manifest entry (which the
      // installer must stop reading: a refused write, not a silently truncated body).
      HostBodies altered{files};
      altered.files["reference.md"][100] = '!';
      refused_and_absent("one altered byte", altered);
      HostBodies missing{files};
      missing.files.erase("scripts/run.sh");
      refused_and_absent("a listed file missing", missing);
      HostBodies longer{files};
      longer.files["reference.md"] += std::string(40000, 'x');
      refused_and_absent("a file longer than its entry", longer);
      EXPECT_NE(longer.refused, CTX_OK)
          << "the installer read past a file's listed size instead of refusing the write";

      Installer installer(*plugin);
      ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
      HostBodies exact{files};
      const Json installed = installer.install_from_source(request, exact);
      EXPECT_EQ(installed.value("outcome", ""), "applied") << installed.dump();
      EXPECT_EQ(installed.value("observed_material_identity_digest", ""),
                request.at("material_identity_digest").get<std::string>());
      EXPECT_EQ(exact.reads, static_cast<int>(files.size())) << "each file is read exactly once";
      EXPECT_TRUE(flag(state_of(installer.reconcile(reconcile)), "installed"));
      HostBodies again{files};
      const Json second = installer.install_from_source(request, again);
      EXPECT_EQ(second.value("outcome", ""), "applied");
      EXPECT_EQ(second.value("verification_digest", ""), installed.value("verification_digest", ""));
      EXPECT_EQ(again.reads, 0) << "installed material was read from the body source again";
    });
  }

  add_plugin_test(plugin, "Installer", "ReconcileAfterPartialStaging", [plugin] {
    const bool tree = tree_material_enabled(*plugin);
    const auto files = sample_tree(1 << 19);  // 512 KiB resource: many polls while streaming
    Json request;
    if (tree) {
      const fs::path source = plugin->fresh_directory();
      write_tree(source, files);
      request = tree_request(source, files);
    } else {
      const std::string body = kind().large_body();
      request = {{"capability_id", kind().capability_id},
                 {"content", body},
                 {"content_sha256", support::sha256_hex(body)}};
    }
    const std::string config = plugin->fresh_config();
    const fs::path root = plugin->last_instance_dir();
    {  // the root exists before the doomed writer starts, as it would in production
      Installer first(*plugin, config);
      ASSERT_TRUE(first.created()) << "create failed: " << first.create_message();
    }
    int status = 0;
    {
      const CallScope scope("install (in a child killed at its second cancellation poll)");
      status = install_in_doomed_child(*plugin, config, request.dump());
    }
    ASSERT_NE(status, -1) << "the kit could not run the doomed child";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the install was not interrupted: an installer must poll the host's cancelled() "
           "while it streams a body (the kit kills the process at the second poll); child status "
        << status;

    Installer recovered(*plugin, config);
    ASSERT_TRUE(recovered.created()) << "create after the crash failed: "
                                     << recovered.create_message();
    const Json entry = {{"capability_id", kind().capability_id},
                        {"content_sha256", request.at("content_sha256")}};
    const Json reconcile = {{"capabilities", Json::array({entry})}};
    Json state = state_of(recovered.reconcile(reconcile));
    EXPECT_FALSE(flag(state, "installed")) << "partial staging is reported installed";
    EXPECT_NE(state.value("install_state", ""), "applied");
    const Json reply = recovered.install(request);
    EXPECT_EQ(reply.value("outcome", ""), "applied") << "install after the crash: " << reply.dump();
    state = state_of(recovered.reconcile(reconcile));
    EXPECT_TRUE(flag(state, "installed"));

    // After recovery the root holds exactly what a root that never crashed holds.
    const std::string clean_config = plugin->fresh_config();
    const fs::path clean_root = plugin->last_instance_dir();
    Installer clean(*plugin, clean_config);
    ASSERT_TRUE(clean.created());
    EXPECT_EQ(clean.install(request).value("outcome", ""), "applied");
    EXPECT_EQ(paths_of(snapshot(root)), paths_of(snapshot(clean_root)))
        << "staging left by the killed writer survived recovery";
  });

  add_plugin_test(plugin, "Installer", "ActivateAndDeactivateAreIdempotent", [plugin] {
    Installer installer(*plugin);
    ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
    ASSERT_EQ(installer.install(file_request()).value("outcome", ""), "applied");
    const Json entry = {{"capability_id", kind().capability_id},
                        {"content_sha256", support::sha256_hex(kind().body)}};
    const Json first = installer.activate(entry);
    ASSERT_EQ(first.value("outcome", ""), "applied") << first.dump();
    const Json second = installer.activate(entry);
    EXPECT_EQ(second.value("outcome", ""), "applied") << "activating active material again";
    EXPECT_EQ(second.value("verification_digest", ""), first.value("verification_digest", ""));
    const Json id = {{"capability_id", kind().capability_id}};
    EXPECT_EQ(installer.deactivate(id).value("outcome", ""), "applied");
    EXPECT_EQ(installer.deactivate(id).value("outcome", ""), "applied")
        << "deactivating inactive material is applied (nothing to do)";
    EXPECT_FALSE(
        flag(state_of(installer.reconcile({{"capabilities", Json::array({entry})}})), "active"));
  });

  if (host_file) {
    // Activation edits a file the host reads; everything else in it is the user's.
    add_plugin_test(plugin, "Installer", "DeactivateRestoresTheHostFile", [plugin, host_file] {
      const std::string config = plugin->fresh_config();
      const fs::path file = host_file_path(*plugin, *host_file);
      if (host_file->content) write_file(file, *host_file->content);
      Installer installer(*plugin, config);
      ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
      ASSERT_EQ(installer.install(file_request()).value("outcome", ""), "applied");
      const Json entry = {{"capability_id", kind().capability_id},
                          {"content_sha256", support::sha256_hex(kind().body)}};
      const Json activated = installer.activate(entry);
      ASSERT_EQ(activated.value("outcome", ""), "applied") << activated.dump();
      const auto during = read_optional(file);
      ASSERT_TRUE(during.has_value()) << "activation left no host file";
      EXPECT_NE(during, host_file->content) << "activation did not change the host file";
      EXPECT_EQ(
          installer.deactivate({{"capability_id", kind().capability_id}}).value("outcome", ""),
          "applied");
      EXPECT_EQ(read_optional(file), host_file->content)
          << "deactivation did not restore the host file's bytes";
    });
    add_plugin_test(plugin, "Installer", "NeverOverwritesTheUsersOwnEntry", [plugin, host_file] {
      const std::string config = plugin->fresh_config();
      const fs::path file = host_file_path(*plugin, *host_file);
      write_file(file, host_file->conflicting);
      Installer installer(*plugin, config);
      ASSERT_TRUE(installer.created()) << "create failed: " << installer.create_message();
      ASSERT_EQ(installer.install(file_request()).value("outcome", ""), "applied");
      const Json entry = {{"capability_id", kind().capability_id},
                          {"content_sha256", support::sha256_hex(kind().body)}};
      EXPECT_NE(installer.activate(entry).value("outcome", ""), "applied")
          << "activation over the user's own entry of that name was applied";
      EXPECT_EQ(read_optional(file), host_file->conflicting);
      EXPECT_NE(
          installer.deactivate({{"capability_id", kind().capability_id}}).value("outcome", ""),
          "applied")
          << "deactivation removed (or claimed to remove) an entry ctx did not add";
      EXPECT_EQ(read_optional(file), host_file->conflicting);
      EXPECT_FALSE(
          flag(state_of(installer.reconcile({{"capabilities", Json::array({entry})}})), "active"));
    });
  }
}

}  // namespace ctx::conformance::detail
