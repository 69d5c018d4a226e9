// The "claude-code" host-adapter plugin: ClaudeCodeAdapter behind the SDK's host-adapter base
// class.
#include <ctx/sdk/plugin.hpp>
#include <string>
#include <string_view>

#include "plugins/hosts/claude-code/core/claude_code_adapter.hpp"

namespace {

class ClaudeCodeHostPlugin final : public ctx::sdk::HostAdapter {
 public:
  explicit ClaudeCodeHostPlugin(std::string_view config_json) : adapter_(config_json) {}
  std::string parse_hook(std::string_view payload) override {
    return adapter_.parse_hook(payload).dump();
  }
  std::string render_reply(std::string_view actions) override {
    return adapter_.render_reply(actions).dump();
  }
  std::string install_locations() override { return adapter_.install_locations().dump(); }

 private:
  ctx::claude_code_host::ClaudeCodeAdapter adapter_;
};

}  // namespace

CTX_PLUGIN(ClaudeCodeHostPlugin, host_adapter, "claude-code", "1.0.0");
