// The "codex" host-adapter plugin: CodexAdapter behind the SDK's host-adapter base class.
#include <ctx/sdk/plugin.hpp>
#include <string>
#include <string_view>

#include "plugins/hosts/codex/core/codex_adapter.hpp"

namespace {

class CodexHostPlugin final : public ctx::sdk::HostAdapter {
 public:
  explicit CodexHostPlugin(std::string_view config_json) : adapter_(config_json) {}
  std::string parse_hook(std::string_view payload) override {
    return adapter_.parse_hook(payload).dump();
  }
  std::string render_reply(std::string_view actions) override {
    return adapter_.render_reply(actions).dump();
  }
  std::string install_locations() override { return adapter_.install_locations().dump(); }

 private:
  ctx::codex_host::CodexAdapter adapter_;
};

}  // namespace

CTX_PLUGIN(CodexHostPlugin, host_adapter, "codex", "1.0.0");
