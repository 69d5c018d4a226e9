#include "host/app/hook/hooks_config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/expect_throw.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

const HookCommand kCommand{"/opt/ctx/bin/ctx", std::nullopt};

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

mode_t mode(const fs::path& file) {
  struct stat st {};
  EXPECT_EQ(::stat(file.c_str(), &st), 0);
  return st.st_mode & 07777;
}

Json ctx_group(const std::string& command, int timeout) {
  return Json::parse(R"({"hooks":[{"type":"command","command":")" + command + R"(","timeout":)" +
                     std::to_string(timeout) + "}]}");
}

// A user's settings.json with its own formatting, settings and hooks.
const char kSettings[] = R"json({
    "permissions": {"allow": ["Bash(npm test)"], "deny": []},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh"}]}
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo hi", "timeout": 5}]}
        ]
    },
    "model": "opus",
    "zzz_unknown": [1, {"b": null}]
}
)json";

class HooksConfigTest : public ::testing::Test {
 protected:
  HookTarget claude() const {
    return hook_target(HookHost::kClaudeCode, HookScope::kProject, home_.path(), project_.path());
  }
  HookTarget codex_user() const {
    return hook_target(HookHost::kCodex, HookScope::kUser, home_.path(), project_.path());
  }
  ctx::testing::TempDir home_;
  ctx::testing::TempDir project_;
};

TEST_F(HooksConfigTest, TargetsAreTheHostsOwnFiles) {
  EXPECT_EQ(claude().file, project_.path() / ".claude" / "settings.json");
  EXPECT_EQ(codex_user().file, home_.path() / ".codex" / "hooks.json");
  EXPECT_EQ(hook_target(HookHost::kClaudeCode, HookScope::kUser, home_.path(), "").file,
            home_.path() / ".claude" / "settings.json");
  EXPECT_EQ(hook_target(HookHost::kCodex, HookScope::kProject, "", project_.path()).file,
            project_.path() / ".codex" / "hooks.json");
  CTX_EXPECT_THROW(hook_target(HookHost::kCodex, HookScope::kProject, "/h", "rel"), InvalidArgument,
                   "absolute");
  CTX_EXPECT_THROW(hook_target(HookHost::kCodex, HookScope::kUser, "", "/p"), InvalidArgument,
                   "absolute");
  // $CODEX_HOME is Codex's user configuration layer; it moves neither the project's nor Claude's.
  const fs::path codex_home = home_.path() / "codex-home";
  EXPECT_EQ(hook_target(HookHost::kCodex, HookScope::kUser, home_.path(), "", codex_home).file,
            codex_home / "hooks.json");
  EXPECT_EQ(hook_target(HookHost::kCodex, HookScope::kUser, home_.path(), "", "relative").file,
            home_.path() / ".codex" / "hooks.json");
  EXPECT_EQ(
      hook_target(HookHost::kCodex, HookScope::kProject, "", project_.path(), codex_home).file,
      project_.path() / ".codex" / "hooks.json");
  EXPECT_EQ(hook_target(HookHost::kClaudeCode, HookScope::kUser, home_.path(), "", codex_home).file,
            home_.path() / ".claude" / "settings.json");
  EXPECT_EQ(parse_host("claude-code"), HookHost::kClaudeCode);
  EXPECT_EQ(parse_host("codex"), HookHost::kCodex);
  EXPECT_EQ(parse_host("generic"), std::nullopt);
}

TEST_F(HooksConfigTest, CommandLinesQuoteWhatNeedsIt) {
  EXPECT_EQ(hook_command_line(HookHost::kClaudeCode, kCommand),
            "/opt/ctx/bin/ctx hook claude-code");
  EXPECT_EQ(hook_command_line(HookHost::kCodex, {"/My Apps/ctx", fs::path("/s/it's")}),
            "'/My Apps/ctx' hook codex --state '/s/it'\\''s'");
  CTX_EXPECT_THROW(hook_command_line(HookHost::kCodex, {"ctx", std::nullopt}), InvalidArgument,
                   "absolute");
  CTX_EXPECT_THROW(hook_command_line(HookHost::kCodex, {"/bin/sh", std::nullopt}), InvalidArgument,
                   "ctx executable");
  CTX_EXPECT_THROW(hook_command_line(HookHost::kCodex, {"/bin/ctx", fs::path("rel")}),
                   InvalidArgument, "--state");
}

TEST_F(HooksConfigTest, InstallCreatesTheFileWithOneGroupPerEvent) {
  const HooksChange change = install_hooks(claude(), kCommand);
  EXPECT_TRUE(change.changed);
  EXPECT_EQ(change.file, claude().file);
  EXPECT_THAT(change.events, ElementsAreArray(installed_events(HookHost::kClaudeCode)));
  ASSERT_TRUE(change.backup.has_value());
  EXPECT_EQ(read(*change.backup), "") << "an empty backup records that there was no file";
  EXPECT_EQ(mode(*change.backup), 0600u);
  const Json written = Json::parse(read(claude().file));
  ASSERT_EQ(written.size(), 1u);
  const Json& hooks = written.at("hooks");
  std::vector<std::string> events;
  for (const auto& [event, groups] : hooks.items()) {
    events.push_back(event);
    const int timeout = event == "UserPromptSubmit" || event == "SessionStart" ? 30 : 10;
    EXPECT_EQ(groups, Json::array({ctx_group("/opt/ctx/bin/ctx hook claude-code", timeout)}))
        << event;
  }
  EXPECT_THAT(events, ElementsAreArray(installed_events(HookHost::kClaudeCode)));
  EXPECT_THAT(change.notice, HasSubstr("/hooks"));
}

TEST_F(HooksConfigTest, InstallPreservesEveryOtherSettingAndBacksUpTheOldBytes) {
  write(claude().file, kSettings);
  ::chmod(claude().file.c_str(), 0640);
  const HooksChange change = install_hooks(claude(), kCommand);
  ASSERT_TRUE(change.changed);
  ASSERT_TRUE(change.backup.has_value());
  EXPECT_EQ(read(*change.backup), kSettings);
  EXPECT_EQ(mode(claude().file), 0640u);

  const Json original = Json::parse(kSettings);
  Json written = Json::parse(read(claude().file));
  std::vector<std::string> keys;
  for (const auto& [key, value] : written.items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAreArray({"permissions", "env", "hooks", "model", "zzz_unknown"}));
  for (const char* key : {"permissions", "env", "model", "zzz_unknown"}) {
    EXPECT_EQ(written.at(key), original.at(key)) << key;
  }
  // The user's own groups stay first, in place; ctx's group follows.
  const Json& pre = written.at("hooks").at("PreToolUse");
  ASSERT_EQ(pre.size(), 2u);
  EXPECT_EQ(pre[0], original.at("hooks").at("PreToolUse")[0]);
  EXPECT_EQ(pre[1], ctx_group("/opt/ctx/bin/ctx hook claude-code", 10));
  const Json& prompt = written.at("hooks").at("UserPromptSubmit");
  ASSERT_EQ(prompt.size(), 2u);
  EXPECT_EQ(prompt[0], original.at("hooks").at("UserPromptSubmit")[0]);
  EXPECT_EQ(written.at("hooks").size(), installed_events(HookHost::kClaudeCode).size());
}

TEST_F(HooksConfigTest, ASecondInstallChangesNothing) {
  write(claude().file, kSettings);
  install_hooks(claude(), kCommand);
  const std::string after_first = read(claude().file);
  const std::string backup_after_first = read(claude().file.string() + ".ctx-backup");
  const HooksChange again = install_hooks(claude(), kCommand);
  EXPECT_FALSE(again.changed);
  EXPECT_THAT(again.events, IsEmpty());
  EXPECT_FALSE(again.backup.has_value());
  EXPECT_EQ(read(claude().file), after_first);
  EXPECT_EQ(read(claude().file.string() + ".ctx-backup"), backup_after_first);
}

TEST_F(HooksConfigTest, UninstallRestoresTheOriginalBytesExactly) {
  write(claude().file, kSettings);
  install_hooks(claude(), kCommand);
  install_hooks(claude(), kCommand);
  const HooksChange removed = uninstall_hooks(claude());
  EXPECT_TRUE(removed.changed);
  EXPECT_THAT(removed.events,
              UnorderedElementsAreArray(installed_events(HookHost::kClaudeCode)));
  EXPECT_EQ(read(claude().file), kSettings);
  EXPECT_TRUE(removed.restored);
  EXPECT_FALSE(fs::exists(claude().file.string() + ".ctx-backup"))
      << "the backup goes once the file is restored";
  // Nothing left to remove: no change, nothing written.
  const HooksChange again = uninstall_hooks(claude());
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(read(claude().file), kSettings);
}

TEST_F(HooksConfigTest, UninstallRemovesAFileThatInstallCreated) {
  install_hooks(codex_user(), kCommand);
  ASSERT_TRUE(fs::exists(codex_user().file));
  EXPECT_TRUE(uninstall_hooks(codex_user()).changed);
  EXPECT_FALSE(fs::exists(codex_user().file));
  EXPECT_FALSE(fs::exists(codex_user().file.string() + ".ctx-backup"));
  EXPECT_FALSE(uninstall_hooks(codex_user()).changed) << "a missing file is no change";
}

TEST_F(HooksConfigTest, UninstallKeepsEditsMadeAfterTheInstall) {
  write(claude().file, kSettings);
  install_hooks(claude(), kCommand);
  Json edited = Json::parse(read(claude().file));
  edited["theme"] = "dark";
  edited["hooks"]["Stop"].push_back(
      Json::parse(R"({"hooks":[{"type":"command","command":"notify-send done"}]})"));
  write(claude().file, edited.dump(2));
  const HooksChange removed = uninstall_hooks(claude());
  EXPECT_FALSE(removed.restored);
  ASSERT_TRUE(removed.backup.has_value()) << "not restored: the replaced bytes are kept";
  EXPECT_EQ(Json::parse(read(*removed.backup)), edited);
  Json expected = Json::parse(kSettings);
  expected["theme"] = "dark";
  expected["hooks"]["Stop"] =
      Json::parse(R"([{"hooks":[{"type":"command","command":"notify-send done"}]}])");
  EXPECT_EQ(Json::parse(read(claude().file)), expected);
}

TEST_F(HooksConfigTest, AnotherCommandReplacesTheOldHandlers) {
  install_hooks(codex_user(), kCommand);
  const HookCommand moved{"/usr/local/bin/ctx", fs::path("/var/lib/ctx state")};
  const HooksChange change = install_hooks(codex_user(), moved);
  EXPECT_TRUE(change.changed);
  const Json written = Json::parse(read(codex_user().file));
  for (const std::string& event : installed_events(HookHost::kCodex)) {
    const int timeout = event == "UserPromptSubmit" || event == "SessionStart" ? 30 : 10;
    EXPECT_EQ(written.at("hooks").at(event),
              Json::array({ctx_group("/usr/local/bin/ctx hook codex --state '/var/lib/ctx state'",
                                     timeout)}))
        << event;
  }
  EXPECT_THAT(change.notice, HasSubstr("open /hooks in Codex"));
}

TEST_F(HooksConfigTest, OnlyThisHostsCtxHandlersAreTouched) {
  const std::string foreign =
      R"({"hooks":{"Stop":[{"hooks":[)"
      R"({"type":"command","command":"/usr/bin/ctx hook codex"},)"
      R"({"type":"command","command":"/usr/bin/ctxd hook claude-code"},)"
      R"({"type":"command","command":"/x/ctx hook claude-code --state /s"},)"
      R"({"type":"prompt","prompt":"ctx hook claude-code"}]}]}})";
  write(claude().file, foreign);
  const HooksChange change = uninstall_hooks(claude());
  EXPECT_TRUE(change.changed);
  const Json written = Json::parse(read(claude().file));
  EXPECT_EQ(written.at("hooks").at("Stop")[0].at("hooks").size(), 3u);
  EXPECT_EQ(written.dump().find("/x/ctx"), std::string::npos);
}

TEST_F(HooksConfigTest, ASymlinkedFileIsUpdatedAtItsTarget) {
  const fs::path real = home_.path() / "dotfiles" / "settings.json";
  write(real, R"({"model":"opus"})");
  fs::create_directories(claude().file.parent_path());
  fs::create_symlink(real, claude().file);
  const HooksChange change = install_hooks(claude(), kCommand);
  EXPECT_EQ(change.file, real);
  EXPECT_TRUE(fs::is_symlink(claude().file));
  EXPECT_TRUE(Json::parse(read(real)).contains("hooks"));
  uninstall_hooks(claude());
  EXPECT_EQ(read(real), R"({"model":"opus"})");
  EXPECT_TRUE(fs::is_symlink(claude().file));
}

// A chain of links (settings.json -> dotfiles link -> repository file): the file at its end is
// edited and every link stays a link; a loop is an error and changes nothing.
TEST_F(HooksConfigTest, AChainOfSymlinksIsFollowedToItsEnd) {
  const fs::path real = home_.path() / "repo" / "claude-settings.json";
  write(real, R"({"model":"opus"})");
  const fs::path middle = home_.path() / "dotfiles" / "settings.json";
  fs::create_directories(middle.parent_path());
  fs::create_symlink(real, middle);
  fs::create_directories(claude().file.parent_path());
  fs::create_symlink(middle.lexically_relative(claude().file.parent_path()), claude().file);
  const HooksChange change = install_hooks(claude(), kCommand);
  EXPECT_TRUE(fs::equivalent(change.file, real)) << change.file;
  EXPECT_TRUE(fs::is_symlink(claude().file));
  EXPECT_TRUE(fs::is_symlink(middle));
  EXPECT_TRUE(Json::parse(read(real)).contains("hooks"));
  uninstall_hooks(claude());
  EXPECT_EQ(read(real), R"({"model":"opus"})");
  EXPECT_TRUE(fs::is_symlink(middle));

  fs::remove(claude().file);
  fs::create_symlink(home_.path() / "loop-b", home_.path() / "loop-a");
  fs::create_symlink(home_.path() / "loop-a", home_.path() / "loop-b");
  fs::create_symlink(home_.path() / "loop-a", claude().file);
  EXPECT_THROW(install_hooks(claude(), kCommand), SystemError);
  EXPECT_TRUE(fs::is_symlink(claude().file));
}

TEST_F(HooksConfigTest, AMalformedFileIsATypedErrorAndLeftUntouched) {
  for (const std::string& bytes :
       {std::string("{\"hooks\": {"), std::string("[]"), std::string(""),
        std::string("// comment\n{}"), std::string(R"({"a":1,"a":2})"),
        std::string(R"({"hooks":[]})"), std::string(R"({"hooks":{"Stop":{}}})")}) {
    SCOPED_TRACE(bytes);
    write(claude().file, bytes);
    for (const bool installing : {true, false}) {
      try {
        if (installing) {
          install_hooks(claude(), kCommand);
        } else {
          uninstall_hooks(claude());
        }
        ADD_FAILURE() << "accepted a malformed file";
      } catch (const MalformedHooksConfig& e) {
        EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
        EXPECT_THAT(e.what(), HasSubstr("left unchanged"));
      }
      EXPECT_EQ(read(claude().file), bytes);
      EXPECT_FALSE(fs::exists(claude().file.string() + ".ctx-backup"));
    }
  }
  fs::remove(claude().file);
  fs::create_directories(claude().file);
  CTX_EXPECT_THROW(install_hooks(claude(), kCommand), MalformedHooksConfig, "not a regular file");
}

TEST_F(HooksConfigTest, ANewFileFollowsTheUmaskAndAnExistingOneKeepsItsMode) {
  const mode_t previous = ::umask(077);
  install_hooks(codex_user(), kCommand);
  ::umask(previous);
  EXPECT_EQ(mode(codex_user().file), 0600u);
  ::chmod(codex_user().file.c_str(), 0664);
  install_hooks(codex_user(), {"/other/ctx", std::nullopt});
  EXPECT_EQ(mode(codex_user().file), 0664u);
}

TEST_F(HooksConfigTest, DisabledHooksAreMentioned) {
  write(claude().file, R"({"disableAllHooks":true})");
  EXPECT_THAT(install_hooks(claude(), kCommand).notice, HasSubstr("disableAllHooks"));
}

}  // namespace
}  // namespace ctx::runtime::hooks

namespace ctx::runtime::hooks {
namespace {

TEST_F(HooksConfigTest, CodexInstallsSessionEnd) {
  // Codex 0.169 fires SessionEnd (host-formats §7): without its handler a session never releases.
  EXPECT_THAT(installed_events(HookHost::kCodex), ::testing::Contains("SessionEnd"));
  const HooksChange change = install_hooks(codex_user(), kCommand);
  EXPECT_THAT(change.events, ::testing::Contains("SessionEnd"));
}

TEST_F(HooksConfigTest, ReadInstalledHooksFindsACtxHandlerAmongOthers) {
  const HookTarget target =
      hook_target(HookHost::kCodex, HookScope::kProject, home_.path(), project_.path());
  write(target.file, R"({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}],
                                   "SessionStart": [{"hooks": [{"type": "command", "command": "x"},
                                                               {"type": "command", "command": "/a/ctx hook codex"}]}]}})");
  const InstalledHooks installed = read_installed_hooks(target);
  EXPECT_THAT(installed.events, ElementsAreArray({"SessionStart"}));
  EXPECT_THAT(installed.trust_keys,
              ElementsAreArray({target.file.string() + ":session_start:0:1"}));
  EXPECT_FALSE(installed.state_dir.has_value()) << "no --state: the default state dir";
  EXPECT_EQ(installed.missing.size(), installed_events(HookHost::kCodex).size() - 1);
}

TEST_F(HooksConfigTest, ReadInstalledHooksAfterInstall) {
  const HookTarget target =
      hook_target(HookHost::kCodex, HookScope::kProject, home_.path(), project_.path());
  EXPECT_THAT(read_installed_hooks(target).events, IsEmpty()) << "no file holds nothing";
  write(target.file,
        R"({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}})");
  install_hooks(target, {"/opt/bin/ctx", fs::path("/var/my state")});
  const InstalledHooks installed = read_installed_hooks(target);
  EXPECT_THAT(installed.missing, IsEmpty());
  EXPECT_THAT(installed.events, UnorderedElementsAreArray(installed_events(HookHost::kCodex)));
  ASSERT_TRUE(installed.state_dir.has_value());
  EXPECT_EQ(*installed.state_dir, "/var/my state");
  const std::string file = target.file.string();
  // The user's own Stop group stays first: ctx's handler is group 1 there.
  EXPECT_THAT(installed.trust_keys, ::testing::Contains(file + ":stop:1:0"));
  EXPECT_THAT(installed.trust_keys, ::testing::Contains(file + ":session_start:0:0"));
  EXPECT_THAT(installed.trust_keys, ::testing::Contains(file + ":user_prompt_submit:0:0"));
  EXPECT_EQ(installed.trust_keys.size(), installed_events(HookHost::kCodex).size());
  EXPECT_EQ(snake_event("PostToolUse"), "post_tool_use");
  EXPECT_TRUE(is_ctx_hook_command("'/My Apps/ctx' hook codex --state /s", HookHost::kCodex));
  EXPECT_FALSE(is_ctx_hook_command("/bin/ctx hook claude-code", HookHost::kCodex));
  EXPECT_FALSE(is_ctx_hook_command("/bin/ctxx hook codex", HookHost::kCodex));
}

// config.toml as codex app-server's config/batchWrite leaves it (host-formats §7).
const char kCodexBefore[] =
    "# my settings\nmodel = \"gpt-5.4\"\n\n[projects.\"/w/p\"]\ntrust_level = \"trusted\"\n";
const char kCodexTrusted[] =
    "# my settings\nmodel = \"gpt-5.4\"\n\n[projects.\"/w/p\"]\ntrust_level = \"trusted\"\n\n"
    "[hooks.state]\n\n"
    "[hooks.state.\"/w/p/.codex/hooks.json:session_start:0:0\"]\n"
    "trusted_hash = \"sha256:aa\"\n\n"
    "[hooks.state.\"/w/p/.codex/hooks.json:stop:1:0\"]\n"
    "trusted_hash = \"sha256:bb\"\n";
const std::vector<std::string> kCtxKeys = {"/w/p/.codex/hooks.json:session_start:0:0",
                                           "/w/p/.codex/hooks.json:stop:1:0"};

TEST_F(HooksConfigTest, WithoutTrustTablesKeepsEveryOtherByte) {
  EXPECT_EQ(without_trust_tables(kCodexTrusted, kCtxKeys), kCodexBefore);
  // Another hook's trust stays, and so does the [hooks.state] table holding it.
  const std::string mine =
      std::string(kCodexTrusted) +
      "\n[hooks.state.\"/home/u/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:cc\"\n";
  EXPECT_EQ(without_trust_tables(mine, kCtxKeys),
            std::string(kCodexBefore) +
                "\n[hooks.state]\n\n[hooks.state.\"/home/u/.codex/hooks.json:stop:0:0\"]\n"
                "trusted_hash = \"sha256:cc\"\n");
  // A table after ctx's entries keeps its place and bytes.
  const std::string later = std::string(kCodexTrusted) + "\n[tui]\nnotifications = true\n";
  EXPECT_EQ(without_trust_tables(later, kCtxKeys),
            std::string(kCodexBefore) + "\n[tui]\nnotifications = true\n");
  EXPECT_EQ(without_trust_tables(kCodexBefore, kCtxKeys), kCodexBefore) << "nothing to remove";
}

TEST_F(HooksConfigTest, RemoveCodexTrustRestoresTheBytesBeforeTrust) {
  const fs::path config = home_.path() / ".codex" / "config.toml";
  write(config, kCodexBefore);
  save_codex_config_backup(config);
  EXPECT_EQ(mode(config.string() + ".ctx-backup"), 0600u);
  write(config, kCodexTrusted);      // what Codex wrote
  save_codex_config_backup(config);  // a second trust keeps the first backup
  EXPECT_EQ(read(config.string() + ".ctx-backup"), kCodexBefore);
  const CodexConfigFacts facts = read_codex_config(config);
  EXPECT_EQ(facts.trusted_hashes.at(kCtxKeys[1]), "sha256:bb");
  EXPECT_TRUE(codex_project_trusted(facts, "/w/p"));
  EXPECT_TRUE(codex_project_trusted(facts, "/w/p/sub/dir"));
  EXPECT_FALSE(codex_project_trusted(facts, "/w/other"));

  const TrustRemoval removal = remove_codex_trust(config, kCtxKeys);
  EXPECT_TRUE(removal.changed);
  EXPECT_TRUE(removal.restored);
  EXPECT_EQ(removal.removed, 2u);
  EXPECT_EQ(read(config), kCodexBefore);
  EXPECT_FALSE(fs::exists(config.string() + ".ctx-backup"));
  EXPECT_FALSE(remove_codex_trust(config, kCtxKeys).changed) << "nothing left to remove";
  EXPECT_EQ(read(config), kCodexBefore);
}

TEST_F(HooksConfigTest, RemoveCodexTrustKeepsWhatChangedSinceAndRemovesAFileItMade) {
  const fs::path config = home_.path() / ".codex" / "config.toml";
  write(config, std::string(kCodexTrusted) + "\n[tui]\nnotifications = true\n");
  save_codex_config_backup(config);  // stands for any earlier content
  write(config, std::string(kCodexTrusted) + "\n[tui]\nnotifications = false\n");
  const TrustRemoval removal = remove_codex_trust(config, kCtxKeys);
  EXPECT_TRUE(removal.changed);
  EXPECT_FALSE(removal.restored);
  EXPECT_EQ(read(config), std::string(kCodexBefore) + "\n[tui]\nnotifications = false\n");

  // No config.toml before ctx trusted: the file Codex made for it goes again.
  const fs::path fresh = project_.path() / "codex-home" / "config.toml";
  save_codex_config_backup(fresh);
  write(fresh, std::string("[hooks.state]\n\n[hooks.state.\"") + kCtxKeys[0] +
                   "\"]\ntrusted_hash = \"sha256:aa\"\n");
  EXPECT_TRUE(remove_codex_trust(fresh, kCtxKeys).restored);
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(fresh.string() + ".ctx-backup"));
}

TEST_F(HooksConfigTest, RemoveCodexTrustRefusesWhatItCannotEditAndChangesNothing) {
  const fs::path config = home_.path() / ".codex" / "config.toml";
  const std::string inline_form =
      std::string("[hooks.state]\n\"") + kCtxKeys[0] + "\" = { trusted_hash = \"sha256:aa\" }\n";
  write(config, inline_form);
  CTX_EXPECT_THROW(remove_codex_trust(config, kCtxKeys), MalformedHooksConfig, "/hooks");
  EXPECT_EQ(read(config), inline_form);
  write(config, "this is = = not toml");
  CTX_EXPECT_THROW(remove_codex_trust(config, kCtxKeys), MalformedHooksConfig, "not valid TOML");
  CTX_EXPECT_THROW(read_codex_config(config), MalformedHooksConfig, "not valid TOML");
  EXPECT_EQ(read(config), "this is = = not toml");
}

// The file system refuses to rename the new settings into place (FaultyStateFs): a typed error
// naming the file and errno, the user's settings byte-identical with their mode, no stage left;
// the same install then goes through. A crash just before that rename leaves the settings as they
// were too, and the next install (same process id: the same stage name) completes.
TEST_F(HooksConfigTest, AFailedOrCrashedRenameLeavesTheSettingsAsTheyWere) {
  write(claude().file, kSettings);
  ::chmod(claude().file.c_str(), 0640);
  const fs::path dir = claude().file.parent_path();
  const auto names = [&] {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
      out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  ctx::testing::FaultyStateFs faulty(store::default_state_fs());
  faulty.fail(core::StateFsStep::kRename, EIO, claude().file.filename().string());
  CTX_EXPECT_THROW(install_hooks(claude(), kCommand, faulty), core::StateFsError,
                   "cannot write " + claude().file.string() + ": Input/output error");
  EXPECT_EQ(faulty.pending(), 0u);
  EXPECT_EQ(read(claude().file), kSettings);
  EXPECT_EQ(mode(claude().file), 0640u);
  const std::string file_name = claude().file.filename().string();
  EXPECT_THAT(names(), ElementsAreArray({file_name, file_name + ".ctx-backup"}));

  faulty.crash_at(core::StateFsStep::kRename, file_name);
  EXPECT_THROW(install_hooks(claude(), kCommand, faulty), ctx::testing::StateFsCrash);
  EXPECT_EQ(read(claude().file), kSettings);
  EXPECT_EQ(names().size(), 3u);  // the dead process's stage

  const HooksChange change = install_hooks(claude(), kCommand, faulty);
  EXPECT_TRUE(change.changed);
  EXPECT_EQ(mode(claude().file), 0640u);
  EXPECT_EQ(read(*change.backup), kSettings);
  EXPECT_THAT(names(), ElementsAreArray({file_name, file_name + ".ctx-backup"}));
  EXPECT_EQ(read_installed_hooks(claude()).events.size(),
            installed_events(HookHost::kClaudeCode).size());
}

}  // namespace
}  // namespace ctx::runtime::hooks
