#include "host/plugins/abi_adapters.hpp"

#include <algorithm>
#include <array>
#include <ctx/loader/detail/ops_table.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/sdk/error.hpp>
#include <optional>
#include <utility>

namespace ctx::plugins {
namespace {

ctx_bytes as_bytes(std::string_view text) noexcept {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// Requires `plugin` to be of `kind` and returns it unchanged.
std::shared_ptr<const LoadedPlugin> require_kind(std::shared_ptr<const LoadedPlugin> plugin,
                                                 PluginKind kind) {
  if (plugin == nullptr) throw InvalidArgument("no plugin given");
  if (plugin->kind() != kind) {
    throw InvalidArgument("plugin " + plugin->identity().label() + " is not a " +
                          std::string(kind_name(kind)));
  }
  return plugin;
}

// Parses a plugin's reply; it must be a JSON object.
core::Json parse_reply(const std::string& text, const LoadedPlugin& plugin, const char* op) {
  core::Json reply;
  try {
    reply = core::parse_json(text);
  } catch (const Error& e) {
    throw PluginProtocolError("plugin " + plugin.identity().id + " " + op +
                              " returned invalid json: " + e.what());
  }
  if (!reply.is_object()) {
    throw PluginProtocolError("plugin " + plugin.identity().id + " " + op +
                              " returned invalid json: not an object");
  }
  return reply;
}

// ctx_body_source.read over an engine::InstallBodyLookup (the context): the bytes in chunks of at
// most 64 KiB, stopping at the first write the plugin refuses (its code returned unchanged).
ctx_code read_body(void* context, ctx_bytes path, ctx_sink* out) noexcept {
  constexpr std::size_t kChunk = 1 << 16;
  try {
    if (context == nullptr || out == nullptr || out->write == nullptr) return CTX_INVALID_ARGUMENT;
    const auto& lookup = *static_cast<const engine::InstallBodyLookup*>(context);
    const auto body = lookup(std::string_view(reinterpret_cast<const char*>(path.data),
                                              path.data == nullptr ? 0 : path.size));
    if (!body) return CTX_NOT_FOUND;
    for (std::size_t at = 0; at < body->size(); at += kChunk) {
      const std::size_t n = std::min(kChunk, body->size() - at);
      const ctx_code code =
          out->write(out->context, reinterpret_cast<const uint8_t*>(body->data() + at), n);
      if (code != CTX_OK) return code;
    }
    return CTX_OK;
  } catch (...) {
    return CTX_INTERNAL;
  }
}

// The C ABI's hook kinds (CTX_HOOK_KIND_*) as HookEvents.
constexpr std::array<std::pair<std::string_view, engine::HookEvent>, 7> kHookKinds = {{
    {CTX_HOOK_KIND_IGNORED, engine::HookEvent::kIgnored},
    {CTX_HOOK_KIND_SESSION_START, engine::HookEvent::kSessionStart},
    {CTX_HOOK_KIND_PROMPT, engine::HookEvent::kPrompt},
    {CTX_HOOK_KIND_TOOL_USE, engine::HookEvent::kToolUse},
    {CTX_HOOK_KIND_TURN_END, engine::HookEvent::kTurnEnd},
    {CTX_HOOK_KIND_COMPACT, engine::HookEvent::kCompact},
    {CTX_HOOK_KIND_SESSION_END, engine::HookEvent::kSessionEnd},
}};

std::optional<engine::HookEvent> hook_kind(std::string_view name) noexcept {
  for (const auto& [known, event] : kHookKinds) {
    if (known == name) return event;
  }
  return std::nullopt;
}

}  // namespace

// ---- AbiVerifier ---------------------------------------------------------------------------

AbiVerifier::AbiVerifier(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json)
    : instance_(require_kind(std::move(plugin), PluginKind::kVerifier), config_json),
      ops_(instance_.plugin().verifier_ops()) {}

engine::Verdict AbiVerifier::verify(std::string_view assertion_json,
                                    std::string_view signing_bytes) {
  ctx_error err{};
  uint32_t verdict = CTX_VERDICT_REJECTED;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->verify(instance_.handle(), as_bytes(assertion_json), as_bytes(signing_bytes),
                        &verdict, &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "verify");
  return verdict == CTX_VERDICT_ACCEPTED ? engine::Verdict::kAccepted : engine::Verdict::kRejected;
}

std::string AbiVerifier::id() const { return instance_.plugin().identity().id; }

std::string AbiVerifier::identity_digest() const { return instance_.plugin().identity().digest(); }

// ---- AbiInstaller --------------------------------------------------------------------------

AbiInstaller::AbiInstaller(std::shared_ptr<const LoadedPlugin> plugin,
                           std::string_view config_json)
    : instance_(require_kind(std::move(plugin), PluginKind::kInstaller), config_json),
      ops_(instance_.plugin().installer_ops()) {}

engine::TargetIdentity AbiInstaller::target_identity() {
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->target_identity(instance_.handle(), out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "target_identity");
  const core::Json reply = parse_reply(out.text(), instance_.plugin(), "target_identity");
  try {
    return engine::TargetIdentity::from_json(reply);
  } catch (const InvalidArgument& e) {
    throw PluginProtocolError("plugin " + instance_.plugin().identity().id +
                              " target_identity returned invalid json: " + e.what());
  }
}

core::Json AbiInstaller::call(Op op, const char* name, const core::Json& request) {
  const std::string request_text = core::canonical_json(request);
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = op(instance_.handle(), as_bytes(request_text), out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, name);
  return parse_reply(out.text(), instance_.plugin(), name);
}

core::Json AbiInstaller::install(const core::Json& request) {
  return call(ops_->install, "install", request);
}
std::optional<core::Json> AbiInstaller::install_from_source(
    const core::Json& request, const engine::InstallBodyLookup& bodies) {
  if (!CTX_TABLE_HAS(ops_, ctx_installer_ops, install_from_source) ||
      ops_->install_from_source == nullptr) {
    return std::nullopt;
  }
  const std::string request_text = core::canonical_json(request);
  const ctx_body_source source{sizeof(ctx_body_source),
                               const_cast<engine::InstallBodyLookup*>(&bodies), &read_body};
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->install_from_source(instance_.handle(), as_bytes(request_text), &source,
                                     out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "install_from_source");
  return parse_reply(out.text(), instance_.plugin(), "install_from_source");
}

core::Json AbiInstaller::activate(const core::Json& request) {
  return call(ops_->activate, "activate", request);
}
core::Json AbiInstaller::deactivate(const core::Json& request) {
  return call(ops_->deactivate, "deactivate", request);
}
core::Json AbiInstaller::reconcile(const core::Json& request) {
  return call(ops_->reconcile, "reconcile", request);
}

std::string AbiInstaller::id() const { return instance_.plugin().identity().id; }

std::string AbiInstaller::identity_digest() const {
  return instance_.plugin().identity().digest();
}

// ---- AbiHostAdapter ------------------------------------------------------------------------

std::string host_reply_line(std::string text, const core::Json& reply) {
  // Outside its strings (which hold no raw control character) JSON text may hold whitespace
  // only: without a line break, and starting and ending with the braces, it is one line that
  // holds the object and nothing else.
  const bool one_line = text.size() >= 2 && text.front() == '{' && text.back() == '}' &&
                        text.find_first_of("\n\r") == std::string::npos;
  return one_line ? std::move(text) : reply.dump();
}

engine::HookObservation decode_hook_observation(const core::Json& parsed,
                                                std::string_view plugin_id) {
  const auto refuse = [&](const std::string& what) {
    return PluginProtocolError("plugin " + std::string(plugin_id) +
                               " parse_hook returned no observation: " + what);
  };
  engine::HookObservation hook;
  const auto kind = parsed.find("kind");
  if (kind == parsed.end() || !kind->is_string()) throw refuse("no \"kind\"");
  const auto event = hook_kind(kind->get_ref<const std::string&>());
  if (!event) throw refuse("an unknown \"kind\"");
  hook.event = *event;
  const auto host_event = parsed.find("event");
  if (host_event == parsed.end() || !host_event->is_string()) throw refuse("no \"event\"");
  hook.host_event = host_event->get<std::string>();
  if (const auto scope = parsed.find("scope"); scope != parsed.end()) {
    if (!scope->is_object()) throw refuse("\"scope\" is not an object");
    hook.scope = *scope;
  }
  if (const auto signals = parsed.find("signals"); signals != parsed.end()) {
    if (!signals->is_array()) throw refuse("\"signals\" is not an array");
    for (const auto& signal : *signals) {
      if (!signal.is_string()) throw refuse("a signal is not a string");
      hook.signals.push_back(signal.get<std::string>());
    }
  }
  if (const auto work = parsed.find("work_ref"); work != parsed.end()) {
    if (!work->is_object()) throw refuse("\"work_ref\" is not an object");
    if (const auto id = work->find("id"); id != work->end()) {
      if (!id->is_string()) throw refuse("\"work_ref.id\" is not a string");
      hook.work_ref = id->get<std::string>();
    }
  }
  return hook;
}

core::Json encode_reply_request(const engine::ReplyRequest& request) {
  core::Json actions = core::Json::array();
  if (!request.presented.empty()) {
    core::Json capabilities = core::Json::array();
    for (const auto& id : request.presented) capabilities.push_back({{"capability_id", id}});
    actions.push_back({{"kind", "PresentBundle"}, {"payload", {{"capabilities", capabilities}}}});
  }
  core::Json out = {{"actions", std::move(actions)}};
  if (!request.host_event.empty()) out["event"] = request.host_event;
  if (request.challenge) {
    out["challenge"] = {{"challenge_digest", request.challenge->digest},
                        {"capability_id", request.challenge->capability_id}};
  }
  if (!request.installed.empty()) out["installed"] = request.installed;
  if (!request.deactivated.empty()) out["deactivated"] = request.deactivated;
  if (!request.stranded.empty()) {
    core::Json stranded = core::Json::array();
    for (const auto& row : request.stranded) {
      stranded.push_back({{"capability_id", row.capability_id}, {"expires_at", row.expires_at}});
    }
    out["stranded"] = std::move(stranded);
  }
  if (request.state_dir) out["state_dir"] = *request.state_dir;
  return out;
}

AbiHostAdapter::AbiHostAdapter(std::shared_ptr<const LoadedPlugin> plugin,
                               std::string_view config_json)
    : instance_(require_kind(std::move(plugin), PluginKind::kHostAdapter), config_json),
      ops_(instance_.plugin().host_adapter_ops()) {}

engine::HookObservation AbiHostAdapter::parse_hook(std::string_view payload_json) {
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->parse_hook(instance_.handle(), as_bytes(payload_json), out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "parse_hook");
  return decode_hook_observation(parse_reply(out.text(), instance_.plugin(), "parse_hook"),
                                 instance_.plugin().identity().id);
}

std::string AbiHostAdapter::render_reply(const engine::ReplyRequest& request) {
  const std::string text = core::canonical_json(encode_reply_request(request));
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->render_reply(instance_.handle(), as_bytes(text), out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "render_reply");
  const core::Json reply = parse_reply(out.text(), instance_.plugin(), "render_reply");
  return host_reply_line(std::move(out).text(), reply);
}

std::optional<core::Json> AbiHostAdapter::install_locations() {
  if (!CTX_TABLE_HAS(ops_, ctx_host_adapter_ops, install_locations) ||
      ops_->install_locations == nullptr) {
    return std::nullopt;
  }
  ctx_error err{};
  StringSink out;
  ctx_code code;
  {
    const auto lock = instance_.lock();
    code = ops_->install_locations(instance_.handle(), out.sink(), &err);
  }
  throw_if_error(code, err, instance_.plugin().identity().id, "install_locations");
  return parse_reply(out.text(), instance_.plugin(), "install_locations");
}

}  // namespace ctx::plugins
