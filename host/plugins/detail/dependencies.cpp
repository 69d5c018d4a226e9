#include "host/plugins/detail/dependencies.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "host/core/error.hpp"
#include "host/plugins/detail/trusted_path.hpp"
#include "host/plugins/errors.hpp"

namespace ctx::plugins::detail {
namespace {

constexpr const char* kLdCache = "/etc/ld.so.cache";
constexpr std::size_t kMaxCacheBytes = 64u << 20;

// glibc's sysdeps/generic/dl-cache.h (the "new" format, glibc >= 2.32 writes only it).
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::int32_t kFlagElfLibc6 = 0x0003;
#if defined(__x86_64__)
constexpr std::int32_t kFlagArch = 0x0300;  // FLAG_X8664_LIB64
constexpr const char* kTriplet = "x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr std::int32_t kFlagArch = 0x0a00;  // FLAG_AARCH64_LIB64
constexpr const char* kTriplet = "aarch64-linux-gnu";
#endif

struct NewHeader {
  char magic[17];
  char version[3];
  std::uint32_t nlibs;
  std::uint32_t len_strings;
  std::uint8_t flags;
  std::uint8_t padding[3];
  std::uint32_t extension_offset;
  std::uint32_t unused[3];
};
static_assert(sizeof(NewHeader) == 48);
struct NewEntry {
  std::int32_t flags;
  std::uint32_t key, value;
  std::uint32_t osversion;
  std::uint64_t hwcap;
};
static_assert(sizeof(NewEntry) == 24);

std::string read_all(int fd, std::size_t limit) {
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(std::string("cannot read ") + kLdCache + ": " + std::strerror(errno));
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > limit) throw UnsafePluginFile(std::string(kLdCache) + " is too large");
  }
}

// NUL-terminated string at `offset` of `data`, or empty when out of bounds.
std::string_view c_string(std::string_view data, std::uint64_t offset) {
  if (offset >= data.size()) return {};
  const std::string_view rest = data.substr(offset);
  const std::size_t end = rest.find('\0');
  return end == std::string_view::npos ? std::string_view{} : rest.substr(0, end);
}

}  // namespace

DependencyResolver::DependencyResolver() {
  try {
    TrustedFile file = open_system_file(kLdCache, nullptr);
    data_ = read_all(file.fd.get(), kMaxCacheBytes);
  } catch (const PluginFileNotFound&) {
    return;  // no cache: ld.so searches the default directories only
  }
  const std::string& data = data_;
  std::size_t start = 0;
  if (data.compare(0, kOldMagic.size(), kOldMagic) == 0) {
    // Old header: magic, nlibs, then nlibs entries of 3 ints; the new header follows, aligned.
    if (data.size() < kOldMagic.size() + 1 + 4) return;
    std::uint32_t nlibs = 0;
    std::memcpy(&nlibs, data.data() + 12, 4);
    start = (16 + std::uint64_t{nlibs} * 12 + 7) & ~std::uint64_t{7};
  }
  if (start >= data.size() || data.size() - start < sizeof(NewHeader) ||
      data.compare(start, kNewMagic.size(), kNewMagic) != 0) {
    return;  // a format this reader does not know: rely on the default directories
  }
  const std::string_view view = std::string_view(data).substr(start);
  NewHeader header{};
  std::memcpy(&header, view.data(), sizeof header);
  if (header.nlibs > (view.size() - sizeof header) / sizeof(NewEntry)) return;
  for (std::uint32_t i = 0; i < header.nlibs; ++i) {
    NewEntry entry{};
    std::memcpy(&entry, view.data() + sizeof header + std::size_t{i} * sizeof entry, sizeof entry);
    if ((entry.flags & 0xff) != kFlagElfLibc6 || (entry.flags & 0xff00) != kFlagArch) continue;
    const std::string_view key = c_string(view, entry.key);
    const std::string_view value = c_string(view, entry.value);
    if (key.empty() || value.empty()) continue;
    cache_.emplace_back(key, value);
  }
}

const std::vector<std::string>& DependencyResolver::resolve(std::string_view soname,
                                                            const std::string& plugin) {
  if (const auto it = resolved_.find(soname); it != resolved_.end()) return it->second;
  const std::string name(soname);
  const auto refuse = [&](const std::string& why) {
    return UnsafeDependency("plugin " + plugin + " needs \"" + name + "\": " + why);
  };
  if (name.empty()) throw refuse("an empty soname");
  if (name.find('/') != std::string::npos) {
    throw refuse(
        "a DT_NEEDED containing '/' is loaded from that path, not from the system "
        "library directories");
  }
  std::vector<std::string> candidates;
  for (const auto& [key, value] : cache_) {
    if (key == name) candidates.emplace_back(value);
  }
  if (candidates.empty()) {
    for (const std::string& dir :
         {std::string("/lib/") + kTriplet, std::string("/usr/lib/") + kTriplet,
          std::string("/lib64"), std::string("/usr/lib64"), std::string("/lib"),
          std::string("/usr/lib")}) {
      const std::string path = dir + "/" + name;
      if (::access(path.c_str(), F_OK) == 0) {
        candidates.push_back(path);
        break;
      }
    }
  }
  if (candidates.empty()) {
    throw refuse("it does not resolve through " + std::string(kLdCache) +
                 " or the default library directories");
  }
  std::vector<std::string> real_paths;
  for (const std::string& path : candidates) {
    std::string real;
    try {
      open_system_file(path, &real);
    } catch (const PluginFileNotFound&) {
      continue;  // ld.so skips a cache entry whose file is gone
    } catch (const Error& e) {
      throw refuse(path + " is not trusted: " + e.what());
    }
    real_paths.push_back(real);
  }
  if (real_paths.empty()) throw refuse("none of the files it names exists");
  return resolved_.emplace(name, std::move(real_paths)).first->second;
}

}  // namespace ctx::plugins::detail
