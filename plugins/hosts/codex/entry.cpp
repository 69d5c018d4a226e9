// The "codex" host-adapter plugin: C ABI over CodexAdapter. Every export runs inside
// ctx::sdk::guard, so no exception crosses the boundary.
#include <ctx/abi/plugin_abi.h>

#include <ctx/sdk/plugin.hpp>

#include "plugins/hosts/codex/core/codex_adapter.hpp"

namespace {

using ctx::codex_host::CodexAdapter;

const CodexAdapter& adapter(void* instance) {
  if (instance == nullptr) throw ctx::InvalidArgument("codex adapter instance is missing");
  return *static_cast<const CodexAdapter*>(instance);
}

ctx_code create(const ctx_host_api* /*host*/, ctx_bytes config, void** instance,
                ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    if (instance == nullptr) throw ctx::InvalidArgument("instance out-parameter is missing");
    *instance = new CodexAdapter(ctx::sdk::view(config));
  });
}

ctx_code destroy(void* instance, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] { delete static_cast<CodexAdapter*>(instance); });
}

ctx_code parse_hook(void* instance, ctx_bytes payload, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    ctx::sdk::write(out, adapter(instance).parse_hook(ctx::sdk::view(payload)).dump());
  });
}

ctx_code render_reply(void* instance, ctx_bytes actions, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    ctx::sdk::write(out, adapter(instance).render_reply(ctx::sdk::view(actions)).dump());
  });
}

ctx_code install_locations(void* instance, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(
      err, [&] { ctx::sdk::write(out, adapter(instance).install_locations().dump()); });
}

const ctx_host_adapter_ops kOps = {
    /*struct_size=*/sizeof(ctx_host_adapter_ops),
    /*parse_hook=*/parse_hook,
    /*render_reply=*/render_reply,
    /*install_locations=*/install_locations,
};

const ctx_plugin_descriptor kDescriptor = {
    /*abi_major=*/CTX_ABI_MAJOR,
    /*struct_size=*/sizeof(ctx_plugin_descriptor),
    /*abi_minor_required=*/0,
    /*abi_minor_built=*/CTX_ABI_MINOR,
    /*kind=*/CTX_KIND_HOST_ADAPTER,
    /*id=*/"codex",
    /*version=*/"1.0.0",
    /*create=*/create,
    /*destroy=*/destroy,
    /*ops=*/&kOps,
};

}  // namespace

CTX_DEFINE_PLUGIN_ENTRY(kDescriptor)
