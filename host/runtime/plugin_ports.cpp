#include "host/runtime/plugin_ports.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "host/core/error.hpp"

namespace ctx::runtime {
namespace {

class RegistryInstallerResolver final : public InstallerResolver {
 public:
  RegistryInstallerResolver(std::shared_ptr<const PinnedPlugins> plugins,
                            std::vector<InstallerRegistration> registrations)
      : plugins_(std::move(plugins)) {
    for (auto& registration : registrations) {
      Entry entry{std::move(registration), {}, {}, {}};
      entry.driver =
          plugins_->installer(entry.registration.plugin_id, entry.registration.config_json);
      entry.driver_identity = entry.driver->identity_digest();
      entry.captured = entry.driver->target_identity();
      Key key{entry.registration.installer_id, entry.registration.capability_kind};
      entries_.emplace(std::move(key), std::move(entry));
    }
  }

  std::shared_ptr<engine::InstallerPort> resolve(
      std::string_view installer_id, engine::CapabilityKind capability_kind) const override {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(Key{std::string(installer_id), capability_kind});
    if (it == entries_.end()) return nullptr;
    Entry& entry = it->second;
    const auto identity = plugins_->installer_identity(entry.registration.plugin_id);
    if (!identity) return nullptr;
    if (*identity != entry.driver_identity) {
      entry.driver =
          plugins_->installer(entry.registration.plugin_id, entry.registration.config_json);
      entry.driver_identity = *identity;
    }
    if (!(entry.driver->target_identity() == entry.captured)) {
      throw InstallExecutionError("install target root changed after runtime configuration");
    }
    return entry.driver;
  }

 private:
  struct Entry {
    InstallerRegistration registration;
    std::shared_ptr<engine::InstallerPort> driver;
    std::string driver_identity;
    engine::TargetIdentity captured;
  };
  // (installer id, kind) of a registration.
  using Key = std::pair<std::string, engine::CapabilityKind>;
  std::shared_ptr<const PinnedPlugins> plugins_;
  mutable std::mutex mutex_;
  mutable std::map<Key, Entry> entries_;  // GUARDED_BY(mutex_)
};

}  // namespace

std::shared_ptr<InstallerResolver> installer_resolver_from_registry(
    std::shared_ptr<const PinnedPlugins> plugins,
    std::vector<InstallerRegistration> registrations) {
  if (!plugins) throw InvalidArgument("installer resolver requires the pinned plugins");
  return std::make_shared<RegistryInstallerResolver>(std::move(plugins), std::move(registrations));
}

std::shared_ptr<engine::ActivationPort> activation_port_from_registry(
    const PinnedPlugins& plugins, std::string_view installer_id, std::string_view config_json) {
  return std::make_shared<engine::InstallerActivation>(
      plugins.installer(installer_id, config_json));
}

}  // namespace ctx::runtime
