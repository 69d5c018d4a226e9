// Installation: one state directory's installation key and plugin lock, each read once, and the
// only code that loads a pinned plugin (plugins::PluginLoader) and wraps it in the port its kind
// serves (host adapter, installer, verifier: the plugins::Abi* adapters). Everything above the
// runtime that needs a plugin asks this unit for it. Thread-safe (the key is read under a lock).
#ifndef CTX_HOST_APP_INSTALLATION_HPP_
#define CTX_HOST_APP_INSTALLATION_HPP_

#include <ctx/loader/lock_file.hpp>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/ports/host_adapter_port.hpp"
#include "host/plugins/plugin_registry.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/pinned_plugins.hpp"
#include "host/runtime/service/managed_service.hpp"

namespace ctx::app {

// Plugins loaded (pinned, digest-checked) by an Installation, as the runtime's PinnedPlugins.
class LoadedPlugins final : public runtime::PinnedPlugins {
 public:
  LoadedPlugins() = default;
  LoadedPlugins(const LoadedPlugins&) = delete;
  LoadedPlugins& operator=(const LoadedPlugins&) = delete;

  // Adds a loaded plugin; returns its identity digest. Errors: plugins::DuplicatePlugin.
  std::string add(std::shared_ptr<const plugins::LoadedPlugin> plugin);
  // The registry of what is loaded.
  const plugins::PluginRegistry& registry() const noexcept { return registry_; }

  std::optional<std::string> installer_identity(std::string_view id) const override;
  std::optional<std::string> verifier_identity(std::string_view id) const override;
  std::shared_ptr<engine::InstallerPort> installer(std::string_view id,
                                                   std::string_view config_json) const override;
  std::shared_ptr<engine::VerifierPort> verifier(std::string_view id,
                                                 std::string_view config_json) const override;

 private:
  plugins::PluginRegistry registry_;
};

// The ports a state dir's engine compositions run on besides its files (the state service makes
// them over its imported catalog and journal connection).
struct CompositionPorts {
  std::shared_ptr<runtime::SharedJournal> journal;  // null: each composition opens its own
  std::shared_ptr<runtime::BenefitFactsPort> benefit_facts;
  std::shared_ptr<runtime::MaterialPort> material;
  std::shared_ptr<runtime::InstallBundlePort> install_bundle;
  std::shared_ptr<const core::Clock> trusted_clock;                    // null: the system clock
  std::shared_ptr<const runtime::InstallApprovals> install_approvals;  // may be null
};

class Installation {
 public:
  // Reads `state_dir`/plugins.lock.json (missing: an empty lock). Errors: LockFile's.
  explicit Installation(std::filesystem::path state_dir);
  // With the lock as the caller already read it.
  Installation(std::filesystem::path state_dir, plugins::LockFile lock);
  Installation(const Installation&) = delete;
  Installation& operator=(const Installation&) = delete;

  const std::filesystem::path& state_dir() const noexcept { return state_dir_; }
  const plugins::LockFile& lock() const noexcept { return lock_; }
  bool pinned(plugins::PluginKind kind, std::string_view id) const;
  // The 32 installation key bytes, read on the first call only.
  // Errors: read_installation_key's (NotFound: no key; FailedPrecondition: not private).
  const std::string& key() const;

  // A new instance of the pinned host adapter `id`, created with the installation key and the
  // fields of `config` (an object). Errors: plugins::PluginNotPinned; key()'s; the loader's;
  // ctx::Error from the plugin's create.
  std::shared_ptr<engine::HostAdapterPort> host_adapter(
      std::string_view id, const core::Json& config = core::Json::object()) const;

  // The pinned plugins of `kind` among `ids`, loaded now (an id not pinned is left out).
  // Errors: the loader's.
  std::shared_ptr<LoadedPlugins> load(plugins::PluginKind kind,
                                      std::initializer_list<std::string_view> ids) const;

  // The options every engine composition over this state dir opens with: its journal, benefit
  // audit and install policy paths, the default net-benefit policy, and `ports` (the standing
  // install approvals among them); no interactive
  // guard, install or activation actuator (the managed query service sets its own per
  // composition, the state service an activation port). The one place they are filled: the state
  // service's managed query service takes them as its base. Errors: InvalidArgument (a relative
  // state dir).
  runtime::ManagedCompositionOptions composition_options(CompositionPorts ports) const;

  // The state dir's trusted verifier registry as the consent broker resolves it: opened, and the
  // verifier plugins its registrations name loaded, on the first resolve only (a hook never pays
  // for them).
  std::shared_ptr<runtime::VerifierDirectory> verifiers() const;

  // Loads the pinned verifier `plugin_id` and registers `key` for it with `config` in the state
  // dir's verifier registry; returns the plugin's identity digest. Errors: NotFound (not
  // pinned); the loader's; TrustedVerifierRegistry::add's.
  std::string trust_verifier(const runtime::VerifierKey& key, const std::string& plugin_id,
                             const core::Json& config) const;

 private:
  std::filesystem::path state_dir_;
  plugins::LockFile lock_;
  mutable std::mutex key_mutex_;
  mutable std::optional<std::string> key_;  // GUARDED_BY(key_mutex_)
};

// The lock entry that would pin the plugin file `file` (nothing executed).
// Errors: plugins::PluginLoader::inspect_for_pin's.
plugins::LockEntry inspect_plugin_for_pin(const std::filesystem::path& state_dir,
                                          const std::filesystem::path& file);
// The identity digest of `entry` checked against the bytes at its path (nothing executed).
// Errors: plugins::PluginLoader::check's.
std::string check_pinned_plugin(const std::filesystem::path& state_dir,
                                const plugins::LockEntry& entry);
// Loads `entry` and returns the identity digest the loaded plugin declares.
// Errors: plugins::PluginLoader::load's.
std::string load_pinned_plugin(const std::filesystem::path& state_dir,
                               const plugins::LockEntry& entry);

}  // namespace ctx::app

#endif  // CTX_HOST_APP_INSTALLATION_HPP_
