// Signed consent latency, as a ratio against its irreducible parts measured on the same disk in
// the same run:
//   raw: one Ed25519 verify of the assertion's signing bytes (OpenSSL EVP) plus one SQLite
//        insert+commit in WAL at synchronous FULL (the journal's level);
//   resolve_consent: ManagedQueryService::resolve_consent end to end on a freshly published
//        challenge — decode, trusted verifier registry, the real ed25519 verifier module, broker
//        authentication and guard, the decision commit, and the install of the granted skill —
//        a 10-file tree (SKILL.md plus 9 resources, 27 KiB), verified against its manifest,
//        staged and installed through the real skill-installer module (claim, outcome, receipt).
// Prints `ratio resolve_consent/raw: X` (target <= 30), and resolve_consent_cpu_p50_us (the
// calling thread's CPU time, user + system, of one resolve: the part no disk makes faster) with
// its system (kernel) part, resolve_consent_system_cpu_p50_us.
// Files go to $CTX_BENCH_DIR (default: the system temp directory).
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/runtime/service/managed_service.hpp"
#include "tests/support/runtime/consent_resolution_support.hpp"

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

// Regular files below `dir`.
int count_files(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) n += entry.is_regular_file();
  return n;
}

// CPU time of the calling thread (user + system), in seconds.
double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// System (kernel) CPU time of the calling thread, in seconds.
double thread_system_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_stime.tv_usec) * 1e-6;
}

// With CTX_BENCH_MARKS set, each resolve is bracketed by access("/ctx-mark") (a syscall strace
// shows, so a trace can be cut to the resolve windows) and a "MARK <begin> <end>" stderr line in
// CLOCK_MONOTONIC seconds (perf record -k CLOCK_MONOTONIC samples can be cut the same way).
double mark() {
  ::access("/ctx-mark", F_OK);
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// An in-process Ed25519 key: signs, verifies, and prints its SubjectPublicKeyInfo PEM.
class Ed25519Key {
 public:
  Ed25519Key() : key_(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), EVP_PKEY_free) {
    if (!key_) std::abort();
  }
  std::string public_pem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_PUBKEY(bio.get(), key_.get());
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
  }
  std::string sign(const std::string& bytes) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    std::string signature(64, '\0');
    std::size_t size = signature.size();
    if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                       reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) != 1) {
      std::abort();
    }
    return signature;
  }
  bool verify(const std::string& bytes, const std::string& signature) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    return EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                            signature.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                            bytes.size()) == 1;
  }

 private:
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_;
};

const Ed25519Key& key() {
  static const Ed25519Key instance;
  return instance;
}

// The signing bytes of a representative assertion (same claims shape as the resolved ones).
std::string representative_signing_bytes() {
  ctx::runtime::SignedAssertionClaims claims;
  claims.challenge_digest = sv::digest("bench-challenge");
  claims.decision = ctx::engine::Decision::kGranted;
  claims.principal_digest = sv::kPrincipal;
  claims.authenticator_id = sv::kAuthenticator;
  claims.audience = std::string(sv::kConsentAudience);
  claims.nonce = "managed-consent-nonce-1";
  claims.issued_at = "2026-08-03T12:00:00Z";
  claims.expires_at = "2026-08-03T12:30:00Z";
  claims.proof = "unsigned";
  return ctx::runtime::SignedAssertion::create(std::move(claims)).signing_bytes();
}

// One raw verify + commit per sample() call on its own WAL database (synchronous FULL).
class RawVerifyCommit {
 public:
  explicit RawVerifyCommit(const fs::path& dir)
      : bytes_(representative_signing_bytes()), signature_(key().sign(bytes_)) {
    sqlite3_open((dir / "raw.sqlite3").c_str(), &db_);
    sqlite3_exec(db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
                 nullptr, nullptr, nullptr);
    sqlite3_prepare_v2(db_, "INSERT INTO t VALUES (?, ?)", -1, &insert_, nullptr);
  }
  ~RawVerifyCommit() {
    sqlite3_finalize(insert_);
    sqlite3_close(db_);
  }
  RawVerifyCommit(const RawVerifyCommit&) = delete;
  RawVerifyCommit& operator=(const RawVerifyCommit&) = delete;

  // Seconds for one verify + one committed insert.
  double sample() {
    const auto start = Clock::now();
    if (!key().verify(bytes_, signature_)) std::abort();
    const std::string row = std::to_string(next_++);
    sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    sqlite3_bind_text(insert_, 1, row.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert_, 2, value_.data(), static_cast<int>(value_.size()), SQLITE_STATIC);
    sqlite3_step(insert_);
    sqlite3_reset(insert_);
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    return seconds_since(start);
  }

 private:
  std::string bytes_;
  std::string signature_;
  std::string value_ = std::string(2048, 'v');
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  std::int64_t next_ = 0;
};

void BM_RawVerifyAndCommit(benchmark::State& state) {
  const fs::path dir = bench_dir("consent-raw");
  {
    RawVerifyCommit raw(dir);
    for (auto _ : state) g_samples["raw"].push_back(raw.sample());
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_RawVerifyAndCommit)->Iterations(200)->Unit(benchmark::kMicrosecond);

// The granted skill: SKILL.md plus 9 resources (scripts and references, 1-5 KiB each).
std::vector<ctx::runtime::InstallBodyFile> ten_file_skill() {
  std::vector<ctx::runtime::InstallBodyFile> files = {
      {"SKILL.md", std::string(sv::kInstallableSkillBody)}};
  for (int i = 1; i <= 9; ++i) {
    const std::string dir = i <= 4 ? "scripts/" : "references/";
    const std::string name = dir + "part-" + std::to_string(i) + (i <= 4 ? ".py" : ".md");
    std::string bytes;
    while (bytes.size() < static_cast<std::size_t>(i) * 600) {
      bytes += "# " + name + " line " + std::to_string(bytes.size()) + ": reference material\n";
    }
    files.push_back({name, std::move(bytes)});
  }
  return files;
}

void BM_ResolveConsent(benchmark::State& state) {
  const fs::path dir = bench_dir("consent-resolve");
  const ctx::core::Json config = {{"public_key_pem", key().public_pem()}};
  // Baseline samples interleaved with the decisions, so both see the same disk load.
  RawVerifyCommit raw(dir);
  const bool marks = std::getenv("CTX_BENCH_MARKS") != nullptr;
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // A fresh state directory per decision: the challenge is freshly published and the install
    // really writes (no already-installed shortcut).
    auto seed = sv::consent_seed(dir / std::to_string(n++), CTX_CONSENT_ED25519_SO, "ed25519",
                                 config, ten_file_skill());
    const auto desired = sv::prepare_public_consent(seed, "bench-consent");
    const std::string payload = sv::assertion_payload(
        *desired.challenge(), {}, [](const std::string& bytes) { return key().sign(bytes); });
    for (int i = 0; i < 4; ++i) g_samples["raw_interleaved"].push_back(raw.sample());
    state.ResumeTiming();
    const auto start = Clock::now();
    const double cpu_start = thread_cpu_seconds();
    const double system_start = thread_system_seconds();
    const double mark_begin = marks ? mark() : 0;
    const auto result = seed.service().resolve_consent(payload);
    if (marks) {
      const double mark_end = mark();
      std::fprintf(stderr, "MARK %.9f %.9f\n", mark_begin, mark_end);
    }
    g_samples["resolve"].push_back(seconds_since(start));
    g_samples["resolve_cpu"].push_back(thread_cpu_seconds() - cpu_start);
    g_samples["resolve_system_cpu"].push_back(thread_system_seconds() - system_start);
    state.PauseTiming();
    if (result.outcome() != ctx::runtime::ManagedConsentOutcome::kInstalledInactive) {
      state.SkipWithError("resolve_consent did not install");
    }
    if (count_files(seed.skill_root() / "objects") != 10) {
      state.SkipWithError("the installed skill does not hold its 10 files");
    }
    seed.service().close();
    state.ResumeTiming();
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_ResolveConsent)->Iterations(30)->Unit(benchmark::kMillisecond);

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
  std::printf("raw_verify_commit_p50_us: %.1f\n", raw * 1e6);
  if (!g_samples["resolve"].empty()) {
    // The ratio's baseline is the raw work measured between the decisions (same disk load).
    const double interleaved = percentile(g_samples["raw_interleaved"], 0.5);
    const double resolve = percentile(g_samples["resolve"], 0.5);
    std::printf("raw_verify_commit_interleaved_p50_us: %.1f\n", interleaved * 1e6);
    std::printf("resolve_consent_p50_us: %.1f\n", resolve * 1e6);
    std::printf("resolve_consent_cpu_p50_us: %.1f\n",
                percentile(g_samples["resolve_cpu"], 0.5) * 1e6);
    std::printf("resolve_consent_system_cpu_p50_us: %.1f\n",
                percentile(g_samples["resolve_system_cpu"], 0.5) * 1e6);
    std::printf("resolve_consent_p99_us: %.1f\n", percentile(g_samples["resolve"], 0.99) * 1e6);
    std::printf("ratio resolve_consent/raw: %.2f\n", resolve / interleaved);
  }
  return 0;
}
