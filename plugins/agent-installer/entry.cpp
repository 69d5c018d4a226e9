// The "agent-installer" plugin: AgentStore behind the SDK's installer base class. Installs poll
// the host's cancellation service between written chunks; install_from_source (ABI minor 1)
// streams a large agent's one-file tree (AGENT.md) from the host's body source.
#include <ctx/sdk/plugin.hpp>
#include <string>
#include <string_view>

#include "plugins/agent-installer/core/agent_store.hpp"

namespace {

class AgentInstallerPlugin final : public ctx::sdk::Installer {
 public:
  AgentInstallerPlugin(const ctx::sdk::Host& host, std::string_view config_json)
      : host_(host), store_(config_json, [this] { return host_.cancelled(); }) {}
  std::string target_identity() override { return store_.target_identity().dump(); }
  std::string install(std::string_view request) override { return store_.install(request).dump(); }
  std::string install_from_source(std::string_view request,
                                  const ctx::sdk::BodySource& bodies) override {
    return store_
        .install_from_source(request,
                             [&bodies](const std::string& path,
                                       const ctx::agent_installer::AgentStore::ChunkFn& chunk) {
                               return bodies.read(path, chunk);
                             })
        .dump();
  }
  std::string activate(std::string_view request) override {
    return store_.activate(request).dump();
  }
  std::string deactivate(std::string_view request) override {
    return store_.deactivate(request).dump();
  }
  std::string reconcile(std::string_view request) override {
    return store_.reconcile(request).dump();
  }

 private:
  ctx::sdk::Host host_;
  ctx::agent_installer::AgentStore store_;
};

}  // namespace

CTX_PLUGIN(AgentInstallerPlugin, installer, "agent-installer", "1.0.0");
