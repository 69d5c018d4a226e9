// Managed query service latency, as ratios against one raw SQLite insert+commit (synchronous
// FULL, the service stores' level) measured on the same disk in the same run:
//   ratio service_prepare_p50 / _p99: a fresh prepare (register, plan, commit, mark) per query;
//   ratio service_exact_retry_p50: the same prepare request again (no planning);
//   ratio service_set_desired_p50: an empty desired subset on a freshly prepared query;
//   ratio service_two_process_throughput: prepares/s of two processes on one state directory
//     over prepares/s of one process alone (target >= 0.7).
// Targets: prepare p50 <= 20x, exact retry <= 3x. Files go to $CTX_BENCH_DIR (default: the
// system temp directory).
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "host/runtime/service/managed_service.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace sv = ctx::testing::service;
using Clock = std::chrono::steady_clock;

std::map<std::string, std::vector<double>> g_samples;  // seconds per operation

fs::path bench_dir(const char* name) {
  const char* env = std::getenv("CTX_BENCH_DIR");
  fs::path base = env != nullptr ? fs::path(env) : fs::temp_directory_path();
  std::string pattern = (base / (std::string("ctx-bench-") + name + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The seed's inputs on session `n` (each prepare plans a fresh stream).
std::shared_ptr<const ctx::runtime::ManagedQueryInput> session_input(const sv::ServiceSetup& setup,
                                                                     const std::string& n) {
  const auto scope = ctx::engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1",
                                                   "session-" + n, "exposure-1", "host-neutral");
  // Event ids are global across streams: each session gets its own.
  auto started = sv::replace_event(setup.managed_input->session_started(),
                                   [&](ctx::engine::EngineEvent::Fields& f) {
                                     f.scope = scope;
                                     f.event_id += "-" + n;
                                   });
  auto decision = sv::replace_event(setup.managed_input->decision_event(),
                                    [&](ctx::engine::EngineEvent::Fields& f) {
                                      f.scope = scope;
                                      f.event_id += "-" + n;
                                      f.causation_id = started.event_id();
                                    });
  return ctx::runtime::ManagedQueryInput::create(setup.artifact, std::move(started),
                                                 std::move(decision));
}

void BM_RawCommit(benchmark::State& state) {
  const fs::path dir = bench_dir("raw");
  sqlite3* db = nullptr;
  sqlite3_open((dir / "raw.sqlite3").c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;"
               "CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?)", -1, &insert, nullptr);
  const std::string value(2048, 'v');
  std::int64_t i = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    const std::string key = std::to_string(i++);
    sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    sqlite3_bind_text(insert, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    sqlite3_step(insert);
    sqlite3_reset(insert);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    g_samples["raw"].push_back(seconds_since(start));
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  fs::remove_all(dir);
}
BENCHMARK(BM_RawCommit)->Iterations(200)->Unit(benchmark::kMicrosecond);

void BM_Prepare(benchmark::State& state) {
  const fs::path dir = bench_dir("prepare");
  auto setup = sv::make_setup(dir / "state");
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string id = std::to_string(n++);
    setup.inputs->set("work-" + id, session_input(setup, id));
    const auto request =
        ctx::runtime::ManagedQueryRequest::create(sv::digest("q" + id), "work-" + id);
    state.ResumeTiming();
    const auto start = Clock::now();
    benchmark::DoNotOptimize(setup.service->prepare(request).query_ref());
    g_samples["prepare"].push_back(seconds_since(start));
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_Prepare)->Iterations(60)->Unit(benchmark::kMillisecond);

void BM_ExactRetry(benchmark::State& state) {
  const fs::path dir = bench_dir("retry");
  auto setup = sv::make_setup(dir / "state");
  const auto request = ctx::runtime::ManagedQueryRequest::create(sv::digest("retry"), "work-one");
  setup.service->prepare(request);
  for (auto _ : state) {
    const auto start = Clock::now();
    benchmark::DoNotOptimize(setup.service->prepare(request).query_ref());
    g_samples["retry"].push_back(seconds_since(start));
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_ExactRetry)->Iterations(60)->Unit(benchmark::kMillisecond);

void BM_SetDesired(benchmark::State& state) {
  const fs::path dir = bench_dir("desired");
  auto setup = sv::make_setup(dir / "state", {.requested_limit = 1});
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string id = std::to_string(n++);
    setup.inputs->set("work-" + id, session_input(setup, id));
    const auto prepared = setup.service->prepare(
        ctx::runtime::ManagedQueryRequest::create(sv::digest("q" + id), "work-" + id));
    const auto request = ctx::runtime::ManagedDesiredSetRequest::create(
        prepared.query_ref(), sv::digest("choice" + id), {});
    state.ResumeTiming();
    const auto start = Clock::now();
    benchmark::DoNotOptimize(setup.service->set_desired(request).desired_set_ref());
    g_samples["desired"].push_back(seconds_since(start));
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_SetDesired)->Iterations(40)->Unit(benchmark::kMillisecond);

// `count` fresh prepares on sessions prefix-0.. through `service`.
void prepare_many(const sv::ServiceSetup& setup, ctx::runtime::ManagedQueryService& service,
                  sv::InputAuthority& inputs, const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) {
    const std::string id = prefix + std::to_string(i);
    inputs.set("work-" + id, session_input(setup, id));
    service.prepare(ctx::runtime::ManagedQueryRequest::create(sv::digest("q" + id), "work-" + id));
  }
}

// A service of this process (after fork) on `setup`'s files.
std::pair<std::shared_ptr<ctx::runtime::ManagedQueryService>, std::shared_ptr<sv::InputAuthority>>
process_service(sv::ServiceSetup& setup) {
  auto registry = ctx::runtime::open_managed_artifact_registry(setup.tmp / "registry");
  setup.artifact = registry->reopen(setup.artifact->manifest_digest(),
                                    setup.artifact->planning_environment_digest());
  auto [started, intent] = sv::seed_events(*setup.artifact);
  setup.managed_input = ctx::runtime::ManagedQueryInput::create(setup.artifact, started, intent);
  auto inputs = std::make_shared<sv::InputAuthority>();
  auto options = setup.service_options();
  options.registry = registry;
  options.query_store = ctx::store::open_managed_query_store(setup.store_path, sv::store_key());
  options.input_authority = inputs;
  return {ctx::runtime::open_managed_query_service(std::move(options)), inputs};
}

void BM_TwoProcessContention(benchmark::State& state) {
  constexpr int kCount = 16;
  for (auto _ : state) {
    const fs::path dir = bench_dir("contention");
    auto setup = sv::make_setup(dir / "state");
    auto alone_start = Clock::now();
    prepare_many(setup, *setup.service, *setup.inputs, "alone-", kCount);
    const double alone = seconds_since(alone_start);
    const auto both_start = Clock::now();
    const pid_t child = ::fork();
    if (child == 0) {
      auto [service, inputs] = process_service(setup);
      prepare_many(setup, *service, *inputs, "child-", kCount);
      ::_exit(0);
    }
    prepare_many(setup, *setup.service, *setup.inputs, "parent-", kCount);
    int status = 0;
    ::waitpid(child, &status, 0);
    const double both = seconds_since(both_start);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("child failed");
    g_samples["throughput"].push_back((2.0 * kCount / both) / (kCount / alone));
    fs::remove_all(dir);
  }
}
BENCHMARK(BM_TwoProcessContention)->Iterations(1)->Unit(benchmark::kMillisecond);

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  return values[index];
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const double raw = percentile(g_samples["raw"], 0.5);
  if (raw <= 0) return 0;
  std::printf("raw_commit_p50_us: %.1f\n", raw * 1e6);
  if (!g_samples["prepare"].empty()) {
    std::printf("ratio service_prepare_p50: %.2f\n", percentile(g_samples["prepare"], 0.5) / raw);
    std::printf("ratio service_prepare_p99: %.2f\n", percentile(g_samples["prepare"], 0.99) / raw);
  }
  if (!g_samples["retry"].empty()) {
    std::printf("ratio service_exact_retry_p50: %.2f\n", percentile(g_samples["retry"], 0.5) / raw);
  }
  if (!g_samples["desired"].empty()) {
    std::printf("ratio service_set_desired_p50: %.2f\n",
                percentile(g_samples["desired"], 0.5) / raw);
  }
  if (!g_samples["throughput"].empty()) {
    std::printf("ratio service_two_process_throughput: %.2f\n",
                percentile(g_samples["throughput"], 0.5));
  }
  return 0;
}
