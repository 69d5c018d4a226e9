// Issue 36 (failures 2, 3, 4, 5), as real `ctx` processes on one real state dir serving several
// projects (ctx init, the example catalog, a real Ed25519 decision key trusted for consent, the
// claude-code hooks installed in each project):
//   - a skill approved in a session of project A is activated in A's skills folder, never in B's
//     (the target is found from the session's cwd, also from a subdirectory), and B's sessions
//     are asked for their own consent;
//   - an approved skill stays for the project's next session: SessionEnd does not strip it;
//   - tool events never re-plan a session that has a plan, so a tool call mid-task never removes
//     the skill in use; a skill leaves the folder only once the project's last three prompts no
//     longer planned it, and the reply then says so;
//   - (failure 3) a new prompt about other work gets a plan for that work while a consent is
//     pending, and the earlier challenge stays approvable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr const char* kPdf = "please add a PDF export of the quarterly report";
constexpr const char* kSql = "write the sql migrations";

class ProjectLifecycleTest : public ctx::testing::TrustedStateTest {
 protected:
  void SetUp() override {
    TrustedStateTest::SetUp();
    project_a_ = dir_ / "project-a";
    project_b_ = dir_ / "project-b";
    for (const fs::path& project : {project_a_, project_b_}) {
      fs::create_directories(project / "src");
      const CtxRun installed =
          ctx_run(with_state({"hooks", "install", "claude-code", "--project", project.string()}));
      ASSERT_EQ(installed.code, 0) << installed.err;
    }
  }

  static fs::path skill_in(const fs::path& project) {
    return project / ".claude/skills/pdf-export/SKILL.md";
  }

  static Json payload(const std::string& event, const std::string& session, const fs::path& cwd) {
    return {{"session_id", session},
            {"transcript_path", "/home/u/.claude/projects/p/" + session + ".jsonl"},
            {"cwd", cwd.string()},
            {"permission_mode", "default"},
            {"hook_event_name", event}};
  }
  // `ctx hook claude-code` with `p`: exit 0, nothing on stderr; the reply line.
  std::string hook(const Json& p) const {
    const CtxRun r = ctx_run(with_state({"hook", "claude-code"}), p.dump());
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return r.out;
  }
  std::string prompt(const std::string& session, const fs::path& cwd, const std::string& text) {
    Json p = payload("UserPromptSubmit", session, cwd);
    p["prompt"] = text;
    return hook(p);
  }
  void end(const std::string& session, const fs::path& cwd) {
    Json p = payload("SessionEnd", session, cwd);
    p["reason"] = "other";
    hook(p);
  }
  // The digest of the approve command a reply carries.
  static std::string challenge_in(const std::string& reply) {
    std::smatch found;
    EXPECT_TRUE(std::regex_search(reply, found, std::regex("ctx consent approve ([0-9a-f]{64})")))
        << reply;
    return found.size() > 1 ? found[1].str() : std::string();
  }
  void approve(const std::string& digest) {
    const CtxRun approved =
        ctx_run(with_state({"consent", "approve", digest, "--key", key_.string()}));
    ASSERT_EQ(approved.code, 0) << approved.err;
    EXPECT_THAT(approved.out, HasSubstr("activation applied"));
  }
  std::size_t installed_objects() const {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(state_ / "skills" / "objects")) {
      n += entry.is_directory() || entry.is_regular_file() ? 1 : 0;
    }
    return n;
  }
  void expect_journal_verifies() const {
    const CtxRun verified = ctx_run(with_state({"journal", "verify"}));
    EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
  }

  fs::path project_a_;
  fs::path project_b_;
};

// Failure 2: two projects on one state dir; a session in A approves pdf-export.
TEST_F(ProjectLifecycleTest, ASkillApprovedInOneProjectIsActivatedThereAndNowhereElse) {
  const std::string asked = prompt("session-a", project_a_ / "src", kPdf);
  approve(challenge_in(asked));
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  EXPECT_FALSE(fs::exists(skill_in(project_b_)));
  EXPECT_FALSE(fs::exists(state_ / "skills/active/pdf-export"));
  // B's session wants it too: the install approved once is activated in B (consent is for the
  // install: that content under that policy), never by a write into A's folder.
  fs::remove_all(project_a_ / ".claude/skills/pdf-export");
  const std::string b_reply = prompt("session-b", project_b_, kPdf);
  EXPECT_THAT(b_reply, Not(HasSubstr("ctx consent approve"))) << b_reply;
  EXPECT_THAT(b_reply, HasSubstr("ctx installed: pdf-export (skill)")) << b_reply;
  EXPECT_TRUE(fs::exists(skill_in(project_b_)));
  EXPECT_FALSE(fs::exists(skill_in(project_a_)));
  EXPECT_EQ(installed_objects(), 1u);  // one install in the state dir's store
  EXPECT_FALSE(fs::exists(state_ / "activation-target.json"));
  expect_journal_verifies();
}

// Failure 4 (its lifecycle half): approve, SessionEnd, next session: the skill is present
// throughout, so the next session lists it from its start.
TEST_F(ProjectLifecycleTest, AnApprovedSkillStaysInTheProjectForItsNextSession) {
  approve(challenge_in(prompt("first-session", project_a_, kPdf)));
  ASSERT_TRUE(fs::exists(skill_in(project_a_)));
  end("first-session", project_a_);
  EXPECT_TRUE(fs::exists(skill_in(project_a_))) << "SessionEnd stripped the project's skill";
  // The next session's SessionStart writes nothing and so replies `{}` (no reloadSkills: Claude
  // Code's reloadSkills covers only skills that hook itself wrote, host-formats.md §7): the
  // skill is in the folder before the session lists its skills.
  Json start = payload("SessionStart", "next-session", project_a_);
  start["source"] = "startup";
  EXPECT_EQ(hook(start), "{}\n");
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  // A resumed session (the same id) finds it too.
  start["session_id"] = "first-session";
  start["source"] = "resume";
  hook(start);
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  EXPECT_EQ(installed_objects(), 1u);
  expect_journal_verifies();
}

// Failure 4 (its consent half) and item 2: approved once, a skill is re-activated without a new
// consent in the same session's next prompts, in a new session and in a resumed one; `ctx consent
// revoke` makes the next session ask again; the session holding it keeps it meanwhile.
TEST_F(ProjectLifecycleTest, AnApprovedInstallIsNotAskedForAgainUntilItIsRevoked) {
  approve(challenge_in(prompt("first", project_a_, kPdf)));
  ASSERT_TRUE(fs::exists(skill_in(project_a_)));
  // The same session's next prompt about the same work: the plan now offers the approved
  // material as loadable, and the session keeps what it installed.
  const std::string again = prompt("first", project_a_, "and export the summary as a PDF too");
  EXPECT_THAT(again, Not(HasSubstr("ctx consent approve"))) << again;
  EXPECT_THAT(again, HasSubstr("pdf-export (skill)")) << again;
  end("first", project_a_);
  // A new session (after the folder was emptied by hand): activated again, no consent.
  fs::remove_all(project_a_ / ".claude/skills/pdf-export");
  const std::string next = prompt("second", project_a_, kPdf);
  EXPECT_THAT(next, Not(HasSubstr("ctx consent approve"))) << next;
  EXPECT_THAT(next, HasSubstr("ctx installed: pdf-export (skill)")) << next;
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  // A resumed session (the same id as the first) too.
  EXPECT_THAT(prompt("first", project_a_, kPdf), Not(HasSubstr("ctx consent approve")));
  EXPECT_EQ(installed_objects(), 1u);

  const CtxRun listed = ctx_run(with_state({"consent", "approvals", "--json"}));
  ASSERT_EQ(listed.code, 0) << listed.err;
  const Json approvals = Json::parse(listed.out).at("approvals");
  ASSERT_EQ(approvals.size(), 1u) << listed.out;
  EXPECT_EQ(approvals[0].at("capability_id"), "skill:pdf-export");

  // Revoking an approval nobody has: a clear error, nothing changed.
  const CtxRun unknown = ctx_run(with_state({"consent", "revoke", "sql-migrations"}));
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no install of sql-migrations is approved"));
  const CtxRun revoked = ctx_run(with_state({"consent", "revoke", "pdf-export"}));
  ASSERT_EQ(revoked.code, 0) << revoked.err;
  EXPECT_THAT(revoked.out, HasSubstr("revoked the approval of skill:pdf-export"));
  // The session holding it keeps it (no consent asked in it, no failure); a new one asks.
  EXPECT_THAT(prompt("second", project_a_, kPdf), Not(HasSubstr("ctx consent approve")));
  end("second", project_a_);
  end("first", project_a_);
  const std::string third = prompt("third", project_a_, kPdf);
  EXPECT_THAT(third, HasSubstr("ctx consent approve")) << third;
  expect_journal_verifies();
}

// Item 2: an approval is for that content under that policy; a changed policy asks again.
TEST_F(ProjectLifecycleTest, AChangedInstallPolicyAsksForAnApprovedInstallAgain) {
  approve(challenge_in(prompt("first", project_a_, kPdf)));
  end("first", project_a_);
  const CtxRun set = ctx_run(with_state({"policy", "set", "agent", "preapproved-auto"}));
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_THAT(prompt("second", project_a_, kPdf), HasSubstr("ctx consent approve"));
  expect_journal_verifies();
}

// Failure 5: a tool call mid-task (its command's words name other catalog work) leaves the skill
// in use where it is; the skill leaves only after three prompts of the project that do not plan it.
TEST_F(ProjectLifecycleTest, AToolCallNeverRemovesTheSkillInUseAndPromptsRetireItByTheRule) {
  approve(challenge_in(prompt("tools-session", project_a_, kPdf)));
  ASSERT_TRUE(fs::exists(skill_in(project_a_)));
  for (const char* event : {"PreToolUse", "PostToolUse"}) {
    Json tool = payload(event, "tools-session", project_a_);
    tool["tool_name"] = "Bash";
    tool["tool_input"] = {{"command", "psql -f migrations/001_users.sql && git diff --stat"}};
    if (std::string(event) == "PostToolUse") tool["tool_response"] = {{"stdout", ""}};
    EXPECT_EQ(hook(tool), "{}\n") << event;
    EXPECT_TRUE(fs::exists(skill_in(project_a_))) << event;
  }
  // Prompts about other work: the skill stays while one of the last three prompts planned it.
  EXPECT_THAT(prompt("tools-session", project_a_, kSql), Not(HasSubstr("deactivated")));
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  EXPECT_THAT(prompt("other-session", project_a_, "a rollback for the sql migrations"),
              Not(HasSubstr("deactivated")));
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  // Prompts in project B never count for A.
  prompt("b-session", project_b_, kSql);
  prompt("b-session", project_b_, "and the psql seed data");
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  const std::string third = prompt("tools-session", project_a_, "test the sql migrations");
  EXPECT_THAT(third, HasSubstr("ctx deactivated: pdf-export (skill)")) << third;
  EXPECT_FALSE(fs::exists(skill_in(project_a_)));
  expect_journal_verifies();
}

// The user answers after the host exited (codex exec, claude -p): the session's SessionEnd came
// before the approval. What the approval activates for that ended session is released at once
// into the project's window, so the deactivation rule still retires it; a resumed session (a
// prompt of it again) holds what it activates as before.
TEST_F(ProjectLifecycleTest, ASkillApprovedAfterItsSessionEndedStillLeavesByTheRule) {
  const std::string digest = challenge_in(prompt("gone-session", project_a_, kPdf));
  end("gone-session", project_a_);
  approve(digest);
  ASSERT_TRUE(fs::exists(skill_in(project_a_)));
  // No session holds it: three prompts that do not plan it retire it on the third.
  EXPECT_THAT(prompt("next-session", project_a_, kSql), Not(HasSubstr("deactivated")));
  EXPECT_THAT(prompt("next-session", project_a_, "a rollback for the sql migrations"),
              Not(HasSubstr("deactivated")));
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  const std::string third = prompt("next-session", project_a_, "test the sql migrations");
  EXPECT_THAT(third, HasSubstr("ctx deactivated: pdf-export (skill)")) << third;
  EXPECT_FALSE(fs::exists(skill_in(project_a_)));

  // A session that ended and then came back (a resumed session prompts again) is live: what an
  // approval activates for it stays held while the project's prompts move on.
  const fs::path sql = project_b_ / ".claude/skills/sql-migrations/SKILL.md";
  const std::string again = challenge_in(prompt("resumed-session", project_b_, kSql));
  end("resumed-session", project_b_);
  prompt("resumed-session", project_b_, "and a rollback for the sql migrations");
  approve(again);
  ASSERT_TRUE(fs::exists(sql));
  for (const char* other : {"clean up the csv files", "write python tests with pytest",
                            "write good git commit messages"}) {
    const std::string reply = prompt("other-session", project_b_, other);
    EXPECT_THAT(reply, Not(HasSubstr("deactivated"))) << reply;
  }
  EXPECT_TRUE(fs::exists(sql)) << "the resumed session holds it";
  end("resumed-session", project_b_);
  EXPECT_FALSE(fs::exists(sql)) << "released with no recent prompt wanting it";
  expect_journal_verifies();
}

// Failure 3: a PDF prompt, then a SQL prompt in the same session while the PDF consent is
// pending: the second reply is the SQL plan with its own challenge, never the PDF one; the PDF
// challenge stays approvable and installs when approved; SessionEnd ends both plans.
TEST_F(ProjectLifecycleTest, ANewPromptGetsAPlanForItsWorkWhileAConsentIsPending) {
  const std::string pdf = prompt("mixed-session", project_a_, kPdf);
  const std::string pdf_challenge = challenge_in(pdf);
  const std::string sql = prompt("mixed-session", project_a_, kSql);
  EXPECT_THAT(sql, HasSubstr("sql-migrations (skill)"));
  EXPECT_THAT(sql, Not(HasSubstr("pdf-export"))) << sql;
  const std::string sql_challenge = challenge_in(sql);
  EXPECT_NE(sql_challenge, pdf_challenge);
  // Exact retries of each prompt get their own reply again.
  EXPECT_EQ(prompt("mixed-session", project_a_, kSql), sql);
  EXPECT_EQ(prompt("mixed-session", project_a_, kPdf), pdf);
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_EQ(Json::parse(shown.out).at("challenges").size(), 2u) << shown.out;
  approve(pdf_challenge);
  EXPECT_TRUE(fs::exists(skill_in(project_a_)));
  approve(sql_challenge);  // the SQL plan's first installable skill joins pdf-export
  std::size_t active = 0;
  for (const auto& entry : fs::directory_iterator(project_a_ / ".claude/skills")) {
    active += fs::exists(entry.path() / "SKILL.md") ? 1 : 0;
  }
  EXPECT_EQ(active, 2u);
  // SessionEnd releases both streams' holds: no holder is left.
  end("mixed-session", project_a_);
  std::size_t holders = 0;
  for (const auto& entry : fs::recursive_directory_iterator(state_ / "activation-holders")) {
    holders += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(holders, 0u);
  expect_journal_verifies();
}

}  // namespace
}  // namespace ctx::cli
