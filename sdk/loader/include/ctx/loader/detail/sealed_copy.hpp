// A plugin's bytes copied into a sealed memfd together with their SHA-256, so that the digest is
// of exactly what dlopen("/proc/self/fd/N") can map. From before the memfd exists until its
// seals are on the process is non-dumpable, so no other process without CAP_SYS_PTRACE can open
// or chmod it through /proc/<pid>/fd (mode 0 alone would not do: its owner may chmod it through
// that link); it also has no permission bits until sealed. Hence only this process's own writes
// ever reach it; every buffer is hashed as it is written; the memfd is sealed
// (F_SEAL_WRITE|GROW|SHRINK|SEAL) before the digest is final, then made owner-readable for
// ld.so. A large file on a machine with an idle core is copied by a second thread while the
// calling thread hashes (CopyStrategy::kAuto). Implementation detail of PluginLoader.
// Thread-safe; each call may start, and always joins, one helper thread.
#ifndef CTX_LOADER_DETAIL_SEALED_COPY_HPP_
#define CTX_LOADER_DETAIL_SEALED_COPY_HPP_

#include <cstddef>
#include <cstdint>
#include <ctx/loader/detail/unique_fd.hpp>
#include <span>
#include <string>

namespace ctx::plugins::detail {

// A PROT_READ, MAP_PRIVATE mapping of a file: nothing can write through it, and unlike a shared
// mapping of a writable descriptor it does not stop F_SEAL_WRITE. Unmaps on destruction.
// Move-only.
class ReadOnlyMapping {
 public:
  ReadOnlyMapping() = default;
  // Errors: SystemError. REQUIRES: size > 0.
  ReadOnlyMapping(int fd, std::size_t size);
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping& operator=(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping();

  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(data_), size_};
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

struct SealedCopy {
  UniqueFd memfd;       // sealed F_SEAL_WRITE|GROW|SHRINK|SEAL, exactly `size` bytes, mode 0400
  ReadOnlyMapping map;  // the memfd's pages: parse the ELF from here
  std::string sha256;   // lowercase hex of the bytes written into the memfd
};

// Files up to this size are always copied and hashed on the calling thread alone.
inline constexpr std::uint64_t kSerialHashMaxBytes = 256 * 1024;

enum class CopyStrategy {
  // kPipelined for files above kSerialHashMaxBytes when the 1-minute load average leaves a core
  // of this process's CPU set idle; else kSerial. (On a saturated machine a second thread only
  // adds scheduling delay to the critical path.)
  kAuto,
  kSerial,     // read, hash, write each chunk on the calling thread
  kPipelined,  // a second thread reads and writes chunks ahead; the caller hashes them in order
};

// Copies exactly `size` bytes of `in` (from offset 0, with pread) into a new memfd named after
// `label`, hashing every buffer as it is written, and seals it. `path` names the file in errors.
// kPipelined falls back to kSerial when no thread can be started.
// Errors: UnsafePluginFile ("shrank while it was read"); SystemError. REQUIRES: size > 0.
SealedCopy make_sealed_copy(int in, std::uint64_t size, const std::string& label,
                            const std::string& path, CopyStrategy strategy = CopyStrategy::kAuto);

}  // namespace ctx::plugins::detail

#endif  // CTX_LOADER_DETAIL_SEALED_COPY_HPP_
