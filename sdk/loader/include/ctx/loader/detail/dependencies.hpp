// Where ld.so would find a plugin's DT_NEEDED sonames, and those of every library they pull in,
// and whether only root can change those files. Each soname is looked up as ld.so looks it up:
// first in the DT_RPATH directories of the objects that led to it and of the main program
// (unless the object asking has DT_RUNPATH, then in that), then in /etc/ld.so.cache (every
// entry for this machine), then in the default directories; each file found is opened through
// a SystemFileOpener (root-owned, not other-writable, root-owned directory chain; each
// directory chain walked once per resolver), read once from that descriptor, and its own
// DT_NEEDED (and filters) are checked the same way, at most kMaxDependencyDepth deep. Search
// directories must be ones only root or we can add files to. Not thread-safe. It memoises
// answers, so make one per check (one per load) and never keep it: every load must look at the
// live filesystem again. A soname this process has loaded already is not looked up: ld.so reuses
// that object (it matches loaded names and sonames before any search), as it does for the
// libraries ctx itself runs on.
#ifndef CTX_LOADER_DETAIL_DEPENDENCIES_HPP_
#define CTX_LOADER_DETAIL_DEPENDENCIES_HPP_

#include <cstddef>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/detail/trusted_path.hpp>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctx::plugins::detail {

inline constexpr std::size_t kMaxDependencyDepth = 16;
inline constexpr std::size_t kMaxDependencyFiles = 512;

// The DT_RPATH directories of the running program ($ORIGIN expanded) that ld.so searches for
// the dependencies of every dlopened object: empty when the program has DT_RUNPATH (which ld.so
// applies to the program's own dependencies only) or no search path. Read once per process
// from /proc/self/exe. Errors: UnsafeDependency when a directory is not one only root or we
// can add files to (the message says how to rebuild); MalformedElf; SystemError.
const std::vector<std::string>& program_rpath();

class DependencyResolver {
 public:
  DependencyResolver() = default;
  DependencyResolver(const DependencyResolver&) = delete;  // cache_ views data_
  DependencyResolver& operator=(const DependencyResolver&) = delete;

  // Checks the DT_NEEDED sonames of `plugin` (which has no search path of its own) and,
  // recursively, of the libraries they resolve to. Errors: UnsafeDependency naming the chain
  // ("plugin P needs \"a\" → \"b\": <why>"): contains '/', does not resolve, untrusted file or
  // search directory, too deep; program_rpath()'s errors.
  // Also /etc/ld.so.cache's errors (read on the first lookup, when present and root-owned):
  // UnsafePluginFile when the cache is not safe to trust; SystemError.
  void check(const std::vector<std::string>& needed, const std::string& plugin);

 private:
  void read_cache();
  // The file(s) ld.so may map for `soname` searched from `dirs` first (none when this process
  // has loaded it already); `via` names the chain.
  const std::vector<std::string>& resolve(const std::string& soname,
                                          const std::vector<std::string>& dirs,
                                          const std::string& via);
  // Checks the library `file` (a resolved real path) reached through `via`, whose loaders'
  // DT_RPATH directories (nearest first, the program's last) are `inherited`.
  void visit(const std::string& file, const std::vector<std::string>& inherited,
             const std::string& via, std::size_t depth);

  bool cache_read_ = false;
  std::string data_;  // the bytes of /etc/ld.so.cache
  // (soname, path) views into data_ of this machine's entries, in cache order.
  std::vector<std::pair<std::string_view, std::string_view>> cache_;
  SystemFileOpener opener_;  // walks each directory chain once per check
  std::map<std::string, std::vector<std::string>, std::less<>> resolved_;  // key: dirs + soname
  std::map<std::string, TrustedFile, std::less<>> opened_;                 // resolved, not yet read
  std::map<std::string, ElfPluginView, std::less<>> libraries_;  // read: key is the real path
  std::set<std::string, std::less<>> visited_;  // files checked, with their inherited dirs
};

}  // namespace ctx::plugins::detail

#endif  // CTX_LOADER_DETAIL_DEPENDENCIES_HPP_
