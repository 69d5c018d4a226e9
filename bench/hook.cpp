// Round trip of one `hook` request (a Claude Code UserPromptSubmit payload whose plan is already
// prepared: what every later prompt of a session costs) through a real `ctx serve` process (its
// log to /dev/null) on a state dir with the example catalog, at 1 and 8 concurrent clients,
// against a raw Unix-socket echo server (one blocking thread per connection) returning the same
// request bytes, in the same run. Prints p50/p99 per case, `ratio server/echo p50 1 client: X`,
// `ratio server/echo p50 8 clients: X` (target <= 10), the p99 ratios, the same for `plugin.list`
// (the server's own cost without the service: `ratio server/echo plugin.list p50 ...`), and the
// idle `ctx serve` VmRSS after start, after the service is open and after the run (idle again),
// as `ratio idle ctx serve RSS/20 MB: X` and `ratio idle ctx serve RSS after the run/20 MB: X`
// (target <= 1).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/server/server.hpp"

namespace {

namespace fs = std::filesystem;

const std::string kPayload =
    R"({"session_id":"bench-1","transcript_path":"/home/u/t.jsonl","cwd":"/home/u/project",)"
    R"("permission_mode":"default","hook_event_name":"UserPromptSubmit",)"
    R"("prompt":"please add a PDF export of the report"})";

std::string hook_request() {
  std::string escaped;
  for (const char c : kPayload) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return R"({"jsonrpc":"2.0","id":1,"method":"hook",)"
         R"("params":{"adapter":"claude-code","payload":")" +
         escaped + "\"}}\n";
}

const std::string kRequest = hook_request();
// The server's own cost without the service: the cheapest method (a cached lock read).
const std::string kListRequest = R"({"jsonrpc":"2.0","id":1,"method":"plugin.list"})"
                                 "\n";

fs::path g_server_socket;
fs::path g_echo_socket;
std::mutex g_mutex;
std::map<std::string, std::vector<double>> g_samples;  // name -> round trips in µs

int connect_to(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::fprintf(stderr, "cannot connect to %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until a newline; the reply is one line.
bool read_reply(int fd, std::string& buffer) {
  buffer.clear();
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    if (buffer.back() == '\n') return true;
  }
}

// The baseline: accept, then per connection read and write back every byte it receives.
void run_echo_server(int listener) {
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    std::thread([fd] {
      char chunk[4096];
      for (;;) {
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0 || !write_all(fd, chunk, static_cast<std::size_t>(n))) break;
      }
      ::close(fd);
    }).detach();
  }
}

void round_trip(benchmark::State& state, const fs::path* socket, const char* name,
                const std::string& request) {
  const std::string key = std::string(name) + "/" + std::to_string(state.threads());
  if (state.thread_index() == 0) {
    const std::lock_guard lock(g_mutex);
    g_samples[key].clear();
  }
  const int fd = connect_to(*socket);
  std::string reply;
  std::vector<double> mine;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (!write_all(fd, request.data(), request.size()) || !read_reply(fd, reply)) {
      state.SkipWithError("connection lost");
      break;
    }
    mine.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  ::close(fd);
  const std::lock_guard lock(g_mutex);
  auto& all = g_samples[key];
  all.insert(all.end(), mine.begin(), mine.end());
}

void BM_ServerHook(benchmark::State& state) {
  round_trip(state, &g_server_socket, "server", kRequest);
}
void BM_EchoHook(benchmark::State& state) { round_trip(state, &g_echo_socket, "echo", kRequest); }
void BM_ServerPluginList(benchmark::State& state) {
  round_trip(state, &g_server_socket, "server-list", kListRequest);
}
void BM_EchoPluginList(benchmark::State& state) {
  round_trip(state, &g_echo_socket, "echo-list", kListRequest);
}
BENCHMARK(BM_ServerHook)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK(BM_EchoHook)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK(BM_ServerPluginList)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK(BM_EchoPluginList)->Threads(1)->Threads(8)->UseRealTime();

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

long vm_rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = fs::temp_directory_path() / ("ctx-bench-hook-" + std::to_string(::getpid()));
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0700);
  g_server_socket = dir / ctx::server::kSocketFile;
  g_echo_socket = dir / "echo.sock";

  const std::string state = dir.string();
  const std::string setup = std::string(CTX_BINARY) + " init --state " + state + " >/dev/null && " +
                            CTX_BINARY + " catalog import " + CTX_SOURCE_DIR +
                            "/examples/catalog --state " + state + " >/dev/null";
  if (std::system(setup.c_str()) != 0) {
    std::fprintf(stderr, "cannot prepare the state dir\n");
    return 1;
  }
  const pid_t server = ::fork();
  if (server == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(CTX_BINARY, CTX_BINARY, "serve", "--state", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 1000 && !fs::exists(g_server_socket); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long idle_rss = vm_rss_kb(server);
  // The first hook opens the service and prepares the plan; every timed one is a later prompt.
  {
    const int fd = connect_to(g_server_socket);
    std::string reply;
    if (!write_all(fd, kRequest.data(), kRequest.size()) || !read_reply(fd, reply) ||
        reply.find("\"result\"") == std::string::npos) {
      std::fprintf(stderr, "the warm-up hook failed: %s\n", reply.c_str());
      return 1;
    }
    ::close(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long open_rss = vm_rss_kb(server);

  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, g_echo_socket.c_str(), sizeof(address.sun_path) - 1);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listener, 64) != 0) {
    std::fprintf(stderr, "echo server: %s\n", std::strerror(errno));
    return 1;
  }
  std::thread(run_echo_server, listener).detach();

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  const long loaded_rss = vm_rss_kb(server);
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);

  for (const char* name : {"server", "echo", "server-list", "echo-list"}) {
    for (int threads : {1, 8}) {
      const auto& samples = g_samples[std::string(name) + "/" + std::to_string(threads)];
      std::printf("%s %d client(s): p50 %.1f us, p99 %.1f us (%zu round trips)\n", name, threads,
                  percentile(samples, 0.50), percentile(samples, 0.99), samples.size());
    }
  }
  for (const char* what : {"", "plugin.list "}) {
    const std::string suffix = *what == '\0' ? "" : "-list";
    for (int threads : {1, 8}) {
      const auto& s = g_samples["server" + suffix + "/" + std::to_string(threads)];
      const auto& e = g_samples["echo" + suffix + "/" + std::to_string(threads)];
      const char* label = threads == 1 ? "1 client" : "8 clients";
      std::printf("ratio server/echo %sp50 %s: %.2f\n", what, label,
                  percentile(s, 0.5) / percentile(e, 0.5));
      std::printf("ratio server/echo %sp99 %s: %.2f\n", what, label,
                  percentile(s, 0.99) / percentile(e, 0.99));
    }
  }
  std::printf(
      "idle ctx serve VmRSS: %ld kB after start, %ld kB with the service open, %ld kB after the "
      "run (target <= 20480 kB)\n",
      idle_rss, open_rss, loaded_rss);
  std::printf("ratio idle ctx serve RSS/20 MB: %.2f\n", static_cast<double>(open_rss) / 20480.0);
  std::printf("ratio idle ctx serve RSS after the run/20 MB: %.2f\n",
              static_cast<double>(loaded_rss) / 20480.0);
  std::printf("ctx serve exit status after SIGTERM: %d\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  ::close(listener);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return 0;
}
