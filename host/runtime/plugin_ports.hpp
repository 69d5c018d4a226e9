// Wiring of engine ports to loaded plugins: the only place the runtime turns a pinned plugin
// (PinnedPlugins, which host/app's installation fills) into the port the engine calls.
// Thread-safety: the returned ports serialise their calls (as the plugin ports do).
#ifndef CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_
#define CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/ports/installer_port.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/pinned_plugins.hpp"

namespace ctx::runtime {

// The activation port over the installer plugin `installer_id` of `plugins`, created with
// `config_json` (the installer's configuration, e.g. {"root": ...}): activate / deactivate /
// reconcile go through the plugin's ctx_installer_ops. Errors: PluginNotPinned ("not pinned")
// when no such installer is registered; ctx::Error from the plugin's create.
std::shared_ptr<engine::ActivationPort> activation_port_from_registry(const PinnedPlugins& plugins,
                                                                      std::string_view installer_id,
                                                                      std::string_view config_json);

// One installer driver an install descriptor may name: descriptors whose installer_id and kind
// match are installed by the pinned installer plugin `plugin_id`, created with `config_json`.
struct InstallerRegistration {
  std::string installer_id;     // the descriptor's installer id, e.g. "ctx-skill-installer-v1"
  engine::CapabilityKind capability_kind = engine::CapabilityKind::kSkill;  // an installable kind
  std::string plugin_id;        // the pinned installer plugin, e.g. "skill-installer"
  std::string config_json;      // the plugin's configuration, e.g. {"root": ...}
};

// The InstallerResolver over the installer plugins of `plugins`: resolve() looks the plugin up
// again on every call (its identity digest is the one `plugins` holds now) and keeps one
// plugin instance per (registration, plugin identity). Each registration's install root is
// captured at construction; resolve() → InstallExecutionError ("root changed") when the plugin's
// target identity differs from it. Errors: PluginNotPinned ("not pinned") for a registration
// whose plugin is absent; ctx::Error from the plugin's create / target_identity.
std::shared_ptr<InstallerResolver> installer_resolver_from_registry(
    std::shared_ptr<const PinnedPlugins> plugins, std::vector<InstallerRegistration> registrations);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_PLUGIN_PORTS_HPP_
