// StateService with the agent and MCP installer modules pinned: a chosen agent and a chosen MCP
// server go claim -> install -> activation through their own installers, bound like skills, and
// land where the activation target's host adapter reads them (Claude Code: .claude/agents/);
// an MCP server asks for consent even under preapproved-auto (its approval and activation into
// .mcp.json: tests/host/cli/consent/mcp_consent_test.cpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "tests/support/journal/raw_sqlite.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CurrentWork work(std::vector<std::string> signals, const std::string& session = "session-1") {
  return CurrentWork{"local", "home", "repo-1", session, std::move(signals), {}, 1};
}

bool selects(const ManagedQueryServiceResult& result, const std::string& id) {
  for (const auto& selection : result.prepared().selections()) {
    if (selection.capability_id() == id) return true;
  }
  return false;
}

// A state dir with the example catalog, the real installer modules and the Claude Code adapter
// pinned, activating in a project whose .mcp.json already holds the user's own server; agents
// and MCP servers preapproved.
struct InstallersState {
  testing::TempDir temp;
  fs::path dir = temp.path() / "state";
  fs::path project = temp.path() / "project";
  const std::string user_mcp =
      "{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"/usr/bin/mine\"}\n  }\n}\n";
  InstallersState() {
    init_state_dir(dir);
    import_catalog(fs::path(CTX_EXAMPLES_DIR) / "catalog", dir);
    const plugins::PluginLoader loader(dir);
    plugins::LockFile::update(dir / "plugins.lock.json", [&](plugins::LockFile& lock) {
      for (const char* so : {CTX_SKILL_INSTALLER_SO, CTX_AGENT_INSTALLER_SO, CTX_MCP_INSTALLER_SO,
                             CTX_CLAUDE_CODE_HOST_SO}) {
        lock.upsert(loader.inspect_for_pin(so));
      }
    });
    fs::create_directories(project);
    std::ofstream(project / ".mcp.json", std::ios::binary) << user_mcp;
    set_activation_target(dir, "claude-code", project);
    InstallConsentPolicy automatic;
    automatic.agent_mode = InstallMode::kPreapprovedAuto;
    automatic.mcp_server_mode = InstallMode::kPreapprovedAuto;
    InstallPolicyStore(StatePaths::of(dir).install_policy).persist(automatic);
  }
  // `w` as a session of Claude Code running in the project (StateService::place_in_project).
  CurrentWork in_project(const StateService& service, CurrentWork w) const {
    service.place_in_project(w, "claude-code", project);
    return w;
  }
};

TEST(StateServiceInstallers, TheActivationTargetNamesTheAdaptersAgentAndMcpLocations) {
  InstallersState state;
  const auto target =
      find_activation_target(read_activation_targets(state.dir), "claude-code", state.project);
  ASSERT_TRUE(target.has_value());
  EXPECT_EQ(target->agents_dir, state.project / ".claude/agents");
  EXPECT_EQ(target->mcp_file, state.project / ".mcp.json");
  EXPECT_EQ(target->mcp_format, "json");
}

TEST(StateServiceInstallers, AChosenAgentIsInstalledAndActivatedInTheProjectsAgents) {
  InstallersState state;
  auto service = StateService::open(state.dir);
  const std::string id = "agent:code-reviewer";
  const auto plan = service->prepare(state.in_project(
      *service, work({"review", "this", "diff", "for", "correctness", "security", "readability"})));
  ASSERT_TRUE(selects(plan, id));
  const auto desired = service->set_first_desired(plan.query_ref(), {id});
  ASSERT_TRUE(desired.has_value());
  ASSERT_FALSE(desired->challenge().has_value()) << "agents are preapproved here";
  const auto activated = service->activate_chosen(plan.query_ref(), id);
  ASSERT_TRUE(activated.has_value());
  EXPECT_TRUE(activated->settled);
  EXPECT_EQ(activated->outcome, engine::Outcome::kApplied);
  const fs::path agent = state.project / ".claude/agents/code-reviewer.md";
  ASSERT_TRUE(fs::exists(agent));
  EXPECT_EQ(read(agent), read(fs::path(CTX_EXAMPLES_DIR) / "catalog/agents/code-reviewer.md"));
  EXPECT_FALSE(service->activate_chosen(plan.query_ref(), id).has_value()) << "exactly once";
}

TEST(StateServiceInstallers, AnMcpServerAsksForConsentEvenWhenPreapproved) {
  InstallersState state;
  auto service = StateService::open(state.dir);
  const std::string id = "mcp-server:docs-search";  // a url, no command, no env
  const auto plan = service->prepare(state.in_project(
      *service, work({"search", "the", "library", "and", "framework", "documentation", "pages"})));
  ASSERT_TRUE(selects(plan, id));
  const auto desired = service->set_first_desired(plan.query_ref(), {id});
  ASSERT_TRUE(desired.has_value());
  EXPECT_TRUE(desired->challenge().has_value()) << "an MCP server install always asks";
  EXPECT_FALSE(service->activate_chosen(plan.query_ref(), id).has_value());
  EXPECT_EQ(read(state.project / ".mcp.json"), state.user_mcp);
}

// A process killed (SIGKILL) at each durable step of an agent's install or activation leaves
// what the next process finishes: exactly one install outcome, and one activation outcome with
// one agent file in the host's directory (none when the install claim's driver never ran).
TEST(StateServiceInstallers, AnAgentInstallOrActivationKilledAtEachStepEndsInOneOutcome) {
  const std::string id = "agent:code-reviewer";
  const auto review = [] {
    return work({"review", "this", "diff", "for", "correctness", "security", "readability"});
  };
  std::vector<std::string_view> points(crash_points::kInstall.begin(),
                                       crash_points::kInstall.end());
  points.insert(points.end(),
                {crash_points::kAfterActivationClaim, crash_points::kAfterActivationOutcome,
                 crash_points::kAfterActivationReceipt});
  for (const auto point : points) {
    SCOPED_TRACE(std::string(point));
    InstallersState state;
    std::string query;
    {
      auto service = StateService::open(state.dir);
      query = service->prepare(state.in_project(*service, review())).query_ref();
    }  // no SQLite connection is open across the fork
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto service = StateService::open(state.dir);
      CrashPointArmed armed(point, 0, CrashMode::kKill);
      (void)service->set_first_desired(query, {id});
      (void)service->activate_chosen(query, id);
      ::_exit(3);  // not reached when the crash point fired
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    auto service = StateService::open(state.dir);
    (void)service->set_first_desired(query, {id});
    (void)service->activate_chosen(query, id);
    EXPECT_FALSE(service->activate_chosen(query, id).has_value());
    const fs::path journal = state.dir / "service/journal.sqlite3";
    EXPECT_EQ(ctx::testing::journal::raw_count(journal, "engine_install_outcomes"), 1);
    // Killed after the install claim, before the driver ran: recovery reconciles (absent) and
    // settles the install failed; nothing is ever applied. Anywhere else it is finished.
    const bool applied = point != crash_points::kAfterInstallClaim;
    EXPECT_EQ(ctx::testing::journal::raw_count(journal, "engine_activation_outcomes"),
              applied ? 1 : 0);
    const fs::path agents = state.project / ".claude/agents";
    std::size_t files = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(agents, ec); !ec && it != fs::directory_iterator();
         ++it) {
      ++files;
    }
    EXPECT_EQ(files, applied ? 1u : 0u) << "at most one agent file, no staging left";
    if (applied) {
      EXPECT_EQ(read(agents / "code-reviewer.md"),
                read(fs::path(CTX_EXAMPLES_DIR) / "catalog/agents/code-reviewer.md"));
    }
  }
}

}  // namespace
}  // namespace ctx::runtime
