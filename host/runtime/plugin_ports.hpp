// Wiring of engine ports to loaded plugins: the only place the runtime turns a pinned plugin from
// the registry into the port the engine calls. Thread-safety: the returned ports serialise their
// calls (plugins::Abi* adapters).
#ifndef CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_
#define CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_

#include <memory>
#include <string_view>

#include "host/engine/ports/installer_port.hpp"
#include "host/plugins/plugin_registry.hpp"

namespace ctx::runtime {

// The activation port over the installer plugin `installer_id` of `registry`, created with
// `config_json` (the installer's configuration, e.g. {"root": ...}): activate / deactivate /
// reconcile go through the plugin's ctx_installer_ops. Errors: PluginNotPinned ("not pinned")
// when no such installer is registered; ctx::Error from the plugin's create.
std::shared_ptr<engine::ActivationPort> activation_port_from_registry(
    const plugins::PluginRegistry& registry, std::string_view installer_id,
    std::string_view config_json);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_
