// The "codex" host-adapter plugin: CodexAdapter behind the SDK's host-adapter base class.
#include "plugins/hosts/common/adapter_plugin.hpp"
#include "plugins/hosts/codex/core/codex_adapter.hpp"

using CodexHostPlugin = ctx::host_adapters::AdapterPlugin<ctx::codex_host::CodexAdapter>;
CTX_PLUGIN(CodexHostPlugin, host_adapter, "codex", "1.0.0");
