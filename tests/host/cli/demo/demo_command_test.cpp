// `ctx demo` as a real process on a fresh state dir, twice: every step's line, exit 0 both times,
// the host's reply recommends the PDF skill, and no word of the demo prompt that is not catalog
// vocabulary ("monthly") is in any file of the state dir.
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
    ASSERT_EQ(lines.size(), 6u) << output;
    EXPECT_THAT(lines[0], StartsWith("ctx demo: state directory "));
    EXPECT_THAT(lines[1], StartsWith("1 init: "));
    EXPECT_THAT(lines[2], StartsWith("2 catalog: "));
    EXPECT_THAT(lines[3], StartsWith(run == 1 ? "3 key: created" : "3 key: reused"));
    EXPECT_THAT(lines[4], StartsWith(run == 1 ? "4 trust: trusted verifier ed25519"
                                              : "4 trust: the demo key is already trusted"));
    EXPECT_THAT(lines[5], StartsWith("5 hook: "));
    EXPECT_THAT(lines[5], HasSubstr("\"hookEventName\":\"UserPromptSubmit\""));
    EXPECT_THAT(lines[5], HasSubstr("pdf-export (skill)"));
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
