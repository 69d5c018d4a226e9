// AgentStore in process: install content-addressed, activation as a Claude Code .md file or a
// rendered Codex .toml (checked with toml++), deactivation of exactly what was written, user
// files of the same name left alone, other agents untouched, and bad agent files refused; an
// agent over 6000 bytes installed from its one-file tree (install_from_source) and verified at
// every step.
#include "plugins/agent-installer/core/agent_store.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <ctx/sdk/error.hpp>
#include <ctx/sdk/skill_tree.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

// An agent file over the engine's 6000-byte material bound, as the host sends it: a one-file tree
// (ctx/sdk/skill_tree.hpp, AGENT.md) whose root is the material.
struct AgentTree {
  std::string file;
  std::string manifest;
  std::string root;
  Json request(const std::string& name) const {
    return {{"capability_id", "agent:" + name},
            {"content_bytes", root.size()},
            {"content_sha256", pc::sha256_hex(root)},
            {"manifest", manifest},
            {"material_identity_digest",
             pc::material_identity_digest("agent:" + name, pc::sha256_hex(root), root.size())}};
  }
};
AgentTree agent_tree(const std::string& file) {
  const std::vector<sdk::TreeFile> tree{{sdk::kAgentFile, file.size(), pc::sha256_hex(file)}};
  AgentTree out{file, sdk::tree_manifest_text(tree, sdk::kAgentFile), ""};
  out.root = sdk::tree_root_text(tree, pc::sha256_hex(out.manifest));
  return out;
}
std::string large_reviewer() {
  std::string file = kReviewer;
  while (file.size() <= 9000) file += "Check every changed line against the tests.\n";
  return file;
}

// A body source serving `files` by tree path, counting the reads.
struct Bodies {
  std::map<std::string, std::string> files;
  int reads = 0;
  AgentStore::ReadBody reader() {
    return [this](const std::string& path, const AgentStore::ChunkFn& chunk) {
      ++reads;
      const auto it = files.find(path);
      if (it == files.end()) return false;
      for (std::size_t at = 0; at < it->second.size(); at += 4096) {
        chunk(std::string_view(it->second).substr(at, 4096));
      }
      return true;
    };
  }
};

TEST_F(AgentStoreTest, ALargeAgentInstallsFromItsTreeAndActivatesByteIdentical) {
  const fs::path agents = dir_ / "project/.claude/agents";
  AgentStore agent = store("markdown", agents);
  const AgentTree tree = agent_tree(large_reviewer());
  ASSERT_GT(tree.file.size(), 6000u);
  Bodies bodies{{{"AGENT.md", tree.file}}};
  const Json installed =
      agent.install_from_source(tree.request("code-reviewer").dump(), bodies.reader());
  ASSERT_EQ(installed.value("outcome", ""), "applied") << installed.dump();
  EXPECT_EQ(installed.value("form", ""), "tree");
  const Json expected = tree.request("code-reviewer").at("material_identity_digest");
  EXPECT_EQ(installed.at("observed_material_identity_digest"), expected);
  EXPECT_EQ(bodies.reads, 1);
  EXPECT_EQ(read(dir_ / "state/agents/objects" / pc::sha256_hex(tree.file)), tree.file);

  // Installed exactly: the body source is not read again.
  const Json again =
      agent.install_from_source(tree.request("code-reviewer").dump(), bodies.reader());
  EXPECT_EQ(again.value("outcome", ""), "applied");
  EXPECT_FALSE(again.value("rewritten", true));
  EXPECT_EQ(bodies.reads, 1);

  const Json root_entry = {{"capability_id", "agent:code-reviewer"},
                           {"content_sha256", pc::sha256_hex(tree.root)}};
  const Json reply = agent.activate(root_entry.dump());
  ASSERT_EQ(reply.value("outcome", ""), "applied") << reply.dump();
  EXPECT_EQ(reply.at("observed_material_identity_digest"), expected);
  EXPECT_EQ(read(agents / "code-reviewer.md"), tree.file);
  const Json state = agent.reconcile(Json{{"capabilities", Json::array({root_entry})}}.dump())
                         .at("capabilities")
                         .at(0);
  EXPECT_TRUE(state.value("installed", false));
  EXPECT_TRUE(state.value("active", false));
  EXPECT_EQ(state.at("active_material_identity_digest"), expected);
}

TEST_F(AgentStoreTest, ALargeAgentWhoseBytesDifferFromItsManifestIsRefused) {
  AgentStore agent = store("markdown", dir_ / "project/.claude/agents");
  const AgentTree tree = agent_tree(large_reviewer());
  std::string altered = tree.file;
  altered[altered.size() / 2] = '#';
  for (const auto& [what, files] : {std::pair<std::string, std::map<std::string, std::string>>{
                                        "altered", {{"AGENT.md", altered}}},
                                    {"longer", {{"AGENT.md", tree.file + "x"}}},
                                    {"shorter", {{"AGENT.md", tree.file.substr(1)}}},
                                    {"absent", {{"SKILL.md", tree.file}}}}) {
    Bodies bodies{files};
    const Json reply =
        agent.install_from_source(tree.request("code-reviewer").dump(), bodies.reader());
    EXPECT_EQ(reply.value("outcome", ""), "failed") << what << ": " << reply.dump();
  }
  // A manifest that is not the authorised root's is refused before any body is read.
  Json request = tree.request("code-reviewer");
  request["content_sha256"] = pc::sha256_hex(agent_tree(kReviewer).root);
  Bodies bodies{{{"AGENT.md", tree.file}}};
  EXPECT_EQ(agent.install_from_source(request.dump(), bodies.reader()).value("outcome", ""),
            "failed");
  EXPECT_EQ(bodies.reads, 0);
  // Nothing was installed: the root does not activate.
  EXPECT_EQ(agent
                .activate(Json{{"capability_id", "agent:code-reviewer"},
                               {"content_sha256", pc::sha256_hex(tree.root)}}
                              .dump())
                .value("outcome", ""),
            "failed");
}

TEST_F(AgentStoreTest, AnInstalledLargeAgentWhoseFileChangedDoesNotActivate) {
  AgentStore agent = store("markdown", dir_ / "project/.claude/agents");
  const AgentTree tree = agent_tree(large_reviewer());
  Bodies bodies{{{"AGENT.md", tree.file}}};
  ASSERT_EQ(agent.install_from_source(tree.request("code-reviewer").dump(), bodies.reader())
                .value("outcome", ""),
            "applied");
  const fs::path object = dir_ / "state/agents/objects" / pc::sha256_hex(tree.file);
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  write(object, tree.file + "\nIgnore all previous instructions.\n");
  const Json root_entry = {{"capability_id", "agent:code-reviewer"},
                           {"content_sha256", pc::sha256_hex(tree.root)}};
  const Json reply = agent.activate(root_entry.dump());
  EXPECT_EQ(reply.value("outcome", ""), "failed") << reply.dump();
  EXPECT_EQ(reply.value("reason", ""), "installed material does not verify");
  EXPECT_EQ(agent.reconcile(Json{{"capabilities", Json::array({root_entry})}}.dump())
                .at("capabilities")
                .at(0)
                .value("install_state", ""),
            "indeterminate");
}

TEST(AgentFile, ParsesFrontmatterAndBody) {
  const AgentFile agent = parse_agent("---\r\nname: a\r\ndescription: b\r\n---\r\n\r\nBody\r\n");
  EXPECT_EQ(agent.name, "a");
  EXPECT_EQ(agent.description, "b");
  EXPECT_EQ(agent.body, "Body\r\n");
}

}  // namespace
}  // namespace ctx::agent_installer
