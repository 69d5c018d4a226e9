// McpStore in process: each host file format with existing user content (comments, other
// servers, CRLF, a symlink chain), byte-for-byte restoration on deactivate, idempotence, refusal
// of invalid files and of a user's own entry of the same name, concurrent processes activating
// two servers into one file, and env values kept out of every reply.
#include "plugins/mcp-installer/core/mcp_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctx/sdk/error.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "plugins/common/bytes.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::mcp_installer {
namespace {

namespace fs = std::filesystem;
namespace pc = ctx::plugin_common;

constexpr char kSecret[] = "ghp_secretvalue0123456789";

const std::string kGithub =
    std::string(R"({"name":"github","description":"GitHub","command":"npx",)") +
    R"("args":["-y","@modelcontextprotocol/server-github"],)" + R"("env":{"GITHUB_TOKEN":")" +
    kSecret + R"("}})";
const std::string kDocs =
    R"({"name":"docs","description":"Docs","url":"https://docs.example.com/mcp","type":"http"})";

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

std::string id_of(const std::string& spec) {
  return "mcp-server:" + Json::parse(spec).at("name").get<std::string>();
}

Json entry_request(const std::string& spec) {
  return {{"capability_id", id_of(spec)}, {"content_sha256", pc::sha256_hex(spec)}};
}

class McpStoreTest : public ::testing::Test {
 protected:
  McpStore store(const std::string& format, const fs::path& config_file) {
    return McpStore(Json{
        {"root", (dir_ / "state/mcp").string()},
        {"config_file", config_file.string()},
        {"format",
         format}}.dump());
  }
  // Installs and activates `spec`; returns the activate reply.
  Json activate(McpStore& store, const std::string& spec) {
    const Json installed = store.install(Json{
        {"capability_id", id_of(spec)}, {"content", spec}, {"content_sha256", pc::sha256_hex(spec)}}
                                             .dump());
    EXPECT_EQ(installed.value("outcome", ""), "applied") << installed.dump();
    return store.activate(entry_request(spec).dump());
  }
  Json deactivate(McpStore& store, const std::string& spec) {
    return store.deactivate(Json{{"capability_id", id_of(spec)}}.dump());
  }
  Json reconcile_state(McpStore& store, const std::string& spec) {
    return store.reconcile(Json{{"capabilities", Json::array({entry_request(spec)})}}.dump())
        .at("capabilities")
        .at(0);
  }

  testing::TempDir dir_;
};

TEST_F(McpStoreTest, ClaudeJsonKeepsOtherServersAndLayoutAndRestoresTheBytes) {
  const fs::path file = dir_ / "project/.mcp.json";
  const std::string original =
      "{\n    \"mcpServers\": {\n        \"mine\": {\"command\": \"/usr/bin/mine\"}\n    },\n"
      "    \"other\": [1, 2]\n}\n";
  write(file, original);
  McpStore mcp = store("json", file);
  const Json reply = activate(mcp, kGithub);
  ASSERT_EQ(reply.value("outcome", ""), "applied") << reply.dump();
  EXPECT_EQ(reply.value("file", ""), ".mcp.json");
  const std::string after = read(file);
  const Json document = Json::parse(after);
  EXPECT_EQ(document["mcpServers"]["mine"], Json::parse(R"({"command": "/usr/bin/mine"})"));
  EXPECT_EQ(document["mcpServers"]["github"],
            Json::parse(std::string(R"({"type":"stdio","command":"npx","args":["-y",)") +
                        R"("@modelcontextprotocol/server-github"],"env":{"GITHUB_TOKEN":")" +
                        kSecret + R"("}})"));
  EXPECT_EQ(document["other"], Json::parse("[1,2]"));
  // Laid out like its sibling: the user's 4-space indentation, the sibling's line kept as is.
  EXPECT_NE(
      after.find("        \"mine\": {\"command\": \"/usr/bin/mine\"},\n        \"github\": {\n"
                 "            \"type\": \"stdio\""),
      std::string::npos)
      << after;
  EXPECT_TRUE(reconcile_state(mcp, kGithub).value("active", false));
  EXPECT_EQ(read(dir_ / "project/.mcp.json.ctx-backup"), original);

  const Json removed = deactivate(mcp, kGithub);
  EXPECT_EQ(removed.value("outcome", ""), "applied") << removed.dump();
  EXPECT_TRUE(removed.value("was_active", false));
  EXPECT_EQ(read(file), original);
  EXPECT_FALSE(reconcile_state(mcp, kGithub).value("active", true));
}

TEST_F(McpStoreTest, ClaudeJsonCreatesTheContainerAndTheFileAndTakesThemBack) {
  const fs::path settings = dir_ / "home/.claude.json";
  const std::string original = "{\r\n  \"numStartups\": 3,\r\n  \"theme\": \"dark\"\r\n}\r\n";
  write(settings, original);
  McpStore user = store("json", settings);
  ASSERT_EQ(activate(user, kDocs).value("outcome", ""), "applied");
  const std::string after = read(settings);
  EXPECT_EQ(Json::parse(after)["mcpServers"]["docs"],
            Json::parse(R"({"type":"http","url":"https://docs.example.com/mcp"})"));
  EXPECT_EQ(after.find("\n", 0), after.find("\r\n", 0) + 1) << "CRLF kept";
  for (std::size_t at = after.find('\n'); at != std::string::npos; at = after.find('\n', at + 1)) {
    ASSERT_EQ(after[at - 1], '\r') << "every new line ends with CRLF: " << after;
  }
  ASSERT_EQ(deactivate(user, kDocs).value("outcome", ""), "applied");
  EXPECT_EQ(read(settings), original);

  const fs::path fresh = dir_ / "fresh/.mcp.json";
  McpStore project = store("json", fresh);
  ASSERT_EQ(activate(project, kDocs).value("outcome", ""), "applied");
  EXPECT_EQ(Json::parse(read(fresh))["mcpServers"]["docs"]["url"], "https://docs.example.com/mcp");
  ASSERT_EQ(deactivate(project, kDocs).value("outcome", ""), "applied");
  EXPECT_FALSE(fs::exists(fresh)) << "the file ctx created is removed with its last entry";
}

TEST_F(McpStoreTest, CodexTomlKeepsCommentsAndTablesAndRestoresTheBytes) {
  const fs::path file = dir_ / "codex-home/config.toml";
  const std::string original =
      "# my codex settings\nmodel = \"gpt-5\"  # the default\n\n[mcp_servers.mine]\n"
      "command = \"/usr/bin/mine\"\n\n[profiles.fast]\nmodel = \"gpt-5-mini\"\n";
  write(file, original);
  McpStore mcp = store("toml", file);
  const Json reply = activate(mcp, kGithub);
  ASSERT_EQ(reply.value("outcome", ""), "applied") << reply.dump();
  const std::string after = read(file);
  EXPECT_EQ(after.substr(0, original.size()), original) << "every byte before the block is kept";
  EXPECT_EQ(after.substr(original.size()),
            std::string("\n[mcp_servers.github]\ncommand = \"npx\"\n") +
                "args = [\"-y\", \"@modelcontextprotocol/server-github\"]\n\n"
                "[mcp_servers.github.env]\nGITHUB_TOKEN = \"" +
                kSecret + "\"\n");
  EXPECT_TRUE(reconcile_state(mcp, kGithub).value("active", false));
  // Idempotent: a second activation writes nothing.
  const auto before = fs::last_write_time(file);
  const Json again = mcp.activate(entry_request(kGithub).dump());
  EXPECT_EQ(again.value("outcome", ""), "applied");
  EXPECT_FALSE(again.value("rewritten", true));
  EXPECT_EQ(fs::last_write_time(file), before);
  ASSERT_EQ(deactivate(mcp, kGithub).value("outcome", ""), "applied");
  EXPECT_EQ(read(file), original);
}

TEST_F(McpStoreTest, CodexTomlWithCrlfAndNoFinalNewlineAndAUrlServer) {
  const fs::path file = dir_ / "project/.codex/config.toml";
  const std::string original = "# project\r\n[features]\r\nhooks = true";
  write(file, original);
  McpStore mcp = store("toml", file);
  ASSERT_EQ(activate(mcp, kDocs).value("outcome", ""), "applied");
  EXPECT_EQ(read(file),
            original + "\r\n\r\n[mcp_servers.docs]\r\nurl = \"https://docs.example.com/mcp\"\r\n");
  ASSERT_EQ(deactivate(mcp, kDocs).value("outcome", ""), "applied");
  EXPECT_EQ(read(file), original);
}

TEST_F(McpStoreTest, ASymlinkedConfigIsEditedAtTheEndOfItsChain) {
  const fs::path real = dir_ / "dotfiles/config.toml";
  write(real, "# managed by my dotfiles\n");
  fs::create_directories(dir_ / "codex-home");
  fs::create_symlink(real, dir_ / "middle.toml");
  fs::create_symlink("../middle.toml", dir_ / "codex-home/config.toml");
  McpStore mcp = store("toml", dir_ / "codex-home/config.toml");
  ASSERT_EQ(activate(mcp, kDocs).value("outcome", ""), "applied");
  EXPECT_TRUE(fs::is_symlink(dir_ / "codex-home/config.toml"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "middle.toml"));
  EXPECT_NE(read(real).find("[mcp_servers.docs]"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "dotfiles/config.toml.ctx-backup"));
  ASSERT_EQ(deactivate(mcp, kDocs).value("outcome", ""), "applied");
  EXPECT_EQ(read(real), "# managed by my dotfiles\n");
}

TEST_F(McpStoreTest, AUsersOwnEntryOfTheSameNameIsNeverOverwrittenOrRemoved) {
  for (const auto& [format, name, text] :
       {std::tuple{"json", ".mcp.json",
                   R"({"mcpServers": {"github": {"command": "/opt/my-github"}}})"},
        std::tuple{"toml", "config.toml",
                   "[mcp_servers.github]\ncommand = \"/opt/my-github\"\n"}}) {
    SCOPED_TRACE(format);
    const fs::path file = dir_ / format / name;
    write(file, text);
    McpStore mcp = store(format, file);
    const Json reply = activate(mcp, kGithub);
    EXPECT_EQ(reply.value("outcome", ""), "failed");
    EXPECT_NE(reply.value("reason", "").find(std::string(name)), std::string::npos)
        << "the refusal names the file: " << reply.dump();
    EXPECT_NE(reply.value("reason", "").find("did not add"), std::string::npos);
    EXPECT_EQ(read(file), text);
    EXPECT_EQ(deactivate(mcp, kGithub).value("outcome", ""), "failed");
    EXPECT_EQ(read(file), text);
    EXPECT_EQ(reconcile_state(mcp, kGithub).value("activation_state", ""), "indeterminate");
  }
}

TEST_F(McpStoreTest, AnEntryChangedByTheUserAfterActivationIsLeftAlone) {
  const fs::path file = dir_ / "project/.mcp.json";
  McpStore mcp = store("json", file);
  ASSERT_EQ(activate(mcp, kDocs).value("outcome", ""), "applied");
  Json document = Json::parse(read(file));
  document["mcpServers"]["docs"]["url"] = "https://mine.example.com/mcp";
  write(file, document.dump(2));
  EXPECT_EQ(deactivate(mcp, kDocs).value("outcome", ""), "failed");
  EXPECT_EQ(Json::parse(read(file))["mcpServers"]["docs"]["url"], "https://mine.example.com/mcp");
}

TEST_F(McpStoreTest, AnInvalidConfigFileIsRefusedAndLeftUnchanged) {
  for (const auto& [format, name, text] :
       {std::tuple{"json", ".mcp.json", "{\"mcpServers\": {"},
        std::tuple{"json", ".mcp.json", "{\"a\": 1, \"a\": 2}"},
        // A repeated key deep in another part of the file (a large ~/.claude.json is checked
        // whole, though only its mcpServers is parsed).
        std::tuple{"json", ".claude.json",
                   "{\"projects\": {\"/p\": {\"h\": [{\"k\": 1, \"k\": 2}]}}, \"mcpServers\": {}}"},
        std::tuple{"json", ".mcp.json", "{\"mcpServers\": []}"},
        std::tuple{"toml", "config.toml", "[mcp_servers\ncommand = 1\n"},
        std::tuple{"toml", "config.toml", "mcp_servers = 3\n"}}) {
    SCOPED_TRACE(text);
    const fs::path file = dir_ / format / name;
    write(file, text);
    McpStore mcp = store(format, file);
    const Json reply = activate(mcp, kDocs);
    EXPECT_EQ(reply.value("outcome", ""), "failed");
    EXPECT_NE(reply.value("reason", "").find(std::string(name)), std::string::npos) << reply.dump();
    EXPECT_NE(reply.value("reason", "").find("left unchanged"), std::string::npos);
    EXPECT_EQ(read(file), text);
    EXPECT_FALSE(fs::exists(file.string() + ".ctx-backup"));
  }
}

TEST_F(McpStoreTest, AnInlineMcpServersTableCannotBeAppendedToAndIsLeftUnchanged) {
  const fs::path file = dir_ / "config.toml";
  const std::string text = "mcp_servers = { mine = { command = \"/usr/bin/mine\" } }\n";
  write(file, text);
  McpStore mcp = store("toml", file);
  EXPECT_EQ(activate(mcp, kDocs).value("outcome", ""), "failed");
  EXPECT_EQ(read(file), text);
}

TEST_F(McpStoreTest, EnvValuesAppearInNoReply) {
  const fs::path file = dir_ / "project/.mcp.json";
  McpStore mcp = store("json", file);
  std::string replies = mcp.install(Json{{"capability_id", "mcp-server:github"},
                                         {"content", kGithub},
                                         {"content_sha256", pc::sha256_hex(kGithub)}}
                                        .dump())
                            .dump();
  replies += mcp.activate(entry_request(kGithub).dump()).dump();
  replies += reconcile_state(mcp, kGithub).dump();
  replies += deactivate(mcp, kGithub).dump();
  EXPECT_EQ(replies.find(kSecret), std::string::npos) << replies;
  EXPECT_EQ(replies.find(dir_.path().string()), std::string::npos) << "no path in a reply";
}

TEST_F(McpStoreTest, ConcurrentProcessesActivatingTwoServersIntoOneFileBothLand) {
  for (const char* format : {"json", "toml"}) {
    SCOPED_TRACE(format);
    const fs::path file =
        dir_ / format / (std::string(format) == "json" ? ".mcp.json" : "config.toml");
    write(file, std::string(format) == "json" ? "{\"keep\": true}\n" : "# keep\n");
    {  // install both first, so that the children only edit the file
      McpStore mcp = store(format, file);
      for (const std::string& spec : {kGithub, kDocs}) {
        ASSERT_EQ(mcp.install(Json{{"capability_id", id_of(spec)},
                                   {"content", spec},
                                   {"content_sha256", pc::sha256_hex(spec)}}
                                  .dump())
                      .value("outcome", ""),
                  "applied");
      }
    }
    std::vector<pid_t> children;
    for (const std::string& spec : {kGithub, kDocs}) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        int code = 0;
        try {
          for (int round = 0; round < 20 && code == 0; ++round) {
            McpStore mcp = store(format, file);
            if (mcp.activate(entry_request(spec).dump()).value("outcome", "") != "applied" ||
                mcp.deactivate(Json{{"capability_id", id_of(spec)}}.dump()).value("outcome", "") !=
                    "applied") {
              code = 2;
            }
          }
          McpStore mcp = store(format, file);
          if (mcp.activate(entry_request(spec).dump()).value("outcome", "") != "applied") code = 3;
        } catch (...) {
          code = 4;
        }
        ::_exit(code);
      }
      children.push_back(pid);
    }
    for (const pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    McpStore mcp = store(format, file);
    EXPECT_TRUE(reconcile_state(mcp, kGithub).value("active", false)) << read(file);
    EXPECT_TRUE(reconcile_state(mcp, kDocs).value("active", false)) << read(file);
  }
}

TEST_F(McpStoreTest, CodexReadsNoSseServers) {
  const std::string sse = R"({"name":"events","url":"https://e.example.com/sse","type":"sse"})";
  McpStore mcp = store("toml", dir_ / "config.toml");
  const Json reply = activate(mcp, sse);
  EXPECT_EQ(reply.value("outcome", ""), "failed");
  EXPECT_FALSE(fs::exists(dir_ / "config.toml"));
}

TEST(McpServerEntry, BadEntriesAreRefusedAtInstall) {
  for (const std::string& bad : {
           std::string(R"({"name":"x","command":"/bin/x","url":"https://x.example.com"})"),
           std::string(R"({"name":"x"})"),
           std::string(R"({"name":"x","command":"bin/x"})"),
           std::string(R"({"name":"x","command":"/bin/x","env":{"A":1}})"),
           std::string(R"({"name":"x","command":"/bin/x","env":{"1A":"v"}})"),
           std::string(R"({"name":"x","command":"/bin/x","args":[1]})"),
           std::string(R"({"name":"x","url":"ftp://x.example.com"})"),
           std::string(R"({"name":"x","url":"https://x.example.com","type":"ws"})"),
       }) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_mcp_server(bad), InvalidArgument);
  }
  testing::TempDir dir;
  McpStore mcp(Json{
      {"root", (dir / "mcp").string()},
      {"config_file", (dir / ".mcp.json").string()},
      {"format",
       "json"}}.dump());
  const std::string both = R"({"name":"x","command":"/bin/x","url":"https://x.example.com"})";
  const Json reply = mcp.install(Json{
      {"capability_id", "mcp-server:x"},
      {"content", both},
      {"content_sha256",
       pc::sha256_hex(both)}}.dump());
  EXPECT_EQ(reply.value("outcome", ""), "failed");
  const std::string other = R"({"name":"y","command":"/bin/y"})";
  EXPECT_EQ(mcp.install(Json{{"capability_id", "mcp-server:x"},
                             {"content", other},
                             {"content_sha256", pc::sha256_hex(other)}}
                            .dump())
                .value("outcome", ""),
            "failed")
      << "an entry whose name is not the capability's";
}

}  // namespace
}  // namespace ctx::mcp_installer
