// PinnedPlugins: the loaded plugins the runtime may instantiate, by id — the port through which
// the runtime gets an installer or a verifier without loading a plugin itself (host/app's
// installation loads the pinned plugins and fills it; tests may fill it too). Thread-safe.
#ifndef CTX_HOST_RUNTIME_PINNED_PLUGINS_HPP_
#define CTX_HOST_RUNTIME_PINNED_PLUGINS_HPP_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/engine/ports/installer_port.hpp"
#include "host/engine/ports/verifier_port.hpp"

namespace ctx::runtime {

class PinnedPlugins {
 public:
  virtual ~PinnedPlugins() = default;

  // The identity digest of the loaded installer (verifier) plugin `id`; nullopt when none is.
  virtual std::optional<std::string> installer_identity(std::string_view id) const = 0;
  virtual std::optional<std::string> verifier_identity(std::string_view id) const = 0;

  // A new instance of the loaded installer (verifier) plugin `id`, created with `config_json`.
  // Errors: plugins::PluginNotPinned ("not pinned") when none is loaded; ctx::Error from the
  // plugin's create.
  virtual std::shared_ptr<engine::InstallerPort> installer(std::string_view id,
                                                           std::string_view config_json) const = 0;
  virtual std::shared_ptr<engine::VerifierPort> verifier(std::string_view id,
                                                         std::string_view config_json) const = 0;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_PINNED_PLUGINS_HPP_
