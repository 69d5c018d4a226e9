// Thin adapters from each plugin kind's C ops table to the engine's ports. Each owns one
// PluginInstance (which keeps the plugin's code resident) and serialises calls on it.
// Requests go in as canonical JSON; replies come back through a host-owned sink and must be JSON
// objects. Non-OK codes are rethrown as ctx::Error carrying the code (throw_if_error).
// Thread-safety: every method may be called from any thread; calls are serialised per adapter.
#ifndef CTX_HOST_PLUGINS_ABI_ADAPTERS_HPP_
#define CTX_HOST_PLUGINS_ABI_ADAPTERS_HPP_

#include <ctx/loader/plugin_loader.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/engine/ports/host_adapter_port.hpp"
#include "host/engine/ports/installer_port.hpp"
#include "host/engine/ports/verifier_port.hpp"
#include "host/plugins/plugin_instance.hpp"

namespace ctx::plugins {

// VerifierPort over a verifier plugin. A verdict is kAccepted only when the plugin wrote exactly
// CTX_VERDICT_ACCEPTED and returned CTX_OK.
class AbiVerifier final : public engine::VerifierPort {
 public:
  // Creates an instance with `config_json` (the verifier's key material, JSON).
  // Errors: InvalidArgument when `plugin` is not a verifier; ctx::Error from create.
  AbiVerifier(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json);

  engine::Verdict verify(std::string_view assertion_json, std::string_view signing_bytes) override;
  std::string id() const override;
  std::string identity_digest() const override;

 private:
  PluginInstance instance_;
  const ctx_verifier_ops* ops_;
};

// InstallerPort over an installer plugin.
class AbiInstaller final : public engine::InstallerPort {
 public:
  // Errors: InvalidArgument when `plugin` is not an installer; ctx::Error from create.
  AbiInstaller(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json);

  engine::TargetIdentity target_identity() override;
  core::Json install(const core::Json& request) override;
  core::Json activate(const core::Json& request) override;
  core::Json deactivate(const core::Json& request) override;
  core::Json reconcile(const core::Json& request) override;
  // Through the plugin's install_from_source op with a ctx_body_source over `bodies` (64 KiB
  // writes); std::nullopt when the plugin's table has no such op (absent or null: ABI minor 0).
  std::optional<core::Json> install_from_source(const core::Json& request,
                                                const engine::InstallBodyLookup& bodies) override;
  std::string id() const override;
  std::string identity_digest() const override;

 private:
  using Op = ctx_code (*)(void*, ctx_bytes, ctx_sink*, ctx_error*);
  core::Json call(Op op, const char* name, const core::Json& request);

  PluginInstance instance_;
  const ctx_installer_ops* ops_;
};

// A host adapter's reply `text` (which parses as `reply`) as one line for the host's stdout: the
// text itself when it is one line that starts with '{' and ends with '}', else `reply` encoded.
std::string host_reply_line(std::string text, const core::Json& reply);

// parse_hook's answer (one JSON object) as an observation: "kind" one of HookEvent's wire names,
// "event" the host's name (strings); "scope" an object, "signals" strings, "work_ref.id" a
// string, each when present. Errors: PluginProtocolError naming the plugin and what is wrong.
engine::HookObservation decode_hook_observation(const core::Json& parsed,
                                                std::string_view plugin_id);

// `request` as render_reply's JSON (plugins/hosts/common/reply_request.hpp's shape): the
// presented ids as one PresentBundle action, empty members left out.
core::Json encode_reply_request(const engine::ReplyRequest& request);

// HostAdapterPort over a host-adapter plugin.
class AbiHostAdapter final : public engine::HostAdapterPort {
 public:
  // Errors: InvalidArgument when `plugin` is not a host adapter; ctx::Error from create.
  AbiHostAdapter(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json);

  // Errors: the plugin's code; PluginProtocolError when its answer is not an observation.
  engine::HookObservation parse_hook(std::string_view payload_json) override;
  std::string render_reply(const engine::ReplyRequest& request) override;
  // std::nullopt when the plugin's table has no install_locations op (absent or null).
  std::optional<core::Json> install_locations() override;

 private:
  PluginInstance instance_;
  const ctx_host_adapter_ops* ops_;
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_ABI_ADAPTERS_HPP_
