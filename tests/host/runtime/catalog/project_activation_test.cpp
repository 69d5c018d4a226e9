// Per-project activation targets (found from a session's cwd, the legacy single target migrated),
// and the project lifecycle window, on a real private state dir.
#include "host/runtime/catalog/project_activation.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/app/state_layout.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ctx::testing::TempDir;

struct Dir {
  TempDir temp;
  fs::path state = temp.path() / "state";
  Dir() { init_state_dir(state); }
};

ActivationTarget target_of(const std::string& adapter, const fs::path& dir, const fs::path& skills,
                           ActivationScope scope) {
  ActivationTarget target;
  target.adapter = adapter;
  target.project_dir = dir;
  target.skills_dir = skills;
  target.scope = scope;
  return target;
}

ActivationTarget project(const std::string& adapter, const fs::path& dir) {
  return target_of(adapter, dir, dir / ".claude/skills", ActivationScope::kProject);
}

TEST(ProjectActivation, ASessionsTargetIsItsNearestProjectOfItsHostElseTheUsers) {
  Dir d;
  record_activation_target(d.state, project("claude-code", "/w/a"));
  record_activation_target(d.state, project("claude-code", "/w/a/nested"));
  record_activation_target(d.state, project("claude-code", "/w/b"));
  record_activation_target(d.state, project("codex", "/w/c"));
  const auto targets = read_activation_targets(d.state);
  ASSERT_EQ(targets.size(), 4u);
  const auto at = [&](const std::string& adapter, const std::optional<fs::path>& cwd) {
    const auto found = find_activation_target(targets, adapter, cwd);
    return found ? found->project_dir.string() : std::string("none");
  };
  EXPECT_EQ(at("claude-code", fs::path("/w/a")), "/w/a");
  EXPECT_EQ(at("claude-code", fs::path("/w/a/src/x")), "/w/a");
  EXPECT_EQ(at("claude-code", fs::path("/w/a/nested/y")), "/w/a/nested");
  EXPECT_EQ(at("claude-code", fs::path("/w/b/../a")), "/w/a");
  EXPECT_EQ(at("claude-code", fs::path("/w/ab")), "none");  // not a path prefix by components
  EXPECT_EQ(at("claude-code", fs::path("/w/c")), "none");   // codex's project, not claude's
  EXPECT_EQ(at("claude-code", fs::path("relative/a")), "none");
  EXPECT_EQ(at("claude-code", std::nullopt), "none");
  EXPECT_EQ(at("codex", fs::path("/w/c/d")), "/w/c");
  // A user target serves every session of its host outside its projects.
  record_activation_target(d.state, target_of("claude-code", "/home/u", "/home/u/.claude/skills",
                                              ActivationScope::kUser));
  const auto with_user = read_activation_targets(d.state);
  const auto user = find_activation_target(with_user, "claude-code", fs::path("/elsewhere"));
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->scope, ActivationScope::kUser);
  EXPECT_EQ(find_activation_target(with_user, "claude-code", fs::path("/w/b"))->project_dir,
            "/w/b");
  // Projects have distinct tokens; the same skills dir the same one.
  EXPECT_NE(project_token("k", "/w/a/.claude/skills"), project_token("k", "/w/b/.claude/skills"));
  EXPECT_EQ(project_token("k", "/w/a/.claude/skills"), project_token("k", "/w/a/./.claude/skills"));
}

TEST(ProjectActivation, TheLegacySingleTargetIsMigratedOnce) {
  Dir d;
  const core::Json legacy = {{"adapter", "claude-code"},
                             {"project_dir", "/w/old"},
                             {"schema", "ctx.activation-target-v1"},
                             {"skills_dir", "/w/old/.claude/skills"}};
  write_private_file(d.state / "activation-target.json", core::canonical_json(legacy) + "\n",
                     "activation target");
  const auto targets = read_activation_targets(d.state);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].project_dir, "/w/old");
  EXPECT_EQ(targets[0].skills_dir, "/w/old/.claude/skills");
  EXPECT_EQ(targets[0].scope, ActivationScope::kProject);
  EXPECT_FALSE(fs::exists(d.state / "activation-target.json"));
  EXPECT_EQ(read_activation_targets(d.state).size(), 1u);
}

TEST(ProjectActivation, AMalformedTargetIsDataLoss) {
  Dir d;
  ensure_private_dir(d.state / "activation-targets", "targets");
  write_private_file(d.state / "activation-targets/x.json", "{\"adapter\":1}", "target");
  CTX_EXPECT_THROW(read_activation_targets(d.state), DataLoss, "activation target is malformed");
}

TEST(ProjectActivation, ALingeringSkillLeavesOnceTheLastThreePromptsDoNotWantIt) {
  Dir d;
  ProjectLifecycle lifecycle(d.state, "prj-1");
  const core::Json material = {{"capability_id", "skill:pdf"}};
  EXPECT_TRUE(lifecycle.record_prompt("p1", {"skill:pdf"}).empty());
  lifecycle.linger("skill:pdf", material);
  EXPECT_TRUE(lifecycle.wanted("skill:pdf"));
  EXPECT_TRUE(lifecycle.record_prompt("p2", {"skill:sql"}).empty());
  EXPECT_TRUE(lifecycle.record_prompt("p2", {"skill:sql"}).empty());  // a retry counts once
  EXPECT_TRUE(lifecycle.record_prompt("p3", {}).empty());
  const auto leaving = lifecycle.record_prompt("p4", {"skill:sql"});
  ASSERT_EQ(leaving.size(), 1u);
  EXPECT_EQ(leaving.at("skill:pdf"), material);
  EXPECT_FALSE(lifecycle.wanted("skill:pdf"));
  EXPECT_TRUE(lifecycle.record_prompt("p5", {}).empty());  // forgotten once it left
  // Another project's window is its own.
  EXPECT_FALSE(ProjectLifecycle(d.state, "prj-2").wanted("skill:sql"));
}

TEST(ProjectActivation, AnEndedSessionIsKnownByEachOfItsStreamsUntilOneOfThemIsResumed) {
  Dir d;
  ProjectLifecycle lifecycle(d.state, "prj-1");
  const core::Json session = {{"session", "s1"}, {"tenant", "t"}, {"workspace", "w"}};
  EXPECT_EQ(lifecycle.ended("base-1"), std::nullopt);
  lifecycle.end_session({"base-1", "branch-1"}, session);
  lifecycle.end_session({"base-1", "branch-1"}, session);  // idempotent
  EXPECT_EQ(lifecycle.ended("base-1"), session);
  EXPECT_EQ(lifecycle.ended("branch-1"), session);
  EXPECT_EQ(ProjectLifecycle(d.state, "prj-2").ended("base-1"), std::nullopt);
  // A later end of the same session (with a new branch) replaces its entry.
  lifecycle.end_session({"base-1", "branch-1", "branch-2"}, session);
  EXPECT_EQ(lifecycle.ended("branch-2"), session);
  // Prompts and the resumption of another stream change nothing; a resumed stream of the
  // session makes the whole session live again.
  lifecycle.record_prompt("p1", {});
  lifecycle.resume("other");
  EXPECT_EQ(lifecycle.ended("base-1"), session);
  lifecycle.resume("branch-1");
  EXPECT_EQ(lifecycle.ended("base-1"), std::nullopt);
  EXPECT_EQ(lifecycle.ended("branch-2"), std::nullopt);
}

TEST(ProjectActivation, OnlyTheLastEndedSessionsAreKept) {
  Dir d;
  ProjectLifecycle lifecycle(d.state, "prj-1");
  for (std::size_t i = 0; i <= kEndedSessions; ++i) {
    lifecycle.end_session({"s" + std::to_string(i)}, core::Json{{"session", std::to_string(i)}});
  }
  EXPECT_EQ(lifecycle.ended("s0"), std::nullopt);  // the oldest left
  EXPECT_EQ(lifecycle.ended("s1"), (core::Json{{"session", "1"}}));
  EXPECT_EQ(lifecycle.ended("s" + std::to_string(kEndedSessions)),
            (core::Json{{"session", std::to_string(kEndedSessions)}}));
}

TEST(ProjectActivation, ALifecycleFileOfAnEarlierBuildHasNoEndedSessions) {
  Dir d;
  ensure_private_dir(d.state / "projects", "projects");
  write_private_file(d.state / "projects/prj-1.json",
                     "{\"lingering\":{},\"recent\":[],\"schema\":\"ctx.project-lifecycle-v1\"}\n",
                     "lifecycle");
  ProjectLifecycle lifecycle(d.state, "prj-1");
  EXPECT_EQ(lifecycle.ended("s"), std::nullopt);
  lifecycle.end_session({"s"}, core::Json::object());
  EXPECT_TRUE(lifecycle.ended("s").has_value());
  write_private_file(d.state / "projects/prj-1.json",
                     "{\"ended\":[\"s\"],\"lingering\":{},\"recent\":[],"
                     "\"schema\":\"ctx.project-lifecycle-v1\"}\n",
                     "lifecycle");
  CTX_EXPECT_THROW(lifecycle.ended("s"), DataLoss, "project lifecycle is malformed");
}

}  // namespace
}  // namespace ctx::runtime
