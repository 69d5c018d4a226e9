#include "host/plugins/plugin_registry.hpp"

#include <ctx/loader/errors.hpp>

#include "host/core/error.hpp"

namespace ctx::plugins {

std::string PluginRegistry::add(std::shared_ptr<const LoadedPlugin> plugin) {
  CTX_CHECK(plugin != nullptr);
  const std::string label = plugin->identity().label();
  std::string digest = plugin->identity().digest();
  const std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = digest_by_label_.find(label); it != digest_by_label_.end()) {
    throw DuplicatePlugin("duplicate plugin " + label + ": already registered as " +
                          by_digest_.at(it->second)->identity().version + " (identity " +
                          it->second + ")");
  }
  digest_by_label_.emplace(label, digest);
  by_digest_.emplace(digest, std::move(plugin));
  return digest;
}

void PluginRegistry::load_all(const LockFile& lock, const PluginLoader& loader) {
  std::vector<std::shared_ptr<const LoadedPlugin>> loaded;
  loaded.reserve(lock.entries().size());
  for (const LockEntry& entry : lock.entries()) loaded.push_back(loader.load(entry));
  const std::lock_guard<std::mutex> guard(mutex_);
  for (const auto& plugin : loaded) {
    if (digest_by_label_.count(plugin->identity().label()) != 0) {
      throw DuplicatePlugin("duplicate plugin " + plugin->identity().label() +
                            ": already registered");
    }
  }
  for (auto& plugin : loaded) {
    std::string digest = plugin->identity().digest();
    digest_by_label_.emplace(plugin->identity().label(), digest);
    by_digest_.emplace(std::move(digest), std::move(plugin));
  }
}

std::shared_ptr<const LoadedPlugin> PluginRegistry::find_by_digest(
    std::string_view identity_digest) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = by_digest_.find(identity_digest);
  return it == by_digest_.end() ? nullptr : it->second;
}

std::shared_ptr<const LoadedPlugin> PluginRegistry::find(PluginKind kind,
                                                         std::string_view id) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = digest_by_label_.find(plugin_label(kind, id));
  return it == digest_by_label_.end() ? nullptr : by_digest_.at(it->second);
}

std::shared_ptr<const LoadedPlugin> PluginRegistry::get(PluginKind kind,
                                                        std::string_view id) const {
  auto plugin = find(kind, id);
  if (plugin == nullptr) {
    throw PluginNotPinned("plugin " + plugin_label(kind, id) + " is not pinned or not loaded");
  }
  return plugin;
}

std::vector<std::shared_ptr<const LoadedPlugin>> PluginRegistry::all() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<const LoadedPlugin>> result;
  result.reserve(by_digest_.size());
  for (const auto& [digest, plugin] : by_digest_) result.push_back(plugin);
  return result;
}

std::size_t PluginRegistry::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return by_digest_.size();
}

}  // namespace ctx::plugins
