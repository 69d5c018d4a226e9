// `ctx serve` as a real child process: SIGTERM under load drains (every request written before
// the signal is answered), exit status 0, socket removed; a second `ctx serve` refuses.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/server/server.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/file_bytes.hpp"

namespace ctx::server {
namespace {

using ctx::testing::read_file;

using testing::RpcClient;
using testing::TempStateDir;
using Json = core::Json;

// Runs `ctx serve --state DIR` with stderr to `err_file`.
pid_t spawn_serve(const std::filesystem::path& state, const std::filesystem::path& err_file) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    ::execl(CTX_BINARY, CTX_BINARY, "serve", "--state", state.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 3000; ++i) {  // 30 s
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  ADD_FAILURE() << "ctx serve did not exit within 30 s";
  return status;
}

// SIGTERM while 8 clients keep sending `request(client, i)`: every request written in full before
// the signal is answered, the exit status is 0, the socket is gone, and there is one JSON log
// line (method, status; never params) per answered request.
void expect_sigterm_drains(const std::filesystem::path& state,
                           const std::function<Json(int client, int i)>& request,
                           int replies_before_signal) {
  const auto socket = state / kSocketFile;
  const auto err_file = state / "serve.err";
  const pid_t pid = spawn_serve(state, err_file);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(testing::wait_for_file(socket)) << read_file(err_file);
  struct stat st {};
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  constexpr int kClients = 8;
  std::barrier sync(kClients + 1);
  std::atomic<bool> signalled{false};
  std::atomic<int> answered_before{0}, lost_before{0}, bad{0}, replies{0}, ended{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RpcClient client;
      // The socket file appears only once the server listens: the first connect succeeds.
      const bool connected = client.connect(socket);
      sync.arrive_and_wait();
      if (!connected) {
        bad.fetch_add(1);
        ended.fetch_add(1);
        return;
      }
      struct Ended {
        std::atomic<int>& count;
        ~Ended() { count.fetch_add(1); }
      } mark_ended{ended};
      for (int i = 0;; ++i) {
        const Json id = c * 1000000 + i;
        Json message = request(c, i);
        message["jsonrpc"] = "2.0";
        message["id"] = id;
        if (!client.send_all(message.dump() + "\n")) return;
        // Written in full before kill() was called: the server must answer it.
        const bool before = !signalled.load();
        const auto reply = client.read_line();
        if (!reply) {
          if (before) lost_before.fetch_add(1);
          return;
        }
        const Json parsed = Json::parse(*reply, nullptr, false);
        if (parsed.is_discarded() || parsed["id"] != id || !parsed.contains("result")) {
          bad.fetch_add(1);
          return;
        }
        replies.fetch_add(1);
        if (before) answered_before.fetch_add(1);
      }
    });
  }
  sync.arrive_and_wait();
  // Every client gone before enough replies (a refused connect, a bad reply): fail, never hang.
  while (replies.load() < replies_before_signal && ended.load() < kClients) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(replies.load(), replies_before_signal) << "bad replies " << bad.load();
  signalled = true;
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  for (auto& t : clients) t.join();
  const int status = wait_exit(pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << " " << read_file(err_file);
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_file(err_file);
  EXPECT_EQ(lost_before.load(), 0);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(answered_before.load(), replies_before_signal);
  EXPECT_FALSE(std::filesystem::exists(socket));
  RpcClient late;
  EXPECT_FALSE(late.connect(socket));
  std::istringstream log(read_file(err_file));
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) {
    const Json entry = Json::parse(line, nullptr, false);
    ASSERT_FALSE(entry.is_discarded()) << line;
    EXPECT_FALSE(entry.contains("params")) << line;
    EXPECT_EQ(entry["status"], "ok") << line;
    ++lines;
  }
  EXPECT_EQ(lines, replies.load());
}

TEST(ServeProcess, SigtermUnderLoadAnswersInFlightRequestsExitsZeroAndRemovesTheSocket) {
  TempStateDir dir;
  expect_sigterm_drains(
      dir.path(),
      [](int, int) {
        return Json{{"method", "plugin.list"}};
      },
      8 * 50);
}

// The same with hooks and queries in flight on a state dir with the example catalog (each takes
// milliseconds, so the signal lands while handlers run); the journal verifies afterwards.
TEST(ServeProcess, SigtermWhileHooksAndQueriesRunDrainsThemAndTheJournalVerifies) {
  TempStateDir dir;
  ASSERT_TRUE(testing::prepare_state_dir(dir.path()));
  expect_sigterm_drains(
      dir.path(),
      [](int c, int i) {
        if (i % 2 == 1) return Json{{"method", "plugin.list"}};
        const Json payload = {{"session_id", "drain-" + std::to_string(c)},
                              {"cwd", "/home/u/project"},
                              {"hook_event_name", "UserPromptSubmit"},
                              {"prompt", i % 4 == 0 ? "export a PDF" : "write sql migrations"}};
        return Json{{"method", "hook"},
                    {"params", {{"adapter", "claude-code"}, {"payload", payload.dump()}}}};
      },
      8 * 4);
  EXPECT_EQ(testing::run_ctx("journal verify --state " + dir.path().string()).first, 0);
}

TEST(ServeProcess, ASocketFileThatExistsAlwaysAcceptsAConnection) {
  // A client that sees the socket file connects at once (as `ctx hook` does): the server binds
  // and listens under a staging name and renames it into place, so there is no moment where the
  // file exists and a connect is refused. The server is stopped (SIGSTOP) the moment the file
  // appears, freezing it there: a server that published the file at bind(), before listen(),
  // is caught about one round in ten.
  for (int round = 0; round < 50; ++round) {
    TempStateDir dir;
    const auto socket = dir.path() / kSocketFile;
    const pid_t pid = spawn_serve(dir.path(), dir.path() / "serve.err");
    ASSERT_GT(pid, 0);
    bool seen = false;  // spinning, to connect within a microsecond of the file appearing
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!seen && std::chrono::steady_clock::now() < give_up) {
      seen = ::access(socket.c_str(), F_OK) == 0;
    }
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    ASSERT_TRUE(seen) << read_file(dir.path() / "serve.err");
    {
      RpcClient client;
      EXPECT_TRUE(client.connect(socket)) << "round " << round << ": " << std::strerror(errno);
    }
    EXPECT_FALSE(std::filesystem::exists(dir.path() / (std::string(kSocketFile) + ".new")));
    ASSERT_EQ(::kill(pid, SIGCONT), 0);
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    const int status = wait_exit(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

// The log goes to a pipe whose reader has gone (`ctx serve 2>&1 | logger` after the logger
// died): each log write fails with EPIPE, and the server goes on serving instead of dying of
// SIGPIPE; SIGTERM still ends it with status 0.
TEST(ServeProcess, ALogPipeWithoutAReaderNeitherKillsNorStopsTheServer) {
  TempStateDir dir;
  const auto socket = dir.path() / kSocketFile;
  int log[2];
  ASSERT_EQ(::pipe(log), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(log[1], 2);
    ::close(log[0]);
    ::close(log[1]);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::signal(SIGPIPE, SIG_DFL);  // as a shell starts it, whatever this test process has
    ::execl(CTX_BINARY, CTX_BINARY, "serve", "--state", dir.path().c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(log[1]);
  ASSERT_TRUE(testing::wait_for_file(socket));
  ::close(log[0]);  // the reader goes away
  for (int i = 1; i <= 3; ++i) {
    RpcClient client;
    ASSERT_TRUE(client.connect(socket)) << "request " << i;
    const auto reply = client.call(R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
                                   R"(,"method":"plugin.list"})");
    ASSERT_TRUE(reply.has_value()) << "request " << i;
    EXPECT_EQ(Json::parse(*reply)["id"], i);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "ctx serve died: status " << status;
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  status = wait_exit(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ServeProcess, SecondServeOnTheSameStateDirRefusesNamingItAndLeavesTheFirstServing) {
  TempStateDir dir;
  const auto socket = dir.path() / kSocketFile;
  const pid_t first = spawn_serve(dir.path(), dir.path() / "first.err");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(testing::wait_for_file(socket));
  const pid_t second = spawn_serve(dir.path(), dir.path() / "second.err");
  ASSERT_GT(second, 0);
  const int second_status = wait_exit(second);
  ASSERT_TRUE(WIFEXITED(second_status));
  EXPECT_EQ(WEXITSTATUS(second_status), 1);
  EXPECT_EQ(read_file(dir.path() / "second.err"),
            "ctx serve: another ctx serve is already running for state directory " +
                dir.path().string() + "\n");
  RpcClient client;
  ASSERT_TRUE(client.connect(socket));
  const auto reply = client.call(R"({"jsonrpc":"2.0","id":1,"method":"plugin.list"})");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(Json::parse(*reply)["result"]["plugins"], Json::array());
  ASSERT_EQ(::kill(first, SIGINT), 0);
  const int first_status = wait_exit(first);
  ASSERT_TRUE(WIFEXITED(first_status));
  EXPECT_EQ(WEXITSTATUS(first_status), 0);
  EXPECT_FALSE(std::filesystem::exists(socket));
}

}  // namespace
}  // namespace ctx::server
