// Where ld.so would find a plugin's DT_NEEDED sonames, and whether only root can change those
// files: looked up in /etc/ld.so.cache (every entry for this machine), else in the default
// directories, and opened through open_system_file (root-owned, not other-writable, root-owned
// directory chain). Not thread-safe: one resolver per thread (it memoises answers).
#ifndef CTX_HOST_PLUGINS_DETAIL_DEPENDENCIES_HPP_
#define CTX_HOST_PLUGINS_DETAIL_DEPENDENCIES_HPP_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctx::plugins::detail {

class DependencyResolver {
 public:
  // Reads /etc/ld.so.cache once (when present and root-owned). Errors: UnsafePluginFile when
  // the cache is not safe to trust; SystemError.
  DependencyResolver();
  DependencyResolver(const DependencyResolver&) = delete;  // cache_ views data_
  DependencyResolver& operator=(const DependencyResolver&) = delete;

  // Checks one DT_NEEDED soname of `plugin`; returns the file(s) ld.so may map for it.
  // Errors: UnsafeDependency ("contains '/'", "does not resolve", "<path>: <why unsafe>").
  const std::vector<std::string>& resolve(std::string_view soname, const std::string& plugin);

 private:
  std::string data_;  // the bytes of /etc/ld.so.cache
  // (soname, path) views into data_ of this machine's entries, in cache order.
  std::vector<std::pair<std::string_view, std::string_view>> cache_;
  std::map<std::string, std::vector<std::string>, std::less<>> resolved_;
};

}  // namespace ctx::plugins::detail

#endif  // CTX_HOST_PLUGINS_DETAIL_DEPENDENCIES_HPP_
