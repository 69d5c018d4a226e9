// The real skill-installer .so through the host's pinned loader and plugin registry, as the
// runtime drives it: install of a directory-tree skill through AbiInstaller, then activation and
// reconcile through activation_port_from_registry with the engine's own MaterialIdentity, so the
// tree digest the SDK header states is the material identity the engine authorises.
#include <gtest/gtest.h>
#include <unistd.h>

#include <ctx/loader/plugin_loader.hpp>

#include "host/app/installation.hpp"
#include "host/engine/identities.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/plugin_ports.hpp"
#include "tests/plugins/skill-installer/skill_store_fixture.hpp"

namespace ctx::skill_installer {
namespace {

using namespace ctx::skill_installer::testing;

class SkillInstallerPluginTest : public SkillStoreTest {
 protected:
  void SetUp() override {
    SkillStoreTest::SetUp();
    loader_ = std::make_unique<plugins::PluginLoader>(base_ / "loader-state");
    registry_.add(loader_->load(loader_->inspect_for_pin(CTX_SKILL_INSTALLER_SO)));
  }

  std::unique_ptr<plugins::PluginLoader> loader_;
  ::ctx::app::LoadedPlugins registry_;
};

TEST_F(SkillInstallerPluginTest, TreeSkillInstallsAndActivatesUnderTheEnginesMaterialIdentity) {
  const auto files = sample_tree(100000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string root = root_of(files);  // the tree material: the root over the manifest
  const auto material = engine::MaterialIdentity::create(
      "skill:pdf", engine::CapabilityKind::kSkill, request.at("content_sha256"),
      static_cast<std::int64_t>(root.size()));

  plugins::AbiInstaller installer(
      registry_.registry().get(plugins::PluginKind::kInstaller, "skill-installer"), config());
  Json install = request;
  install["material_identity_digest"] = material.identity_digest();
  const core::Json reply = installer.install(core::Json::parse(install.dump()));
  EXPECT_EQ(reply.at("outcome"), "applied") << reply.dump();
  EXPECT_EQ(reply.at("observed_material_identity_digest"), material.identity_digest());
  EXPECT_EQ(installer.target_identity().path, root_.string());

  const auto port = runtime::activation_port_from_registry(registry_, "skill-installer", config());
  const engine::ActivationRequest activation{material};
  engine::ActivationObservation seen = port->activate(activation);
  ASSERT_EQ(seen.result, engine::ActivationResult::kApplied) << seen.reason;
  EXPECT_EQ(seen.observed_material_identity_digest, material.identity_digest());
  EXPECT_EQ(read(skills_ / "pdf" / "scripts" / "run.sh"), files.at("scripts/run.sh"));
  seen = port->reconcile(activation);
  EXPECT_EQ(seen.result, engine::ActivationResult::kApplied) << seen.reason;
  EXPECT_EQ(seen.observed_material_identity_digest, material.identity_digest());

  // A tampered tree: the installer cannot vouch for it, and the engine hears "indeterminate",
  // not "verifiably inactive".
  const fs::path object = root_ / "objects" / material.content_sha256();
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  write(object / "extra.md", "injected\n");
  seen = port->reconcile(activation);
  EXPECT_EQ(seen.result, engine::ActivationResult::kIndeterminate);
  fs::remove(object / "extra.md");
  EXPECT_EQ(port->reconcile(activation).result, engine::ActivationResult::kApplied);

  EXPECT_EQ(port->deactivate(activation).result, engine::ActivationResult::kApplied);
  EXPECT_EQ(port->reconcile(activation).result, engine::ActivationResult::kFailed);
}

// install_from_source through the ABI: the bodies come from the host's lookup (each path read
// once, in 64 KiB writes), the object is the one the directory form publishes, and a lookup that
// lacks a listed file or serves more bytes than listed publishes nothing.
TEST_F(SkillInstallerPluginTest, InstallFromSourceStreamsTheHostsBodiesThroughTheAbi) {
  const auto files = sample_tree(200000);  // several 64 KiB writes for the big file
  Json request = tree_request("skill:pdf", "/unused", files);
  request.erase("source");
  const std::string hex = request.at("content_sha256");
  plugins::AbiInstaller installer(
      registry_.registry().get(plugins::PluginKind::kInstaller, "skill-installer"), config());

  for (const auto& [what, served] :
       {std::pair{"a listed file missing", [&] {
          auto out = files;
          out.erase("scripts/run.sh");
          return out;
        }()},
        std::pair{"a file longer than listed", [&] {
          auto out = files;
          out["SKILL.md"] += "more";
          return out;
        }()}}) {
    SCOPED_TRACE(what);
    const auto& tree = served;  // a plain name: clang before 16 cannot capture a binding
    const core::Json reply = *installer.install_from_source(
        core::Json::parse(request.dump()),
        [&tree](std::string_view path) -> std::optional<std::string_view> {
          const auto it = tree.find(std::string(path));
          if (it == tree.end()) return std::nullopt;
          return it->second;
        });
    EXPECT_EQ(reply.at("outcome"), "failed") << reply.dump();
    EXPECT_FALSE(fs::exists(root_ / "objects" / hex));
    EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  }

  std::map<std::string, int> reads;
  const auto reply = installer.install_from_source(
      core::Json::parse(request.dump()),
      [&](std::string_view path) -> std::optional<std::string_view> {
        ++reads[std::string(path)];
        const auto it = files.find(std::string(path));
        if (it == files.end()) return std::nullopt;
        return it->second;
      });
  ASSERT_TRUE(reply.has_value()) << "the in-tree installer offers install_from_source";
  EXPECT_EQ(reply->at("outcome"), "applied") << reply->dump();
  EXPECT_EQ(reply->at("rewritten"), true);
  for (const auto& [path, bytes] : files) {
    EXPECT_EQ(reads[path], 1) << path;
    EXPECT_EQ(read(root_ / "objects" / hex / path), bytes) << path;
  }
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  // The directory form of the same tree finds it installed: one object for both forms.
  const core::Json again = installer.install(
      core::Json::parse(tree_request("skill:pdf", source_tree("src", files), files).dump()));
  EXPECT_EQ(again.at("outcome"), "applied");
  EXPECT_EQ(again.at("rewritten"), false);
}

TEST_F(SkillInstallerPluginTest, TargetIdentityDigestChangesWhenTheRootIsReplaced) {
  plugins::AbiInstaller installer(
      registry_.registry().get(plugins::PluginKind::kInstaller, "skill-installer"), config());
  const engine::TargetIdentity before = installer.target_identity();
  EXPECT_EQ(before.owner, ::geteuid());
  EXPECT_EQ(before.mode & 0777, 0700u);
  fs::rename(root_, base_ / "moved");
  fs::create_directory(root_);
  ::chmod(root_.c_str(), 0700);
  const engine::TargetIdentity after = installer.target_identity();
  EXPECT_NE(after.digest(), before.digest());
  EXPECT_EQ(after.path, before.path);
  EXPECT_THROW(installer.install(core::Json::parse(
                   Json{{"capability_id", "skill:pdf"},
                        {"content", kBody},
                        {"content_sha256", plugin_common::sha256_hex(kBody)}}
                       .dump())),
               Error);
}

}  // namespace
}  // namespace ctx::skill_installer
