#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctx/loader/detail/dependencies.hpp>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/detail/trusted_path.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/sdk/error.hpp>
#include <ctx/support/check.hpp>
#include <span>
#include <string>

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

// Where `path` (absolute) lives: everything before its last '/'.
std::string dirname_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// A directory ld.so searches must be one that only root or we can add files to: when it
// exists, a trusted directory (as the loader walks plugin directories); when it does not, its
// deepest existing ancestor must be trusted and not writable by group or other even if sticky
// (anyone may create a new entry in /tmp).
std::string search_dir_problem(const std::string& dir) {
  std::string at = dir;
  for (int up = 0;; ++up) {
    try {
      const UniqueFd fd = open_trusted_dir(at, Owners::kRootOrUs, "library search directory");
      if (up == 0) return {};
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) return "cannot stat " + at;
      if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return "it does not exist and " + at + " lets others create it";
      }
      return {};
    } catch (const PluginFileNotFound&) {
      if (at == "/" || up > 64) return "it does not exist";
      at = dirname_of(at);
    } catch (const Error& e) {
      return e.what();
    }
  }
}

// The directories of one DT_RPATH/DT_RUNPATH value of the object at `file`: ':'-separated,
// $ORIGIN and ${ORIGIN} expanded to the object's directory, absolute and normalised. Empty
// entries and other $ tokens (ld.so's $LIB, $PLATFORM) are refused: `problem` says why.
std::vector<std::string> search_dirs(const std::vector<std::string>& values,
                                     const std::string& file, std::string* problem) {
  std::vector<std::string> dirs;
  for (const std::string& value : values) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t end = value.find(':', start);
      std::string dir = value.substr(start, end == std::string::npos ? end : end - start);
      for (const std::string_view token :
           {std::string_view("${ORIGIN}"), std::string_view("$ORIGIN")}) {
        for (std::size_t at = dir.find(token); at != std::string::npos; at = dir.find(token, at)) {
          dir.replace(at, token.size(), dirname_of(file));
        }
      }
      if (dir.empty() || dir.front() != '/' || dir.find('$') != std::string::npos) {
        *problem = "search path \"" + value +
                   "\" has an entry ld.so would not resolve to a fixed directory";
        return {};
      }
      dirs.push_back(absolute_normal(dir));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return dirs;
}

// The dynamic section of the library open as `fd` (a file open_system_file accepted), read from
// a private read-only mapping of it.
ElfPluginView read_library(const TrustedFile& file, const std::string& real) {
  const auto size = static_cast<std::size_t>(file.st.st_size);
  if (size == 0) throw MalformedElf("empty");
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd.get(), 0);
  if (data == MAP_FAILED) throw SystemError("cannot map " + real + ": " + std::strerror(errno));
  struct Unmap {
    void* data;
    std::size_t size;
    ~Unmap() { ::munmap(data, size); }
  } unmap{data, size};
  return read_elf_dependency(std::span(static_cast<const std::byte*>(data), size));
}

// Whether ld.so would take `soname` (a bare name) from an object this process has loaded
// already: it matches a DT_NEEDED against the loaded objects' names and sonames before it
// searches any directory, so then no file is looked up at all. RTLD_NOLOAD maps nothing.
bool loaded_in_process(const std::string& soname) {
  void* handle = ::dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

// A soname a DT_NEEDED may name: a bare file name (one with '/' is loaded from that path).
void require_bare_soname(const std::string& name, const std::string& via) {
  if (name.empty()) throw UnsafeDependency(via + ": an empty soname");
  if (name.find('/') != std::string::npos) {
    throw UnsafeDependency(via +
                           ": a DT_NEEDED containing '/' is loaded from that path, not from the "
                           "system library directories");
  }
}

std::string key_of(const std::vector<std::string>& dirs, std::string_view soname) {
  std::string key;
  for (const std::string& dir : dirs) key += dir + ":";
  return key + "|" + std::string(soname);
}

}  // namespace

const std::vector<std::string>& program_rpath() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> out;
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    const UniqueFd fd(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (n <= 0 || !fd) return out;  // no /proc: nothing to add to the search
    const std::string path(exe, static_cast<std::size_t>(n));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || st.st_size <= 0) return out;
    const auto size = static_cast<std::size_t>(st.st_size);
    void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (data == MAP_FAILED)
      throw SystemError("cannot map the program: " + std::string(std::strerror(errno)));
    ElfPluginView view;
    try {
      view = read_elf_dependency(std::span(static_cast<const std::byte*>(data), size));
    } catch (...) {
      ::munmap(data, size);
      throw;
    }
    ::munmap(data, size);
    if (!view.runpath.empty() || view.rpath.empty()) return out;
    std::string problem;
    out = search_dirs(view.rpath, path, &problem);
    for (const std::string& dir : out) {
      if (!problem.empty()) break;
      if (std::string why = search_dir_problem(dir); !why.empty()) problem = dir + ": " + why;
    }
    if (!problem.empty()) {
      throw UnsafeDependency("this program (" + path + ") was built with DT_RPATH \"" +
                             view.rpath.front() +
                             "\", which the dynamic loader searches for the "
                             "dependencies of every plugin, and " +
                             problem +
                             "; rebuild it without an RPATH (or with RUNPATH: link with "
                             "--enable-new-dtags) before loading plugins");
    }
    return out;
  }();
  return dirs;
}

void DependencyResolver::read_cache() {
  cache_read_ = true;
  try {
    TrustedFile file = opener_.open(kLdCache, nullptr);
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

const std::vector<std::string>& DependencyResolver::resolve(const std::string& name,
                                                            const std::vector<std::string>& dirs,
                                                            const std::string& via) {
  const std::string key = key_of(dirs, name);
  if (const auto it = resolved_.find(key); it != resolved_.end()) return it->second;
  require_bare_soname(name, via);
  // ld.so reuses an object this process has loaded: nothing is searched or mapped for it.
  if (loaded_in_process(name)) {
    return resolved_.emplace(key, std::vector<std::string>()).first->second;
  }
  if (!cache_read_) read_cache();
  const auto refuse = [&](const std::string& why) { return UnsafeDependency(via + ": " + why); };
  std::vector<std::string> candidates;
  for (const std::string& dir : dirs) {  // DT_RPATH / DT_RUNPATH first, as ld.so does
    const std::string path = dir + "/" + name;
    if (::access(path.c_str(), F_OK) == 0) {
      candidates.push_back(path);
      break;
    }
  }
  if (candidates.empty()) {
    for (const auto& [k, value] : cache_) {
      if (k == name) candidates.emplace_back(value);
    }
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
      TrustedFile file = opener_.open(path, &real);
      // Kept open for visit(), which reads this very file instead of opening `real` again.
      if (!libraries_.contains(real)) opened_.try_emplace(real, std::move(file));
    } catch (const PluginFileNotFound&) {
      continue;  // ld.so skips a cache entry whose file is gone
    } catch (const Error& e) {
      throw refuse(path + " is not trusted: " + e.what());
    }
    real_paths.push_back(real);
  }
  if (real_paths.empty()) throw refuse("none of the files it names exists");
  return resolved_.emplace(key, std::move(real_paths)).first->second;
}

void DependencyResolver::check(const std::vector<std::string>& needed, const std::string& plugin) {
  // The plugin's own DT_RPATH/DT_RUNPATH were refused: ld.so searches the program's DT_RPATH.
  const std::vector<std::string>& inherited = program_rpath();
  for (const std::string& soname : needed) {
    const std::string via = "plugin " + plugin + " needs \"" + soname + "\"";
    for (const std::string& file : resolve(soname, inherited, via)) {
      visit(file, inherited, via, 1);
    }
  }
}

void DependencyResolver::visit(const std::string& file, const std::vector<std::string>& inherited,
                               const std::string& via, std::size_t depth) {
  if (!visited_.insert(key_of(inherited, file)).second) return;
  const auto refuse = [&](const std::string& why) { return UnsafeDependency(via + ": " + why); };
  if (visited_.size() > kMaxDependencyFiles)
    throw refuse("too many libraries in its dependency tree");
  // Each file is read once per check, from the descriptor resolve() opened and checked.
  auto parsed = libraries_.find(file);
  if (parsed == libraries_.end()) {
    const auto opened = opened_.find(file);
    CTX_CHECK(opened != opened_.end());  // visit() only follows resolve()'s answers
    try {
      parsed = libraries_.emplace(file, read_library(opened->second, file)).first;
    } catch (const MalformedElf& e) {
      throw refuse(file + " is not a loadable library: " + e.what());
    } catch (const Error& e) {
      throw refuse(file + " is not trusted: " + e.what());
    }
    opened_.erase(opened);
  }
  const ElfPluginView& library = parsed->second;
  // ld.so: an object with DT_RUNPATH is searched through that alone (its DT_RPATH ignored);
  // one without searches its DT_RPATH, then its loaders', then the program's.
  std::string problem;
  const std::vector<std::string> own_rpath = library.runpath.empty()
                                                 ? search_dirs(library.rpath, file, &problem)
                                                 : std::vector<std::string>{};
  std::vector<std::string> children = own_rpath;
  children.insert(children.end(), inherited.begin(), inherited.end());
  const std::vector<std::string> search =
      library.runpath.empty() ? children : search_dirs(library.runpath, file, &problem);
  if (!problem.empty()) throw refuse(file + ": " + problem);
  for (const std::string& dir : search) {
    if (std::string why = search_dir_problem(dir); !why.empty()) {
      throw refuse(file + " searches " + dir + " for its own dependencies, and " + why);
    }
  }
  std::vector<std::string> next = library.needed;
  next.insert(next.end(), library.filters.begin(), library.filters.end());
  if (!next.empty() && depth >= kMaxDependencyDepth) {
    throw refuse("its dependencies nest deeper than " + std::to_string(kMaxDependencyDepth));
  }
  for (const std::string& soname : next) {
    const std::string chain = via + " → \"" + soname + "\"";
    for (const std::string& dep : resolve(soname, search, chain)) {
      visit(dep, children, chain, depth + 1);
    }
  }
}

}  // namespace ctx::plugins::detail
