// Catalog scale (issue 34 item 6): a catalog of N skills — the public skills of bench/data/catalog
// replicated with varied names ("<name>-v<k>" folders, the same bodies) — is imported at N/10 and
// at N entries into fresh state dirs, and a fixed prompt is planned (StateService::prepare, a fresh
// session each time) on a 1,000-entry and on the N-entry catalog. N is $CTX_CATALOG_SCALE
// (default 80000, the original system's graph size; the bench smoke test sets 2000).
// Prints `ratio import N/(N/10): X` (target <= 12: linear) and `ratio plan p50 N/1000: X`
// (target <= 2); no target is checked here. Timed (Google Benchmark): one prepare at N.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/runtime/catalog/catalog.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::size_t scale() {
  const char* value = std::getenv("CTX_CATALOG_SCALE");
  const long n = value != nullptr ? std::strtol(value, nullptr, 10) : 80000;
  return static_cast<std::size_t>(std::max(1000L, n));
}

fs::path work_dir() {
  static const fs::path dir = [] {
    std::string pattern = (fs::temp_directory_path() / "ctx-bench-scale-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return fs::path(pattern);
  }();
  return dir;
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The SKILL.md texts of bench/data/catalog with their frontmatter names.
std::vector<std::pair<std::string, std::string>> seed_skills() {
  std::vector<std::pair<std::string, std::string>> skills;
  const std::regex name_line(R"(^name:[ \t]*([A-Za-z0-9._-]+)[ \t]*$)", std::regex::multiline);
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(CTX_BENCH_DATA) / "catalog")) {
    if (entry.path().filename() != "SKILL.md") continue;
    const std::string text = read(entry.path());
    std::smatch match;
    if (std::regex_search(text, match, name_line)) skills.emplace_back(match[1], text);
  }
  std::sort(skills.begin(), skills.end());
  return skills;
}

// A catalog folder of `count` skills: the seed skills replicated as "<name>-v<k>".
fs::path catalog_of(std::size_t count) {
  static const auto seeds = seed_skills();
  const fs::path dir = work_dir() / ("catalog-" + std::to_string(count));
  if (fs::exists(dir)) return dir;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& [name, text] = seeds[i % seeds.size()];
    const std::string copy = name + "-v" + std::to_string(i / seeds.size());
    const fs::path folder = dir / "skills" / copy;
    fs::create_directories(folder);
    std::string body = text;
    const std::size_t at = body.find("name: " + name);
    if (at != std::string::npos) body.replace(at, 6 + name.size(), "name: " + copy);
    std::ofstream(folder / "SKILL.md", std::ios::binary) << body;
  }
  return dir;
}

// A fresh state dir with a catalog of `count` skills imported; the import's seconds.
double import_into(const fs::path& state, std::size_t count) {
  const fs::path catalog = catalog_of(count);
  ctx::runtime::init_state_dir(state);
  const auto start = Clock::now();
  ctx::runtime::import_catalog(catalog, state);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ctx::runtime::CurrentWork work(int session) {
  return ctx::runtime::CurrentWork{
      "local", "home", "scale", "session-" + std::to_string(session),
      {"create", "an", "excel", "spreadsheet", "with", "formulas", "for", "loan", "payments"},
      {}, 3};
}

// The p50 of `runs` prepares of the fixed prompt, each in a fresh session.
double plan_p50(ctx::runtime::StateService& service, int runs, int first_session) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    (void)service.prepare(work(first_session + i));
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Figures {
  std::size_t n = 0;
  double import_small = 0, import_big = 0, plan_1k = 0, plan_big = 0;
};

const Figures& figures() {
  static const Figures f = [] {
    Figures out;
    out.n = scale();
    out.import_small = import_into(work_dir() / "state-small", out.n / 10);
    out.import_big = import_into(work_dir() / "state-big", out.n);
    (void)import_into(work_dir() / "state-1k", 1000);
    auto one_k = ctx::runtime::StateService::open(work_dir() / "state-1k");
    auto big = ctx::runtime::StateService::open(work_dir() / "state-big");
    (void)plan_p50(*one_k, 3, 0);  // warm both (first open of the graph, caches)
    (void)plan_p50(*big, 3, 0);
    // A service that has been up a few seconds: the files it hashed have settled (a file changed
    // in the last second is read and hashed again on every use; host/store/verified_files.hpp).
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    (void)plan_p50(*one_k, 1, 50);
    (void)plan_p50(*big, 1, 50);
    out.plan_1k = plan_p50(*one_k, 15, 100);
    out.plan_big = plan_p50(*big, 15, 100);
    return out;
  }();
  return f;
}

void BM_PlanAtScale(benchmark::State& state) {
  auto service = ctx::runtime::StateService::open(work_dir() / "state-big");
  int session = 1000;
  for (auto _ : state) benchmark::DoNotOptimize(service->prepare(work(session++)));
}

}  // namespace

int main(int argc, char** argv) {
  const Figures& f = figures();
  benchmark::RegisterBenchmark("BM_PlanAtScale", BM_PlanAtScale)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(5);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("catalog scale N=%zu: import %zu in %.2f s, %zu in %.2f s; plan p50 %.2f ms at 1000, "
              "%.2f ms at %zu\n",
              f.n, f.n / 10, f.import_small, f.n, f.import_big, f.plan_1k * 1e3,
              f.plan_big * 1e3, f.n);
  std::printf("ratio import %zu/%zu: %.3f\n", f.n, f.n / 10, f.import_big / f.import_small);
  std::printf("ratio plan p50 %zu/1000: %.3f\n", f.n, f.plan_big / f.plan_1k);
  std::fflush(stdout);  // the figures are out before the (slow, at 80,000 entries) clean-up
  std::error_code ignored;
  fs::remove_all(work_dir(), ignored);
  return 0;
}
