// The "generic" host-adapter plugin: GenericAdapter behind the SDK's host-adapter base class.
#include <ctx/sdk/plugin.hpp>

#include <string>
#include <string_view>

#include "plugins/hosts/generic/core/generic_adapter.hpp"

namespace {

class GenericHostPlugin final : public ctx::sdk::HostAdapter {
 public:
  explicit GenericHostPlugin(std::string_view config_json) : adapter_(config_json) {}
  std::string parse_hook(std::string_view payload) override {
    return adapter_.parse_hook(payload).dump();
  }
  std::string render_reply(std::string_view actions) override {
    return adapter_.render_reply(actions).dump();
  }
  std::string install_locations() override { return adapter_.install_locations().dump(); }

 private:
  ctx::generic_host::GenericAdapter adapter_;
};

}  // namespace

CTX_PLUGIN(GenericHostPlugin, host_adapter, "generic", "1.0.0");
