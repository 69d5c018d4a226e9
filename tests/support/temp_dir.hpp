// A private temporary directory for tests (pytest's tmp_path): made with mkdtemp (0700) under
// std::filesystem::temp_directory_path() ($TMPDIR, else /tmp) and removed with everything in it
// on destruction. Entries left without owner permissions (0500 plugin-cache files, read-only graph
// files) are made owner-accessible first so the tree can be removed; symbolic links are not
// followed. Not thread-safe (one owner).
#ifndef CTX_TESTS_SUPPORT_TEMP_DIR_HPP_
#define CTX_TESTS_SUPPORT_TEMP_DIR_HPP_

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ctx::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ctx-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ignored);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
      if (it->is_symlink(ignored)) continue;
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    }
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_TEMP_DIR_HPP_
