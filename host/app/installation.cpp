#include "host/app/installation.hpp"

#include <cstdint>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <set>
#include <utility>

#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/plugins/abi_adapters.hpp"

namespace ctx::app {
namespace {

namespace fs = std::filesystem;
using core::Json;

std::optional<std::string> identity_of(const plugins::PluginRegistry& registry,
                                       plugins::PluginKind kind, std::string_view id) {
  const auto plugin = registry.find(kind, id);
  if (!plugin) return std::nullopt;
  return plugin->identity().digest();
}

// The trusted verifier registry of the state dir, opened on the first decision: the verifier
// plugins its registrations name are loaded (pinned, from the installation's lock) only then.
class StateVerifiers final : public runtime::VerifierDirectory {
 public:
  StateVerifiers(fs::path state_dir, plugins::LockFile lock)
      : state_dir_(std::move(state_dir)), lock_(std::move(lock)) {}

  std::shared_ptr<const runtime::PinnedVerifier> resolve(const runtime::VerifierKey& key) override {
    std::lock_guard guard(mutex_);
    if (!registry_) {
      auto loaded = std::make_shared<LoadedPlugins>();
      std::set<std::string> wanted;
      {
        const runtime::TrustedVerifierRegistry listing(state_dir_, *loaded);
        for (const auto& registration : listing.registrations()) {
          wanted.insert(registration.plugin_id);
        }
      }
      if (!wanted.empty()) {
        const plugins::PluginLoader loader(state_dir_);
        for (const auto& id : wanted) {
          if (const auto* entry = lock_.find(plugins::PluginKind::kVerifier, id)) {
            loaded->add(loader.load(*entry));
          }
        }
      }
      plugins_ = std::move(loaded);
      registry_ = std::make_unique<runtime::TrustedVerifierRegistry>(state_dir_, *plugins_);
    }
    return registry_->resolve(key);
  }

 private:
  fs::path state_dir_;
  plugins::LockFile lock_;
  std::mutex mutex_;
  std::shared_ptr<LoadedPlugins> plugins_;                      // GUARDED_BY(mutex_)
  std::unique_ptr<runtime::TrustedVerifierRegistry> registry_;  // GUARDED_BY(mutex_)
};

}  // namespace

std::string LoadedPlugins::add(std::shared_ptr<const plugins::LoadedPlugin> plugin) {
  return registry_.add(std::move(plugin));
}

std::optional<std::string> LoadedPlugins::installer_identity(std::string_view id) const {
  return identity_of(registry_, plugins::PluginKind::kInstaller, id);
}

std::optional<std::string> LoadedPlugins::verifier_identity(std::string_view id) const {
  return identity_of(registry_, plugins::PluginKind::kVerifier, id);
}

std::shared_ptr<engine::InstallerPort> LoadedPlugins::installer(
    std::string_view id, std::string_view config_json) const {
  return std::make_shared<plugins::AbiInstaller>(registry_.get(plugins::PluginKind::kInstaller, id),
                                                 config_json);
}

std::shared_ptr<engine::VerifierPort> LoadedPlugins::verifier(std::string_view id,
                                                              std::string_view config_json) const {
  return std::make_shared<plugins::AbiVerifier>(registry_.get(plugins::PluginKind::kVerifier, id),
                                                config_json);
}

Installation::Installation(fs::path state_dir)
    : state_dir_(std::move(state_dir)),
      lock_(plugins::LockFile::load_or_empty(state_dir_ / runtime::kPluginLockFile)) {}

Installation::Installation(fs::path state_dir, plugins::LockFile lock)
    : state_dir_(std::move(state_dir)), lock_(std::move(lock)) {}

bool Installation::pinned(plugins::PluginKind kind, std::string_view id) const {
  return lock_.find(kind, id) != nullptr;
}

const std::string& Installation::key() const {
  std::lock_guard guard(key_mutex_);
  if (!key_) key_ = runtime::read_installation_key(state_dir_);
  return *key_;
}

std::shared_ptr<engine::HostAdapterPort> Installation::host_adapter(std::string_view id,
                                                                    const Json& config) const {
  const plugins::LockEntry* entry = lock_.find(plugins::PluginKind::kHostAdapter, id);
  if (entry == nullptr) {
    throw plugins::PluginNotPinned("no host adapter \"" + std::string(id) +
                                   "\" is pinned in the state directory");
  }
  if (!config.is_object()) throw InvalidArgument("host adapter config must be an object");
  const std::string& bytes = key();
  Json full = config;
  full["installation_key"] =
      core::to_hex(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return std::make_shared<plugins::AbiHostAdapter>(plugins::PluginLoader(state_dir_).load(*entry),
                                                   core::canonical_json(full));
}

std::shared_ptr<LoadedPlugins> Installation::load(
    plugins::PluginKind kind, std::initializer_list<std::string_view> ids) const {
  auto loaded = std::make_shared<LoadedPlugins>();
  const plugins::PluginLoader loader(state_dir_);
  for (const auto id : ids) {
    if (const auto* entry = lock_.find(kind, id)) loaded->add(loader.load(*entry));
  }
  return loaded;
}

runtime::ManagedCompositionOptions Installation::composition_options(CompositionPorts ports) const {
  const auto paths = runtime::StatePaths::of(state_dir_);
  runtime::ManagedCompositionOptions options;
  options.journal_path = paths.journal;
  options.journal = std::move(ports.journal);
  options.benefit_audit_path = paths.audit;
  options.benefit_facts_port = std::move(ports.benefit_facts);
  options.net_benefit_policy = runtime::default_net_benefit_policy();
  options.material_port = std::move(ports.material);
  options.install_bundle_port = std::move(ports.install_bundle);
  options.trusted_clock = std::move(ports.trusted_clock);
  options.policy_store_root = paths.install_policy;
  options.install_approvals = std::move(ports.install_approvals);
  return options;
}

std::shared_ptr<runtime::VerifierDirectory> Installation::verifiers() const {
  return std::make_shared<StateVerifiers>(state_dir_, lock_);
}

std::string Installation::trust_verifier(const runtime::VerifierKey& key,
                                         const std::string& plugin_id, const Json& config) const {
  const plugins::LockEntry* entry = lock_.find(plugins::PluginKind::kVerifier, plugin_id);
  if (entry == nullptr) throw NotFound("verifier plugin " + plugin_id + " is not pinned");
  LoadedPlugins loaded;
  const std::string identity = loaded.add(plugins::PluginLoader(state_dir_).load(*entry));
  runtime::TrustedVerifierRegistry registry(state_dir_, loaded);
  registry.add(key, plugin_id, config);
  return identity;
}

plugins::LockEntry inspect_plugin_for_pin(const fs::path& state_dir, const fs::path& file) {
  return plugins::PluginLoader(state_dir).inspect_for_pin(file);
}

std::string check_pinned_plugin(const fs::path& state_dir, const plugins::LockEntry& entry) {
  return plugins::PluginLoader(state_dir).check(entry).digest();
}

std::string load_pinned_plugin(const fs::path& state_dir, const plugins::LockEntry& entry) {
  return plugins::PluginLoader(state_dir).load(entry)->identity().digest();
}

}  // namespace ctx::app
