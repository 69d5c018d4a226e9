#include "host/runtime/plugin_ports.hpp"

#include "host/plugins/abi_adapters.hpp"

namespace ctx::runtime {

std::shared_ptr<engine::ActivationPort> activation_port_from_registry(
    const plugins::PluginRegistry& registry, std::string_view installer_id,
    std::string_view config_json) {
  auto installer = std::make_shared<plugins::AbiInstaller>(
      registry.get(plugins::PluginKind::kInstaller, installer_id), config_json);
  return std::make_shared<engine::InstallerActivation>(std::move(installer));
}

}  // namespace ctx::runtime
