// `ctx journal verify` and `ctx policy set` as real processes on a real state dir.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
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
using Json = nlohmann::json;

const fs::path kSource = fs::path(CTX_SOURCE_DIR);

class JournalPolicyTest : public ::testing::Test {
 protected:
  ProcessResult ctx(std::vector<std::string> args) {
    args.insert(args.begin(), CTX_BINARY);
    args.push_back("--state");
    args.push_back(state_.string());
    return run_process(args, "");
  }
  void prepare() {
    ASSERT_EQ(ctx({"init"}).code, 0);
    ASSERT_EQ(ctx({"catalog", "import", (kSource / "examples/catalog").string()}).code, 0);
    const auto r =
        ctx({"query", "prepare", "--work", (kSource / "examples/work/pdf-export.json").string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  TempDir dir_;
  fs::path state_ = dir_ / "state";
};

TEST_F(JournalPolicyTest, JournalVerifyPassesThenNamesTheRecordWithOneEditedByte) {
  prepare();
  const fs::path journal = state_ / "service/journal.sqlite3";
  auto r = ctx({"journal", "verify"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("journal verified"));
  r = ctx({"journal", "verify", "--json"});
  EXPECT_EQ(Json::parse(r.out), (Json{{"journal", "verified"}}));

  // One byte of the first record's stored event (the SessionStarted payload) in the real file,
  // once a checkpoint has moved every committed page from the log into it.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(journal.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  ASSERT_FALSE(fs::exists(fs::path(journal.string() + "-wal")) &&
               fs::file_size(fs::path(journal.string() + "-wal")) > 0);
  std::string bytes = read_file(journal);
  const std::string needle = "\"host_level\":\"managing\"";
  const auto at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + needle.size() - 2] = 'h';  // "managing" -> "managinh"
  std::ofstream(journal, std::ios::binary | std::ios::trunc) << bytes;
  const std::string edited = read_file(journal);

  r = ctx({"journal", "verify"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("journal record 1"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(read_file(journal), edited);  // verify writes nothing
}

// The hook path's open of the managed query store reads its schema and key row only; the
// whole-file check is `ctx journal verify`'s: a damaged page of the query table fails it (exit 1,
// naming the store), and verify writes nothing.
TEST_F(JournalPolicyTest, JournalVerifyChecksEveryPageOfTheQueryStore) {
  prepare();
  const fs::path queries = state_ / "service/queries.sqlite3";
  ASSERT_EQ(ctx({"journal", "verify"}).code, 0);
  long page_size = 0;
  long root = 0;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(queries.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
              SQLITE_OK);
    const auto scalar = [&](const char* sql) {
      sqlite3_stmt* statement = nullptr;
      long value = 0;
      if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK &&
          sqlite3_step(statement) == SQLITE_ROW) {
        value = sqlite3_column_int64(statement, 0);
      }
      sqlite3_finalize(statement);
      return value;
    };
    page_size = scalar("PRAGMA page_size");
    root = scalar("SELECT rootpage FROM sqlite_master WHERE name = 'managed_queries'");
    sqlite3_close(db);
  }
  ASSERT_GT(root, 1);
  {
    std::fstream file(queries, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((root - 1) * page_size);
    const std::string garbage(static_cast<std::size_t>(page_size), '\xee');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const std::string damaged = read_file(queries);
  const auto r = ctx({"journal", "verify"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("managed query store"));
  EXPECT_EQ(read_file(queries), damaged);
}

TEST_F(JournalPolicyTest, JournalVerifyWithoutAJournalHasNothingToCheck) {
  ASSERT_EQ(ctx({"init"}).code, 0);
  const auto r = ctx({"journal", "verify"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nothing to verify"));
  EXPECT_FALSE(fs::exists(state_ / "service/journal.sqlite3"));
  EXPECT_EQ(ctx({"journal"}).code, 2);
  EXPECT_EQ(ctx({"journal", "verify", "extra"}).code, 2);
}

TEST_F(JournalPolicyTest, PolicySetChangesOneKindAndKeepsTheOthers) {
  ASSERT_EQ(ctx({"init"}).code, 0);
  auto r = ctx({"policy", "set", "skill", "preapproved-auto", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  Json policy = Json::parse(r.out);
  EXPECT_EQ(policy["skill_mode"], "preapproved-auto");
  EXPECT_EQ(policy["agent_mode"], "ask-each-time");
  EXPECT_EQ(policy["mcp_server_mode"], "ask-each-time");
  r = ctx({"policy", "set", "mcp-server", "preapproved-auto", "--json"});
  policy = Json::parse(r.out);
  EXPECT_EQ(policy["skill_mode"], "preapproved-auto");
  EXPECT_EQ(policy["mcp_server_mode"], "preapproved-auto");
  const std::string current = read_file(state_ / "install-policy/current.json");
  EXPECT_THAT(current, HasSubstr(policy["policy_digest"].get<std::string>()));
  r = ctx({"policy", "set", "skill", "ask-each-time"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("skill ask-each-time, agent ask-each-time, mcp-server "
                               "preapproved-auto"));
  // Usage errors change nothing.
  const std::string before = read_file(state_ / "install-policy/current.json");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"policy", "set", "harness", "ask-each-time"},
        {"policy", "set", "skill", "always"},
        {"policy", "set", "skill"},
        {"policy", "get"}}) {
    EXPECT_EQ(ctx(args).code, 2);
  }
  EXPECT_EQ(read_file(state_ / "install-policy/current.json"), before);
}

TEST_F(JournalPolicyTest, PolicySetNeedsAnInitialisedStateDir) {
  const auto r = ctx({"policy", "set", "skill", "preapproved-auto"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("ctx init"));
  EXPECT_FALSE(fs::exists(state_ / "install-policy"));
}

}  // namespace
}  // namespace ctx::cli
