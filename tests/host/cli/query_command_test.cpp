// `ctx query prepare|reopen` and `ctx desired set` as real processes on a real state dir.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::ProcessResult;
using ctx::testing::read_file;
using ctx::testing::run_process;
using ctx::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

const fs::path kSource = fs::path(CTX_SOURCE_DIR);

// Every durable file of the state dir with its bytes (not a database's -shm: a shared-memory
// index of its log that readers write to and SQLite rebuilds from the log).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& item : fs::recursive_directory_iterator(dir)) {
    if (item.is_regular_file() && !item.is_symlink() &&
        !item.path().string().ends_with("-shm")) {
      files[item.path().lexically_relative(dir).string()] = read_file(item.path());
    }
  }
  return files;
}

class QueryCommandTest : public ::testing::Test {
 protected:
  ProcessResult ctx(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), CTX_BINARY);
    args.push_back("--state");
    args.push_back(state_.string());
    return run_process(args, input);
  }
  void init_and_import() {
    const auto init = ctx({"init"});
    ASSERT_EQ(init.code, 0) << init.err;
    const auto import = ctx({"catalog", "import", (kSource / "examples/catalog").string()});
    ASSERT_EQ(import.code, 0) << import.err;
  }
  Json prepare_json(const std::string& work_file) {
    const auto r = ctx({"query", "prepare", "--work", work_file, "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return Json::parse(r.out);
  }
  std::string write_work(const std::string& name, const Json& work) {
    const fs::path file = dir_ / name;
    std::ofstream(file) << work.dump();
    return file.string();
  }

  TempDir dir_;
  fs::path state_ = dir_ / "state";
};

// The acceptance path of issue 7: a clean state dir, the example catalog, the example work file.
TEST_F(QueryCommandTest, CleanStateDirImportAndPrepareGiveAReadyPlan) {
  init_and_import();
  const Json result = prepare_json((kSource / "examples/work/pdf-export.json").string());
  EXPECT_EQ(result["status"], "ready");
  EXPECT_THAT(result["query_ref"].get<std::string>(), StartsWith("mqr_"));
  EXPECT_THAT(result["plan_id"].get<std::string>(), StartsWith("plan-"));
  ASSERT_FALSE(result["selections"].empty());
  const Json& first = result["selections"][0];
  EXPECT_EQ(first["capability_id"], "skill:pdf-export");
  EXPECT_EQ(first["kind"], "skill");
  EXPECT_EQ(first["actionability"], "install");
  EXPECT_TRUE(result.contains("challenge"));
  EXPECT_TRUE(result["challenge"].is_null());
  // Nothing but the seed's fields: no paths, no bodies.
  const std::string text = result.dump();
  EXPECT_EQ(text.find(state_.string()), std::string::npos);
  EXPECT_EQ(text.find("quarterly"), std::string::npos);
}

TEST_F(QueryCommandTest, ExactRetryAndReopenReturnTheSamePlanWithoutReplanning) {
  init_and_import();
  const std::string work = (kSource / "examples/work/pdf-export.json").string();
  const Json first = prepare_json(work);
  const auto journal = state_ / "service/journal.sqlite3";
  const std::string journal_before = read_file(journal);
  const Json again = prepare_json(work);
  EXPECT_EQ(again, first);
  // From stdin too.
  const auto stdin_run =
      ctx({"query", "prepare", "--work", "-", "--json"}, read_file(work));
  ASSERT_EQ(stdin_run.code, 0) << stdin_run.err;
  EXPECT_EQ(Json::parse(stdin_run.out), first);
  const auto reopened = ctx({"query", "reopen", first["query_ref"], "--json"});
  ASSERT_EQ(reopened.code, 0) << reopened.err;
  EXPECT_EQ(Json::parse(reopened.out), first);
  EXPECT_EQ(read_file(journal), journal_before);
  const auto text = ctx({"query", "reopen", first["query_ref"]});
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("skill:pdf-export install"));
}

TEST_F(QueryCommandTest, DesiredSetRecordsTheChoiceAndAnExactRetryConverges) {
  init_and_import();
  const Json plan = prepare_json((kSource / "examples/work/pdf-export.json").string());
  const std::string query_ref = plan["query_ref"];
  const auto set = ctx({"desired", "set", query_ref, "skill:pdf-export", "--json"});
  ASSERT_EQ(set.code, 0) << set.err;
  const Json desired = Json::parse(set.out);
  EXPECT_EQ(desired["query_ref"], query_ref);
  EXPECT_THAT(desired["desired_set_ref"].get<std::string>(), StartsWith("mds_"));
  EXPECT_EQ(desired["capability_ids"], Json::array({"skill:pdf-export"}));
  EXPECT_EQ(desired["plan_id"], plan["plan_id"]);
  EXPECT_TRUE(desired["status"].is_string());
  const auto retry = ctx({"desired", "set", query_ref, "skill:pdf-export", "--json"});
  ASSERT_EQ(retry.code, 0) << retry.err;
  EXPECT_EQ(Json::parse(retry.out)["desired_set_ref"], desired["desired_set_ref"]);
  // An exact prepare retry after the choice still answers with the same query.
  const Json again = prepare_json((kSource / "examples/work/pdf-export.json").string());
  EXPECT_EQ(again["query_ref"], query_ref);
}

TEST_F(QueryCommandTest, BadInputFailsTypedAndChangesNoFile) {
  init_and_import();
  const Json plan = prepare_json((kSource / "examples/work/pdf-export.json").string());
  const auto before = snapshot(state_);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"query", "prepare", "--work",
        write_work("bad.json", Json{{"session", 1}, {"signals", Json::array()}})},
       "session must be a JSON object"},
      {{"query", "prepare", "--work",
        write_work("extra.json", Json{{"signals", Json::array()}, {"surprise", true}})},
       "not allowed"},
      {{"query", "prepare", "--work", (dir_ / "missing.json").string()}, "cannot read"},
      {{"query", "reopen", "mqr_" + std::string(64, '0')}, "unavailable"},
      {{"query", "reopen", "not-a-ref"}, "opaque managed-query reference"},
      {{"desired", "set", plan["query_ref"], "skill:no-such-thing"}, "not contained"},
      {{"desired", "set", "mqr_bad", "skill:pdf-export"}, "opaque managed-query reference"},
  };
  for (const auto& [args, keyword] : cases) {
    const auto r = ctx(args);
    EXPECT_EQ(r.code, 1) << args[1] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(keyword));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(snapshot(state_), before);
}

TEST_F(QueryCommandTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"query"}, {"query", "explode"}, {"query", "prepare"},
        {"query", "prepare", "--work"}, {"query", "reopen"}, {"desired", "set", "mqr_x"},
        {"desired", "set", "mqr_x", "skill:a", "--choice", "nothex"}, {"desired"}}) {
    const auto r = ctx(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("see ctx --help"));
  }
}

TEST_F(QueryCommandTest, CommandsNeedAnInitialisedStateDirWithACatalog) {
  const std::string work = (kSource / "examples/work/pdf-export.json").string();
  auto r = ctx({"query", "prepare", "--work", work});
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(ctx({"init"}).code, 0);
  r = ctx({"query", "prepare", "--work", work});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("ctx catalog import"));
}

// Prompt words that are not catalog vocabulary never reach a file of the state dir.
TEST_F(QueryCommandTest, SignalsOutsideTheCatalogVocabularyAreNeverStored) {
  init_and_import();
  const Json work = {{"session",
                      {{"tenant", "local"},
                       {"workspace", "home"},
                       {"repository", "repo"},
                       {"session", "s-1"}}},
                     {"signals", {"export", "pdf", "xylophonemarker"}},
                     {"requested_limit", 2}};
  const auto r = ctx({"query", "prepare", "--work", write_work("w.json", work), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("xylophonemarker"), std::string::npos);
  for (const auto& [file, bytes] : snapshot(state_)) {
    EXPECT_EQ(bytes.find("xylophonemarker"), std::string::npos) << file;
  }
}

}  // namespace
}  // namespace ctx::cli
