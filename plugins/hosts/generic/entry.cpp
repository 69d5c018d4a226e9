// The "generic" host-adapter plugin: GenericAdapter behind the SDK's host-adapter base class.
#include "plugins/hosts/common/adapter_plugin.hpp"
#include "plugins/hosts/generic/core/generic_adapter.hpp"

using GenericHostPlugin = ctx::host_adapters::AdapterPlugin<ctx::generic_host::GenericAdapter>;
CTX_PLUGIN(GenericHostPlugin, host_adapter, "generic", "1.0.0");
