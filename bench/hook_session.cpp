// 50 hooks of one Claude Code session as the host runs them: a fresh `ctx hook claude-code`
// process per event (SessionStart, a prompt, ten tool calls (PreToolUse + PostToolUse), Stop,
// another prompt, twelve tool calls, Stop, SessionEnd) on a state dir made by `ctx init` +
// `ctx catalog import examples/catalog`, with no `ctx serve` running at first: the first hook
// answers in process and starts one (the default), the hooks after it go through it. Against
// `ctx --version` (the same binary doing nothing), one run before each hook, in the same run.
// Prints the p50 wall time of each and `ratio hook_session/version` (target <= 3); then the same
// session on a second state dir with --no-autoserve (every hook in process, as before the
// auto-start): `ratio hook_session_in_process/version`; the first hook of the served session
// (in process plus starting the server) and the p50 of its prompts and of its tool hooks.
// The started server is stopped with SIGTERM at the end.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr int kSessionHooks = 50;

std::map<std::string, std::vector<double>> g_wall_us;
fs::path g_root;

// Runs argv with `input` on stdin (via a file), stdout and stderr to /dev/null; wall time in us.
double run(const std::vector<std::string>& argv, const std::string& input) {
  const fs::path in = g_root / "stdin.json";
  if (FILE* f = std::fopen(in.c_str(), "wb")) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(in.c_str(), O_RDONLY);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(fd, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto end = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s %s failed (status %d)\n", argv[0].c_str(), argv[1].c_str(), status);
    std::exit(1);
  }
  return std::chrono::duration<double, std::micro>(end - start).count();
}

std::string common(const std::string& session, const std::string& event) {
  return R"({"session_id":")" + session +
         R"(","transcript_path":"/home/u/.claude/projects/p/t.jsonl","cwd":"/home/u/proj",)"
         R"("permission_mode":"default","hook_event_name":")" +
         event + "\"";
}

// The session's events in order; each element is one hook's stdin.
std::vector<std::string> session_events(const std::string& session) {
  std::vector<std::string> events;
  events.push_back(common(session, "SessionStart") + R"(,"source":"startup"})");
  const auto prompt = [&](const std::string& text) {
    events.push_back(common(session, "UserPromptSubmit") + R"(,"prompt":")" + text + "\"}");
  };
  const auto tools = [&](int count, int first_id) {
    const char* commands[] = {"npm test", "git status", "ls src", "make -j2", "git diff"};
    for (int i = 0; i < count; ++i) {
      const std::string id = "toolu_" + std::to_string(first_id + i);
      const std::string input = R"("tool_name":"Bash","tool_input":{"command":")" +
                                std::string(commands[i % 5]) + R"("},"tool_use_id":")" + id + "\"";
      events.push_back(common(session, "PreToolUse") + "," + input + "}");
      events.push_back(common(session, "PostToolUse") + "," + input +
                       R"(,"tool_response":{"stdout":"ok","exit_code":0}})");
    }
  };
  const auto stop = [&] {
    events.push_back(common(session, "Stop") + R"(,"stop_hook_active":false})");
  };
  prompt("please add a PDF export of the quarterly report");
  tools(10, 0);
  stop();
  prompt("now write the SQL migrations for the report tables");
  tools(12, 100);
  stop();
  events.push_back(common(session, "SessionEnd") + R"(,"reason":"prompt_input_exit"})");
  return events;
}

bool is_prompt(const std::string& event) {
  return event.find("\"UserPromptSubmit\"") != std::string::npos;
}

// The session on `state`: before each hook one `ctx --version`; hook times under `name`.
void run_session(benchmark::State& state, const fs::path& dir, const std::string& name,
                 const std::vector<std::string>& extra_args) {
  const std::vector<std::string> events = session_events("bench-" + name);
  std::vector<std::string> hook = {CTX_BINARY, "hook", "claude-code", "--state", dir.string()};
  hook.insert(hook.end(), extra_args.begin(), extra_args.end());
  std::size_t i = 0;
  for (auto _ : state) {
    g_wall_us["version"].push_back(run({CTX_BINARY, "--version"}, ""));
    const std::string& event = events[i % events.size()];
    const double wall = run(hook, event);
    g_wall_us[name].push_back(wall);
    g_wall_us[name + (is_prompt(event) ? "_prompt" : "_other")].push_back(wall);
    state.SetIterationTime(wall / 1e6);
    ++i;
  }
}

fs::path g_served;
fs::path g_in_process;

void BM_HookSessionServed(benchmark::State& state) {
  run_session(state, g_served, "hook_session", {});
}
void BM_HookSessionInProcess(benchmark::State& state) {
  run_session(state, g_in_process, "hook_session_in_process", {"--no-autoserve"});
}

double p50(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

bool prepare(const fs::path& state) {
  const std::string setup = std::string(CTX_BINARY) + " init --state " + state.string() +
                            " >/dev/null && " + CTX_BINARY + " catalog import " + CTX_SOURCE_DIR +
                            "/examples/catalog --state " + state.string() + " >/dev/null";
  return std::system(setup.c_str()) == 0;
}

// Stops the server listening on `state`'s socket (its pid from the connection's credentials).
void stop_server(const fs::path& state) {
  const fs::path socket_path = state / "ctx.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  ucred peer{};
  socklen_t size = sizeof peer;
  const bool found =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0;
  ::close(fd);
  if (!found) {
    std::printf("no ctx serve was running at the end of the served session\n");
    return;
  }
  ::kill(peer.pid, SIGTERM);
  for (int i = 0; i < 500 && fs::exists(socket_path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::unsetenv("CTX_AUTOSERVE");  // the default: the first hook starts the server
  ::unsetenv("CTX_AUTOSERVE_IDLE");
  char pattern[] = "/tmp/ctx-bench-hook-session-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  g_root = pattern;
  g_served = g_root / "served";
  g_in_process = g_root / "in-process";
  if (!prepare(g_served) || !prepare(g_in_process)) return 1;
  benchmark::RegisterBenchmark("BM_HookSessionServed", BM_HookSessionServed)
      ->UseManualTime()
      ->Iterations(kSessionHooks);
  benchmark::RegisterBenchmark("BM_HookSessionInProcess", BM_HookSessionInProcess)
      ->UseManualTime()
      ->Iterations(kSessionHooks);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  stop_server(g_served);
  const double version = p50(g_wall_us["version"]);
  for (const char* name : {"version", "hook_session", "hook_session_prompt", "hook_session_other",
                           "hook_session_in_process", "hook_session_in_process_prompt",
                           "hook_session_in_process_other"}) {
    std::printf("p50 %s: wall %.0f us (%zu runs)\n", name, p50(g_wall_us[name]),
                g_wall_us[name].size());
  }
  if (!g_wall_us["hook_session"].empty()) {
    std::printf("first hook of the served session (in process, then starts ctx serve): %.0f us\n",
                g_wall_us["hook_session"].front());
  }
  std::printf("ratio hook_session/version: %.2f\n", p50(g_wall_us["hook_session"]) / version);
  std::printf("ratio hook_session_in_process/version: %.2f\n",
              p50(g_wall_us["hook_session_in_process"]) / version);
  std::error_code ignored;
  fs::remove_all(g_root, ignored);
  return 0;
}
