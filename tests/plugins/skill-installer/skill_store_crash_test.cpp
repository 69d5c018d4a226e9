// Real processes against one store root: a writer killed with SIGKILL in the middle of staging,
// a live writer paused mid-staging while another instance starts and reconciles, and two writers
// racing to publish the same material.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctx/sdk/error.hpp>

#include "plugins/skill-installer/core/skill_store.hpp"
#include "tests/plugins/skill-installer/skill_store_fixture.hpp"

namespace ctx::skill_installer {
namespace {

using namespace ctx::skill_installer::testing;

// Runs `body` in a forked child and returns its wait status. The child never returns into the
// test runner: it _exits with body's value (3 when it threw).
int run_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int status = 3;
    try {
      status = body();
    } catch (...) {
    }
    ::_exit(status);
  }
  int status = 0;
  EXPECT_GT(pid, 0);
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

std::vector<std::string> stage_entries(const fs::path& tmp) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(tmp)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.substr(name.size() - 6) == ".stage") out.push_back(name);
  }
  return out;
}

TEST_F(SkillStoreTest, WriterKilledMidStagingIsSweptAndReconciledAbsent) {
  SkillStore survivor(config());
  const auto files = sample_tree(300000);  // reference.md spans several 64 KiB chunks
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");

  const int status = run_child([&] {
    int polls = 0;
    SkillStore writer(config(), [&] {
      if (++polls == 4) ::kill(::getpid(), SIGKILL);  // inside reference.md's second chunk
      return false;
    });
    writer.install(request.dump());
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer was not killed, status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  // The crash left partial staging behind and published nothing.
  const auto stages = stage_entries(root_ / "tmp");
  ASSERT_EQ(stages.size(), 1u);
  const fs::path stage = root_ / "tmp" / stages.front();
  EXPECT_EQ(read(stage / "SKILL.md"), kBody);
  ASSERT_TRUE(fs::exists(stage / "reference.md"));
  EXPECT_LT(fs::file_size(stage / "reference.md"), files.at("reference.md").size());
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));

  // A live instance reconciles: dead staging is not an installation (absent, not in progress).
  Json state = reconcile_of(survivor, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "absent") << state.dump();
  EXPECT_FALSE(state.at("installed"));
  EXPECT_EQ(state.at("activation_state"), "absent");

  // A new instance sweeps it at start, and the install then completes exactly once.
  SkillStore restarted(config());
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  const Json reply = restarted.install(request.dump());
  EXPECT_EQ(reply.at("outcome"), "applied");
  EXPECT_EQ(reply.at("rewritten"), true);
  EXPECT_EQ(listing(root_ / "objects"), (std::set<std::string>{
                                            tree, tree + "/SKILL.md", tree + "/reference.md",
                                            tree + "/scripts", tree + "/scripts/run.sh"}));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  state = reconcile_of(survivor, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "applied");
  EXPECT_EQ(restarted.install(request.dump()).at("rewritten"), false);
}

TEST_F(SkillStoreTest, LiveStagingIsIndeterminateAndSurvivesAnotherInstancesSweep) {
  { SkillStore create(config()); }
  const auto files = sample_tree(100000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");
  int ready[2];
  int go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 3;
    try {
      bool paused = false;
      SkillStore writer(config(), [&] {
        if (!paused) {
          paused = true;
          char c = 'r';
          if (::write(ready[1], &c, 1) != 1) ::_exit(5);
          if (::read(go[0], &c, 1) != 1) ::_exit(6);
        }
        return false;
      });
      code = writer.install(request.dump()).at("outcome") == "applied" ? 0 : 4;
    } catch (...) {
    }
    ::_exit(code);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);

  SkillStore other(config());  // its start-up sweep must leave the live writer's staging alone
  EXPECT_EQ(stage_entries(root_ / "tmp").size(), 1u);
  EXPECT_EQ(other.sweep_stale_staging(), 0);
  Json state = reconcile_of(other, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "indeterminate");
  EXPECT_EQ(state.at("reason"), "an install of the material is in progress");

  ASSERT_EQ(::write(go[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  state = reconcile_of(other, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "applied");
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  for (const int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}

TEST_F(SkillStoreTest, RacingWritersPublishOneObject) {
  { SkillStore create(config()); }
  const auto files = sample_tree(200000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> writers;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 3;
      try {
        ::close(start[1]);
        char c = 0;
        if (::read(start[0], &c, 1) != 0) ::_exit(5);  // both start when the pipe closes
        SkillStore writer(config());
        code = writer.install(request.dump()).at("outcome") == "applied" ? 0 : 4;
      } catch (...) {
      }
      ::_exit(code);
    }
    writers.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (const pid_t pid : writers) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(listing(root_ / "objects").count(tree), 1u);
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / "objects"), fs::directory_iterator()), 1);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  SkillStore check(config());
  EXPECT_EQ(reconcile_of(check, "skill:pdf", tree).at("install_state"), "applied");
}

}  // namespace
}  // namespace ctx::skill_installer
