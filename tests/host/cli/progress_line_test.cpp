// The catalog import's progress line: drawn on a terminal only (a pty here), never into a pipe
// or with --json; redrawn at most every 100 ms and cleared at the end.
#include "host/cli/progress_line.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/host/cli/process_runner.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProgressLine, RendersABarWithPercentAndCountsAndACountWhileTheTotalIsUnknown) {
  EXPECT_EQ(ProgressLine::render("objects", 20, 80),
            "ctx: writing objects [######------------------]  25% 20/80");
  EXPECT_EQ(ProgressLine::render("objects", 80, 80),
            "ctx: writing objects [########################] 100% 80/80");
  EXPECT_EQ(ProgressLine::render("graph", 0, 1),
            "ctx: building the planning graph [------------------------]   0%");
  EXPECT_EQ(ProgressLine::render("read", 1234, 0), "ctx: reading the catalog: 1234 entries");
  EXPECT_EQ(ProgressLine::render("read", 1, 0), "ctx: reading the catalog: 1 entry");
}

TEST(ProgressLine, RedrawsAtMostEvery100MsAndAtEachPhaseChangeAndEnd) {
  std::ostringstream out;
  auto now = std::chrono::steady_clock::time_point{};
  {
    ProgressLine line(out, [&] { return now; });
    line.update("objects", 1, 1000);  // drawn: a new phase
    line.update("objects", 2, 1000);  // too soon
    now += std::chrono::milliseconds(50);
    line.update("objects", 3, 1000);  // too soon
    now += std::chrono::milliseconds(60);
    line.update("objects", 4, 1000);     // drawn
    line.update("objects", 1000, 1000);  // drawn: the end
    line.update("graph", 0, 1);          // drawn: a new phase
    EXPECT_EQ(out.str(), "\r" + ProgressLine::render("objects", 1, 1000) + "\x1b[K" + "\r" +
                             ProgressLine::render("objects", 4, 1000) + "\x1b[K" + "\r" +
                             ProgressLine::render("objects", 1000, 1000) + "\x1b[K" + "\r" +
                             ProgressLine::render("graph", 0, 1) + "\x1b[K");
    out.str("");
  }
  EXPECT_EQ(out.str(), "\r\x1b[K");  // cleared when done
  std::ostringstream unused;
  { ProgressLine line(unused); }
  EXPECT_EQ(unused.str(), "");  // nothing drawn, nothing cleared
}

class ImportProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 40; ++i) {
      const std::string name = "skill-" + std::to_string(i);
      const fs::path folder = temp_ / "catalog" / "skills" / name;
      fs::create_directories(folder);
      std::ofstream(folder / "SKILL.md")
          << "---\nname: " << name << "\ndescription: Skill number " << i << ".\n---\nBody\n";
    }
    const auto init = ctx::testing::run_process({CTX_BINARY, "init", "--state", state()}, "");
    ASSERT_EQ(init.code, 0) << init.err;
  }
  std::string state() const { return (temp_ / "state").string(); }
  std::string catalog() const { return (temp_ / "catalog").string(); }

  ctx::testing::TempDir temp_;
};

TEST_F(ImportProgressTest, NothingExtraGoesIntoAPipe) {
  for (const bool json : {false, true}) {
    std::vector<std::string> argv = {CTX_BINARY, "catalog", "import",
                                     catalog(),  "--state", state()};
    if (json) argv.push_back("--json");
    const auto run = ctx::testing::run_process(argv, "");
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    EXPECT_THAT(run.out, Not(HasSubstr("\r")));
  }
}

// Runs ctx with stdin, stdout and stderr on a new pty; everything the terminal showed.
struct TerminalRun {
  int code = -1;
  std::string shown;
};

TerminalRun run_on_terminal(const std::vector<std::string>& args) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return {};
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  TerminalRun run;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd fd{master, POLLIN, 0};
    if (::poll(&fd, 1, 1000) <= 0) continue;
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child has exited and closed the terminal
    run.shown.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) run.code = WEXITSTATUS(status);
  return run;
}

TEST_F(ImportProgressTest, ATerminalShowsTheProgressLineAndItIsClearedBeforeTheResult) {
  const auto run =
      run_on_terminal({CTX_BINARY, "catalog", "import", catalog(), "--state", state()});
  ASSERT_EQ(run.code, 0) << run.shown;
  EXPECT_THAT(run.shown, HasSubstr("ctx: reading the catalog: 1 entry"));
  EXPECT_THAT(run.shown, HasSubstr("ctx: writing objects [########################] 100% 40/40"));
  EXPECT_THAT(run.shown, HasSubstr("ctx: building the planning graph"));
  const auto cleared = run.shown.rfind("\r\x1b[K");
  const auto result = run.shown.find("imported 40, skipped 0");
  ASSERT_NE(cleared, std::string::npos);
  ASSERT_NE(result, std::string::npos);
  EXPECT_LT(cleared, result);
  // --json on a terminal: the JSON alone.
  const auto json =
      run_on_terminal({CTX_BINARY, "catalog", "import", catalog(), "--state", state(), "--json"});
  ASSERT_EQ(json.code, 0) << json.shown;
  EXPECT_THAT(json.shown, Not(HasSubstr("ctx: ")));
  EXPECT_THAT(json.shown, Not(HasSubstr("\x1b[K")));
}

}  // namespace
}  // namespace ctx::cli
