// Issue 36 failure 1: every ctx command ctx prints works when pasted into a fresh shell. The
// approve command of a real `ctx hook claude-code` reply on a state dir that is not the default
// names it (--state DIR) and, run verbatim (FILE replaced by the key) by /bin/sh under `env -i`
// (no ctx variables, another HOME), grants the install; on the default state dir
// ($HOME/.local/state/ctx) the printed commands carry no --state, and pasted there they work too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::ProcessResult;
using ctx::testing::run_process;
using ::testing::HasSubstr;
using ::testing::Not;

std::string pdf_prompt(const std::string& session) {
  return Json{{"session_id", session},
              {"transcript_path", "/home/u/.claude/projects/p/t.jsonl"},
              {"cwd", "/home/u/proj"},
              {"hook_event_name", "UserPromptSubmit"},
              {"prompt", "Please add a PDF export of the monthly report"}}
      .dump();
}

// `command` run by /bin/sh in an environment holding only HOME, a PATH that finds ctx, and
// `extra` (NAME=VALUE).
ProcessResult in_fresh_shell(const fs::path& home, const std::string& command,
                             const std::string& input = "", const std::string& extra = "") {
  const std::string path = fs::path(CTX_BINARY).parent_path().string() + ":/usr/bin:/bin";
  std::vector<std::string> argv = {"/usr/bin/env", "-i", "HOME=" + home.string(), "PATH=" + path};
  if (!extra.empty()) argv.push_back(extra);
  for (const char* word : {"/bin/sh", "-c"}) argv.emplace_back(word);
  argv.push_back(command);
  return run_process(argv, input, std::chrono::seconds(120));
}

// The approve command of a Claude Code reply's additionalContext, verbatim.
std::string printed_approve(const std::string& reply) {
  const std::string context =
      Json::parse(reply).at("hookSpecificOutput").at("additionalContext").get<std::string>();
  std::smatch found;
  EXPECT_TRUE(std::regex_search(
      context, found, std::regex("with: (ctx consent approve [0-9a-f]{64} --key FILE[^()]*) \\(")))
      << context;
  return found.empty() ? std::string() : std::string(found[1]);
}

std::string with_key(std::string command, const fs::path& key) {
  const auto at = command.find(" FILE");
  if (at != std::string::npos) command.replace(at + 1, 4, key.string());
  return command;
}

using PrintedCommandTest = ctx::testing::TrustedStateTest;

TEST_F(PrintedCommandTest, TheHookRepliesApproveCommandWorksPastedIntoAFreshShell) {
  const CtxRun hooked =
      ctx_run({"hook", "claude-code", "--state", state_.string()}, pdf_prompt("pasted"));
  ASSERT_EQ(hooked.code, 0) << hooked.err;
  const std::string command = printed_approve(hooked.out);
  EXPECT_THAT(command, ::testing::EndsWith(" --key FILE --state " + state_.string()));
  // ctx consent show prints the very same command.
  const CtxRun shown = ctx_run(with_state({"consent", "show"}));
  EXPECT_THAT(shown.out, HasSubstr("approve: " + command + "\n"));

  const fs::path home = dir_ / "fresh-home";
  fs::create_directory(home);
  const ProcessResult pasted = in_fresh_shell(home, with_key(command, key_));
  ASSERT_EQ(pasted.code, 0) << pasted.err;
  EXPECT_THAT(pasted.out, HasSubstr("skill:pdf-export (skill): installed-inactive "
                                    "(physical-install-applied); activation applied"));
  EXPECT_FALSE(fs::exists(home / ".local")) << "nothing was made at the fresh shell's default";
}

TEST(PrintedCommandDefaultStateTest, OnTheDefaultStateDirCommandsCarryNoStateAndStillWork) {
  ctx::testing::TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home);
  // (The hook stays in process: no server outlives the test.)
  const auto ctx_fresh = [&](const std::string& args, const std::string& input = "") {
    return in_fresh_shell(home, "ctx " + args, input, "CTX_AUTOSERVE=0");
  };
  ASSERT_EQ(ctx_fresh("init").code, 0);
  ASSERT_EQ(ctx_fresh("catalog import " + std::string(CTX_SOURCE_DIR) + "/examples/catalog").code,
            0);
  const fs::path key = dir.path() / "decision-key.pem";
  ASSERT_EQ(run_process(
                {"/usr/bin/openssl", "genpkey", "-algorithm", "ed25519", "-out", key.string()}, "")
                .code,
            0);
  const ProcessResult trusted = ctx_fresh("consent trust --key " + key.string());
  ASSERT_EQ(trusted.code, 0) << trusted.err;

  const ProcessResult hooked = ctx_fresh("hook claude-code", pdf_prompt("default-dir"));
  ASSERT_EQ(hooked.code, 0) << hooked.err;
  const std::string command = printed_approve(hooked.out);
  EXPECT_THAT(command, ::testing::EndsWith(" --key FILE")) << "the default needs no --state";
  const ProcessResult shown = ctx_fresh("consent show --json");
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_EQ(Json::parse(shown.out).at("challenges").at(0).at("approve"), command);
  EXPECT_THAT(shown.out, Not(HasSubstr("--state")));

  const ProcessResult pasted = in_fresh_shell(home, with_key(command, key));
  ASSERT_EQ(pasted.code, 0) << pasted.err;
  EXPECT_THAT(pasted.out, HasSubstr("physical-install-applied"));
}

}  // namespace
}  // namespace ctx::cli
