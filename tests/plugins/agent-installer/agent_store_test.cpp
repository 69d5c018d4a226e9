// AgentStore in process: install content-addressed, activation as a Claude Code .md file or a
// rendered Codex .toml (checked with toml++), deactivation of exactly what was written, user
// files of the same name left alone, other agents untouched, and bad agent files refused.
#include "plugins/agent-installer/core/agent_store.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <ctx/sdk/error.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::agent_installer {
namespace {

namespace fs = std::filesystem;
namespace pc = ctx::plugin_common;

const std::string kReviewer =
    "---\nname: code-reviewer\ndescription: Reviews a diff for \"correctness\".\ntools: Read, "
    "Grep\nmodel: sonnet\n---\n\nYou are a careful reviewer.\nQuote with \"\"\" and \\ freely.\n";

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void write(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

Json entry(const std::string& name, const std::string& body) {
  return {{"capability_id", "agent:" + name}, {"content_sha256", pc::sha256_hex(body)}};
}

class AgentStoreTest : public ::testing::Test {
 protected:
  AgentStore store(const std::string& format, const fs::path& agents) {
    return AgentStore(Json{
        {"root", (dir_ / "state/agents").string()},
        {"activation_root", agents.string()},
        {"format",
         format}}.dump());
  }
  Json install(AgentStore& store, const std::string& name, const std::string& body) {
    Json request = entry(name, body);
    request["content"] = body;
    return store.install(request.dump());
  }
  Json state(AgentStore& store, const std::string& name, const std::string& body) {
    return store.reconcile(Json{{"capabilities", Json::array({entry(name, body)})}}.dump())
        .at("capabilities")
        .at(0);
  }
  testing::TempDir dir_;
};

TEST_F(AgentStoreTest, ClaudeCodeAgentIsTheExactFileAndDeactivateRemovesOnlyIt) {
  const fs::path agents = dir_ / "project/.claude/agents";
  write(agents / "mine.md", "---\nname: mine\ndescription: my own\n---\nMine.\n");
  AgentStore agent = store("markdown", agents);
  ASSERT_EQ(install(agent, "code-reviewer", kReviewer).value("outcome", ""), "applied");
  EXPECT_TRUE(fs::exists(dir_ / "state/agents/objects" / pc::sha256_hex(kReviewer)));
  const Json reply = agent.activate(entry("code-reviewer", kReviewer).dump());
  ASSERT_EQ(reply.value("outcome", ""), "applied") << reply.dump();
  EXPECT_EQ(reply.value("file", ""), "code-reviewer.md");
  EXPECT_EQ(reply.value("observed_material_identity_digest", ""),
            pc::material_identity_digest("agent:code-reviewer", pc::sha256_hex(kReviewer),
                                         kReviewer.size()));
  EXPECT_EQ(read(agents / "code-reviewer.md"), kReviewer);
  const Json active = state(agent, "code-reviewer", kReviewer);
  EXPECT_TRUE(active.value("active", false));
  EXPECT_EQ(active.value("verification_digest", ""), reply.value("verification_digest", ""));

  const Json again = agent.activate(entry("code-reviewer", kReviewer).dump());
  EXPECT_EQ(again.value("outcome", ""), "applied");
  EXPECT_FALSE(again.value("rewritten", true));

  const Json removed = agent.deactivate(Json{{"capability_id", "agent:code-reviewer"}}.dump());
  EXPECT_EQ(removed.value("outcome", ""), "applied");
  EXPECT_TRUE(removed.value("was_active", false));
  EXPECT_FALSE(fs::exists(agents / "code-reviewer.md"));
  EXPECT_TRUE(fs::exists(agents / "mine.md")) << "another agent is never touched";
  EXPECT_FALSE(state(agent, "code-reviewer", kReviewer).value("active", true));
}

TEST_F(AgentStoreTest, CodexAgentIsRenderedToml) {
  const fs::path agents = dir_ / "codex-home/agents";
  AgentStore agent = store("toml", agents);
  ASSERT_EQ(install(agent, "code-reviewer", kReviewer).value("outcome", ""), "applied");
  ASSERT_EQ(agent.activate(entry("code-reviewer", kReviewer).dump()).value("outcome", ""),
            "applied");
  const toml::table table = toml::parse(read(agents / "code-reviewer.toml"));
  EXPECT_EQ(table["name"].value_or(std::string()), "code-reviewer");
  EXPECT_EQ(table["description"].value_or(std::string()), "Reviews a diff for \"correctness\".");
  EXPECT_EQ(table["developer_instructions"].value_or(std::string()),
            "You are a careful reviewer.\nQuote with \"\"\" and \\ freely.\n");
  EXPECT_TRUE(state(agent, "code-reviewer", kReviewer).value("active", false));
  ASSERT_EQ(
      agent.deactivate(Json{{"capability_id", "agent:code-reviewer"}}.dump()).value("outcome", ""),
      "applied");
  EXPECT_FALSE(fs::exists(agents / "code-reviewer.toml"));
}

TEST_F(AgentStoreTest, AUsersOwnAgentFileIsNeverOverwrittenOrRemoved) {
  const fs::path agents = dir_ / "project/.claude/agents";
  const std::string mine = "---\nname: code-reviewer\ndescription: my reviewer\n---\nMine.\n";
  write(agents / "code-reviewer.md", mine);
  AgentStore agent = store("markdown", agents);
  ASSERT_EQ(install(agent, "code-reviewer", kReviewer).value("outcome", ""), "applied");
  const Json reply = agent.activate(entry("code-reviewer", kReviewer).dump());
  EXPECT_EQ(reply.value("outcome", ""), "failed");
  EXPECT_NE(reply.value("reason", "").find("code-reviewer.md"), std::string::npos);
  EXPECT_EQ(read(agents / "code-reviewer.md"), mine);
  EXPECT_EQ(
      agent.deactivate(Json{{"capability_id", "agent:code-reviewer"}}.dump()).value("outcome", ""),
      "failed");
  EXPECT_EQ(read(agents / "code-reviewer.md"), mine);
  EXPECT_EQ(state(agent, "code-reviewer", kReviewer).value("activation_state", ""),
            "indeterminate");
}

TEST_F(AgentStoreTest, AFileEditedAfterActivationIsLeftAlone) {
  const fs::path agents = dir_ / "agents";
  AgentStore agent = store("markdown", agents);
  ASSERT_EQ(install(agent, "code-reviewer", kReviewer).value("outcome", ""), "applied");
  ASSERT_EQ(agent.activate(entry("code-reviewer", kReviewer).dump()).value("outcome", ""),
            "applied");
  write(agents / "code-reviewer.md", kReviewer + "My own addition.\n");
  EXPECT_EQ(
      agent.deactivate(Json{{"capability_id", "agent:code-reviewer"}}.dump()).value("outcome", ""),
      "failed");
  EXPECT_TRUE(fs::exists(agents / "code-reviewer.md"));
}

TEST_F(AgentStoreTest, AnotherMaterialOfOursIsReplaced) {
  const fs::path agents = dir_ / "agents";
  AgentStore agent = store("markdown", agents);
  const std::string newer = kReviewer + "Also check tests.\n";
  ASSERT_EQ(install(agent, "code-reviewer", kReviewer).value("outcome", ""), "applied");
  ASSERT_EQ(install(agent, "code-reviewer", newer).value("outcome", ""), "applied");
  ASSERT_EQ(agent.activate(entry("code-reviewer", kReviewer).dump()).value("outcome", ""),
            "applied");
  ASSERT_EQ(agent.activate(entry("code-reviewer", newer).dump()).value("outcome", ""), "applied");
  EXPECT_EQ(read(agents / "code-reviewer.md"), newer);
  EXPECT_FALSE(state(agent, "code-reviewer", kReviewer).value("active", true));
  EXPECT_TRUE(state(agent, "code-reviewer", newer).value("active", false));
}

TEST_F(AgentStoreTest, BadAgentFilesAreRefusedAtInstall) {
  AgentStore agent = store("markdown", dir_ / "agents");
  for (const std::string& bad : {
           std::string("no frontmatter\n"),
           std::string("---\nname: code-reviewer\n---\nno description\n"),
           std::string("---\nname: [unclosed\n---\n"),
           std::string("---\nname: other-name\ndescription: d\n---\nbody\n"),
           std::string("---\nname: code-reviewer\ndescription: d\n"),
       }) {
    SCOPED_TRACE(bad);
    const Json reply = install(agent, "code-reviewer", bad);
    EXPECT_EQ(reply.value("outcome", ""), "failed");
    EXPECT_FALSE(state(agent, "code-reviewer", bad).value("installed", true));
  }
  CTX_EXPECT_THROW(agent.activate(entry("Bad Name", kReviewer).dump()), InvalidArgument,
                   "invalid agent name");
}

TEST_F(AgentStoreTest, ActivateNeedsInstalledMaterial) {
  AgentStore agent = store("markdown", dir_ / "agents");
  const Json reply = agent.activate(entry("code-reviewer", kReviewer).dump());
  EXPECT_EQ(reply.value("outcome", ""), "failed");
  EXPECT_FALSE(fs::exists(dir_ / "agents/code-reviewer.md"));
}

TEST(AgentFile, ParsesFrontmatterAndBody) {
  const AgentFile agent = parse_agent("---\r\nname: a\r\ndescription: b\r\n---\r\n\r\nBody\r\n");
  EXPECT_EQ(agent.name, "a");
  EXPECT_EQ(agent.description, "b");
  EXPECT_EQ(agent.body, "Body\r\n");
}

}  // namespace
}  // namespace ctx::agent_installer
