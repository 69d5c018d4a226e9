#include "host/runtime/plugin_ports.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "host/plugins/abi_adapters.hpp"

namespace ctx::runtime {
namespace {

class RegistryInstallerResolver final : public InstallerResolver {
 public:
  RegistryInstallerResolver(std::shared_ptr<const plugins::PluginRegistry> registry,
                            std::vector<InstallerRegistration> registrations)
      : registry_(std::move(registry)) {
    for (auto& registration : registrations) {
      Entry entry{std::move(registration), {}, {}, {}};
      auto plugin = registry_->get(plugins::PluginKind::kInstaller, entry.registration.plugin_id);
      entry.driver =
          std::make_shared<plugins::AbiInstaller>(plugin, entry.registration.config_json);
      entry.driver_identity = plugin->identity().digest();
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
    const auto plugin =
        registry_->find(plugins::PluginKind::kInstaller, entry.registration.plugin_id);
    if (!plugin) return nullptr;
    if (plugin->identity().digest() != entry.driver_identity) {
      entry.driver =
          std::make_shared<plugins::AbiInstaller>(plugin, entry.registration.config_json);
      entry.driver_identity = plugin->identity().digest();
    }
    if (!(entry.driver->target_identity() == entry.captured)) {
      throw InstallExecutionError("install target root changed after runtime configuration");
    }
    return entry.driver;
  }

 private:
  struct Entry {
    InstallerRegistration registration;
    std::shared_ptr<plugins::AbiInstaller> driver;
    std::string driver_identity;
    engine::TargetIdentity captured;
  };
  // (installer id, kind) of a registration.
  using Key = std::pair<std::string, engine::CapabilityKind>;
  std::shared_ptr<const plugins::PluginRegistry> registry_;
  mutable std::mutex mutex_;
  mutable std::map<Key, Entry> entries_;  // GUARDED_BY(mutex_)
};

}  // namespace

std::shared_ptr<InstallerResolver> installer_resolver_from_registry(
    std::shared_ptr<const plugins::PluginRegistry> registry,
    std::vector<InstallerRegistration> registrations) {
  if (!registry) throw InvalidArgument("installer resolver requires a plugin registry");
  return std::make_shared<RegistryInstallerResolver>(std::move(registry),
                                                     std::move(registrations));
}

std::shared_ptr<engine::ActivationPort> activation_port_from_registry(
    const plugins::PluginRegistry& registry, std::string_view installer_id,
    std::string_view config_json) {
  auto installer = std::make_shared<plugins::AbiInstaller>(
      registry.get(plugins::PluginKind::kInstaller, installer_id), config_json);
  return std::make_shared<engine::InstallerActivation>(std::move(installer));
}

}  // namespace ctx::runtime
