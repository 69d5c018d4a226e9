// app::Installation on a real state dir with the real Claude Code adapter and skill installer
// modules: the lock and the key are each read once, only pinned plugins are loaded, and the
// ports it makes are the pinned plugins' (identity digests as the lock pins them).
#include "host/app/installation.hpp"

#include <gtest/gtest.h>

#include <ctx/loader/errors.hpp>
#include <filesystem>

#include "host/app/state_layout.hpp"
#include "host/core/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::app {
namespace {

namespace fs = std::filesystem;
using plugins::PluginKind;

class InstallationTest : public ::testing::Test {
 protected:
  void SetUp() override { runtime::init_state_dir(dir_); }
  // Pins `file` in the state dir's plugins.lock.json; returns its entry.
  plugins::LockEntry pin(const fs::path& file) const {
    const plugins::LockEntry entry = inspect_plugin_for_pin(dir_, file);
    plugins::LockFile::update(dir_ / "plugins.lock.json",
                              [&](plugins::LockFile& lock) { lock.upsert(entry); });
    return entry;
  }

  ctx::testing::TempDir temp_;
  fs::path dir_ = temp_.path() / "state";
};

TEST_F(InstallationTest, ReadsThePluginLockOnceWhenMade) {
  const Installation before(dir_);
  const plugins::LockEntry entry = pin(CTX_SKILL_INSTALLER_SO);
  EXPECT_FALSE(before.pinned(PluginKind::kInstaller, "skill-installer"));
  EXPECT_FALSE(before.load(PluginKind::kInstaller, {"skill-installer"})
                   ->installer_identity("skill-installer"));
  const Installation after(dir_);
  EXPECT_TRUE(after.pinned(PluginKind::kInstaller, "skill-installer"));
  EXPECT_EQ(after.lock().entries().size(), 1u);
  EXPECT_EQ(*after.load(PluginKind::kInstaller, {"skill-installer"})
                 ->installer_identity("skill-installer"),
            entry.identity().digest());
}

TEST_F(InstallationTest, ReadsTheKeyOnceOnFirstUse) {
  pin(CTX_CLAUDE_CODE_HOST_SO);
  const Installation installation(dir_);
  const std::string key = runtime::read_installation_key(dir_);
  EXPECT_EQ(installation.key(), key);
  // Read once: the key file going away afterwards changes nothing for this installation.
  fs::remove(dir_ / runtime::kInstallationKeyFile);
  EXPECT_EQ(installation.key(), key);
  EXPECT_NE(installation.host_adapter("claude-code"), nullptr);
  // A new installation reads it again, on first use only: making one does not need it.
  const Installation fresh(dir_);
  EXPECT_THROW((void)fresh.key(), NotFound);
  EXPECT_THROW((void)fresh.host_adapter("claude-code"), NotFound);
}

TEST_F(InstallationTest, MakesOnlyPinnedHostAdaptersWithAnObjectConfig) {
  const Installation none(dir_);
  EXPECT_THROW((void)none.host_adapter("claude-code"), plugins::PluginNotPinned);
  pin(CTX_CLAUDE_CODE_HOST_SO);
  const Installation installation(dir_);
  EXPECT_THROW((void)installation.host_adapter("claude-code", core::Json::array()),
               InvalidArgument);
  // The adapter is the pinned module, created with the installation key: it names the
  // project's skills directory under the project it was given.
  const fs::path project = temp_.path() / "project";
  const auto adapter = installation.host_adapter(
      "claude-code", core::Json{{"project_dir", project.string()}, {"scope", "project"}});
  const auto locations = adapter->install_locations();
  ASSERT_TRUE(locations && locations->contains("skills"));
  EXPECT_FALSE((*locations)["skills"].get<std::string>().empty());
}

TEST_F(InstallationTest, LoadsOnlyThePinnedInstallersOfTheIdsAsked) {
  const plugins::LockEntry entry = pin(CTX_SKILL_INSTALLER_SO);
  const Installation installation(dir_);
  const auto loaded =
      installation.load(PluginKind::kInstaller, {"skill-installer", "agent-installer"});
  EXPECT_EQ(loaded->installer_identity("skill-installer"), entry.identity().digest());
  EXPECT_FALSE(loaded->installer_identity("agent-installer"));
  EXPECT_FALSE(loaded->verifier_identity("skill-installer"));
  EXPECT_THROW((void)loaded->installer("agent-installer", "{}"), plugins::PluginNotPinned);
  const auto none = installation.load(PluginKind::kInstaller, {"agent-installer"});
  EXPECT_FALSE(none->installer_identity("skill-installer"));
  const auto driver = loaded->installer(
      "skill-installer", core::canonical_json(core::Json{{"root", (dir_ / "skills").string()}}));
  EXPECT_EQ(driver->target_identity(),
            loaded
                ->installer("skill-installer",
                            core::canonical_json(core::Json{{"root", (dir_ / "skills").string()}}))
                ->target_identity());
}

TEST_F(InstallationTest, ChecksAndLoadsAPinnedFileAsItsEntryPinsIt) {
  const plugins::LockEntry entry = pin(CTX_SKILL_INSTALLER_SO);
  EXPECT_EQ(check_pinned_plugin(dir_, entry), entry.identity().digest());
  EXPECT_EQ(load_pinned_plugin(dir_, entry), entry.identity().digest());
  plugins::LockEntry wrong = entry;
  wrong.sha256 = std::string(64, '0');
  EXPECT_THROW((void)check_pinned_plugin(dir_, wrong), plugins::PluginError);
  EXPECT_THROW((void)load_pinned_plugin(dir_, wrong), plugins::PluginError);
}

}  // namespace
}  // namespace ctx::app
