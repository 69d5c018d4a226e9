// The plugins that ship with ctx, pinned by `ctx init` into <state>/plugins.lock.json: every
// ctx_plugin_*.so under the plugin directory next to the running binary —
// <prefix>/lib/ctx/plugins for an installed ctx, or the build tree's plugins/ when ctx runs from
// its build tree. Pinning executes nothing (PluginLoader::inspect_for_pin). An entry already pinned
// to other bytes is kept (trust on first use; `ctx plugin pin --replace` re-pins it).
#ifndef CTX_HOST_CLI_BUNDLED_PLUGINS_HPP_
#define CTX_HOST_CLI_BUNDLED_PLUGINS_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ctx::cli {

struct BundledPinResult {
  std::vector<std::string> pinned;  // labels newly pinned
  std::vector<std::string> kept;    // labels already pinned (same or other bytes)
  std::optional<std::filesystem::path> directory;  // where they were found
};

// The bundled plugin directory, or nullopt when there is none next to the binary.
std::optional<std::filesystem::path> bundled_plugin_dir();

// Pins the bundled plugins into `state_dir`/plugins.lock.json (under the lock's flock).
// Errors: the loader's (UnsafePluginFile, MalformedElf, ...) and the lock file's.
BundledPinResult pin_bundled_plugins(const std::filesystem::path& state_dir);

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_BUNDLED_PLUGINS_HPP_
