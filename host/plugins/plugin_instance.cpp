#include "host/plugins/plugin_instance.hpp"

#include <cstring>
#include <iostream>
#include <new>

#include "host/core/error.hpp"

namespace ctx::plugins {
namespace {

const core::SystemClock& system_clock() {
  static const core::SystemClock clock;
  return clock;
}

const char* level_name(int32_t level) {
  switch (level) {
    case CTX_LOG_DEBUG: return "debug";
    case CTX_LOG_INFO: return "info";
    case CTX_LOG_WARN: return "warn";
    case CTX_LOG_ERROR: return "error";
    default: return "log";
  }
}

}  // namespace

void throw_if_error(ctx_code code, const ctx_error& err, std::string_view plugin_id,
                    std::string_view op) {
  if (code == CTX_OK) return;
  const std::string text(err.message, ::strnlen(err.message, sizeof err.message));
  const ErrorCode error_code = (code > CTX_OK && code <= CTX_UNAUTHENTICATED)
                                   ? static_cast<ErrorCode>(code)
                                   : ErrorCode::kUnknown;
  std::string message = "plugin " + std::string(plugin_id) + " " + std::string(op) + " failed (" +
                        error_code_name(error_code) + ")";
  if (!text.empty()) message += ": " + text;
  throw Error(message, error_code);
}

StringSink::StringSink(std::size_t limit) : limit_(limit), sink_{this, &StringSink::write} {}

ctx_code StringSink::write(void* context, const uint8_t* data, size_t size) noexcept {
  auto* self = static_cast<StringSink*>(context);
  if (size == 0) return CTX_OK;
  if (data == nullptr) return CTX_INVALID_ARGUMENT;
  if (size > self->limit_ - self->text_.size()) return CTX_RESOURCE_EXHAUSTED;
  try {
    self->text_.append(reinterpret_cast<const char*>(data), size);
  } catch (const std::bad_alloc&) {
    return CTX_RESOURCE_EXHAUSTED;
  }
  return CTX_OK;
}

HostServices::HostServices(std::string plugin_id, const core::Clock& clock)
    : plugin_id_(std::move(plugin_id)),
      clock_(clock),
      api_{sizeof(ctx_host_api),       this, &HostServices::log, &HostServices::progress,
           &HostServices::cancelled, &HostServices::now_unix_micros} {}

void HostServices::log(void* context, int32_t level, const char* message, size_t size) noexcept {
  const auto* self = static_cast<const HostServices*>(context);
  try {
    std::string line = "[ctx plugin " + self->plugin_id_ + "] " + level_name(level) + ": ";
    if (message != nullptr) line.append(message, size);
    line += '\n';
    std::cerr << line << std::flush;
  } catch (...) {
    // Logging is best effort; nothing may cross back into the plugin.
  }
}

void HostServices::progress(void* /*context*/, uint64_t /*done*/, uint64_t /*total*/) noexcept {}

int32_t HostServices::cancelled(void* /*context*/) noexcept { return 0; }

int64_t HostServices::now_unix_micros(void* context) noexcept {
  return static_cast<const HostServices*>(context)->clock_.now().micros;
}

PluginInstance::PluginInstance(std::shared_ptr<const LoadedPlugin> plugin,
                               std::string_view config_json)
    : PluginInstance(std::move(plugin), config_json, system_clock()) {}

PluginInstance::PluginInstance(std::shared_ptr<const LoadedPlugin> plugin,
                               std::string_view config_json, const core::Clock& clock)
    : plugin_(std::move(plugin)), services_(plugin_ ? plugin_->identity().id : "", clock) {
  CTX_CHECK(plugin_ != nullptr);
  ctx_error err{};
  const ctx_bytes config{reinterpret_cast<const uint8_t*>(config_json.data()), config_json.size()};
  void* handle = nullptr;
  const ctx_code code = plugin_->descriptor().create(services_.api(), config, &handle, &err);
  throw_if_error(code, err, plugin_->identity().id, "create");
  handle_ = handle;  // may be null for a stateless plugin
}

PluginInstance::~PluginInstance() {
  ctx_error err{};
  const ctx_code code = plugin_->descriptor().destroy(handle_, &err);
  if (code != CTX_OK) {
    std::cerr << "[ctx] plugin " << plugin_->identity().id << " destroy failed ("
              << error_code_name(static_cast<ErrorCode>(code)) << "): "
              << std::string(err.message, ::strnlen(err.message, sizeof err.message)) << "\n";
  }
}

}  // namespace ctx::plugins
