// The service methods over a real state dir (ctx init + the example catalog, through the ctx
// binary): each mirrors its CLI command's --json output byte for byte; bad params are -32602
// without the payload; 8 concurrent clients × 500 mixed requests all get valid replies and leave
// exactly the journal and query rows one sequential pass leaves (no effect lost or duplicated),
// and `ctx journal verify` passes afterwards.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/server/server.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
using Json = core::Json;
using testing::call;
using testing::RpcClient;

std::string trim_newline(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// A state dir with the bundled plugins pinned and the example catalog imported.
void prepare_state(const fs::path& state) { ASSERT_TRUE(testing::prepare_state_dir(state)); }

Json claude_prompt(const std::string& session, const std::string& prompt) {
  return {{"session_id", session},
          {"transcript_path", "/home/u/t.jsonl"},
          {"cwd", "/home/u/project"},
          {"permission_mode", "default"},
          {"hook_event_name", "UserPromptSubmit"},
          {"prompt", prompt},
          {"unknown_future_field", 42}};
}

Json work_for(int client) {
  return {{"session",
           {{"tenant", "local"},
            {"workspace", "ws-demo"},
            {"repository", "repo-demo"},
            {"session", "work-session-" + std::to_string(client)}}},
          {"signals", client % 2 == 0 ? Json{"pdf", "export"} : Json{"sql", "migrations"}}};
}

std::int64_t count_rows(const fs::path& db, const std::string& table) {
  sqlite3* handle = nullptr;
  std::int64_t count = -1;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* statement = nullptr;
    const std::string sql = "SELECT COUNT(*) FROM " + table;
    if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW) {
      count = sqlite3_column_int64(statement, 0);
    }
    sqlite3_finalize(statement);
  }
  sqlite3_close(handle);
  return count;
}

class ServiceMethodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "s";
    prepare_state(state_);
  }
  void start() {
    MethodTable table;
    register_builtin_methods(table, state_);
    register_service_methods(table, state_);
    ServerOptions options;
    options.state_dir = state_;
    options.worker_threads = 4;
    options.log = &log_;
    server_ = std::make_unique<Server>(std::move(options), std::move(table));
    thread_ = std::thread([this] { server_->run(); });
  }
  void stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }
  void TearDown() override { stop(); }

  ctx::testing::TempDir dir_;
  fs::path state_;
  std::ostringstream log_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServiceMethodsTest, EachMethodMirrorsItsCliCommandsJsonOutput) {
  // The CLI first, in process (no server yet); then the same requests through the server.
  const Json prompt = claude_prompt("mirror-1", "please add a PDF export of the quarterly report");
  const auto [hook_status, hook_out] =
      testing::run_ctx("hook claude-code --state " + state_.string(), prompt.dump());
  ASSERT_EQ(hook_status, 0);
  const fs::path work_file = dir_ / "work.json";
  std::ofstream(work_file) << work_for(0).dump();
  const auto [prepare_status, prepare_out] = testing::run_ctx(
      "query prepare --work " + work_file.string() + " --json --state " + state_.string());
  ASSERT_EQ(prepare_status, 0);
  const Json prepared = Json::parse(prepare_out);
  const std::string query_ref = prepared.at("query_ref");
  const auto [reopen_status, reopen_out] =
      testing::run_ctx("query reopen " + query_ref + " --json --state " + state_.string());
  ASSERT_EQ(reopen_status, 0);

  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(state_ / kSocketFile));
  const Json hook =
      call(client, 1, "hook", {{"adapter", "claude-code"}, {"payload", prompt.dump()}});
  ASSERT_TRUE(hook.contains("result")) << hook.dump();
  EXPECT_EQ(hook["result"]["reply"], trim_newline(hook_out));
  const Json again = call(client, 2, "query.prepare", {{"work", work_for(0)}});
  ASSERT_TRUE(again.contains("result")) << again.dump();
  EXPECT_EQ(again["result"], prepared);
  const Json reopened = call(client, 3, "query.reopen", {{"query_ref", query_ref}});
  EXPECT_EQ(reopened["result"], Json::parse(reopen_out));

  // desired.set: the CLI's output for the same choice is the server's (an exact retry).
  std::vector<std::string> ids;
  for (const Json& selection : prepared.at("selections"))
    ids.push_back(selection.at("capability_id"));
  ASSERT_FALSE(ids.empty());
  const Json desired =
      call(client, 4, "desired.set", {{"query_ref", query_ref}, {"capability_ids", {ids[0]}}});
  ASSERT_TRUE(desired.contains("result")) << desired.dump();
  stop();
  const auto [desired_status, desired_out] = testing::run_ctx(
      "desired set " + query_ref + " " + ids[0] + " --json --state " + state_.string());
  ASSERT_EQ(desired_status, 0);
  EXPECT_EQ(desired["result"], Json::parse(desired_out));

  // One log line per request, never the prompt.
  const std::string log = log_.str();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 4);
  EXPECT_EQ(log.find("quarterly"), std::string::npos);
  EXPECT_EQ(log.find("PDF"), std::string::npos);
}

// `ctx hook` goes through the running server of its state dir (the server logs the request) and
// prints what the in-process path prints; with nobody listening on a leftover socket file it
// runs in process again.
TEST_F(ServiceMethodsTest, CtxHookTalksToTheRunningServerOfItsStateDirElseRunsInProcess) {
  const Json prompt = claude_prompt("client-1", "export the report to PDF please");
  const std::string hook = "hook claude-code --state " + state_.string();
  const auto [in_process_status, in_process] = testing::run_ctx(hook, prompt.dump());
  ASSERT_EQ(in_process_status, 0);
  ASSERT_FALSE(in_process.empty());

  start();
  const auto [served_status, served] = testing::run_ctx(hook, prompt.dump());
  EXPECT_EQ(served_status, 0);
  EXPECT_EQ(served, in_process);
  // A malformed payload is the server's -32602: one stderr line, exit 1, never 2.
  EXPECT_EQ(testing::run_ctx(hook, "{\"hook_event_name\":").first, 1);
  stop();
  const std::string log = log_.str();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
  EXPECT_NE(log.find("\"method\":\"hook\""), std::string::npos) << log;

  // A socket file nobody listens on (a crashed server): in process, same reply.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, (state_ / kSocketFile).c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ::close(fd);
  }
  ASSERT_TRUE(fs::exists(state_ / kSocketFile));
  const auto [fallback_status, fallback] = testing::run_ctx(hook, prompt.dump());
  EXPECT_EQ(fallback_status, 0);
  EXPECT_EQ(fallback, in_process);

  // A server that closes each connection without reading it (as one stopping does with the
  // connections still queued on its listener): the request never ran there, so in process.
  fs::remove(state_ / kSocketFile);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, (state_ / kSocketFile).c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(::listen(listener, 8), 0);
  }
  std::thread closer([listener] {
    for (;;) {
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the request has arrived
      ::close(fd);
    }
  });
  const auto [reset_status, reset] = testing::run_ctx(hook, prompt.dump());
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  closer.join();
  EXPECT_EQ(reset_status, 0);
  EXPECT_EQ(reset, in_process);
}

// `ctx hooks install --project B` while the server runs is seen from the next request on: a
// preapproved skill of a new session running in B is activated in B (and A's stays in A).
TEST_F(ServiceMethodsTest, AnActivationTargetChangedWhileServingIsUsedFromTheNextRequestOn) {
  const fs::path first = dir_.path() / "first";
  const fs::path second = dir_.path() / "second";
  fs::create_directories(first);
  fs::create_directories(second);
  const std::string state = " --state " + state_.string();
  ASSERT_EQ(testing::run_ctx("hooks install claude-code --project " + first.string() + state).first,
            0);
  ASSERT_EQ(testing::run_ctx("policy set skill preapproved-auto" + state).first, 0);
  start();
  const std::string hook = "hook claude-code" + state;
  Json in_first = claude_prompt("target-1", "export the report to PDF please");
  in_first["cwd"] = first.string();
  const auto [one_status, one] = testing::run_ctx(hook, in_first.dump());
  ASSERT_EQ(one_status, 0);
  EXPECT_NE(one.find("ctx installed: pdf-export (skill)."), std::string::npos) << one;
  EXPECT_TRUE(fs::exists(first / ".claude/skills/pdf-export/SKILL.md"));

  ASSERT_EQ(
      testing::run_ctx("hooks install claude-code --project " + second.string() + state).first, 0);
  Json in_second = claude_prompt("target-2", "export the report to PDF please");
  in_second["cwd"] = second.string();
  const auto [two_status, two] = testing::run_ctx(hook, in_second.dump());
  ASSERT_EQ(two_status, 0);
  EXPECT_NE(two.find("ctx installed: pdf-export (skill)."), std::string::npos) << two;
  EXPECT_TRUE(fs::exists(second / ".claude/skills/pdf-export/SKILL.md"));
  stop();
  const std::string log = log_.str();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << "both hooks went through the server";
}

// A catalog imported while the server runs is what the next hook plans from (the server does not
// keep serving the catalog it opened first).
TEST_F(ServiceMethodsTest, ACatalogImportedWhileServingIsUsedFromTheNextRequestOn) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(state_ / kSocketFile));
  const auto hook = [&](int id, const std::string& session) {
    const Json reply = call(client, id, "hook",
                            {{"adapter", "claude-code"},
                             {"payload", claude_prompt(session, "export a PDF report").dump()}});
    EXPECT_TRUE(reply.contains("result")) << reply.dump();
    return reply["result"]["reply"].is_string() ? reply["result"]["reply"].get<std::string>()
                                                : std::string();
  };
  EXPECT_NE(hook(1, "before-import").find("pdf-export"), std::string::npos);
  // The example catalog without its pdf-export skill.
  const fs::path smaller = dir_ / "catalog";
  fs::copy(std::string(CTX_SOURCE_DIR) + "/examples/catalog", smaller, fs::copy_options::recursive);
  fs::remove_all(smaller / "skills" / "pdf-export");
  ASSERT_EQ(
      testing::run_ctx("catalog import " + smaller.string() + " --state " + state_.string()).first,
      0);
  EXPECT_EQ(hook(2, "after-import").find("pdf-export"), std::string::npos);
}

TEST_F(ServiceMethodsTest, BadParamsAreInvalidParamsThatNeverQuoteThePayload) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(state_ / kSocketFile));
  const std::string marker = "Zqxsecretmarker";
  const std::vector<std::pair<std::string, Json>> cases = {
      {"hook", {{"adapter", "claude-code"}, {"payload", "{\"prompt\":\"" + marker}}},
      {"hook", {{"adapter", "claude-code"}, {"payload", ""}}},
      {"hook", {{"adapter", "no-such-adapter"}, {"payload", claude_prompt("x", marker).dump()}}},
      {"hook", {{"payload", marker}}},
      {"query.prepare", {{"work", {{"signals", marker}}}}},
      {"query.prepare", {{"wrong", 1}}},
      {"query.reopen", {{"query_ref", 7}}},
      {"desired.set", {{"query_ref", "x"}, {"capability_ids", {1}}}},
  };
  int id = 0;
  for (const auto& [method, params] : cases) {
    SCOPED_TRACE(method + " " + params.dump().substr(0, 60));
    const Json reply = call(client, ++id, method, params);
    ASSERT_TRUE(reply.contains("error")) << reply.dump();
    EXPECT_EQ(reply["error"]["code"], kInvalidParams) << reply.dump();
    EXPECT_EQ(reply.dump().find(marker), std::string::npos) << reply.dump();
    EXPECT_EQ(reply["id"], id);
  }
  // An unknown query is the service's own error, not a params error.
  const Json unknown =
      call(client, 99, "query.reopen", {{"query_ref", "mq_" + std::string(64, 'a')}});
  ASSERT_TRUE(unknown.contains("error")) << unknown.dump();
  EXPECT_EQ(log_.str().find(marker), std::string::npos);
}

// 8 clients × 500 requests, started together: hook, query.prepare, query.reopen and plugin.list
// in turn, each client on its own session. Every reply is valid and equal to that client's
// first; the journal and query rows equal what one sequential pass over the same 16 works
// leaves; the journal verifies.
TEST_F(ServiceMethodsTest, EightConcurrentClientsLoseAndDuplicateNoEffectAndTheJournalVerifies) {
  constexpr int kClients = 8;
  constexpr int kRequests = 500;
  const auto prompt_of = [](int c) {
    return claude_prompt("storm-" + std::to_string(c),
                         c % 2 == 0 ? "export the report to PDF" : "write the sql migrations");
  };

  // The baseline: one sequential pass over the 16 works on a second state dir.
  const fs::path baseline = dir_ / "b";
  prepare_state(baseline);
  for (int c = 0; c < kClients; ++c) {
    ASSERT_EQ(testing::run_ctx("hook claude-code --state " + baseline.string(), prompt_of(c).dump())
                  .first,
              0);
    const fs::path work_file = dir_ / ("w" + std::to_string(c));
    std::ofstream(work_file) << work_for(c).dump();
    ASSERT_EQ(testing::run_ctx("query prepare --work " + work_file.string() + " --state " +
                               baseline.string())
                  .first,
              0);
  }
  const std::int64_t journal_rows =
      count_rows(baseline / "service/journal.sqlite3", "engine_journal");
  const std::int64_t query_rows =
      count_rows(baseline / "service/queries.sqlite3", "managed_queries");
  ASSERT_GT(journal_rows, 0);
  ASSERT_EQ(query_rows, 2 * kClients);

  start();
  std::barrier sync(kClients);
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RpcClient client;
      if (!client.connect(state_ / kSocketFile)) {
        failures[c] = "cannot connect";
        sync.arrive_and_drop();
        return;
      }
      sync.arrive_and_wait();
      std::map<std::string, Json> first;  // method -> first result
      std::string query_ref;
      for (int i = 0; i < kRequests && failures[c].empty(); ++i) {
        static const char* kMethods[] = {"hook", "query.prepare", "query.reopen", "plugin.list"};
        std::string method = kMethods[i % 4];
        Json params;
        if (method == "hook") {
          params = {{"adapter", "claude-code"}, {"payload", prompt_of(c).dump()}};
        } else if (method == "query.prepare") {
          params = {{"work", work_for(c)}};
        } else if (method == "query.reopen") {
          params = {{"query_ref", query_ref}};
        } else {
          params = Json::object();
        }
        const int id = c * 100000 + i;
        const auto line = client.call(
            Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
        if (!line) {
          failures[c] = "no reply to request " + std::to_string(i);
          break;
        }
        const Json reply = Json::parse(*line, nullptr, false);
        if (reply.is_discarded() || reply.value("jsonrpc", "") != "2.0" || reply["id"] != id ||
            !reply.contains("result")) {
          failures[c] = "bad reply to " + method + ": " + line->substr(0, 300);
          break;
        }
        const Json& result = reply["result"];
        if (method == "query.prepare") query_ref = result.at("query_ref");
        if (method == "query.reopen") method = "query.prepare";  // reopen == prepare's result
        if (!first.contains(method)) {
          first[method] = result;
        } else if (first[method] != result) {
          failures[c] = method + " result changed at request " + std::to_string(i);
        }
      }
    });
  }
  for (auto& thread : clients) thread.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(failures[c], "") << "client " << c;
  stop();

  EXPECT_EQ(count_rows(state_ / "service/journal.sqlite3", "engine_journal"), journal_rows);
  EXPECT_EQ(count_rows(state_ / "service/queries.sqlite3", "managed_queries"), query_rows);
  EXPECT_EQ(testing::run_ctx("journal verify --state " + state_.string()).first, 0);
  const std::string log = log_.str();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), kClients * kRequests);
  EXPECT_EQ(log.find("\"status\":\"error\""), std::string::npos);
}

}  // namespace
}  // namespace ctx::server
