// The "sshsig" verifier plugin: C ABI over SshsigVerifier. Every export runs inside
// ctx::sdk::guard, so no exception crosses the boundary.
#include <ctx/abi/plugin_abi.h>

#include <ctx/sdk/plugin.hpp>

#include "plugins/verifiers/sshsig/core/sshsig_verifier.hpp"

namespace {

using ctx::sshsig::SshsigVerifier;

ctx_code create(const ctx_host_api* /*host*/, ctx_bytes config, void** instance,
                ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] {
    if (instance == nullptr) throw ctx::InvalidArgument("instance out-parameter is missing");
    *instance = new SshsigVerifier(ctx::sdk::view(config));
  });
}

ctx_code destroy(void* instance, ctx_error* err) noexcept {
  return ctx::sdk::guard(err, [&] { delete static_cast<SshsigVerifier*>(instance); });
}

ctx_code verify(void* instance, ctx_bytes assertion_json, ctx_bytes signing_bytes,
                uint32_t* verdict, ctx_error* err) noexcept {
  if (verdict != nullptr) *verdict = CTX_VERDICT_REJECTED;
  return ctx::sdk::guard(err, [&] {
    if (instance == nullptr || verdict == nullptr) {
      throw ctx::InvalidArgument("verify needs an instance and a verdict");
    }
    const auto& verifier = *static_cast<const SshsigVerifier*>(instance);
    if (verifier.verify(ctx::sdk::view(assertion_json), ctx::sdk::view(signing_bytes))) {
      *verdict = CTX_VERDICT_ACCEPTED;
    }
  });
}

const ctx_verifier_ops kOps = {
    /*struct_size=*/sizeof(ctx_verifier_ops),
    /*verify=*/verify,
};

const ctx_plugin_descriptor kDescriptor = {
    /*abi_major=*/CTX_ABI_MAJOR,
    /*struct_size=*/sizeof(ctx_plugin_descriptor),
    /*abi_minor_required=*/0,
    /*abi_minor_built=*/CTX_ABI_MINOR,
    /*kind=*/CTX_KIND_VERIFIER,
    /*id=*/"sshsig",
    /*version=*/"1.0.0",
    /*create=*/create,
    /*destroy=*/destroy,
    /*ops=*/&kOps,
};

}  // namespace

CTX_DEFINE_PLUGIN_ENTRY(kDescriptor)
