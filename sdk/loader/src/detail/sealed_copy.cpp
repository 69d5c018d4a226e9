#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctx/loader/detail/sealed_copy.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/sdk/error.hpp>
#include <ctx/support/check.hpp>
#include <ctx/support/digest.hpp>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux >= 6.3; older kernels reject it with EINVAL
#endif

namespace ctx::plugins::detail {
namespace {

// One pread/write/hash granule: stays in L2 between the three.
constexpr std::size_t kChunkBytes = 256 * 1024;
// Chunks in flight between the copying and the hashing thread (2 MiB per loading thread).
constexpr std::size_t kRingChunks = 8;
// Published instead of a byte count when one side gave up: the other stops waiting.
constexpr std::uint64_t kAbandoned = std::numeric_limits<std::uint64_t>::max();

std::string errno_text(int error) { return std::strerror(error); }

// While any copy is between memfd_create and its seals the process is non-dumpable, so
// /proc/<pid>/fd/N is closed to every other process without CAP_SYS_PTRACE. Mode 0 alone is not
// enough: the owner may chmod the memfd through that magic link (chmod needs ownership, not
// permission) and then open it for writing, and writes landing after ours would go unhashed.
// Once sealed, no descriptor can write, grow or shrink it. Reference-counted, so concurrent
// loads neither end each other's window early nor serialise on it; the first entrant remembers
// whether the process was dumpable and the last leaver restores that.
class NonDumpableWindow {
 public:
  NonDumpableWindow() {
    const std::lock_guard lock(mutex_);
    if (depth_ == 0) {
      const int dumpable = ::prctl(PR_GET_DUMPABLE);
      if (dumpable == 1 && ::prctl(PR_SET_DUMPABLE, 0) != 0) {
        throw SystemError("cannot make the process non-dumpable: " + errno_text(errno));
      }
      restore_ = dumpable == 1;
    }
    ++depth_;
  }
  ~NonDumpableWindow() {
    const std::lock_guard lock(mutex_);
    if (--depth_ == 0 && restore_) static_cast<void>(::prctl(PR_SET_DUMPABLE, 1));
  }
  NonDumpableWindow(const NonDumpableWindow&) = delete;
  NonDumpableWindow& operator=(const NonDumpableWindow&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int depth_ = 0;         // GUARDED_BY(mutex_)
  static inline bool restore_ = false;  // GUARDED_BY(mutex_)
};

// A memfd that no other process can open or chmod while it is being filled: created inside a
// NonDumpableWindow (which the caller holds until the seals are on) and given mode 0 at once.
UniqueFd make_private_memfd(const std::string& label) {
  const std::string name = "ctx-plugin:" + label.substr(0, 200);
  int raw = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (raw < 0 && errno == EINVAL) {
    raw = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  }
  if (raw < 0) {
    throw SystemError("cannot create a private memfd for plugin " + label + ": " +
                      errno_text(errno));
  }
  UniqueFd fd(raw);
  if (::fchmod(fd.get(), 0) != 0) {
    throw SystemError("cannot make the memfd for plugin " + label +
                      " private: " + errno_text(errno));
  }
  return fd;
}

// This thread's ring of kRingChunks buffers: no allocation (and no fresh pages) per load.
char* ring_buffer() {
  thread_local const auto ring = std::make_unique_for_overwrite<char[]>(kChunkBytes * kRingChunks);
  return ring.get();
}

// Where byte `offset` of the file lives in the ring.
char* ring_at(char* ring, std::uint64_t offset) {
  return ring + (offset / kChunkBytes) % kRingChunks * kChunkBytes + offset % kChunkBytes;
}

// Reads up to `want` bytes at `offset` of `in` into `to`; returns how many (> 0).
std::size_t read_some(int in, char* to, std::size_t want, std::uint64_t offset,
                      const std::string& path) {
  for (;;) {
    const ssize_t n = ::pread(in, to, want, static_cast<off_t>(offset));
    if (n > 0) return static_cast<std::size_t>(n);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("cannot read plugin file " + path + ": " + errno_text(errno));
    throw UnsafePluginFile("plugin file " + path + " shrank while it was read (size)");
  }
}

void write_all(int out, const char* from, std::size_t size) {
  for (std::size_t written = 0; written < size;) {
    const ssize_t w = ::write(out, from + written, size - written);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot fill the plugin memfd: " + errno_text(errno));
    }
    written += static_cast<std::size_t>(w);
  }
}

// Copies and hashes on the calling thread, one chunk at a time.
void copy_serial(int in, int out, std::uint64_t size, const std::string& path,
                 support::Sha256Stream& hasher) {
  char* const buffer = ring_buffer();
  for (std::uint64_t done = 0; done < size;) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - done, kChunkBytes));
    const std::size_t n = read_some(in, buffer, want, done, path);
    if (!hasher.update(buffer, n)) throw SystemError("sha256: openssl failed");
    write_all(out, buffer, n);
    done += n;
  }
}

// A second thread reads each chunk into the ring and writes it into the memfd, running ahead;
// the calling thread hashes the ring in file order (the critical path, as in a plain hash) and
// frees the chunks it is done with. Blocking is on a mutex and condition variables (never a
// yielding spin: on a busy machine sched_yield hands the core away for a whole time slice), and
// the copier, once the ring is full, sleeps until half of it is free. Returns false, having
// done nothing, when no thread can be started.
bool copy_pipelined(int in, int out, std::uint64_t size, const std::string& path,
                    support::Sha256Stream& hasher) {
  constexpr std::uint64_t kRingBytes = std::uint64_t{kChunkBytes} * kRingChunks;
  char* const ring = ring_buffer();
  std::mutex mutex;
  std::condition_variable filled_more, freed_more;
  std::uint64_t filled = 0;  // GUARDED_BY(mutex): bytes read into the ring and written
  std::uint64_t hashed = 0;  // GUARDED_BY(mutex): bytes hashed; their chunks are reusable
  std::uint64_t wake_copier_at = kAbandoned;  // GUARDED_BY(mutex): `hashed` the copier awaits
  bool abandoned = false;                     // GUARDED_BY(mutex): one side failed; the other stops
  std::exception_ptr copy_error;
  const auto give_up = [&] {
    {
      const std::lock_guard lock(mutex);
      abandoned = true;
    }
    filled_more.notify_one();
    freed_more.notify_one();
  };
  std::jthread copier;  // declared after what it uses: joined before they go
  try {
    copier = std::jthread([&] {
      try {
        for (std::uint64_t done = 0; done < size;) {
          const std::uint64_t chunk_end = (done / kChunkBytes + 1) * kChunkBytes;
          {
            std::unique_lock lock(mutex);
            if (hashed + kRingBytes < chunk_end) {
              // Full: wait for half the ring, not one chunk (fewer wake-ups).
              wake_copier_at = chunk_end + kRingBytes / 2 - kChunkBytes - kRingBytes;
              freed_more.wait(lock, [&] { return abandoned || hashed >= wake_copier_at; });
              wake_copier_at = kAbandoned;
            }
            if (abandoned) return;
          }
          const std::size_t want =
              static_cast<std::size_t>(std::min<std::uint64_t>(size - done, chunk_end - done));
          char* const to = ring_at(ring, done);
          const std::size_t n = read_some(in, to, want, done, path);
          write_all(out, to, n);
          done += n;
          {
            const std::lock_guard lock(mutex);
            filled = done;
          }
          filled_more.notify_one();
        }
      } catch (...) {
        copy_error = std::current_exception();
        give_up();
      }
    });
  } catch (const std::system_error&) {
    return false;
  }
  try {
    for (std::uint64_t at = 0; at < size;) {
      std::uint64_t ready = 0;
      {
        std::unique_lock lock(mutex);
        filled_more.wait(lock, [&] { return abandoned || filled > at; });
        if (abandoned) break;
        ready = filled;
      }
      while (at < ready) {
        const std::uint64_t n = std::min<std::uint64_t>(kChunkBytes - at % kChunkBytes, ready - at);
        hasher.update(ring_at(ring, at), static_cast<std::size_t>(n));
        at += n;
        bool wake = false;
        {
          const std::lock_guard lock(mutex);
          hashed = at;
          wake = hashed >= wake_copier_at;
        }
        if (wake) freed_more.notify_one();
      }
    }
  } catch (...) {
    give_up();
    throw;
  }
  copier.join();
  if (copy_error) std::rethrow_exception(copy_error);
  return true;
}

// True when the 1-minute load average leaves at least one CPU of this process's set idle.
// Re-read at most every 100 ms (the average itself moves far slower).
bool a_core_is_idle() {
  using Clock = std::chrono::steady_clock;
  static std::atomic<std::int64_t> checked_at{std::numeric_limits<std::int64_t>::min()};
  static std::atomic<bool> idle{false};
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
          .count();
  const std::int64_t last = checked_at.load(std::memory_order_relaxed);
  if (now - last < 100) return idle.load(std::memory_order_relaxed);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  double load = 0;
  const bool answer = usable >= 2 && ::getloadavg(&load, 1) == 1 && load + 1.0 <= usable;
  idle.store(answer, std::memory_order_relaxed);
  checked_at.store(now, std::memory_order_relaxed);
  return answer;
}

}  // namespace

ReadOnlyMapping::ReadOnlyMapping(int fd, std::size_t size) : size_(size) {
  CTX_CHECK(size > 0);
  data_ = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw SystemError("cannot map the plugin memfd: " + errno_text(errno));
  }
}

ReadOnlyMapping::ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ReadOnlyMapping& ReadOnlyMapping::operator=(ReadOnlyMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ReadOnlyMapping::~ReadOnlyMapping() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

SealedCopy make_sealed_copy(int in, std::uint64_t size, const std::string& label,
                            const std::string& path, CopyStrategy strategy) {
  CTX_CHECK(size > 0);
  SealedCopy out;
  const NonDumpableWindow window;  // until the seals are on
  out.memfd = make_private_memfd(label);
  support::Sha256Stream hasher;
  const bool pipelined =
      strategy == CopyStrategy::kPipelined ||
      (strategy == CopyStrategy::kAuto && size > kSerialHashMaxBytes && a_core_is_idle());
  if (!pipelined || !copy_pipelined(in, out.memfd.get(), size, path, hasher)) {
    copy_serial(in, out.memfd.get(), size, path, hasher);
  }
  // Sealed before the digest is final (and so before anyone compares it): from here on nobody,
  // us included, can change, grow or shrink these bytes.
  if (::fcntl(out.memfd.get(), F_ADD_SEALS,
              F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    throw SystemError("cannot seal the copy of plugin " + label + ": " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(out.memfd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != size) {
    throw SystemError("the sealed copy of plugin " + label + " has the wrong size");
  }
  const auto digest = hasher.finish();
  if (!digest) throw SystemError("sha256: openssl failed");
  out.sha256 = support::to_hex(*digest);
  // ld.so opens /proc/self/fd/N for reading; sealed, the bytes can no longer change.
  if (::fchmod(out.memfd.get(), S_IRUSR) != 0) {
    throw SystemError("cannot make the sealed copy of plugin " + label +
                      " readable: " + errno_text(errno));
  }
  out.map = ReadOnlyMapping(out.memfd.get(), static_cast<std::size_t>(size));
  return out;
}

}  // namespace ctx::plugins::detail
