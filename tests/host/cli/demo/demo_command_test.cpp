// `ctx demo` as a real process on a fresh state dir, twice: every step's line, exit 0 both times,
// the host's reply recommends the PDF skill, the first run asks for consent, approves it with the
// demo key and the skill's tree ends up where Claude Code looks for project skills
// (<state>/demo-project/.claude/skills/pdf-export/SKILL.md and scripts/export.py, the catalog's
// exact bytes; installed once), the second run has nothing left to approve, and no word of the demo
// prompt that is not catalog vocabulary ("monthly") is in any file of the state dir.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::pair<int, std::string> run_demo(const fs::path& state, const fs::path& out) {
  const std::string command = std::string(CTX_BINARY) + " demo --state " + state.string() +
                              " --catalog " + CTX_SOURCE_DIR + "/examples/catalog >" +
                              out.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(DemoCommand, RunsEveryStepOnAFreshStateDirAndAgainOnTheSameOne) {
  ctx::testing::TempDir dir;
  const fs::path state = dir / "state";
  for (int run = 1; run <= 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const auto [status, output] = run_demo(state, dir / ("out" + std::to_string(run)));
    ASSERT_EQ(status, 0) << output;
    const std::vector<std::string> lines = lines_of(output);
    ASSERT_EQ(lines.size(), 10u) << output;
    EXPECT_THAT(lines[0], StartsWith("ctx demo: state directory "));
    EXPECT_THAT(lines[1], StartsWith("1 init: "));
    EXPECT_THAT(lines[2], StartsWith("2 catalog: "));
    EXPECT_THAT(lines[3], StartsWith(run == 1 ? "3 key: created" : "3 key: reused"));
    EXPECT_THAT(lines[4], StartsWith(run == 1 ? "4 trust: trusted verifier ed25519"
                                              : "4 trust: the demo key is already trusted"));
    EXPECT_THAT(lines[5], StartsWith("5 hook: "));
    EXPECT_THAT(lines[5], HasSubstr("\"hookEventName\":\"UserPromptSubmit\""));
    EXPECT_THAT(lines[5], HasSubstr("pdf-export (skill)"));
    EXPECT_THAT(lines[6], StartsWith("6 plan: "));
    EXPECT_THAT(lines[6], HasSubstr("skill:pdf-export (install)"));
    EXPECT_THAT(lines[7], StartsWith("7 consent: "));
    if (run == 1) {
      EXPECT_THAT(lines[6], HasSubstr("-> consent-required, consent challenge "));
      // The hook itself raised that challenge: its reply names the exact approve command.
      const std::string marker = "consent challenge ";
      const auto at = lines[6].find(marker);
      ASSERT_NE(at, std::string::npos) << lines[6];
      const std::string digest = lines[6].substr(at + marker.size(), 64);
      EXPECT_THAT(lines[5], HasSubstr("ctx consent approve " + digest + " --key FILE"));
      EXPECT_THAT(lines[7], HasSubstr("ctx consent approve "));
      EXPECT_THAT(lines[8], StartsWith("8 approve: signed the grant with the demo key: "));
      EXPECT_THAT(lines[8], HasSubstr("installed-inactive"));
      EXPECT_THAT(lines[8], HasSubstr("activation applied"));
    } else {
      EXPECT_THAT(lines[7], HasSubstr("no install consent is pending"));
      EXPECT_THAT(lines[8], StartsWith("8 approve: nothing to approve: "));
    }
    EXPECT_THAT(lines[9], StartsWith("9 reply: "));
    EXPECT_THAT(lines[9], HasSubstr("\"hookEventName\":\"SessionStart\""));
    EXPECT_THAT(lines[9], HasSubstr("\"reloadSkills\":true"));
    const fs::path skill =
        state / "demo-project" / ".claude" / "skills" / "pdf-export" / "SKILL.md";
    std::ifstream installed(skill);
    std::stringstream got;
    got << installed.rdbuf();
    std::ifstream source(fs::path(CTX_SOURCE_DIR) / "examples/catalog/skills/pdf-export/SKILL.md");
    std::stringstream want;
    want << source.rdbuf();
    EXPECT_FALSE(want.str().empty());
    EXPECT_EQ(got.str(), want.str()) << skill;
    // The whole skill tree is exposed, resources included.
    const fs::path script =
        state / "demo-project" / ".claude" / "skills" / "pdf-export" / "scripts" / "export.py";
    std::ifstream installed_script(script);
    std::stringstream got_script;
    got_script << installed_script.rdbuf();
    std::ifstream source_script(fs::path(CTX_SOURCE_DIR) /
                                "examples/catalog/skills/pdf-export/scripts/export.py");
    std::stringstream want_script;
    want_script << source_script.rdbuf();
    EXPECT_FALSE(want_script.str().empty());
    EXPECT_EQ(got_script.str(), want_script.str()) << script;
    std::size_t objects = 0;
    for (auto it = fs::directory_iterator(state / "skills" / "objects");
         it != fs::directory_iterator(); ++it) {
      ++objects;
    }
    EXPECT_EQ(objects, 1u);
    EXPECT_THAT(output, ::testing::Not(HasSubstr("monthly")));
  }
  const auto mode = fs::status(state / "demo" / "decision-key.pem").permissions();
  EXPECT_EQ(mode & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  // No prompt word outside the catalog's vocabulary reached any file.
  for (const auto& entry : fs::recursive_directory_iterator(state)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    EXPECT_EQ(bytes.str().find("monthly"), std::string::npos) << entry.path();
  }
}

}  // namespace
