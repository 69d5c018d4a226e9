// The thin plugin of an in-tree host adapter: any core with parse_hook, render_reply and
// install_locations returning JSON, behind the SDK's host-adapter base class. Use it as
//   using Plugin = ctx::host_adapters::AdapterPlugin<Core>;
//   CTX_PLUGIN(Plugin, host_adapter, "id", "1.0.0");
#ifndef CTX_PLUGINS_HOSTS_COMMON_ADAPTER_PLUGIN_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_ADAPTER_PLUGIN_HPP_

#include <ctx/sdk/plugin.hpp>
#include <string>
#include <string_view>

namespace ctx::host_adapters {

template <typename Core>
class AdapterPlugin final : public sdk::HostAdapter {
 public:
  explicit AdapterPlugin(std::string_view config_json) : core_(config_json) {}
  std::string parse_hook(std::string_view payload) override {
    return core_.parse_hook(payload).dump();
  }
  std::string render_reply(std::string_view actions) override {
    return core_.render_reply(actions).dump();
  }
  std::string install_locations() override { return core_.install_locations().dump(); }

 private:
  Core core_;
};

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_ADAPTER_PLUGIN_HPP_
