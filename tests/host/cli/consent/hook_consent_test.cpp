// `ctx hook claude-code` on a UserPromptSubmit that names a catalog skill chooses its install for
// the user, as real processes on a real state dir (ctx init, the example catalog, a real Ed25519
// key made by the openssl binary and trusted with ctx consent trust):
//   - under the default ask-each-time policy the reply's additionalContext carries the consent
//     challenge's exact approve command; `ctx consent show` lists the same digest; the same hook
//     again replies byte-identically and adds no row to any durable database (no second desired
//     set, no second challenge); `ctx consent approve DIGEST --key FILE` installs and activates
//     the skill; the journal verifies;
//   - under `ctx policy set skill preapproved-auto` no challenge is raised: the reply says the
//     skill was installed, it is installed once (one object in the installer's store, the
//     catalog's bytes), and the same hook again changes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::read_file;
using ::testing::HasSubstr;
using ::testing::Not;

// Rows per table of every database of the state dir's service (read-only).
std::map<std::string, long long> durable_rows(const fs::path& state) {
  std::map<std::string, long long> rows;
  for (const char* name : {"journal.sqlite3", "consent.sqlite3", "queries.sqlite3"}) {
    const fs::path db = state / "service" / name;
    sqlite3* handle = nullptr;
    if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(handle);
      rows[std::string(name) + " (unopenable)"] = -1;
      continue;
    }
    std::vector<std::string> tables;
    sqlite3_stmt* list = nullptr;
    if (sqlite3_prepare_v2(handle, "SELECT name FROM sqlite_master WHERE type = 'table'", -1,
                           &list, nullptr) == SQLITE_OK) {
      while (sqlite3_step(list) == SQLITE_ROW) {
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list, 0)));
      }
    }
    sqlite3_finalize(list);
    for (const auto& table : tables) {
      sqlite3_stmt* count = nullptr;
      const std::string sql = "SELECT COUNT(*) FROM \"" + table + "\"";
      long long n = -1;
      if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &count, nullptr) == SQLITE_OK &&
          sqlite3_step(count) == SQLITE_ROW) {
        n = sqlite3_column_int64(count, 0);
      }
      sqlite3_finalize(count);
      rows[std::string(name) + ":" + table] = n;
    }
    sqlite3_close(handle);
  }
  return rows;
}

std::size_t entries_in(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

// A Claude Code UserPromptSubmit payload as the host writes it (with an unknown field).
std::string pdf_prompt(const std::string& session) {
  return Json{{"session_id", session},
              {"transcript_path", "/home/u/.claude/projects/p/t.jsonl"},
              {"cwd", "/home/u/proj"},
              {"permission_mode", "default"},
              {"hook_event_name", "UserPromptSubmit"},
              {"prompt", "Please add a PDF export of the monthly report"},
              {"future_field", {{"x", 1}}}}
      .dump();
}

class HookConsentTest : public ctx::testing::TrustedStateTest {
 protected:
  CtxRun hook(const std::string& payload) const {
    return ctx_run({"hook", "claude-code", "--state", state_.string()}, payload);
  }
  // The additionalContext of a Claude Code reply (one JSON line).
  static std::string context_of(const CtxRun& run) {
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const Json reply = Json::parse(run.out);
    EXPECT_EQ(reply.at("hookSpecificOutput").at("hookEventName"), "UserPromptSubmit");
    return reply.at("hookSpecificOutput").at("additionalContext").get<std::string>();
  }
};

TEST_F(HookConsentTest, APromptHookRaisesTheChallengeAndApprovingItInstallsAndActivates) {
  const CtxRun first = hook(pdf_prompt("consent-session"));
  const std::string context = context_of(first);
  EXPECT_THAT(context, HasSubstr("ctx recommends: pdf-export (skill)"));
  std::smatch found;
  ASSERT_TRUE(std::regex_search(
      context, found,
      std::regex("ctx consent approve ([0-9a-f]{64}) --key FILE")))
      << context;
  const std::string digest = found[1];
  EXPECT_THAT(context, HasSubstr("consent to install pdf-export (skill)"));
  EXPECT_THAT(context, HasSubstr("ctx consent deny " + digest + " --key FILE"));
  EXPECT_THAT(context, Not(HasSubstr("monthly")));

  // ctx consent show lists exactly that challenge, for that skill.
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  ASSERT_EQ(shown.code, 0) << shown.err;
  const Json challenges = Json::parse(shown.out).at("challenges");
  ASSERT_EQ(challenges.size(), 1u) << shown.out;
  EXPECT_EQ(challenges[0].at("challenge_digest"), digest);
  EXPECT_EQ(challenges[0].at("capability_id"), "skill:pdf-export");
  EXPECT_EQ(challenges[0].at("approve"),
            "ctx consent approve " + digest + " --key FILE --state " + state_.string());

  // The same hook again: the same reply, no durable row added anywhere (no second desired set,
  // no second challenge).
  const auto rows = durable_rows(state_);
  ASSERT_GT(rows.at("journal.sqlite3:engine_journal"), 0);
  for (int i = 0; i < 2; ++i) {
    const CtxRun again = hook(pdf_prompt("consent-session"));
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_EQ(again.out, first.out);
  }
  EXPECT_EQ(durable_rows(state_), rows);
  const CtxRun still = ctx_run(with_state({"consent", "show", "--json"}));
  EXPECT_EQ(Json::parse(still.out).at("challenges"), challenges);

  // Approving it with the trusted key installs and activates the skill.
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", digest, "--key", key_.string()}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("installed-inactive"));
  EXPECT_THAT(approved.out, HasSubstr("activation applied"));
  EXPECT_EQ(read_file(state_ / "skills" / "active" / "pdf-export" / "SKILL.md"), catalog_skill());
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  const CtxRun none = ctx_run(with_state({"consent", "show", "--json"}));
  EXPECT_TRUE(Json::parse(none.out).at("challenges").empty()) << none.out;

  // After the grant the same prompt asks for nothing and installs nothing again.
  const CtxRun after = hook(pdf_prompt("consent-session"));
  EXPECT_THAT(context_of(after), Not(HasSubstr("ctx consent approve")));
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  const CtxRun verified = ctx_run(with_state({"journal", "verify"}));
  EXPECT_EQ(verified.code, 0) << verified.err;
}

TEST_F(HookConsentTest, UnderPreapprovedAutoTheHookInstallsOnceWithoutAChallenge) {
  const CtxRun policy = ctx_run(with_state({"policy", "set", "skill", "preapproved-auto"}));
  ASSERT_EQ(policy.code, 0) << policy.err;
  const CtxRun first = hook(pdf_prompt("auto-session"));
  const std::string context = context_of(first);
  EXPECT_THAT(context, HasSubstr("ctx recommends: pdf-export (skill)"));
  EXPECT_THAT(context, HasSubstr("ctx installed: pdf-export (skill)"));
  EXPECT_THAT(context, Not(HasSubstr("ctx consent approve")));
  EXPECT_THAT(context, Not(HasSubstr("consent to install")));
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_TRUE(Json::parse(shown.out).at("challenges").empty()) << shown.out;
  // Installed once: one content-addressed object holding the catalog's bytes.
  const fs::path objects = state_ / "skills" / "objects";
  ASSERT_EQ(entries_in(objects), 1u);
  const fs::path object = fs::directory_iterator(objects)->path();
  const fs::path skill_md = fs::is_directory(object) ? object / "SKILL.md" : object;
  EXPECT_EQ(read_file(skill_md), catalog_skill());

  // The same hook again installs nothing more and adds no durable row.
  const auto rows = durable_rows(state_);
  const CtxRun again = hook(pdf_prompt("auto-session"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(durable_rows(state_), rows);
  EXPECT_EQ(entries_in(objects), 1u);
  const CtxRun verified = ctx_run(with_state({"journal", "verify"}));
  EXPECT_EQ(verified.code, 0) << verified.err;
}

}  // namespace
}  // namespace ctx::cli
