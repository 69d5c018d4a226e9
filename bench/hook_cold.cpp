// Cold start of `ctx hook claude-code` run in process on the embedded default (one fresh process
// per hook, as a coding host runs it) against `ctx --version` (the same binary doing nothing), in
// the same run, on a state dir made by `ctx init` + `ctx catalog import examples/catalog`.
// Cases: a PDF-export UserPromptSubmit in a new session each time (full planning: SessionStarted +
// IntentObserved committed), the same prompt again (exact retry), and a Stop event (nothing to
// plan: process start, adapter plugin load, parse). Wall time and CPU time (the child's rusage)
// per run; prints p50 of each and `ratio hook_cold/version: X` (target <= 3), plus the retry,
// stop and CPU-time ratios; then the new-session hook's CPU p50 over its first and last 10
// sessions and the size of the stores it left (how the cost moves as the state grows). Last, the
// state grows by kGrowthSessions more sessions and the new-session hook is timed again:
// `ratio hook_cold_grown/hook_cold` (a cost that grows with the stores shows here).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Sample {
  double wall_us = 0;
  double cpu_us = 0;
};

constexpr int kGrowthSessions = 500;
constexpr int kGrownSamples = 20;

std::map<std::string, std::vector<Sample>> g_samples;
fs::path g_state;
int g_session = 0;

// Runs argv with `input` on stdin (via a temporary file), stdout/stderr to /dev/null.
Sample run(const std::vector<std::string>& argv, const std::string& input) {
  const fs::path in = g_state.parent_path() / "stdin.json";
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
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const auto end = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed (status %d)\n", argv[1].c_str(), status);
    std::exit(1);
  }
  const auto tv_us = [](const timeval& tv) { return tv.tv_sec * 1e6 + tv.tv_usec; };
  return {std::chrono::duration<double, std::micro>(end - start).count(),
          tv_us(usage.ru_utime) + tv_us(usage.ru_stime)};
}

std::string prompt(const std::string& session) {
  return R"({"session_id":")" + session +
         R"(","transcript_path":"/home/u/.claude/projects/p/t.jsonl","cwd":"/home/u/proj",)"
         R"("permission_mode":"default","hook_event_name":"UserPromptSubmit",)"
         R"("prompt":"please add a PDF export of the quarterly report"})";
}

void timed(benchmark::State& state, const std::string& name, const std::vector<std::string>& argv,
           const std::function<std::string()>& input) {
  for (auto _ : state) {
    const std::string bytes = input();
    const Sample sample = run(argv, bytes);
    g_samples[name].push_back(sample);
    state.SetIterationTime(sample.wall_us / 1e6);
  }
}

void BM_VersionCold(benchmark::State& state) {
  timed(state, "version", {CTX_BINARY, "--version"}, [] { return std::string(); });
}
void BM_HookColdNewSession(benchmark::State& state) {
  timed(state, "hook_cold", {CTX_BINARY, "hook", "claude-code", "--state", g_state.string()},
        [] { return prompt("bench-session-" + std::to_string(++g_session)); });
}
void BM_HookColdExactRetry(benchmark::State& state) {
  timed(state, "hook_cold_retry",
        {CTX_BINARY, "hook", "claude-code", "--state", g_state.string()},
        [] { return prompt("bench-session-retry"); });
}
void BM_HookColdStop(benchmark::State& state) {
  timed(state, "hook_cold_stop", {CTX_BINARY, "hook", "claude-code", "--state", g_state.string()},
        [] {
          return std::string(
              R"({"session_id":"bench-stop","cwd":"/home/u/proj","hook_event_name":"Stop",)"
              R"("stop_hook_active":false})");
        });
}

double p50(std::vector<Sample> samples, bool cpu) {
  std::vector<double> values;
  for (const auto& s : samples) values.push_back(cpu ? s.cpu_us : s.wall_us);
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  ::setenv("CTX_AUTOSERVE", "0", 1);  // every hook in process: no `ctx serve` started
  char pattern[] = "/tmp/ctx-bench-hook-cold-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  g_state = fs::path(pattern) / "state";
  const std::string setup = std::string(CTX_BINARY) + " init --state " + g_state.string() +
                            " >/dev/null && " + CTX_BINARY + " catalog import " +
                            CTX_SOURCE_DIR + "/examples/catalog --state " + g_state.string() +
                            " >/dev/null";
  if (std::system(setup.c_str()) != 0) return 1;
  run({CTX_BINARY, "hook", "claude-code", "--state", g_state.string()},
      prompt("bench-session-retry"));  // the retry case's first, planning run
  benchmark::RegisterBenchmark("BM_VersionCold", BM_VersionCold)->UseManualTime()->Iterations(40);
  benchmark::RegisterBenchmark("BM_HookColdNewSession", BM_HookColdNewSession)
      ->UseManualTime()
      ->Iterations(40);
  benchmark::RegisterBenchmark("BM_HookColdExactRetry", BM_HookColdExactRetry)
      ->UseManualTime()
      ->Iterations(40);
  benchmark::RegisterBenchmark("BM_HookColdStop", BM_HookColdStop)->UseManualTime()->Iterations(40);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const double version = p50(g_samples["version"], false);
  const double version_cpu = p50(g_samples["version"], true);
  for (const char* name : {"version", "hook_cold", "hook_cold_retry", "hook_cold_stop"}) {
    std::printf("p50 %s: wall %.0f us, cpu %.0f us\n", name, p50(g_samples[name], false),
                p50(g_samples[name], true));
  }
  std::printf("ratio hook_cold/version: %.2f\n", p50(g_samples["hook_cold"], false) / version);
  std::printf("ratio hook_cold_retry/version: %.2f\n",
              p50(g_samples["hook_cold_retry"], false) / version);
  std::printf("ratio hook_cold_stop/version: %.2f\n",
              p50(g_samples["hook_cold_stop"], false) / version);
  std::printf("ratio hook_cold/version cpu: %.2f\n",
              p50(g_samples["hook_cold"], true) / version_cpu);
  std::printf("ratio hook_cold_stop/version cpu: %.2f\n",
              p50(g_samples["hook_cold_stop"], true) / version_cpu);
  // How the new-session hook moves as the state grows over this run's sessions (each one adds a
  // stream, a query row, a desired set and a consent), and the state it ended with: a cost that
  // grows with the stores shows here first (not a target).
  const auto& fresh = g_samples["hook_cold"];
  if (fresh.size() >= 20) {
    const std::vector<Sample> first(fresh.begin(), fresh.begin() + 10);
    const std::vector<Sample> last(fresh.end() - 10, fresh.end());
    std::printf("hook_cold growth over %zu sessions: cpu p50 first 10 %.0f us, last 10 %.0f us\n",
                fresh.size(), p50(first, true), p50(last, true));
  }
  const std::vector<std::string> hook = {CTX_BINARY, "hook", "claude-code", "--state",
                                         g_state.string()};
  for (int i = 0; i < kGrowthSessions; ++i) {
    run(hook, prompt("bench-growth-" + std::to_string(i)));
  }
  for (int i = 0; i < kGrownSamples; ++i) {
    g_samples["hook_cold_grown"].push_back(
        run(hook, prompt("bench-session-" + std::to_string(++g_session))));
  }
  std::printf("p50 hook_cold_grown (after %d more sessions): wall %.0f us, cpu %.0f us\n",
              kGrowthSessions, p50(g_samples["hook_cold_grown"], false),
              p50(g_samples["hook_cold_grown"], true));
  std::printf("ratio hook_cold_grown/hook_cold: %.2f\n",
              p50(g_samples["hook_cold_grown"], false) / p50(g_samples["hook_cold"], false));
  for (const char* store : {"queries.sqlite3", "journal.sqlite3", "consent.sqlite3"}) {
    std::error_code ec;
    std::uintmax_t bytes = 0;
    for (const char* suffix : {"", "-wal"}) {
      const auto size = fs::file_size(g_state / "service" / (std::string(store) + suffix), ec);
      if (!ec) bytes += size;
    }
    std::printf("state after the run: service/%s %.0f KiB (with its -wal)\n", store,
                static_cast<double>(bytes) / 1024);
  }
  fs::remove_all(pattern);
  return 0;
}
