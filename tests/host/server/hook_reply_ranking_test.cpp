// The hook's reply over small catalogs: a prompt's words never fail the hook (a catalog term the
// current-work surrogate would refuse as credential-like, "secrets" or "password", is dropped
// from the work's signals by CatalogVocabulary::filter, and the rest is planned as usual); the
// consent asked for is the best-ranked capability's, never a lesser skill's in its place
// (hook_runner.cpp's installable choice, over the relevance order the facts port gives).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "host/app/hook/hook_runner.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
namespace hooks = runtime::hooks;
using Json = core::Json;

hooks::HookRequest prompt_request(const std::string& session, const std::string& prompt) {
  const Json payload = {{"session_id", session},
                        {"transcript_path", "/home/u/t.jsonl"},
                        {"cwd", "/home/u/project"},
                        {"permission_mode", "default"},
                        {"hook_event_name", "UserPromptSubmit"},
                        {"prompt", prompt}};
  return hooks::HookRequest{"claude-code", payload.dump()};
}

class HookReplyTest : public ::testing::Test {
 protected:
  void write(const fs::path& relative, const std::string& text) {
    const fs::path path = dir_.path() / "catalog" / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  void import() {
    state_ = dir_.path() / "s";
    ASSERT_EQ(testing::run_ctx("init --state " + state_.string()).first, 0);
    ASSERT_EQ(testing::run_ctx("catalog import " + (dir_.path() / "catalog").string() +
                               " --state " + state_.string())
                  .first,
              0);
  }
  ctx::testing::TempDir dir_;
  fs::path state_;
};

TEST_F(HookReplyTest, ACredentialLikeCatalogTermInThePromptIsDroppedNotFatal) {
  write("skills/vault-storage/SKILL.md",
        "---\nname: vault-storage\ndescription: Store secrets, passwords and API keys in "
        "HashiCorp Vault with rotation.\n---\n\nKeep credentials out of the repository.\n");
  ASSERT_NO_FATAL_FAILURE(import());
  hooks::HookRunner runner(state_);
  hooks::HookResponse response;
  ASSERT_NO_THROW(response =
                      runner.run(prompt_request("s1", "Store the secrets in HashiCorp Vault")));
  ASSERT_TRUE(response.reply.has_value());
  EXPECT_NE(response.reply->find("vault-storage"), std::string::npos) << *response.reply;
  // Only such words: nothing to plan, an empty reply, no failure.
  ASSERT_NO_THROW(response = runner.run(prompt_request("s2", "secrets passwords")));
  EXPECT_EQ(response.reply.value_or("").find("vault-storage"), std::string::npos);
}

// An agent and a skill with the same description; the prompt names more of one's name or of the
// other's.
TEST_F(HookReplyTest, TheConsentIsTheBestRankedCapabilitysNeverALesserSkills) {
  const std::string description =
      "description: Build Flutter apps with Riverpod state management, navigation and theming.\n";
  write("agents/flutter-riverpod.md",
        "---\nname: flutter-riverpod\n" + description + "tools: Read, Edit\n---\nBody.\n");
  write("skills/flutter-theming/SKILL.md",
        "---\nname: flutter-theming\n" + description + "---\n\nBody.\n");
  ASSERT_NO_FATAL_FAILURE(import());
  hooks::HookRunner runner(state_);
  const std::string consent = "consent to install";
  // The agent ranks first: it is recommended first and the lesser skill's consent is not asked
  // in its place (the agent's own may be, by the pinned agent installer).
  const auto agent_first =
      runner.run(prompt_request("s1", "Build Flutter apps with Riverpod state and navigation"))
          .reply.value_or("");
  const auto agent_at = agent_first.find("flutter-riverpod (agent)");
  ASSERT_NE(agent_at, std::string::npos) << agent_first;
  const auto skill_at = agent_first.find("flutter-theming (skill)");
  ASSERT_NE(skill_at, std::string::npos) << agent_first;  // shown: a lesser skill was at hand
  EXPECT_LT(agent_at, skill_at) << agent_first;
  EXPECT_EQ(agent_first.find(consent + " flutter-theming"), std::string::npos) << agent_first;
  // The skill ranks first: its consent is asked.
  const auto skill_first =
      runner.run(prompt_request("s2", "Flutter theming and navigation")).reply.value_or("");
  EXPECT_NE(skill_first.find(consent + " flutter-theming"), std::string::npos) << skill_first;
}

}  // namespace
}  // namespace ctx::server
