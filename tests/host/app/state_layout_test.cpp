// host/app/state_layout: StatePaths places every file of a state directory inside it, each at
// its own path, where the layout the rest of ctx reads has always put it.
#include "host/app/state_layout.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "host/core/error.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;

TEST(StateLayoutTest, EveryPathIsItsOwnAndInsideTheStateDir) {
  const StatePaths paths = StatePaths::of("/home/u/.local/state/ctx/");
  EXPECT_EQ(paths.state_dir, fs::path("/home/u/.local/state/ctx/"));
  const std::vector<fs::path> all = {paths.plugin_lock,
                                     paths.consent_store,
                                     paths.skills,
                                     paths.activation_targets,
                                     paths.registry,
                                     paths.service_dir,
                                     paths.journal,
                                     paths.audit,
                                     paths.queries,
                                     paths.inputs,
                                     paths.install_policy,
                                     paths.approvals,
                                     paths.open_lock,
                                     paths.skills_active,
                                     paths.agents,
                                     paths.agents_active,
                                     paths.mcp_servers,
                                     paths.mcp_active_config,
                                     paths.session_branches,
                                     paths.activation_holders,
                                     paths.registry_manifests,
                                     paths.registry_artifacts,
                                     paths.catalog_current,
                                     paths.socket,
                                     paths.socket_lock,
                                     paths.serve_log,
                                     paths.demo_project,
                                     paths.demo_key,
                                     paths.demo_verifier_config};
  std::set<std::string> seen;
  for (const fs::path& path : all) {
    EXPECT_EQ(path.string().rfind("/home/u/.local/state/ctx/", 0), 0u) << path;
    EXPECT_NE(path.filename(), "") << path;
    EXPECT_TRUE(seen.insert(path.string()).second) << path << " is named twice";
  }
}

TEST(StateLayoutTest, TheNamesAreWhereTheyHaveAlwaysBeen) {
  const fs::path dir = "/s";
  const StatePaths paths = StatePaths::of(dir);
  EXPECT_EQ(paths.plugin_lock, dir / kPluginLockFile);
  EXPECT_EQ(paths.plugin_lock, dir / "plugins.lock.json");
  EXPECT_EQ(paths.socket, dir / "ctx.sock");
  EXPECT_EQ(paths.socket_lock, dir / "ctx.sock.lock");
  EXPECT_EQ(paths.serve_log, dir / "serve.log");
  EXPECT_EQ(paths.journal, dir / "service" / "journal.sqlite3");
  EXPECT_EQ(paths.queries, dir / "service" / "queries.sqlite3");
  EXPECT_EQ(paths.consent_store, dir / "service" / "consent.sqlite3");
  EXPECT_EQ(paths.open_lock, dir / "service" / ".open.lock");
  EXPECT_EQ(paths.skills_active, dir / "skills" / "active");
  EXPECT_EQ(paths.mcp_active_config, dir / "mcp-servers" / "active.json");
  EXPECT_EQ(paths.registry_artifacts, dir / kRegistryDir / kRegistryArtifactsDir);
  EXPECT_EQ(paths.catalog_current, dir / "catalog" / "CURRENT");
  EXPECT_EQ(dir / kInstallationKeyFile, dir / "installation.key");
}

TEST(StateLayoutTest, ARelativeStateDirIsRefused) {
  EXPECT_THROW((void)StatePaths::of("state"), InvalidArgument);
}

}  // namespace
}  // namespace ctx::runtime
