// The "skill-installer" plugin: C ABI over SkillStore. Every export runs inside
// ctx::sdk::guard, so no exception crosses the boundary.
#include <ctx/abi/plugin_abi.h>

#include <ctx/sdk/plugin.hpp>

#include "plugins/skill-installer/core/skill_store.hpp"

namespace {

using ctx::skill_installer::SkillStore;

SkillStore& store(void* instance) {
  if (instance == nullptr) throw ctx::InvalidArgument("skill-installer instance is missing");
  return *static_cast<SkillStore*>(instance);
}

ctx_code create(const ctx_host_api* /*host*/, ctx_bytes config, void** instance,
                ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    if (instance == nullptr) throw ctx::InvalidArgument("instance out-parameter is missing");
    *instance = new SkillStore(ctx::sdk::view(config));
  });
}

ctx_code destroy(void* instance, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] { delete static_cast<SkillStore*>(instance); });
}

ctx_code target_identity(void* instance, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(err,
                         [&] { ctx::sdk::write(out, store(instance).target_identity().dump()); });
}

ctx_code install(void* instance, ctx_bytes request, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(
      err, [&] { ctx::sdk::write(out, store(instance).install(ctx::sdk::view(request)).dump()); });
}

ctx_code activate(void* instance, ctx_bytes request, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(
      err, [&] { ctx::sdk::write(out, store(instance).activate(ctx::sdk::view(request)).dump()); });
}

ctx_code deactivate(void* instance, ctx_bytes request, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    ctx::sdk::write(out, store(instance).deactivate(ctx::sdk::view(request)).dump());
  });
}

ctx_code reconcile(void* instance, ctx_bytes request, ctx_sink* out, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    ctx::sdk::write(out, store(instance).reconcile(ctx::sdk::view(request)).dump());
  });
}

const ctx_installer_ops kOps = {
    /*struct_size=*/sizeof(ctx_installer_ops),
    /*target_identity=*/target_identity,
    /*install=*/install,
    /*activate=*/activate,
    /*deactivate=*/deactivate,
    /*reconcile=*/reconcile,
};

const ctx_plugin_descriptor kDescriptor = {
    /*abi_major=*/CTX_ABI_MAJOR,
    /*struct_size=*/sizeof(ctx_plugin_descriptor),
    /*abi_minor_required=*/0,
    /*abi_minor_built=*/CTX_ABI_MINOR,
    /*kind=*/CTX_KIND_INSTALLER,
    /*id=*/"skill-installer",
    /*version=*/"1.0.0",
    /*create=*/create,
    /*destroy=*/destroy,
    /*ops=*/&kOps,
};

}  // namespace

CTX_DEFINE_PLUGIN_ENTRY(kDescriptor)
