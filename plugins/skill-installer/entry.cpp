// The "skill-installer" plugin: SkillStore behind the SDK's installer base class. Installs poll
// the host's cancellation service between streamed chunks; install_from_source (ABI minor 1)
// streams tree bodies from the host's body source.
#include <ctx/sdk/plugin.hpp>

#include <string>
#include <string_view>

#include "plugins/skill-installer/core/skill_store.hpp"

namespace {

class SkillInstallerPlugin final : public ctx::sdk::Installer {
 public:
  SkillInstallerPlugin(const ctx::sdk::Host& host, std::string_view config_json)
      : host_(host), store_(config_json, [this] { return host_.cancelled(); }) {}
  std::string target_identity() override { return store_.target_identity().dump(); }
  std::string install(std::string_view request) override { return store_.install(request).dump(); }
  std::string install_from_source(std::string_view request,
                                  const ctx::sdk::BodySource& bodies) override {
    return store_
        .install_from_source(request,
                             [&bodies](const std::string& path,
                                       const ctx::skill_installer::SkillStore::ChunkFn& chunk) {
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
  ctx::skill_installer::SkillStore store_;
};

}  // namespace

CTX_PLUGIN(SkillInstallerPlugin, installer, "skill-installer", "1.0.0");
