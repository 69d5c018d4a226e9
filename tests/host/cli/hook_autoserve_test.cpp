// `ctx hook` starting the state dir's `ctx serve` (server/autostart.hpp), as real processes: the
// first hook answers in process and starts one server, which the next hook goes through; hooks
// racing at first use start one; a server killed with SIGKILL is replaced by the next hook; a
// server exits when its state dir is moved or removed, and when idle; a `ctx serve` started by
// hand is used and not replaced; the flag and the variable opt out. The suite runs with
// CTX_AUTOSERVE=0 (tests/host/cli/CMakeLists.txt); these hooks remove it, so they see the default.
// Every server a test started is killed in TearDown.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/cli/hook_command.hpp"
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
using namespace std::chrono_literals;

// Waits up to `limit` for `done`.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// The live `ctx serve --state STATE ...` processes, from /proc (a zombie has no command line).
std::vector<pid_t> servers_of(const fs::path& state) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> argv;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t end = bytes.find('\0', at);
      argv.push_back(bytes.substr(at, end - at));
      at = end == std::string::npos ? bytes.size() : end + 1;
    }
    if (argv.size() >= 4 && argv[1] == "serve" && argv[2] == "--state" &&
        argv[3] == state.string()) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// The pid of the process listening on the state dir's socket, when one accepts a connection.
std::optional<pid_t> listening_server(const fs::path& state) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, (state / "ctx.sock").c_str(), sizeof(address.sun_path) - 1);
  std::optional<pid_t> pid;
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0) {
    pid = peer.pid;
  }
  ::close(fd);
  return pid;
}

// Whether process `pid` has a file of the state dir's service stores open (a server opens them
// at its first request, not before).
bool has_service_open(pid_t pid, const fs::path& state) {
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const fs::path target = fs::read_symlink(fd.path(), ec);
    if (!ec && target.string().rfind((state / "service").string() + "/", 0) == 0) return true;
  }
  return false;
}

void kill_servers(const fs::path& state) {
  for (const pid_t pid : servers_of(state)) ::kill(pid, SIGKILL);
  EXPECT_TRUE(eventually([&] { return servers_of(state).empty(); }))
      << "a ctx serve of " << state << " survived SIGKILL";
}

std::string prompt(const std::string& session) {
  return Json{{"session_id", session},
              {"transcript_path", "/home/u/.claude/projects/p/t.jsonl"},
              {"cwd", "/home/u/proj"},
              {"permission_mode", "default"},
              {"hook_event_name", "UserPromptSubmit"},
              {"prompt", "please add a PDF export of the quarterly report"}}
      .dump();
}

class HookAutoServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() / "state";
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{CTX_BINARY, "init", "--state", state_.string()},
          std::vector<std::string>{CTX_BINARY, "catalog", "import",
                                   std::string(CTX_SOURCE_DIR) + "/examples/catalog", "--state",
                                   state_.string()}}) {
      const ProcessResult r = run_process(args, "", 120s);
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }
  void TearDown() override {
    for (const fs::path& state : {state_, moved()}) kill_servers(state);
  }

  fs::path moved() const { return dir_.path() / "moved"; }

  // `ctx hook claude-code` on the state dir with CTX_AUTOSERVE unset (the default) and `env`.
  ProcessResult hook(const std::string& session, std::vector<std::string> env = {},
                     std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {CTX_BINARY, "hook", "claude-code", "--state", state_.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    env.insert(env.begin(), "CTX_AUTOSERVE");
    return run_process(args, prompt(session), 60s, env);
  }

  // Exit 0 with the reply, and stdout and stderr closed when the hook exited: a server holding
  // the host's pipes would keep run_process reading until its deadline.
  void expect_answered(const ProcessResult& r) {
    EXPECT_FALSE(r.timed_out) << "the hook's stdout or stderr stayed open after it exited";
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
  }

  // The one server that came up for the state dir and listens: its pid.
  pid_t one_server_up() {
    std::optional<pid_t> pid;
    EXPECT_TRUE(eventually([&] { return (pid = listening_server(state_)).has_value(); }))
        << "no server came up; serve.log: " << read_file(state_ / "serve.log");
    EXPECT_EQ(servers_of(state_), std::vector<pid_t>{pid.value_or(-1)});
    return pid.value_or(-1);
  }

  // serve.log's lines, parsed.
  std::vector<Json> log_lines() {
    std::vector<Json> lines;
    std::ifstream in(state_ / "serve.log");
    for (std::string line; std::getline(in, line);) {
      lines.push_back(Json::parse(line, nullptr, false));
    }
    return lines;
  }

  TempDir dir_;
  fs::path state_;
};

TEST_F(HookAutoServeTest, TheFirstHookStartsAServerAndTheNextHookGoesThroughIt) {
  ASSERT_FALSE(fs::exists(state_ / "ctx.sock"));
  expect_answered(hook("first"));
  const pid_t server = one_server_up();
  // Detached: in its own session, not a child of the hook, and not holding the hook's pipes
  // (run_process read stdout and stderr to their end, so the hook's ended with the hook).
  EXPECT_NE(::getsid(server), ::getsid(0));
  EXPECT_FALSE(has_service_open(server, state_)) << "the server served something already";
  expect_answered(hook("second"));
  EXPECT_TRUE(has_service_open(server, state_)) << "the second hook did not go through the server";
  EXPECT_EQ(servers_of(state_), std::vector<pid_t>{server});
  const std::vector<Json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u) << read_file(state_ / "serve.log");
  EXPECT_EQ(lines[0]["event"], "start");
  EXPECT_EQ(lines[0]["pid"], server);
  EXPECT_EQ(lines[0]["idle_exit_s"], 1800);  // the documented default
}

// serve.log stays bounded: a log past 64 KiB (server/autostart.hpp kServeLogLimit) is cut to
// nothing when the next server starts, so it then holds that server's start line only; a log
// under the limit is appended to.
TEST_F(HookAutoServeTest, AServeLogPastItsLimitIsCutWhenTheNextServerStarts) {
  const std::string old_line = R"({"event":"stop","reason":"idle"})" "\n";
  {
    std::ofstream log(state_ / "serve.log", std::ios::binary);
    for (std::size_t size = 0; size <= 64 * 1024; size += old_line.size()) log << old_line;
  }
  fs::permissions(state_ / "serve.log", fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::replace);
  expect_answered(hook("s", {"CTX_AUTOSERVE_IDLE=3"}));
  const pid_t server = one_server_up();
  std::vector<Json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u) << "the old log was not cut";
  EXPECT_EQ(lines[0], Json({{"event", "start"}, {"pid", server}, {"idle_exit_s", 3}}));
  ASSERT_TRUE(eventually([&] { return servers_of(state_).empty(); }, 30s));
  // Under the limit: the next server's lines are appended.
  expect_answered(hook("t", {"CTX_AUTOSERVE_IDLE=3"}));
  const pid_t next = one_server_up();
  lines = log_lines();
  ASSERT_EQ(lines.size(), 3u) << read_file(state_ / "serve.log");
  EXPECT_EQ(lines[1], Json({{"event", "stop"}, {"reason", "idle"}}));
  EXPECT_EQ(lines[2]["pid"], next);
}

TEST_F(HookAutoServeTest, HooksRacingAtFirstUseStartOneServer) {
  constexpr int kHooks = 4;
  std::barrier start(kHooks);
  std::vector<ProcessResult> results(kHooks);
  std::vector<std::thread> threads;
  for (int i = 0; i < kHooks; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = hook("race-" + std::to_string(i));
    });
  }
  for (auto& thread : threads) thread.join();
  for (const ProcessResult& r : results) expect_answered(r);
  const pid_t server = one_server_up();
  std::this_thread::sleep_for(300ms);  // a second server, had one been started, would show now
  EXPECT_EQ(servers_of(state_), std::vector<pid_t>{server});
  // One server started, and nothing else tried (a refused second one would have said so here).
  const std::vector<Json> lines = log_lines();
  ASSERT_EQ(lines.size(), 1u) << read_file(state_ / "serve.log");
  EXPECT_EQ(lines[0]["event"], "start");
}

TEST_F(HookAutoServeTest, AServerKilledWithSigkillIsReplacedByTheNextHook) {
  expect_answered(hook("before"));
  const pid_t first = one_server_up();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return servers_of(state_).empty(); }));
  EXPECT_TRUE(fs::exists(state_ / "ctx.sock")) << "SIGKILL left no stale socket to test with";
  expect_answered(hook("after"));  // in process: the stale socket refuses
  const pid_t second = one_server_up();
  EXPECT_NE(second, first);
  expect_answered(hook("through"));
  EXPECT_TRUE(has_service_open(second, state_));
}

TEST_F(HookAutoServeTest, AServerExitsWhenItsStateDirIsMoved) {
  expect_answered(hook("s"));
  one_server_up();
  fs::rename(state_, moved());
  EXPECT_TRUE(eventually([&] { return servers_of(state_).empty(); }))
      << "the server still runs for a state dir that moved away";
  EXPECT_FALSE(fs::exists(moved() / "ctx.sock"));
  std::ifstream in(moved() / "serve.log");
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(log,
              HasSubstr(R"({"event":"stop","reason":"the state directory was moved or removed"})"));
}

TEST_F(HookAutoServeTest, AServerExitsWhenItsStateDirIsRemoved) {
  expect_answered(hook("s"));
  one_server_up();
  fs::remove_all(state_);
  EXPECT_TRUE(eventually([&] { return servers_of(state_).empty(); }))
      << "the server still runs for a removed state dir";
}

// The idle time is 3 s, not 1: on a loaded machine the server must still be seen listening
// before it exits (a 1 s idle server could come and go between two polls of the test).
TEST_F(HookAutoServeTest, AnIdleServerExitsAfterTheIdleTime) {
  expect_answered(hook("s", {"CTX_AUTOSERVE_IDLE=3"}));
  const pid_t server = one_server_up();
  EXPECT_TRUE(eventually([&] { return servers_of(state_).empty(); }, 30s))
      << "the server outlived its idle time of 3 s";
  EXPECT_FALSE(fs::exists(state_ / "ctx.sock"));
  const std::vector<Json> lines = log_lines();
  ASSERT_EQ(lines.size(), 2u) << read_file(state_ / "serve.log");
  EXPECT_EQ(lines[0], Json({{"event", "start"}, {"pid", server}, {"idle_exit_s", 3}}));
  EXPECT_EQ(lines[1], Json({{"event", "stop"}, {"reason", "idle"}}));
  // The next hook starts the next one.
  expect_answered(hook("later", {"CTX_AUTOSERVE_IDLE=3"}));
  EXPECT_NE(one_server_up(), server);
}

TEST_F(HookAutoServeTest, AServeStartedByHandIsUsedAndNotReplaced) {
  const fs::path err = dir_.path() / "serve.err";
  const pid_t by_hand = ::fork();
  ASSERT_GE(by_hand, 0);
  if (by_hand == 0) {
    const int log = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(log, 2);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::execl(CTX_BINARY, CTX_BINARY, "serve", "--state", state_.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE(eventually([&] { return listening_server(state_) == by_hand; })) << read_file(err);
  expect_answered(hook("one"));
  expect_answered(hook("two"));
  EXPECT_TRUE(has_service_open(by_hand, state_));
  EXPECT_EQ(servers_of(state_), std::vector<pid_t>{by_hand});
  EXPECT_FALSE(fs::exists(state_ / "serve.log")) << "a hook tried to start a server";
  // Its log has one line per hook (a server started by hand logs its requests).
  ASSERT_EQ(::kill(by_hand, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(by_hand, &status, 0), by_hand);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(err);
  const std::string log = read_file(err);
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
}

TEST_F(HookAutoServeTest, TheFlagAndTheVariableOptOut) {
  expect_answered(hook("flag", {}, {"--no-autoserve"}));
  for (const char* off : {"0", "off", "no", "false", "OFF"}) {
    expect_answered(hook(std::string("variable-") + off, {std::string("CTX_AUTOSERVE=") + off}));
  }
  // Nothing was attempted: the starter makes the lock file and the log before it forks.
  EXPECT_FALSE(fs::exists(state_ / "ctx.sock.lock"));
  EXPECT_FALSE(fs::exists(state_ / "serve.log"));
  EXPECT_TRUE(servers_of(state_).empty());
  // Any other value leaves it on.
  expect_answered(hook("on", {"CTX_AUTOSERVE=1"}));
  one_server_up();
}

TEST_F(HookAutoServeTest, ABadHandedDownLockMakesCtxServeFailWithOneLine) {
  const auto serve = [&](const std::string& value) {
    return run_process({CTX_BINARY, "serve", "--state", state_.string()}, "", 60s,
                       {"CTX_SERVE_LOCK_FD=" + value});
  };
  const ProcessResult not_a_number = serve("x");
  EXPECT_EQ(not_a_number.code, 1);
  EXPECT_EQ(not_a_number.err, "ctx: error: CTX_SERVE_LOCK_FD must be a file descriptor number\n");
  const ProcessResult not_the_lock = serve("0");  // stdin
  EXPECT_EQ(not_the_lock.code, 1);
  EXPECT_EQ(not_the_lock.err,
            "ctx serve: the server lock handed down to ctx serve is not the lock of state "
            "directory " +
                state_.string() + "\n");
  EXPECT_FALSE(fs::exists(state_ / "ctx.sock"));
}

// In process (the CLI as a library, as tests and embedders run it) nothing is started: there
// is no executable to start; the real process reads it and the variables.
TEST(HookAutoServe, OnByDefaultInTheRealProcessOffWithoutAnExecutable) {
  HookOptions options;
  Environment library;
  EXPECT_FALSE(autoserve_enabled(options, library));
  Environment process;
  process.executable = "/proc/self/exe";
  EXPECT_TRUE(autoserve_enabled(options, process));
  process.autoserve = "yes";
  EXPECT_TRUE(autoserve_enabled(options, process));
  process.autoserve = "Off";
  EXPECT_FALSE(autoserve_enabled(options, process));
  process.autoserve.reset();
  options.no_autoserve = true;
  EXPECT_FALSE(autoserve_enabled(options, process));
  EXPECT_EQ(Environment::from_process().executable, fs::path("/proc/self/exe"));
}

TEST(HookAutoServe, TheIdleTimeIsTheVariableInWholeSecondsElseTheDefault) {
  Environment env;
  EXPECT_EQ(autoserve_idle(env), 1800s);
  for (const auto& [value, seconds] :
       std::vector<std::pair<std::string, std::chrono::seconds>>{{"1", 1s},
                                                                 {"90", 90s},
                                                                 {"604800", 604800s},
                                                                 {"0", 1800s},
                                                                 {"604801", 1800s},
                                                                 {"-5", 1800s},
                                                                 {"1.5", 1800s},
                                                                 {"", 1800s},
                                                                 {"ten", 1800s},
                                                                 {"99999999999", 1800s}}) {
    env.autoserve_idle = value;
    EXPECT_EQ(autoserve_idle(env), seconds) << value;
  }
}

}  // namespace
}  // namespace ctx::cli
