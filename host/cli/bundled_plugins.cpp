#include "host/cli/bundled_plugins.hpp"

#include <algorithm>
#include <system_error>

#include "host/app/hook/hook_runner.hpp"
#include "host/app/installation.hpp"
#include "host/app/plugins.hpp"
#include "host/app/state_layout.hpp"

#ifndef CTX_BUILD_DIR
#error "CTX_BUILD_DIR must be defined by the build (CMAKE_BINARY_DIR)"
#endif

namespace ctx::cli {

namespace fs = std::filesystem;

std::optional<fs::path> bundled_plugin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path build = fs::path(CTX_BUILD_DIR).lexically_normal();
  const fs::path relative = exe.lexically_normal().lexically_relative(build);
  if (!relative.empty() && *relative.begin() != ".." && fs::is_directory(build / "plugins", ec)) {
    return build / "plugins";
  }
  const fs::path installed =
      (exe.parent_path() / ".." / "lib" / "ctx" / "plugins").lexically_normal();
  if (fs::is_directory(installed, ec)) return installed;
  return std::nullopt;
}

BundledPinResult pin_bundled_plugins(const fs::path& state_dir) {
  BundledPinResult result;
  result.directory = bundled_plugin_dir();
  if (!result.directory) return result;
  std::vector<fs::path> files;
  for (const auto& item : fs::recursive_directory_iterator(*result.directory)) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file() && !item.is_symlink() && name.rfind("ctx_plugin_", 0) == 0 &&
        item.path().extension() == ".so") {
      files.push_back(item.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<plugins::LockEntry> entries;
  for (const auto& file : files) entries.push_back(app::inspect_plugin_for_pin(state_dir, file));
  plugins::LockFile::update(state_dir / runtime::kPluginLockFile, [&](plugins::LockFile& lock) {
    result.pinned.clear();
    result.kept.clear();
    for (const auto& entry : entries) {
      if (lock.find(entry.kind, entry.id) != nullptr) {
        result.kept.push_back(entry.label());
        continue;
      }
      lock.upsert(entry);
      result.pinned.push_back(entry.label());
    }
  });
  return result;
}

}  // namespace ctx::cli
