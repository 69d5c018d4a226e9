// Cost of a digest-pinned plugin load, and of `ctx plugin verify`, against the floors they
// cannot beat, measured in the same run.
//
//   BM_PinnedLoad/<MiB>         PluginLoader::load of a pinned entry: trusted directory walk,
//                               open + fstat, copy into a private memfd hashing each buffer
//                               written (a second thread copies when a core is idle), seal,
//                               compare, program-header/dynamic/note/dependency checks,
//                               dlopen("/proc/self/fd/N") RTLD_NOW|RTLD_LOCAL, negotiate,
//                               validate; then release (dlclose, memfd closed).
//   BM_RawSha256AndDlopen/<MiB> read the file + OpenSSL SHA-256 of the same bytes + one plain
//                               dlopen/dlsym/dlclose of the original path.
//   BM_RawIntoMemfd/<MiB>       the floor of any memfd design: BM_RawSha256AndDlopen, but each
//                               buffer read is also written into a fresh memfd, which is sealed
//                               and dlopened through /proc/self/fd/N instead of the path, then
//                               closed (the kernel allocates, fills and frees its shmem pages).
//                               No directory walk, ELF, dependency or note checks, no
//                               negotiation, one thread.
//   BM_Verify100                `ctx plugin verify` (in process, without --load) of a lock with
//                               100 pinned 1 MiB plugins.
//   BM_Hash100                  read + SHA-256 of those 100 files.
// Prints `ratio plugin_load/raw 1MiB: X`, `ratio plugin_load/raw 16MiB: X` (targets <= 1.25)
// and `ratio verify100/hash: X` (target <= 2), from the fastest repetition's real time; also
// `ratio plugin_load/raw cpu <N>MiB: X` from CPU time, and `ratio memfd_floor/raw cpu <N>MiB: X`
// and `ratio plugin_load/memfd_floor cpu <N>MiB: X` (how far the floor is from raw, and the
// loader from the floor), for information.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/cli/cli.hpp"

namespace {

namespace fs = std::filesystem;
using ctx::plugins::LockEntry;
using ctx::plugins::PluginLoader;

const char* plugin_file(std::int64_t mib) {
  return mib == 1 ? CTX_BENCH_PLUGIN_1M : CTX_BENCH_PLUGIN_16M;
}

fs::path make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "ctx-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Raw SHA-256 with OpenSSL EVP; `out` receives 32 bytes.
void sha256(const void* data, std::size_t size, unsigned char* out, EVP_MD_CTX* ctx) {
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, data, size);
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, out, &len);
}

void BM_PinnedLoad(benchmark::State& state) {
  const char* file = plugin_file(state.range(0));
  const fs::path root = make_temp_dir();
  const PluginLoader loader(root / "state");
  const LockEntry entry = loader.inspect_for_pin(file);
  {  // The library must be gone once released, or later iterations would not really load.
    auto plugin = loader.load(entry);
    const std::string name = plugin->library_path();
    plugin.reset();
    if (void* handle = ::dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY)) {
      ::dlclose(handle);
      state.SkipWithError("released plugin stayed loaded");
    }
  }
  for (auto _ : state) {
    auto plugin = loader.load(entry);
    benchmark::DoNotOptimize(plugin->descriptor().id);
    plugin.reset();  // dlclose, close the memfd
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(file)));
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

// 100 copies of the 1 MiB plugin whose notes (and descriptors) name distinct ids, pinned into
// one lock. Built once; the files stay until the process ends.
struct Hundred {
  fs::path root, lock;
  std::vector<fs::path> files;
};

const Hundred& hundred() {
  static const Hundred h = [] {
    Hundred out;
    out.root = make_temp_dir();
    out.lock = out.root / "plugins.lock.json";
    const std::string original = read_file(CTX_BENCH_PLUGIN_1M);
    const std::string id = "bench-padded-1m";
    const PluginLoader loader(out.root / "state");
    ctx::plugins::LockFile lock;
    for (int i = 0; i < 100; ++i) {
      char other[16];
      std::snprintf(other, sizeof other, "bench-pad-%05d", i);  // as long as `id`
      std::string bytes = original;
      for (std::size_t at = bytes.find(id); at != std::string::npos; at = bytes.find(id, at)) {
        bytes.replace(at, id.size(), other);
      }
      const fs::path file = out.root / (std::string(other) + ".so");
      std::ofstream(file, std::ios::binary).write(bytes.data(),
                                                  static_cast<std::streamsize>(bytes.size()));
      fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
      lock.upsert(loader.inspect_for_pin(file));
      out.files.push_back(file);
    }
    lock.save(out.lock);
    return out;
  }();
  return h;
}

void BM_Verify100(benchmark::State& state) {
  const Hundred& h = hundred();
  const std::vector<std::string> args = {"plugin", "verify", "--lock", h.lock.string(),
                                         "--state", (h.root / "state").string()};
  for (auto _ : state) {
    std::ostringstream out, err;
    const int code = ctx::cli::run(args, out, err, ctx::cli::Environment{});
    if (code != 0) {
      state.SkipWithError(err.str().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.str().size());
  }
}

void BM_Hash100(benchmark::State& state) {
  const Hundred& h = hundred();
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::vector<char> buffer(256 * 1024);
  unsigned char digest[32];
  for (auto _ : state) {
    for (const fs::path& file : h.files) {
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
      for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) {
        EVP_DigestUpdate(ctx, buffer.data(), static_cast<std::size_t>(n));
      }
      unsigned int len = 0;
      EVP_DigestFinal_ex(ctx, digest, &len);
      ::close(fd);
      benchmark::DoNotOptimize(digest);
    }
  }
  EVP_MD_CTX_free(ctx);
}

void BM_RawSha256AndDlopen(benchmark::State& state) {
  const char* file = plugin_file(state.range(0));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::vector<char> buffer(256 * 1024);
  unsigned char digest[32];
  {  // As in BM_PinnedLoad: the library must be gone once closed, or later dlopens only count.
    void* handle = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) ::dlclose(handle);
    if (void* kept = ::dlopen(file, RTLD_NOLOAD | RTLD_LAZY)) {
      ::dlclose(kept);
      state.SkipWithError("closed plugin stayed loaded");
    }
  }
  for (auto _ : state) {
    const int fd = ::open(file, O_RDONLY | O_CLOEXEC);
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) {
      EVP_DigestUpdate(ctx, buffer.data(), static_cast<std::size_t>(n));
    }
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, digest, &len);
    ::close(fd);
    void* handle = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      state.SkipWithError(::dlerror());
      break;
    }
    benchmark::DoNotOptimize(::dlsym(handle, "ctx_plugin_entry"));
    ::dlclose(handle);
    benchmark::DoNotOptimize(digest);
  }
  EVP_MD_CTX_free(ctx);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(file)));
}

void BM_RawIntoMemfd(benchmark::State& state) {
  const char* file = plugin_file(state.range(0));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::vector<char> buffer(256 * 1024);
  unsigned char digest[32];
  for (auto _ : state) {
    const int memfd = ::memfd_create("ctx-bench-floor", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    const int fd = ::open(file, O_RDONLY | O_CLOEXEC);
    if (memfd < 0 || fd < 0) {
      state.SkipWithError("cannot open the plugin or create a memfd");
      break;
    }
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    bool written = true;
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) {
      EVP_DigestUpdate(ctx, buffer.data(), static_cast<std::size_t>(n));
      written = written && ::write(memfd, buffer.data(), static_cast<std::size_t>(n)) == n;
    }
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, digest, &len);
    ::close(fd);
    if (!written || ::fcntl(memfd, F_ADD_SEALS,
                            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
      state.SkipWithError("cannot fill or seal the memfd");
      break;
    }
    const std::string name = "/proc/self/fd/" + std::to_string(memfd);
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      state.SkipWithError(::dlerror());
      break;
    }
    benchmark::DoNotOptimize(::dlsym(handle, "ctx_plugin_entry"));
    ::dlclose(handle);
    ::close(memfd);
    benchmark::DoNotOptimize(digest);
  }
  EVP_MD_CTX_free(ctx);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(file)));
}

void BM_Sha256InMemory(benchmark::State& state) {
  const std::string bytes = read_file(plugin_file(state.range(0)));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char digest[32];
  for (auto _ : state) {
    sha256(bytes.data(), bytes.size(), digest, ctx);
    benchmark::DoNotOptimize(digest);
  }
  EVP_MD_CTX_free(ctx);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}

// CPU time of the whole process: a pinned load may copy on a second thread.
BENCHMARK(BM_PinnedLoad)->Arg(1)->Arg(16)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawSha256AndDlopen)
    ->Arg(1)
    ->Arg(16)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawIntoMemfd)->Arg(1)->Arg(16)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sha256InMemory)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Verify100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Hash100)->Unit(benchmark::kMillisecond);

// Console output plus, per benchmark, the fastest repetition's mean real and CPU time (ns):
// the least disturbed estimate on a shared machine. Feeds the ratio lines.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  struct Times {
    double real_ns = 0;
    double cpu_ns = 0;
  };
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.iterations <= 0) continue;
      const double n = static_cast<double>(run.iterations);
      const Times t{run.real_accumulated_time * 1e9 / n, run.cpu_accumulated_time * 1e9 / n};
      // MeasureProcessCPUTime() appends "/process_time" to the name; the ratios use the plain one.
      std::string name = run.run_name.str();
      constexpr std::string_view kSuffix = "/process_time";
      if (name.ends_with(kSuffix)) name.resize(name.size() - kSuffix.size());
      auto [it, inserted] = best_.emplace(std::move(name), t);
      if (!inserted) {
        it->second.real_ns = std::min(it->second.real_ns, t.real_ns);
        it->second.cpu_ns = std::min(it->second.cpu_ns, t.cpu_ns);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, Times>& best() const { return best_; }

 private:
  std::map<std::string, Times> best_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& best = reporter.best();
  const auto ratio = [&](const std::string& a, const std::string& b) -> double {
    const auto x = best.find(a);
    const auto y = best.find(b);
    if (x == best.end() || y == best.end() || y->second.real_ns <= 0) return -1;
    return x->second.real_ns / y->second.real_ns;
  };
  for (const char* mib : {"1", "16"}) {
    const double r = ratio(std::string("BM_PinnedLoad/") + mib,
                           std::string("BM_RawSha256AndDlopen/") + mib);
    if (r > 0) std::printf("ratio plugin_load/raw %sMiB: %.3f\n", mib, r);
  }
  // Informational: the same from the process's CPU time (all threads), which scheduling delay
  // on a shared machine does not inflate.
  for (const char* mib : {"1", "16"}) {
    const auto x = best.find(std::string("BM_PinnedLoad/") + mib);
    const auto y = best.find(std::string("BM_RawSha256AndDlopen/") + mib);
    if (x != best.end() && y != best.end() && y->second.cpu_ns > 0) {
      std::printf("ratio plugin_load/raw cpu %sMiB: %.3f\n", mib,
                  x->second.cpu_ns / y->second.cpu_ns);
    }
  }
  for (const char* mib : {"1", "16"}) {
    const auto x = best.find(std::string("BM_PinnedLoad/") + mib);
    const auto y = best.find(std::string("BM_RawSha256AndDlopen/") + mib);
    const auto f = best.find(std::string("BM_RawIntoMemfd/") + mib);
    if (f == best.end() || f->second.cpu_ns <= 0) continue;
    if (y != best.end() && y->second.cpu_ns > 0) {
      std::printf("ratio memfd_floor/raw cpu %sMiB: %.3f\n", mib,
                  f->second.cpu_ns / y->second.cpu_ns);
    }
    if (x != best.end()) {
      std::printf("ratio plugin_load/memfd_floor cpu %sMiB: %.3f\n", mib,
                  x->second.cpu_ns / f->second.cpu_ns);
    }
  }
  if (const double r = ratio("BM_Verify100", "BM_Hash100"); r > 0) {
    std::printf("ratio verify100/hash: %.3f\n", r);
  }
  benchmark::Shutdown();
  return 0;
}
