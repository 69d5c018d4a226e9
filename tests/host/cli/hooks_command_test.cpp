// `ctx hooks install|uninstall` through the real ctx binary on real temp files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string quoted(const std::string& arg) {
  std::string text = "'";
  for (const char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return text + "'";
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class HooksCommandTest : public ::testing::Test {
 protected:
  // Runs the ctx binary from the project directory with HOME set to the fake home.
  Outcome ctx(const std::vector<std::string>& args, const std::string& env = "") {
    std::string command = "cd " + quoted(project_.path().string()) +
                          " && HOME=" + quoted(home_.path().string()) + " " + env + " " +
                          quoted(CTX_BINARY);
    for (const std::string& arg : args) command += " " + quoted(arg);
    const fs::path out = io_ / "stdout";
    const fs::path err = io_ / "stderr";
    command += " >" + quoted(out.string()) + " 2>" + quoted(err.string());
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }
  ctx::testing::TempDir home_;
  ctx::testing::TempDir project_;
  ctx::testing::TempDir io_;
};

TEST_F(HooksCommandTest, ClaudeCodeProjectInstallIsIdempotentAndUninstallRestores) {
  const fs::path settings = project_.path() / ".claude" / "settings.json";
  fs::create_directories(settings.parent_path());
  const std::string original = "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"}\n}\n";
  std::ofstream(settings) << original;

  const Outcome first = ctx({"hooks", "install", "claude-code"});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("installed ctx hooks for claude-code in " + settings.string()));
  EXPECT_THAT(first.out,
              HasSubstr("previous content saved in " + settings.string() + ".ctx-backup"));
  EXPECT_EQ(slurp(settings.string() + ".ctx-backup"), original);
  const Json written = Json::parse(slurp(settings));
  EXPECT_EQ(written.at("model"), "opus");
  const std::string command =
      written.at("hooks").at("UserPromptSubmit")[0].at("hooks")[0].at("command");
  EXPECT_EQ(command, fs::canonical(CTX_BINARY).string() + " hook claude-code");

  const std::string after_first = slurp(settings);
  const Outcome second = ctx({"hooks", "install", "claude-code", "--project", "."});
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("already installed"));
  EXPECT_EQ(slurp(settings), after_first);

  const Outcome removed = ctx({"hooks", "uninstall", "claude-code", "--json"});
  ASSERT_EQ(removed.code, 0) << removed.err;
  const Json result = Json::parse(removed.out);
  EXPECT_EQ(result.at("changed"), true);
  EXPECT_EQ(result.at("action"), "uninstall");
  EXPECT_EQ(slurp(settings), original);
}

// The hooks run ctx as the user reaches it on $PATH (a package manager's link survives an
// upgrade; the versioned file behind it may not), when that is this very binary.
TEST_F(HooksCommandTest, TheCommandIsTheCtxOnPathThatIsThisBinary) {
  const fs::path bin = io_.path() / "bin";
  fs::create_directories(bin);
  fs::create_symlink(fs::canonical(CTX_BINARY), bin / "ctx");
  const fs::path other = io_.path() / "other";
  fs::create_directories(other);
  { std::ofstream(other / "ctx") << "#!/bin/sh\n"; }  // another ctx, earlier on PATH: not this one
  const std::string path =
      "PATH=" + quoted(other.string() + ":relative/bin:" + bin.string() + ":/usr/bin:/bin");
  const Outcome done = ctx({"hooks", "install", "claude-code"}, path);
  ASSERT_EQ(done.code, 0) << done.err;
  const Json written = Json::parse(slurp(project_.path() / ".claude" / "settings.json"));
  EXPECT_EQ(written.at("hooks").at("Stop")[0].at("hooks")[0].at("command"),
            (bin / "ctx").string() + " hook claude-code");
}

// With $CODEX_HOME set, Codex reads its user hooks.json there, so that is the file ctx edits;
// its user skills stay in ~/.agents/skills (a state dir pinned to an adapter from before it took
// config_dir still gets its activation target: $CODEX_HOME is not passed to the adapter).
TEST_F(HooksCommandTest, CodexUserInstallFollowsCodexHome) {
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  const fs::path codex_home = io_.path() / "codex home";
  const Outcome done =
      ctx({"hooks", "install", "codex", "--user", "--state", state.string(), "--json"},
          "CODEX_HOME=" + quoted(codex_home.string()));
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_EQ(Json::parse(done.out).at("skills_activate_in"),
            (home_.path() / ".agents" / "skills").string());
  EXPECT_TRUE(fs::exists(codex_home / "hooks.json"));
  EXPECT_FALSE(fs::exists(home_.path() / ".codex" / "hooks.json"));
  ASSERT_EQ(
      ctx({"hooks", "uninstall", "codex", "--user"}, "CODEX_HOME=" + quoted(codex_home.string()))
          .code,
      0);
  EXPECT_FALSE(fs::exists(codex_home / "hooks.json"));
}

// With $CLAUDE_CONFIG_DIR set, Claude Code reads its user settings and loads its user skills
// there instead of ~/.claude: the hooks go into that settings.json and skills activate in its
// skills directory.
TEST_F(HooksCommandTest, ClaudeCodeUserInstallFollowsClaudeConfigDir) {
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  const fs::path config = io_.path() / "claude config";
  const std::string env = "CLAUDE_CONFIG_DIR=" + quoted(config.string());
  const Outcome done =
      ctx({"hooks", "install", "claude-code", "--user", "--state", state.string(), "--json"}, env);
  ASSERT_EQ(done.code, 0) << done.err;
  const Json result = Json::parse(done.out);
  EXPECT_EQ(result.at("file"), (config / "settings.json").string());
  EXPECT_EQ(result.at("skills_activate_in"), (config / "skills").string());
  EXPECT_TRUE(fs::exists(config / "settings.json"));
  EXPECT_TRUE(fs::is_directory(config / "skills"));
  EXPECT_FALSE(fs::exists(home_.path() / ".claude"));
  ASSERT_EQ(ctx({"hooks", "uninstall", "claude-code", "--user"}, env).code, 0);
  EXPECT_FALSE(fs::exists(config / "settings.json"));
}

// Install makes the directory skills will activate in: Claude Code watches a top-level skills
// directory for new skills only when it existed at startup, so a skill approved mid-session
// then works in that session.
TEST_F(HooksCommandTest, InstallMakesTheSkillsDirectoryTheHostWatches) {
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  ASSERT_FALSE(fs::exists(project_.path() / ".claude" / "skills"));
  const Outcome done = ctx({"hooks", "install", "claude-code", "--state", state.string()});
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_TRUE(fs::is_directory(project_.path() / ".claude" / "skills"));
  EXPECT_THAT(done.out, HasSubstr((project_.path() / ".claude" / "skills").string()));
}

TEST_F(HooksCommandTest, CodexUserInstallCarriesTheStateDirAndTellsTheUserToReview) {
  const fs::path state = io_.path() / "state dir";
  const Outcome done = ctx({"hooks", "install", "codex", "--user", "--state", state.string()});
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("/hooks"));
  // There was no file: nothing to call "previous content".
  EXPECT_THAT(done.out, HasSubstr("ctx created the file: uninstall removes it"));
  EXPECT_THAT(done.out, Not(HasSubstr("previous content")));
  const fs::path hooks = home_.path() / ".codex" / "hooks.json";
  const Json written = Json::parse(slurp(hooks));
  EXPECT_EQ(written.at("hooks").at("Stop")[0].at("hooks")[0].at("command"),
            fs::canonical(CTX_BINARY).string() + " hook codex --state '" + state.string() + "'");
  EXPECT_TRUE(written.at("hooks").contains("PostCompact"));
  EXPECT_TRUE(written.at("hooks").contains("SessionEnd")) << "Codex 0.169 fires SessionEnd";
  // Without --trust it says exactly how to trust ctx's hooks.
  EXPECT_THAT(done.out, HasSubstr("ctx hooks install codex --user --trust"));
  ASSERT_EQ(ctx({"hooks", "uninstall", "codex", "--user"}).code, 0);
  EXPECT_FALSE(fs::exists(hooks));
}

// Uninstall takes away what install made and nothing else: the handlers (the file's bytes back,
// the backup deleted), the activation links of the hooks' state dir, the directories install
// made that are left empty.
TEST_F(HooksCommandTest, UninstallRemovesWhatInstallMadeAndNothingElse) {
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  const fs::path skills = project_.path() / ".claude" / "skills";
  ASSERT_EQ(ctx({"hooks", "install", "claude-code", "--state", state.string()}).code, 0);
  ASSERT_TRUE(fs::is_directory(skills));
  fs::create_directory_symlink(state / "skills" / "objects" / "0a1b", skills / "pdf");
  const Outcome removed = ctx({"hooks", "uninstall", "claude-code", "--json"});
  ASSERT_EQ(removed.code, 0) << removed.err;
  const Json result = Json::parse(removed.out);
  EXPECT_EQ(result.at("restored"), true);
  EXPECT_EQ(result.at("activation_links_removed"), Json::array({"pdf"}));
  EXPECT_EQ(result.at("activation_target_removed"), true);
  EXPECT_TRUE(fs::is_empty(state / "activation-targets")) << "the project's target is forgotten";
  EXPECT_TRUE(fs::is_empty(project_.path())) << "the project is as it was: empty";

  // A project with its own skills: only ctx's link goes.
  fs::create_directories(skills / "mine");
  { std::ofstream(skills / "mine" / "SKILL.md") << "---\nname: mine\n---\n"; }
  fs::create_directory_symlink(io_.path() / "elsewhere", skills / "linked");
  ASSERT_EQ(ctx({"hooks", "install", "claude-code", "--state", state.string()}).code, 0);
  fs::create_directory_symlink(state / "skills" / "objects" / "0a1b", skills / "pdf");
  const Outcome again = ctx({"hooks", "uninstall", "claude-code"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("removed the activation links of ctx's skills from " +
                                   skills.string() + ": pdf"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(skills / "pdf")));
  EXPECT_TRUE(fs::exists(skills / "mine" / "SKILL.md"));
  EXPECT_TRUE(fs::is_symlink(skills / "linked"));
  EXPECT_FALSE(fs::exists(project_.path() / ".claude" / "settings.json"));
  EXPECT_FALSE(fs::exists(project_.path() / ".claude" / "settings.json.ctx-backup"));
}

// The agents folder the agent installer made (its agents deactivated, the folder left empty)
// goes with uninstall; one holding the user's own agent stays, with that agent.
TEST_F(HooksCommandTest, UninstallRemovesTheEmptyAgentsFolderAndKeepsTheUsersAgents) {
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  const fs::path agents = project_.path() / ".claude" / "agents";
  ASSERT_EQ(ctx({"hooks", "install", "claude-code", "--state", state.string()}).code, 0);
  fs::create_directories(agents);
  ASSERT_EQ(ctx({"hooks", "uninstall", "claude-code"}).code, 0);
  EXPECT_FALSE(fs::exists(agents));
  EXPECT_TRUE(fs::is_empty(project_.path())) << "the project is as it was: empty";

  ASSERT_EQ(ctx({"hooks", "install", "claude-code", "--state", state.string()}).code, 0);
  fs::create_directories(agents);
  { std::ofstream(agents / "mine.md") << "---\nname: mine\ndescription: mine\n---\n"; }
  ASSERT_EQ(ctx({"hooks", "uninstall", "claude-code"}).code, 0);
  EXPECT_TRUE(fs::exists(agents / "mine.md"));
  EXPECT_FALSE(fs::exists(project_.path() / ".claude" / "settings.json"));
}

TEST_F(HooksCommandTest, StatusSaysInstalledAndWhichStateDir) {
  const Outcome none = ctx({"hooks", "status", "claude-code"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_THAT(none.out, HasSubstr("not installed"));
  const fs::path state = io_.path() / "state";
  ASSERT_EQ(ctx({"init", "--state", state.string()}).code, 0);
  ASSERT_EQ(ctx({"hooks", "install", "claude-code", "--state", state.string()}).code, 0);
  const Outcome status = ctx({"hooks", "status", "claude-code", "--json"});
  ASSERT_EQ(status.code, 0) << status.err;
  const Json result = Json::parse(status.out);
  EXPECT_EQ(result.at("installed"), true);
  EXPECT_EQ(result.at("state_dir"), state.string());
  EXPECT_EQ(result.at("state_dir_default"), false);
  EXPECT_EQ(result.at("skills_activate_in"), (project_.path() / ".claude" / "skills").string());
  // Approved agents and MCP servers activate where Claude Code reads the project's.
  EXPECT_EQ(result.at("agents_activate_in"), (project_.path() / ".claude" / "agents").string());
  EXPECT_EQ(result.at("mcp_servers_activate_in"), (project_.path() / ".mcp.json").string());
  const std::string text = ctx({"hooks", "status", "claude-code"}).out;
  EXPECT_THAT(text, HasSubstr("state dir: " + state.string()));
  EXPECT_THAT(text, HasSubstr("agents in " + (project_.path() / ".claude" / "agents").string() +
                              ", MCP servers in " + (project_.path() / ".mcp.json").string()));
}

// Without a codex to ask, status says Codex's trust is unknown and why; the project's trust is
// read from $CODEX_HOME/config.toml.
TEST_F(HooksCommandTest, CodexStatusNamesTheProjectTrustAndWhyHookTrustIsUnknown) {
  const fs::path codex_home = io_.path() / "codex";
  const std::string env = "CODEX_HOME=" + quoted(codex_home.string()) + " PATH=/usr/bin:/bin";
  const Outcome done = ctx({"hooks", "install", "codex"}, env);
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("codex exec --trust"));
  EXPECT_THAT(done.out, HasSubstr("ctx hooks install codex --project " +
                                  fs::canonical(project_.path()).string() + " --trust"));
  Json status = Json::parse(ctx({"hooks", "status", "codex", "--json"}, env).out);
  EXPECT_EQ(status.at("installed"), true);
  EXPECT_EQ(status.at("project_trusted"), false);
  EXPECT_EQ(status.at("trusted"), nullptr);
  EXPECT_THAT(status.at("trust_unknown").get<std::string>(), HasSubstr("codex was not found"));
  fs::create_directories(codex_home);
  std::ofstream(codex_home / "config.toml")
      << "[projects.\"" << fs::canonical(project_.path()).string()
      << "\"]\ntrust_level = \"trusted\"\n";
  status = Json::parse(ctx({"hooks", "status", "codex", "--json"}, env).out);
  EXPECT_EQ(status.at("project_trusted"), true);
  const Outcome trust = ctx({"hooks", "install", "codex", "--trust"}, env);
  EXPECT_EQ(trust.code, 1);
  EXPECT_THAT(trust.err, HasSubstr("codex was not found on PATH"));
}

TEST_F(HooksCommandTest, AMalformedFileIsExitOneWithOneLineAndUntouched) {
  const fs::path settings = project_.path() / ".claude" / "settings.json";
  fs::create_directories(settings.parent_path());
  std::ofstream(settings) << "{\"hooks\": [";
  const Outcome r = ctx({"hooks", "install", "claude-code"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("left unchanged"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_EQ(slurp(settings), "{\"hooks\": [");
}

TEST_F(HooksCommandTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"hooks"},
        {"hooks", "install"},
        {"hooks", "add", "codex"},
        {"hooks", "install", "generic"},
        {"hooks", "install", "codex", "--user", "--project", "."},
        {"hooks", "install", "codex", "--bogus"},
        {"hooks", "uninstall", "codex", "--state", "/s"},
        {"hooks", "uninstall", "codex", "--trust"},
        {"hooks", "status", "codex", "--trust"},
        {"hooks", "install", "codex", "--codex", "/bin/codex"},
        {"hooks", "install", "codex", "--project"},
        {"hooks", "install", "codex", "--project", ""},
        {"hooks", "uninstall", "claude-code", "--user", "--project", "."}}) {
    const Outcome r = ctx(args);
    EXPECT_EQ(r.code, 2) << args.back();
    EXPECT_THAT(r.err, HasSubstr("see ctx --help"));
  }
  EXPECT_THAT(usage(), HasSubstr("ctx hooks install claude-code|codex"));
}

}  // namespace
}  // namespace ctx::cli
