// Journal throughput: events appended through store::SqliteJournalStore (validation, digest
// chain, head verification, projection upsert, read-back check, durable commit) against raw
// SQLite inserting a row of the same bytes into a table of the same shape and committing it, at
// the same synchronous level, in the same run. The ratio store/raw is printed at the end
// (target >= 0.5). Files go to $CTX_BENCH_DIR (default: the system temp directory).
//
// Engine::process (the reducer helper's coordinator) is not benchmarked here: it was not
// published when this bench was written; this measures the journal store append it commits
// through.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "host/core/time.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/journal/journal_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
namespace tj = ctx::testing::journal;

const char* kSync[] = {"FULL", "NORMAL"};

fs::path bench_dir() {
  const char* env = std::getenv("CTX_BENCH_DIR");
  fs::path base = env != nullptr ? fs::path(env) : fs::temp_directory_path();
  std::string pattern = (base / "ctx-bench-journal-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

// A realistic-size append: ~1.5 KiB of replay/transition/state JSON.
ctx::engine::JournalAppend event_at(ctx::engine::Revision expected) {
  tj::AppendSpec spec;
  spec.expected = expected;
  spec.event_id = "bench-event-" + std::to_string(expected);
  spec.kind = "ToolCallObserved";
  spec.payload = ctx::core::Json{{"capability_id", "skill:python-testing"},
                                 {"outcome", "succeeded"},
                                 {"source_digest", tj::digest_of("source")}};
  spec.padding = std::string(600, 'p');
  return tj::make_append(spec);
}

void BM_StoreAppend(benchmark::State& state) {
  fs::path dir = bench_dir();
  ctx::core::SystemClock clock;
  std::vector<ctx::engine::JournalAppend> events;
  for (int i = 0; i < 20000; ++i) events.push_back(event_at(i));
  std::size_t bytes = 0;
  {
    ctx::store::SqliteJournalStore store(
        dir / "journal.sqlite3", clock,
        ctx::store::SqliteJournalOptions{.busy_timeout_ms = 30'000,
                                         .synchronous = kSync[state.range(0)]});
    std::size_t i = 0;
    for (auto _ : state) {
      if (i == events.size()) {
        state.SkipWithError("ran out of prepared events");
        break;
      }
      auto commit = store.append(events[i]);
      benchmark::DoNotOptimize(commit.record.record_digest);
      bytes += events[i].replay_json.size() + events[i].transition_json.size() +
               events[i].result_state_json.size();
      ++i;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["row_bytes"] =
      state.iterations() > 0 ? static_cast<double>(bytes) / state.iterations() : 0;
  fs::remove_all(dir);
}

void check(int rc, sqlite3* db) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
    std::abort();
  }
}

// Raw SQLite: same table shape as engine_journal, same bytes per row, BEGIN IMMEDIATE + INSERT
// + COMMIT per event, same pragmas.
void BM_RawInsertCommit(benchmark::State& state) {
  fs::path dir = bench_dir();
  sqlite3* db = nullptr;
  check(sqlite3_open((dir / "raw.sqlite3").c_str(), &db), db);
  std::string pragmas = std::string("PRAGMA busy_timeout=30000; PRAGMA journal_mode=WAL; "
                                    "PRAGMA synchronous=") + kSync[state.range(0)] + ";";
  check(sqlite3_exec(db, pragmas.c_str(), nullptr, nullptr, nullptr), db);
  check(sqlite3_exec(db,
                     "CREATE TABLE raw (event_id TEXT PRIMARY KEY, stream_key TEXT NOT NULL, "
                     "revision INTEGER NOT NULL, event_content_digest TEXT NOT NULL, "
                     "replay_json TEXT NOT NULL, replay_digest TEXT NOT NULL, transition_json "
                     "TEXT NOT NULL, transition_digest TEXT NOT NULL, result_state_json TEXT NOT "
                     "NULL, result_state_digest TEXT NOT NULL, previous_record_digest TEXT, "
                     "record_digest TEXT NOT NULL, privacy_classification TEXT NOT NULL, "
                     "retention_class TEXT NOT NULL, reducer_version TEXT NOT NULL, "
                     "UNIQUE (stream_key, revision))",
                     nullptr, nullptr, nullptr),
        db);
  sqlite3_stmt* insert = nullptr;
  check(sqlite3_prepare_v2(db,
                           "INSERT INTO raw VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                           "?12, ?13, ?14, ?15)",
                           -1, &insert, nullptr),
        db);
  // Rows cycle through prepared payloads; the event id and revision stay unique.
  std::vector<ctx::engine::JournalAppend> events;
  for (int i = 0; i < 1000; ++i) events.push_back(event_at(i));
  const std::string digest(64, 'a');
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& e = events[i % events.size()];
    std::string event_id = "bench-event-" + std::to_string(i);
    check(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), db);
    auto text = [&](int index, const std::string& value) {
      sqlite3_bind_text(insert, index, value.data(), static_cast<int>(value.size()),
                        SQLITE_STATIC);
    };
    text(1, event_id);
    text(2, e.stream.stream_key());
    sqlite3_bind_int64(insert, 3, static_cast<std::int64_t>(i) + 1);
    text(4, e.event_content_digest);
    text(5, e.replay_json);
    text(6, digest);
    text(7, e.transition_json);
    text(8, digest);
    text(9, e.result_state_json);
    text(10, digest);
    text(11, digest);
    text(12, digest);
    text(13, e.privacy_classification);
    text(14, e.retention_class);
    text(15, e.reducer_version);
    check(sqlite3_step(insert), db);
    sqlite3_reset(insert);
    check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  sqlite3_finalize(insert);
  sqlite3_close(db);
  fs::remove_all(dir);
}

BENCHMARK(BM_StoreAppend)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->MinTime(2.0)
    ->UseRealTime();
BENCHMARK(BM_RawInsertCommit)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->MinTime(2.0)
    ->UseRealTime();

// Remembers items/second per run and prints store/raw ratios after the normal console output.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) rates_[run.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const char* arg : {"0", "1"}) {
      std::string suffix = std::string("/sync_full0_normal1:") + arg + "/min_time:2.000/real_time";
      auto store = rates_.find("BM_StoreAppend" + suffix);
      auto raw = rates_.find("BM_RawInsertCommit" + suffix);
      if (store == rates_.end() || raw == rates_.end() || raw->second <= 0) continue;
      std::printf("ratio store/raw at synchronous=%s: %.3f (store %.0f/s, raw %.0f/s)\n",
                  arg[0] == '0' ? "FULL" : "NORMAL", store->second / raw->second, store->second,
                  raw->second);
    }
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
