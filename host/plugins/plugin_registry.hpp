// PluginRegistry: the loaded plugins of one host process, keyed by identity digest and findable
// by (kind, id). (kind, id) is unique. Thread-safe (internally locked).
#ifndef CTX_HOST_PLUGINS_PLUGIN_REGISTRY_HPP_
#define CTX_HOST_PLUGINS_PLUGIN_REGISTRY_HPP_

#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::plugins {

class PluginRegistry {
 public:
  PluginRegistry() = default;
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Adds `plugin` and returns its identity digest.
  // Errors: DuplicatePlugin when a plugin with the same kind and id is already registered.
  // REQUIRES: plugin != nullptr.
  std::string add(std::shared_ptr<const LoadedPlugin> plugin);

  // Loads every entry of `lock` through `loader` and adds it; all or nothing.
  // Errors: whatever PluginLoader::load throws for the first failing entry; DuplicatePlugin.
  void load_all(const LockFile& lock, const PluginLoader& loader);

  // The plugin with this identity digest, or nullptr.
  std::shared_ptr<const LoadedPlugin> find_by_digest(std::string_view identity_digest) const;
  // The plugin of this kind and id, or nullptr.
  std::shared_ptr<const LoadedPlugin> find(PluginKind kind, std::string_view id) const;
  // The plugin of this kind and id. Errors: PluginNotPinned ("not pinned") when absent.
  std::shared_ptr<const LoadedPlugin> get(PluginKind kind, std::string_view id) const;
  // Every registered plugin, ordered by identity digest.
  std::vector<std::shared_ptr<const LoadedPlugin>> all() const;
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const LoadedPlugin>, std::less<>> by_digest_;
  std::map<std::string, std::string, std::less<>> digest_by_label_;  // "kind:id" -> digest
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_PLUGIN_REGISTRY_HPP_
