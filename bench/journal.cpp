// Journal throughput: events appended through store::SqliteJournalStore (validation, digest
// chain, head verification, projection upsert, read-back check, durable commit) against raw
// SQLite inserting a row of the same bytes into a table of the same shape and committing it, at
// the same synchronous level, in the same run. The ratio store/raw is printed at the end
// (target >= 0.5). Files go to $CTX_BENCH_DIR (default: the system temp directory).
//
// Second pair: events through engine::Engine::process (SessionStarted, then TurnEnded events:
// preflight, replay boundary, reducer, commit) on the SQLite store, against raw insert+commit of
// exactly the rows process() journaled (captured from a recording run), same synchronous level.
//
// Cold open: open the store and an engine on a copy of a file holding a 10- or 10,000-record
// stream and process one event; the ratio of the two times is printed (target <= 2).
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "host/core/time.hpp"
#include "host/engine/engine.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/journal/journal_fixtures.hpp"
#include "tests/support/journal/mem_journal_store.hpp"

namespace {

namespace fs = std::filesystem;
namespace tj = ctx::testing::journal;

const ctx::store::Synchronous kSync[] = {ctx::store::Synchronous::kFull,
                                         ctx::store::Synchronous::kNormal};

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
      bytes += events[i].replay.text().size() + events[i].transition.text.text().size() +
               events[i].result_state.text().size();
      ++i;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["row_bytes"] =
      state.iterations() > 0 ? static_cast<double>(bytes) / state.iterations() : 0;
  fs::remove_all(dir);
}


// ---- Engine::process ----

ctx::engine::EngineEvent engine_event(const std::string& kind, std::int64_t expected,
                                      const std::string& id, ctx::core::Json payload) {
  ctx::engine::EngineEvent::Fields f{
      .event_id = id,
      .kind = kind,
      .scope = ctx::engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1",
                                             "session-bench", "exposure-1", "host-1"),
      .expected_revision = expected,
      .occurred_at = "2026-08-02T12:00:00Z",
      .payload = std::move(payload)};
  f.correlation_id = "plan-bench";
  f.causation_id = "cause-bench";
  f.engine_version = "ctx-engine-v1";
  f.planner_version = "ctx-managed-query-planner-v3";
  f.policy_version = "policy-v1";
  f.host_descriptor_digest = tj::digest_of("host");
  f.catalog_snapshot_digest = tj::digest_of("catalog");
  f.semantic_model_digest = tj::digest_of("semantic-model");
  f.semantic_index_digest = tj::digest_of("semantic-index");
  f.work_signature = tj::digest_of("work");
  f.random_seed = 0;
  return ctx::engine::EngineEvent::create(std::move(f));
}

std::vector<ctx::engine::EngineEvent> engine_events(int n) {
  std::vector<ctx::engine::EngineEvent> events;
  events.push_back(engine_event("SessionStarted", 0, "bench-start", {{"host_level", "managing"}}));
  for (int i = 1; i < n; ++i) {
    events.push_back(engine_event("TurnEnded", i, "bench-turn-" + std::to_string(i),
                                  ctx::core::Json::object()));
  }
  return events;
}

void BM_EngineProcess(benchmark::State& state) {
  fs::path dir = bench_dir();
  ctx::core::SystemClock clock;
  std::vector<ctx::engine::EngineEvent> events = engine_events(20000);
  {
    ctx::store::SqliteJournalStore store(
        dir / "journal.sqlite3", clock,
        ctx::store::SqliteJournalOptions{.busy_timeout_ms = 30'000,
                                         .synchronous = kSync[state.range(0)]});
    ctx::engine::Engine engine(store, &store, clock, ctx::engine::EnginePorts{});
    std::size_t i = 0;
    for (auto _ : state) {
      if (i == events.size()) {
        state.SkipWithError("ran out of prepared events");
        break;
      }
      auto transition = engine.process(events[i++]);
      benchmark::DoNotOptimize(transition);
    }
  }
  state.SetItemsProcessed(state.iterations());
  fs::remove_all(dir);
}

// Captures what the engine appends, forwarding to an in-memory journal.
class RecordingJournal final : public ctx::engine::JournalStore {
 public:
  ctx::engine::JournalCommit append(const ctx::engine::JournalAppend& request) override {
    appended.push_back(request);
    return inner_.append(request);
  }
  ctx::engine::JournalHead head(const ctx::engine::StreamId& s) const override {
    return inner_.head(s);
  }
  std::optional<ctx::engine::JournalLatest> latest(const ctx::engine::StreamId& s) const override {
    return inner_.latest(s);
  }
  std::vector<ctx::engine::JournalRecord> read(const ctx::engine::StreamId& s,
                                               ctx::engine::Revision after) const override {
    return inner_.read(s, after);
  }
  std::optional<ctx::engine::JournalRecord> find(const ctx::engine::StreamId& s,
                                                 std::string_view id) const override {
    return inner_.find(s, id);
  }
  std::vector<ctx::engine::JournalAppend> appended;

 private:
  ctx::testing::MemJournalStore inner_;
};

std::vector<ctx::engine::JournalAppend> engine_rows() {
  ctx::core::SystemClock clock;
  RecordingJournal journal;
  ctx::engine::Engine engine(journal, nullptr, clock, ctx::engine::EnginePorts{});
  for (const auto& event : engine_events(1000)) engine.process(event);
  return journal.appended;
}

void check(int rc, sqlite3* db) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
    std::abort();
  }
}

// Raw SQLite: same table shape as engine_journal, same bytes per row, BEGIN IMMEDIATE + INSERT
// + COMMIT per event, same pragmas.
void raw_insert_commit(benchmark::State& state,
                       const std::vector<ctx::engine::JournalAppend>& events) {
  fs::path dir = bench_dir();
  sqlite3* db = nullptr;
  check(sqlite3_open((dir / "raw.sqlite3").c_str(), &db), db);
  std::string pragmas = std::string("PRAGMA busy_timeout=30000; PRAGMA journal_mode=WAL; "
                                    "PRAGMA synchronous=") +
                           std::string(ctx::core::to_string(kSync[state.range(0)])) + ";";
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
  // Rows cycle through the prepared payloads; the event id and revision stay unique.
  const std::string digest(64, 'a');
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& e = events[i % events.size()];
    std::string event_id = "bench-event-" + std::to_string(i);
    check(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), db);
    auto text = [&](int index, std::string_view value) {
      sqlite3_bind_text(insert, index, value.data(), static_cast<int>(value.size()),
                        SQLITE_STATIC);
    };
    text(1, event_id);
    text(2, e.stream.stream_key());
    sqlite3_bind_int64(insert, 3, static_cast<std::int64_t>(i) + 1);
    text(4, e.event_content_digest);
    text(5, e.replay.text());
    text(6, digest);
    text(7, e.transition.text.text());
    text(8, digest);
    text(9, e.result_state.text());
    text(10, digest);
    text(11, digest);
    text(12, digest);
    text(13, ctx::core::to_string(e.privacy_classification));
    text(14, ctx::core::to_string(e.retention_class));
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

void BM_RawInsertCommit(benchmark::State& state) {
  std::vector<ctx::engine::JournalAppend> events;
  for (int i = 0; i < 1000; ++i) events.push_back(event_at(i));
  raw_insert_commit(state, events);
}

void BM_RawInsertCommitEngineRows(benchmark::State& state) {
  static const std::vector<ctx::engine::JournalAppend> rows = engine_rows();
  raw_insert_commit(state, rows);
  const auto& last = rows.back();
  state.counters["replay_bytes"] = static_cast<double>(last.replay.text().size());
  state.counters["state_bytes"] = static_cast<double>(last.result_state.text().size());
}


// ---- cold open ----
// A journal file holding a stream of `records` engine records (built once per size), copied
// fresh for every iteration: the timed part opens the store and an engine on the copy and
// processes one event at the head.
void BM_ColdOpen(benchmark::State& state) {
  const int records = static_cast<int>(state.range(0));
  static std::map<int, fs::path> built;
  if (built.find(records) == built.end()) {
    fs::path dir = bench_dir();
    ctx::core::SystemClock clock;
    ctx::store::SqliteJournalStore store(
        dir / "journal.sqlite3", clock,
        ctx::store::SqliteJournalOptions{.busy_timeout_ms = 30'000,
                                         .synchronous = ctx::store::Synchronous::kNormal});
    ctx::engine::Engine engine(store, &store, clock, ctx::engine::EnginePorts{});
    for (const auto& event : engine_events(records)) engine.process(event);
    built.emplace(records, dir);
  }
  const fs::path& source = built.at(records);
  const auto next =
      engine_event("TurnEnded", records, "bench-cold-next", ctx::core::Json::object());
  fs::path work = bench_dir();
  ctx::core::SystemClock clock;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(work);
    fs::create_directory(work);
    fs::permissions(work, fs::perms::owner_all);
    // The file and its write-ahead log, as a closed store leaves them (a short log is kept).
    for (const char* name : {"journal.sqlite3", "journal.sqlite3-wal"}) {
      if (!fs::exists(source / name)) continue;
      fs::copy_file(source / name, work / name);
      fs::permissions(work / name, fs::perms::owner_read | fs::perms::owner_write);
      // The copy reaches the disk before timing resumes (its write-back is not the open's cost).
      const int fd = ::open((work / name).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::fsync(fd) != 0) std::abort();
      ::close(fd);
    }
    state.ResumeTiming();
    ctx::store::SqliteJournalStore store(work / "journal.sqlite3", clock);
    ctx::engine::Engine engine(store, &store, clock, ctx::engine::EnginePorts{});
    auto transition = engine.process(next);
    benchmark::DoNotOptimize(transition);
  }
  fs::remove_all(work);
  state.SetItemsProcessed(state.iterations());
}

// A fixed count below the 20,000 prepared events: a time budget ran out of events on a fast idle
// machine at synchronous=NORMAL and then printed no ratio at all.
constexpr benchmark::IterationCount kTimedEvents = 8000;  // also named in Finalize()

BENCHMARK(BM_StoreAppend)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->Iterations(kTimedEvents)
    ->UseRealTime();
BENCHMARK(BM_RawInsertCommit)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->Iterations(kTimedEvents)
    ->UseRealTime();
BENCHMARK(BM_EngineProcess)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->Iterations(kTimedEvents)
    ->UseRealTime();
BENCHMARK(BM_RawInsertCommitEngineRows)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("sync_full0_normal1")
    ->Iterations(kTimedEvents)
    ->UseRealTime();
BENCHMARK(BM_ColdOpen)->Arg(10)->Arg(10000)->ArgName("records")->Iterations(30)->UseRealTime();

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
    const std::tuple<const char*, const char*, const char*> pairs[] = {
        {"BM_StoreAppend", "BM_RawInsertCommit", "store_append/raw_insert"},
        {"BM_EngineProcess", "BM_RawInsertCommitEngineRows", "engine_process/raw_insert"}};
    for (const auto& [ours, raw_name, label] : pairs) {
      for (const char* arg : {"0", "1"}) {
        std::string suffix =
            std::string("/sync_full0_normal1:") + arg + "/iterations:8000/real_time";
        auto mine = rates_.find(ours + suffix);
        auto raw = rates_.find(raw_name + suffix);
        if (mine == rates_.end() || raw == rates_.end() || raw->second <= 0) continue;
        std::printf("ratio %s synchronous=%s: %.3f\n", label,
                    std::string(ctx::core::to_string(kSync[arg[0] - '0'])).c_str(),
                    mine->second / raw->second);
        std::printf("  (%s %.0f/s vs %s %.0f/s)\n", ours, mine->second, raw_name, raw->second);
      }
    }
    auto small = rates_.find("BM_ColdOpen/records:10/iterations:30/real_time");
    auto large = rates_.find("BM_ColdOpen/records:10000/iterations:30/real_time");
    if (small != rates_.end() && large != rates_.end() && large->second > 0) {
      std::printf("ratio cold_open 10000/10: %.3f\n", small->second / large->second);
      std::printf("  (cold open + one event: %.3f ms at 10 records, %.3f ms at 10000)\n",
                  1e3 / small->second, 1e3 / large->second);
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
