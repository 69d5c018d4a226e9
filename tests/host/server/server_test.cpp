// The server in process over real Unix sockets: concurrency, framing limits, JSON-RPC errors,
// deadlines, drain on stop(), one server per state dir, socket mode, the request log.
#include "host/server/server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <csignal>
#include <cstdio>
#include <ctx/loader/lock_file.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/runtime/service/errors.hpp"
#include "host/server/client.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::server {
namespace {

using testing::RpcClient;
using testing::TempStateDir;
using Json = core::Json;

plugins::LockEntry pinned_entry(plugins::PluginKind kind, std::string id, std::string path) {
  plugins::LockEntry entry;
  entry.kind = kind;
  entry.id = std::move(id);
  entry.version = "1.2.3";
  entry.sha256 = std::string(64, 'a');
  entry.size = 4096;
  entry.abi_major = 1;
  entry.abi_minor = 0;
  entry.needed = {"libc.so.6"};
  entry.platform = "linux-x86_64";
  entry.path = std::move(path);
  return entry;
}

// A lock with one pinned entry whose path must never reach a client.
void write_lock(const std::filesystem::path& state) {
  plugins::LockFile lock;
  lock.upsert(pinned_entry(plugins::PluginKind::kVerifier, "valid-verifier",
                           "/opt/secret-location/valid_verifier.so"));
  lock.save(state / "plugins.lock.json");
}

MethodTable table_for(const std::filesystem::path& state) {
  MethodTable table;
  register_builtin_methods(table, state);
  table.add("test.echo", [](const Json& params) { return params; });
  // Throws the error its params name: a handler's failure as a client sees it.
  table.add("test.fail", [](const Json& params) -> Json {
    const std::string what = params.at("error").get<std::string>();
    if (what == "busy") throw runtime::ManagedDesiredSetBusyError("another choice is pending");
    if (what == "superseded") throw runtime::ManagedQuerySupersededError("plan superseded");
    if (what == "refused") throw runtime::ManagedQueryServiceError("not in this state");
    if (what == "corrupt") throw DataLoss("row authentication failed");
    throw std::runtime_error("a library failed");
  });
  table.add("test.sleep", [](const Json& params) {
    std::this_thread::sleep_for(std::chrono::milliseconds(params.at("ms").get<int>()));
    return Json("slept");
  });
  return table;
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}) {
    options.state_dir = dir_.path();
    options.log = &log_;
    server_ = std::make_unique<Server>(std::move(options), table_for(dir_.path()));
    thread_ = std::thread([this] { server_->run(); });
  }
  void stop_and_join() {
    if (!server_ || !thread_.joinable()) return;
    server_->stop();
    thread_.join();
  }
  void TearDown() override {
    stop_and_join();
    server_.reset();
  }
  std::filesystem::path socket() const { return dir_.path() / kSocketFile; }

  static Json call(RpcClient& client, const Json& request) {
    const auto line = client.call(request.dump());
    EXPECT_TRUE(line.has_value()) << "no reply to " << request.dump();
    return line ? Json::parse(*line) : Json();
  }
  static Json request(const Json& id, const std::string& method, Json params = nullptr) {
    Json r{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    if (!params.is_null()) r["params"] = std::move(params);
    return r;
  }

  TempStateDir dir_;
  std::ostringstream log_;  // written only under the server's mutex; read after join
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, PluginListReturnsLockEntriesWithoutPaths) {
  write_lock(dir_.path());
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  const Json reply = call(client, request(7, "plugin.list"));
  EXPECT_EQ(reply["jsonrpc"], "2.0");
  EXPECT_EQ(reply["id"], 7);
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  const Json& plugins = reply["result"]["plugins"];
  ASSERT_EQ(plugins.size(), 1u);
  EXPECT_EQ(plugins[0]["kind"], "verifier");
  EXPECT_EQ(plugins[0]["id"], "valid-verifier");
  EXPECT_EQ(plugins[0]["version"], "1.2.3");
  EXPECT_EQ(plugins[0]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(plugins[0]["abi"], (Json{{"major", 1}, {"minor", 0}}));
  EXPECT_FALSE(plugins[0].contains("path"));
  EXPECT_EQ(reply.dump().find("secret-location"), std::string::npos);
  // Empty params are accepted, others refused with -32602.
  EXPECT_TRUE(call(client, request(8, "plugin.list", Json::object())).contains("result"));
  const Json bad = call(client, request(9, "plugin.list", Json{{"x", 1}}));
  EXPECT_EQ(bad["error"]["code"], kInvalidParams);
  EXPECT_EQ(bad["id"], 9);
}

// The lock is read once and then only when its file changes: a same-size in-place rewrite
// that keeps the signature (inode, size, mtime, owner, mode) is not seen, a re-pin is.
TEST_F(ServerTest, PluginListReadsTheLockOnceAndAgainOnlyWhenItChanges) {
  write_lock(dir_.path());
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  const Json first = call(client, request(1, "plugin.list"));
  ASSERT_EQ(first["result"]["plugins"].size(), 1u) << first.dump();

  const std::filesystem::path lock_path = dir_.path() / "plugins.lock.json";
  struct stat before {};
  ASSERT_EQ(::stat(lock_path.c_str(), &before), 0);
  {
    // Same bytes count, not a lock any more; then the old mtime back.
    std::string garbage(static_cast<std::size_t>(before.st_size), 'x');
    std::FILE* file = std::fopen(lock_path.c_str(), "r+");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(std::fwrite(garbage.data(), 1, garbage.size(), file), garbage.size());
    std::fclose(file);
    const timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, lock_path.c_str(), times, 0), 0);
  }
  EXPECT_EQ(call(client, request(2, "plugin.list"))["result"], first["result"])
      << "the unchanged signature must be served from the cache, not re-read";

  // A pin replaces the file: the next request sees the new entry.
  plugins::LockFile lock;
  for (const char* id : {"alpha", "beta"}) {
    lock.upsert(
        pinned_entry(plugins::PluginKind::kInstaller, id, std::string("/opt/") + id + ".so"));
  }
  lock.save(lock_path);
  const Json second = call(client, request(3, "plugin.list"));
  ASSERT_EQ(second["result"]["plugins"].size(), 2u) << second.dump();
  EXPECT_EQ(second["result"]["plugins"][0]["id"], "alpha");
  // Removing the lock empties the list.
  std::filesystem::remove(lock_path);
  EXPECT_EQ(call(client, request(4, "plugin.list"))["result"]["plugins"], Json::array());
}

TEST_F(ServerTest, EightConcurrentClientsEachGetEveryReplyMatchedToItsId) {
  write_lock(dir_.path());
  start();
  constexpr int kClients = 8;
  constexpr int kRequests = 500;
  std::barrier sync(kClients);
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RpcClient client;
      const bool connected = client.connect(socket());
      sync.arrive_and_wait();
      if (!connected) return;
      for (int i = 0; i < kRequests; ++i) {
        const Json id = (i % 3 == 0) ? Json("c" + std::to_string(c) + "-" + std::to_string(i))
                                     : Json(c * 100000 + i);
        const bool echo = i % 2 == 0;
        const Json params{{"client", c}, {"n", i}, {"marker", "SECRET-PARAM-MARKER"}};
        const auto line = client.call(
            (echo ? request(id, "test.echo", params) : request(id, "plugin.list")).dump());
        if (!line) return;
        const Json reply = Json::parse(*line, nullptr, false);
        if (reply.is_discarded() || reply.value("jsonrpc", "") != "2.0" || reply["id"] != id ||
            !reply.contains("result")) {
          return;
        }
        if (echo ? reply["result"] != params
                 : reply["result"]["plugins"].size() != 1 ||
                       reply["result"]["plugins"][0]["id"] != "valid-verifier") {
          return;
        }
        good.fetch_add(1);
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), kClients * kRequests);
  stop_and_join();
  // One log line per request, naming method, id, status and duration, never params.
  const std::string log = log_.str();
  EXPECT_EQ(log.find("SECRET-PARAM-MARKER"), std::string::npos);
  EXPECT_EQ(log.find("secret-location"), std::string::npos);
  std::istringstream lines(log);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const Json entry = Json::parse(line);
    EXPECT_EQ(entry["event"], "rpc");
    EXPECT_EQ(entry["status"], "ok");
    EXPECT_TRUE(entry["duration_us"].is_number_integer());
    EXPECT_TRUE(entry["method"] == "test.echo" || entry["method"] == "plugin.list");
    EXPECT_FALSE(entry["id"].is_null());
    ++count;
  }
  EXPECT_EQ(count, kClients * kRequests);
}

TEST_F(ServerTest, OversizedRequestGetsInvalidRequestErrorThenTheConnectionCloses) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  // 1 MiB + 1 bytes with no newline: the writer may be cut off when the server closes.
  std::thread writer(
      [&] { client.send_all(std::string(kDefaultMaxRequestBytes + 1, ' ') + "{}\n"); });
  const auto line = client.read_line();
  writer.join();
  ASSERT_TRUE(line.has_value());
  const Json reply = Json::parse(*line);
  EXPECT_EQ(reply["error"]["code"], kInvalidRequest);
  EXPECT_TRUE(reply["id"].is_null());
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("request too large"),
            std::string::npos);
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("1048576"), std::string::npos);
  EXPECT_FALSE(client.read_line().has_value());  // closed
  // The server still serves others.
  RpcClient other;
  ASSERT_TRUE(other.connect(socket()));
  EXPECT_TRUE(call(other, request(1, "plugin.list")).contains("result"));
}

TEST_F(ServerTest, RequestExactlyAtTheLimitIsServedOneByteMoreIsNot) {
  ServerOptions options;
  options.max_request_bytes = 4096;
  start(options);
  Json at = request(1, "test.echo", Json{{"pad", ""}});
  at["params"]["pad"] = std::string(4096 - at.dump().size(), 'x');
  ASSERT_EQ(at.dump().size(), 4096u);
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  EXPECT_TRUE(call(client, at).contains("result"));
  at["params"]["pad"] = at["params"]["pad"].get<std::string>() + "x";
  const Json reply = call(client, at);
  EXPECT_EQ(reply["error"]["code"], kInvalidRequest);
  EXPECT_FALSE(client.read_line().has_value());
}

TEST_F(ServerTest, MalformedJsonIsParseErrorAndTheConnectionStaysUsable) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  for (const std::string& bad : {std::string("{\"jsonrpc\":\"2.0\",\"id\":1,"), std::string("nope"),
                                 std::string("{\"a\":\"\xff\xfe\"}"), std::string("[[[[[[")}) {
    const auto line = client.call(bad);
    ASSERT_TRUE(line.has_value());
    const Json reply = Json::parse(*line);
    EXPECT_EQ(reply["error"]["code"], kParseError) << bad;
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_EQ(reply["jsonrpc"], "2.0");
  }
  EXPECT_TRUE(call(client, request(2, "plugin.list")).contains("result"));
}

TEST_F(ServerTest, UnknownMethodAndInvalidRequestsGetTheirCodes) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  const Json unknown = call(client, request("u1", "no.such.method"));
  EXPECT_EQ(unknown["error"]["code"], kMethodNotFound);
  EXPECT_EQ(unknown["id"], "u1");
  EXPECT_EQ(call(client, Json{{"id", 3}, {"method", "plugin.list"}})["error"]["code"],
            kInvalidRequest);  // no "jsonrpc"
  EXPECT_EQ(call(client, Json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", 5}})["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(call(client, request(5, "test.echo", Json(17)))["error"]["code"], kInvalidRequest);
  EXPECT_EQ(
      call(client,
           Json{{"jsonrpc", "2.0"}, {"id", Json::object()}, {"method", "x"}})["error"]["code"],
      kInvalidRequest);
  EXPECT_EQ(call(client, Json::array({request(6, "plugin.list")}))["error"]["code"],
            kInvalidRequest);  // batches are refused, clearly
  // A notification (no id) gets no reply; the next request's reply is the next line.
  ASSERT_TRUE(client.send_all(Json{{"jsonrpc", "2.0"}, {"method", "plugin.list"}}.dump() + "\n"));
  EXPECT_EQ(call(client, request(8, "plugin.list"))["id"], 8);
}

// A handler's ctx::Error reaches the client with its own code (style §6.2), so a client backs off
// on a busy service, re-reads on a superseded plan and gives up on a refusal; only a failure that
// is no ctx::Error is JSON-RPC's internal error.
TEST_F(ServerTest, AHandlersErrorKeepsItsCodeSoClientsKnowWhetherToRetry) {
  start();
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  const auto code_for = [&](const std::string& error) {
    const Json reply = call(client, request(error, "test.fail", Json{{"error", error}}));
    EXPECT_EQ(reply["id"], error);
    EXPECT_FALSE(reply.contains("result")) << reply.dump();
    return reply["error"]["code"];
  };
  EXPECT_EQ(code_for("busy"), static_cast<int>(ErrorCode::kUnavailable));  // 14, not 9
  EXPECT_EQ(code_for("superseded"), static_cast<int>(ErrorCode::kAborted));
  EXPECT_EQ(code_for("refused"), static_cast<int>(ErrorCode::kFailedPrecondition));
  EXPECT_EQ(code_for("corrupt"), static_cast<int>(ErrorCode::kDataLoss));
  EXPECT_EQ(code_for("other"), kInternalError);
  // The client library gives the caller the same code to branch on, and the server's message.
  const auto rpc_error = [&](const std::string& error) {
    try {
      (void)call_running_server(dir_.path(), "test.fail", Json{{"error", error}},
                                std::chrono::seconds(30));
    } catch (const RpcError& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    ADD_FAILURE() << error << " did not fail";
    return std::make_pair(ErrorCode::kOk, std::string());
  };
  EXPECT_EQ(rpc_error("busy"),
            std::make_pair(ErrorCode::kUnavailable, std::string("another choice is pending")));
  EXPECT_EQ(rpc_error("superseded").first, ErrorCode::kAborted);
  EXPECT_EQ(rpc_error("refused").first, ErrorCode::kFailedPrecondition);
}

TEST_F(ServerTest, SlowHandlerPastTheDeadlineGetsDeadlineErrorAndTheConnectionGoesOn) {
  ServerOptions options;
  options.deadline = std::chrono::milliseconds(50);
  start(options);
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  const Json late = call(client, request(1, "test.sleep", Json{{"ms", 400}}));
  EXPECT_EQ(late["error"]["code"], kDeadlineExceeded);
  EXPECT_EQ(late["id"], 1);
  EXPECT_NE(late["error"]["message"].get<std::string>().find("deadline exceeded"),
            std::string::npos);
  EXPECT_EQ(call(client, request(2, "test.sleep", Json{{"ms", 1}}))["result"], "slept");
  // The late result of request 1 is never sent.
  EXPECT_EQ(call(client, request(3, "plugin.list"))["id"], 3);
}

// A request still queued for a worker when its deadline answers never runs: its client was told
// it failed, so running it later would apply what the client may then send again.
TEST(ServerDeadline, ARequestQueuedPastItsDeadlineIsAnsweredAndNeverRuns) {
  TempStateDir dir;
  std::atomic<int> ran{0};
  MethodTable table;
  table.add("test.sleep", [](const Json& params) {
    std::this_thread::sleep_for(std::chrono::milliseconds(params.at("ms").get<int>()));
    return Json("slept");
  });
  table.add("test.count", [&ran](const Json&) { return Json(++ran); });
  ServerOptions options;
  options.state_dir = dir.path();
  options.worker_threads = 1;
  options.deadline = std::chrono::milliseconds(100);
  Server server(std::move(options), std::move(table));
  std::thread thread([&server] { server.run(); });
  RpcClient busy;
  RpcClient queued;
  ASSERT_TRUE(busy.connect(dir.path() / kSocketFile));
  ASSERT_TRUE(queued.connect(dir.path() / kSocketFile));
  const auto request = [](int id, const std::string& method, Json params) {
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
               .dump() +
           "\n";
  };
  ASSERT_TRUE(busy.send_all(request(1, "test.sleep", Json{{"ms", 500}})));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the only worker is busy now
  ASSERT_TRUE(queued.send_all(request(2, "test.count", Json::object())));
  const auto answer = queued.read_line();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(Json::parse(*answer)["error"]["code"], kDeadlineExceeded);
  const auto slept = busy.read_line();
  ASSERT_TRUE(slept.has_value());
  EXPECT_EQ(Json::parse(*slept)["error"]["code"], kDeadlineExceeded);
  // The worker finishes the sleep and takes the queued request off the queue.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(ran.load(), 0) << "the abandoned request ran after its client was told it failed";
  // The connection goes on: a new request runs.
  ASSERT_TRUE(queued.send_all(request(3, "test.count", Json::object())));
  const auto next = queued.read_line();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(Json::parse(*next)["result"], 1);
  server.stop();
  thread.join();
}

// SIGTERM starts the drain; while a request keeps it from finishing, a second SIGTERM ends the
// process (the default action again), as an operator pressing Ctrl-C twice expects.
TEST(ServerSignals, ASecondSigtermEndsAServerWhoseDrainWaitsOnAStuckRequest) {
  TempStateDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MethodTable table;
    table.add("test.sleep", [](const Json& params) {
      std::this_thread::sleep_for(std::chrono::milliseconds(params.at("ms").get<int>()));
      return Json("slept");
    });
    ServerOptions options;
    options.state_dir = dir.path();
    options.handle_signals = true;
    try {
      Server server(std::move(options), std::move(table));
      server.run();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  RpcClient client;
  for (int i = 0; i < 500 && !client.connect(dir.path() / kSocketFile); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(client.send_all(
      Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "test.sleep"}, {"params", {{"ms", 20000}}}}
          .dump() +
      "\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, WNOHANG), 0) << "the first SIGTERM drains: still running";
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  pid_t done = 0;
  for (int i = 0; i < 300 && done == 0; ++i) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "a second SIGTERM did not end the server";
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST_F(ServerTest, StopLetsInFlightRequestsFinishRefusesNewOnesAndRemovesTheSocket) {
  start();
  RpcClient busy;
  ASSERT_TRUE(busy.connect(socket()));
  RpcClient idle;
  ASSERT_TRUE(idle.connect(socket()));
  ASSERT_TRUE(busy.send_all(request(1, "test.sleep", Json{{"ms", 300}}).dump() + "\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server_->stop();
  const auto line = busy.read_line();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(Json::parse(*line)["result"], "slept");
  EXPECT_FALSE(busy.read_line().has_value());  // then closed
  EXPECT_FALSE(idle.read_line().has_value());  // idle connections close
  thread_.join();
  server_.reset();
  EXPECT_FALSE(std::filesystem::exists(socket()));
  RpcClient late;
  EXPECT_FALSE(late.connect(socket()));
}

TEST_F(ServerTest, SocketIsMode0600) {
  start();
  struct stat st {};
  ASSERT_EQ(::lstat(socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ServerTest, SecondServerOnTheSameStateDirRefusesNamingIt) {
  start();
  ServerOptions options;
  options.state_dir = dir_.path();
  CTX_EXPECT_THROW(
      Server(options, MethodTable{}), FailedPrecondition,
      "another ctx serve is already running for state directory " + dir_.path().string());
  // The first one is untouched.
  RpcClient client;
  ASSERT_TRUE(client.connect(socket()));
  EXPECT_TRUE(call(client, request(1, "plugin.list")).contains("result"));
}

// A method's fast path answers on the I/O thread when it knows the answer; "not now" (nullopt) or
// an exception goes to the worker's handler, which then gives the result or the error.
TEST(ServerFastPath, KnownAnswersSkipTheWorkerAndEverythingElseReachesIt) {
  TempStateDir dir;
  std::atomic<int> slow_calls{0};
  MethodTable table;
  table.add(
      "test.fast",
      [&slow_calls](const Json& params) -> Json {
        ++slow_calls;
        if (params.contains("bad")) throw InvalidParams("bad is not a parameter");
        return Json{{"path", "worker"}};
      },
      [](const Json& params) -> std::optional<std::string> {
        if (params.contains("throw")) throw InvalidArgument("the fast path gave up");
        if (params.value("known", false)) return Json{{"path", "fast"}}.dump();
        return std::nullopt;
      });
  std::ostringstream log;
  ServerOptions options;
  options.state_dir = dir.path();
  options.log = &log;
  Server server(std::move(options), std::move(table));
  std::thread thread([&] { server.run(); });
  RpcClient client;
  ASSERT_TRUE(client.connect(dir.path() / kSocketFile));
  const auto call = [&](int id, const Json& params) {
    const auto line = client.call(
        Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "test.fast"}, {"params", params}}.dump());
    EXPECT_TRUE(line.has_value());
    return line ? Json::parse(*line) : Json();
  };
  EXPECT_EQ(call(1, {{"known", true}})["result"]["path"], "fast");
  EXPECT_EQ(slow_calls.load(), 0);
  EXPECT_EQ(call(2, {{"known", false}})["result"]["path"], "worker");
  EXPECT_EQ(call(3, {{"throw", true}})["result"]["path"], "worker");
  const Json bad = call(4, {{"bad", true}});
  EXPECT_EQ(bad["error"]["code"], kInvalidParams);
  EXPECT_EQ(bad["id"], 4);
  EXPECT_EQ(slow_calls.load(), 3);
  // A notification answered by the fast path gets no reply line.
  ASSERT_TRUE(client.send_all(
      Json{{"jsonrpc", "2.0"}, {"method", "test.fast"}, {"params", {{"known", true}}}}.dump() +
      "\n"));
  EXPECT_EQ(call(5, {{"known", true}})["id"], 5);
  server.stop();
  thread.join();
  const std::string text = log.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6) << text;
}

// A constructor that fails after taking the state dir's lock (here: a file that is not a socket
// where the socket goes) releases it: once the file is gone, a server starts in this process.
TEST(ServerSetup, AFailedStartReleasesTheStateDirForTheNextOne) {
  TempStateDir dir;
  const auto in_the_way = dir.path() / kSocketFile;
  std::ofstream(in_the_way) << "not a socket";
  ServerOptions options;
  options.state_dir = dir.path();
  CTX_EXPECT_THROW(Server(options, MethodTable{}), FailedPrecondition, "is not a socket");
  std::filesystem::remove(in_the_way);
  std::optional<Server> server;
  EXPECT_NO_THROW(server.emplace(options, MethodTable{}));
}

TEST(ServerSetup, RefusesAStateDirThatIsNotPrivate) {
  TempStateDir dir;
  ::chmod(dir.path().c_str(), 0750);
  ServerOptions options;
  options.state_dir = dir.path();
  CTX_EXPECT_THROW(Server(options, MethodTable{}), FailedPrecondition, "is not private");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kSocketFile));
}

TEST(ServerSetup, RegistrationRefusesDuplicatesAndEmptyNames) {
  MethodTable table;
  table.add("a", [](const Json&) { return Json(1); });
  CTX_EXPECT_THROW(table.add("a", [](const Json&) { return Json(2); }), InvalidArgument,
                   "already registered");
  CTX_EXPECT_THROW(table.add("", [](const Json&) { return Json(2); }), InvalidArgument, "name");
  ASSERT_NE(table.find("a"), nullptr);
  EXPECT_EQ(table.find("b"), nullptr);
}

}  // namespace
}  // namespace ctx::server
