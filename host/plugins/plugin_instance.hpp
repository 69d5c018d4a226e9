// PluginInstance: RAII over a loaded plugin's create/destroy, with the host services
// (ctx_host_api) it lends the instance; plus the helpers every ABI call site uses.
// Thread-safety: a PluginInstance serialises calls through lock(); the plugin ABI does not let
// the host share an instance between threads without it.
#ifndef CTX_HOST_PLUGINS_PLUGIN_INSTANCE_HPP_
#define CTX_HOST_PLUGINS_PLUGIN_INSTANCE_HPP_

#include <ctx/abi/plugin_abi.h>

#include <ctx/loader/plugin_loader.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "host/core/time.hpp"

namespace ctx::plugins {

// Throws ctx::Error(code, "plugin <id> <op> failed: <text>") when `code` is not CTX_OK; codes
// outside the ABI table become kUnknown. `err` is read only then (bounded, NUL not trusted).
void throw_if_error(ctx_code code, const ctx_error& err, std::string_view plugin_id,
                    std::string_view op);

// A host-owned ctx_sink that appends into a std::string, refusing (CTX_RESOURCE_EXHAUSTED) past
// `limit` bytes. Non-copyable, non-movable (the sink points at it).
class StringSink {
 public:
  explicit StringSink(std::size_t limit = 16u << 20);
  StringSink(const StringSink&) = delete;
  StringSink& operator=(const StringSink&) = delete;

  ctx_sink* sink() noexcept { return &sink_; }
  const std::string& text() const& noexcept { return text_; }
  std::string text() && noexcept { return std::move(text_); }

 private:
  static ctx_code write(void* context, const uint8_t* data, size_t size) noexcept;
  std::string text_;
  std::size_t limit_;
  ctx_sink sink_;
};

// Host services lent to instances: log -> stderr ("[ctx plugin <id>] LEVEL message"), progress
// ignored, cancelled -> 0, now -> `clock`. `clock` must outlive this object. Non-movable.
class HostServices {
 public:
  HostServices(std::string plugin_id, const core::Clock& clock);
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  const ctx_host_api* api() const noexcept { return &api_; }

 private:
  static void log(void* context, int32_t level, const char* message, size_t size) noexcept;
  static void progress(void* context, uint64_t done, uint64_t total) noexcept;
  static int32_t cancelled(void* context) noexcept;
  static int64_t now_unix_micros(void* context) noexcept;

  std::string plugin_id_;
  const core::Clock& clock_;
  ctx_host_api api_;
};

// One instance of a loaded plugin, created with `config_json` (may be empty) and destroyed with
// the object. Holds the plugin resident for its whole life. Non-copyable, non-movable.
class PluginInstance {
 public:
  // Errors: ctx::Error with the plugin's code when create fails (no instance then exists).
  // `clock` must outlive the instance; by default the process-wide core::SystemClock.
  PluginInstance(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json);
  PluginInstance(std::shared_ptr<const LoadedPlugin> plugin, std::string_view config_json,
                 const core::Clock& clock);
  // Calls destroy; a failure is logged to stderr, never thrown.
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  void* handle() const noexcept { return handle_; }
  const LoadedPlugin& plugin() const noexcept { return *plugin_; }
  // Hold while calling an op on handle(): instances are single-threaded by the ABI.
  std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mutex_); }

 private:
  std::shared_ptr<const LoadedPlugin> plugin_;  // declared first: the code outlives the instance
  HostServices services_;
  void* handle_ = nullptr;
  mutable std::mutex mutex_;
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_PLUGIN_INSTANCE_HPP_
