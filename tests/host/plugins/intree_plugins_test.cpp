// The real in-tree plugins (plugins/), when they are part of the build, pin and load through the
// same path as any third-party plugin, with a stable identity.
#include <gtest/gtest.h>

#include <ctx/loader/plugin_loader.hpp>
#include <string>
#include <vector>

#include "tests/host/plugins/plugin_test_support.hpp"

#if defined(CTX_INTREE_PLUGIN_SKILL_INSTALLER) || defined(CTX_INTREE_PLUGIN_HMAC_SHA256) || \
    defined(CTX_INTREE_PLUGIN_GENERIC_HOST)

namespace ctx::plugins {
namespace {

struct InTreePlugin {
  const char* path;
  PluginKind kind;
};

std::vector<InTreePlugin> in_tree_plugins() {
  std::vector<InTreePlugin> plugins;
#ifdef CTX_INTREE_PLUGIN_SKILL_INSTALLER
  plugins.push_back({CTX_INTREE_PLUGIN_SKILL_INSTALLER, PluginKind::kInstaller});
#endif
#ifdef CTX_INTREE_PLUGIN_HMAC_SHA256
  plugins.push_back({CTX_INTREE_PLUGIN_HMAC_SHA256, PluginKind::kVerifier});
#endif
#ifdef CTX_INTREE_PLUGIN_GENERIC_HOST
  plugins.push_back({CTX_INTREE_PLUGIN_GENERIC_HOST, PluginKind::kHostAdapter});
#endif
  return plugins;
}

TEST(InTreePlugins, PinAndLoadWithAStableIdentity) {
  for (const InTreePlugin& p : in_tree_plugins()) {
    SCOPED_TRACE(p.path);
    ctx::testing::TempDir state;
    const PluginLoader loader(state.path());
    const LockEntry entry = loader.inspect_for_pin(p.path);
    EXPECT_EQ(entry.kind, p.kind);
    EXPECT_TRUE(is_valid_plugin_id(entry.id));
    const auto plugin = loader.load(entry);
    EXPECT_EQ(plugin->identity(), entry.identity());
    ctx::testing::TempDir other;
    EXPECT_EQ(PluginLoader(other.path()).load(entry)->identity().digest(),
              plugin->identity().digest());
  }
}

}  // namespace
}  // namespace ctx::plugins

#endif  // any in-tree plugin
