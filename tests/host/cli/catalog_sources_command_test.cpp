// `ctx catalog add / list / update / show / remove` through the real ctx binary (issue 34 item 3
// acceptance): a git repository the test makes, read over file://, added as a source, updated
// after a new commit (added, changed and removed entries printed), shown, listed and removed. A
// skill installed from it stays byte-identical across the update and the removal, and the changed
// entry installs only through a new consent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::read_file;
using ctx::testing::run_process;
using ::testing::HasSubstr;
using ::testing::Not;

std::map<std::string, std::string> files_below(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      out[entry.path().lexically_relative(dir).generic_string()] = read_file(entry.path());
    }
  }
  return out;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

const std::vector<std::string> kGitEnv = {
    "GIT_CONFIG_GLOBAL=/dev/null",    "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t",
    "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",  "GIT_COMMITTER_EMAIL=t@example.com"};

// A work tree and the bare repository it pushes to (read over file://).
class SourceRepo {
 public:
  explicit SourceRepo(const fs::path& dir) : work_(dir / "work"), bare_(dir / "src.git") {
    git({"init", "-q", "-b", "main", work_.string()});
    git({"init", "-q", "--bare", "-b", "main", bare_.string()});
  }
  std::string commit(const std::string& message) {
    git({"-C", work_.string(), "add", "-A"});
    git({"-C", work_.string(), "commit", "-q", "-m", message});
    git({"-C", work_.string(), "push", "-q", bare_.string(), "main"});
    const std::string head = git({"-C", work_.string(), "rev-parse", "HEAD"});
    return head.substr(0, head.find('\n'));
  }
  std::string url() const { return "file://" + bare_.string(); }
  const fs::path& work() const { return work_; }

 private:
  static std::string git(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/git"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto run = run_process(argv, "", std::chrono::seconds(60), kGitEnv);
    EXPECT_EQ(run.code, 0) << run.err;
    return run.out;
  }
  fs::path work_, bare_;
};

class CatalogSourcesCommandTest : public ctx::testing::TrustedStateTest {
 protected:
  // ctx with --state, as the user's git config is (none here).
  CtxRun ctx(std::vector<std::string> args) const {
    args.insert(args.begin(), CTX_BINARY);
    args.push_back("--state");
    args.push_back(state_.string());
    const auto run = run_process(args, "", std::chrono::seconds(120),
                                 {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"});
    return {run.exited ? run.code : -1, run.out, run.err};
  }

  // Plans the example PDF work and chooses skill:pdf-export: the `desired set` reply.
  Json choose_pdf_export() const {
    const CtxRun prepared = ctx_run(
        with_state({"query", "prepare", "--work",
                    std::string(CTX_SOURCE_DIR) + "/examples/work/pdf-export.json", "--json"}));
    EXPECT_EQ(prepared.code, 0) << prepared.err;
    const Json plan = Json::parse(prepared.out);
    const CtxRun desired = ctx_run(with_state(
        {"desired", "set", plan.at("query_ref").get<std::string>(), "skill:pdf-export", "--json"}));
    EXPECT_EQ(desired.code, 0) << desired.err;
    return Json::parse(desired.out);
  }
};

TEST_F(CatalogSourcesCommandTest, AddUpdateShowListRemoveAndAnInstalledSkillKeepsItsBytes) {
  SourceRepo repo(dir_ / "repo");
  fs::copy(fs::path(CTX_SOURCE_DIR) / "examples/catalog", repo.work(), fs::copy_options::recursive);
  const std::string first = repo.commit("catalog");

  // The example catalog (imported by the fixture) is the source "local"; it goes, the git one
  // comes.
  const CtxRun removed = ctx({"catalog", "remove", "local"});
  ASSERT_EQ(removed.code, 0) << removed.err;
  EXPECT_THAT(removed.out, HasSubstr("imported 0, skipped 0"));
  const CtxRun added = ctx({"catalog", "add", repo.url(), "--name", "upstream"});
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_THAT(added.out, HasSubstr("source upstream at " + first));
  EXPECT_THAT(added.out, HasSubstr("  added skill:pdf-export\n"));

  // Install pdf-export from the source (consent approved).
  const Json chosen = choose_pdf_export();
  ASSERT_EQ(chosen.at("status"), "consent-required") << chosen.dump();
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", chosen.at("challenge").at("challenge_digest"),
                          "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  ASSERT_TRUE(fs::is_directory(state_ / "skills" / "active" / "pdf-export"));
  const auto installed = files_below(state_ / "skills");
  ASSERT_FALSE(installed.empty());

  // A new commit: pdf-export changed, a skill added, an agent removed.
  write(repo.work() / "skills/pdf-export/SKILL.md",
        read_file(repo.work() / "skills/pdf-export/SKILL.md") + "\nA new paragraph.\n");
  write(repo.work() / "skills/csv-report/SKILL.md",
        "---\nname: csv-report\ndescription: Summarise CSV files as a report.\n---\nBody\n");
  fs::remove(repo.work() / "agents/test-writer.md");
  const std::string second = repo.commit("update");

  const CtxRun updated = ctx({"catalog", "update", "upstream"});
  ASSERT_EQ(updated.code, 0) << updated.err;
  EXPECT_THAT(updated.out, HasSubstr("source upstream: " + first + " -> " + second +
                                     ": 1 added, 1 changed, 1 removed\n"));
  EXPECT_THAT(updated.out, HasSubstr("  added skill:csv-report\n"));
  EXPECT_THAT(updated.out, HasSubstr("  changed skill:pdf-export\n"));
  EXPECT_THAT(updated.out, HasSubstr("  removed agent:test-writer\n"));
  // What is installed did not change, byte for byte; the changed skill is a new install, which
  // asks for consent again.
  EXPECT_EQ(files_below(state_ / "skills"), installed);
  const Json again = choose_pdf_export();
  EXPECT_EQ(again.at("status"), "consent-required") << again.dump();
  EXPECT_EQ(files_below(state_ / "skills"), installed);

  const CtxRun shown = ctx({"catalog", "show", "pdf-export"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("skill:pdf-export\n"));
  EXPECT_THAT(shown.out, HasSubstr("  source: upstream (" + repo.url() + ")\n"));
  EXPECT_THAT(shown.out, HasSubstr("  commit: " + second + "\n"));
  EXPECT_THAT(shown.out, HasSubstr("  path: skills/pdf-export\n"));
  EXPECT_THAT(shown.out, HasSubstr("  description: "));
  EXPECT_THAT(shown.out, Not(HasSubstr("A new paragraph")));  // the description, not the body

  const CtxRun listed = ctx({"catalog", "list", "--json"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  const Json sources = Json::parse(listed.out).at("sources");
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_EQ(sources[0].at("name"), "upstream");
  EXPECT_EQ(sources[0].at("commit"), second);
  EXPECT_EQ(sources[0].at("location"), repo.url());
  EXPECT_EQ(sources[0].at("tree_digest").get<std::string>().size(), 40u);

  // Every source, nothing new: nothing changes.
  const CtxRun unchanged = ctx({"catalog", "update"});
  ASSERT_EQ(unchanged.code, 0) << unchanged.err;
  EXPECT_THAT(unchanged.out, HasSubstr("0 added, 0 changed, 0 removed"));
  EXPECT_THAT(unchanged.out, HasSubstr(", unchanged)"));

  const CtxRun gone = ctx({"catalog", "remove", "upstream"});
  ASSERT_EQ(gone.code, 0) << gone.err;
  EXPECT_THAT(ctx({"catalog", "list"}).out, HasSubstr("no catalog sources"));
  const CtxRun missing = ctx({"catalog", "show", "pdf-export"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no entry pdf-export"));
  EXPECT_EQ(files_below(state_ / "skills"), installed);
}

TEST_F(CatalogSourcesCommandTest, ErrorsNameTheCommandToRunWithTheStateDir) {
  SourceRepo repo(dir_ / "repo");
  write(repo.work() / "skills/xlsx/SKILL.md",
        "---\nname: xlsx\ndescription: Make spreadsheets.\n---\nBody\n");
  repo.commit("one");
  const CtxRun added = ctx({"catalog", "add", repo.url()});
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_THAT(added.out, HasSubstr("source src at "));  // the default name: the repository's

  const CtxRun twice = ctx({"catalog", "add", repo.url()});
  EXPECT_EQ(twice.code, 1);
  EXPECT_THAT(twice.err, HasSubstr("a catalog source named src exists (ctx catalog update src "
                                   "--state " +
                                   state_.string()));
  const CtxRun nope = ctx({"catalog", "update", "nope"});
  EXPECT_EQ(nope.code, 1);
  EXPECT_THAT(nope.err, HasSubstr("no catalog source is named nope (see ctx catalog list --state " +
                                  state_.string() + ")"));
  EXPECT_EQ(ctx({"catalog", "remove", "nope"}).code, 1);
  const CtxRun password = ctx({"catalog", "add", "https://me:hunter2@example.com/x.git"});
  EXPECT_EQ(password.code, 1);
  EXPECT_THAT(password.err, HasSubstr("must not hold a password"));
  EXPECT_THAT(password.err, Not(HasSubstr("hunter2")));
  // Nothing of the failed commands was recorded.
  const Json sources = Json::parse(ctx({"catalog", "list", "--json"}).out).at("sources");
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].at("name"), "local");
  EXPECT_EQ(sources[1].at("name"), "src");
}

}  // namespace
}  // namespace ctx::cli
