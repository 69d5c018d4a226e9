// The "claude-code" host-adapter plugin: ClaudeCodeAdapter behind the SDK's host-adapter base
// class.
#include "plugins/hosts/common/adapter_plugin.hpp"
#include "plugins/hosts/claude-code/core/claude_code_adapter.hpp"

using ClaudeCodeHostPlugin =
    ctx::host_adapters::AdapterPlugin<ctx::claude_code_host::ClaudeCodeAdapter>;
CTX_PLUGIN(ClaudeCodeHostPlugin, host_adapter, "claude-code", "1.0.0");
