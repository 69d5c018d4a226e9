// The built-in JSON-RPC method (plugin.list), and `ctx serve`.
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <tuple>

#include "host/app/plugins.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/wire.hpp"
#include "host/server/file_signature.hpp"
#include "host/server/server.hpp"

namespace ctx::server {

namespace fs = std::filesystem;

namespace {

// plugin.list: the lock is read (with all of LockFile's checks) once, then again only when its
// signature changes; concurrent requests share one cached result.
class PluginListMethod {
 public:
  explicit PluginListMethod(fs::path lock_path) : lock_path_(std::move(lock_path)) {}

  // No params (absent, {} or []). Result: {"plugins":[{kind,id,version,sha256,size,
  // abi:{major,minor},platform,needed}]} in the lock's (kind, id) order; paths are never sent.
  // The cached result while the lock file's signature holds, without waiting (FastHandler).
  std::optional<std::string> cached(const core::Json& params) {
    if (!params.is_null() && !params.empty()) return std::nullopt;
    const std::optional<FileSignature> now = file_signature(lock_path_);
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || !cached_ || now != signature_) return std::nullopt;
    return cached_text_;
  }

  core::Json operator()(const core::Json& params) {
    if (!params.is_null() && !params.empty()) {
      throw InvalidParams("plugin.list takes no params");
    }
    const std::lock_guard lock(mutex_);
    const std::optional<FileSignature> now = file_signature(lock_path_);
    if (cached_ && now == signature_) return *cached_;
    core::Json result = runtime::plugin_list_json(plugins::LockFile::load_or_empty(lock_path_));
    // Cache only what was read under a signature that did not move while reading.
    if (file_signature(lock_path_) == now) {
      signature_ = now;
      cached_ = result;
      cached_text_ = result.dump();
    } else {
      cached_.reset();
    }
    return result;
  }

 private:
  fs::path lock_path_;
  std::mutex mutex_;
  std::optional<FileSignature> signature_;  // GUARDED_BY(mutex_)
  std::optional<core::Json> cached_;        // GUARDED_BY(mutex_)
  std::string cached_text_;                 // GUARDED_BY(mutex_): cached_, encoded
};

}  // namespace

void register_builtin_methods(MethodTable& table, const fs::path& state_dir) {
  auto method = std::make_shared<PluginListMethod>(state_dir / runtime::kPluginLockFile);
  table.add(
      "plugin.list", [method](const core::Json& params) { return (*method)(params); },
      [method](const core::Json& params) { return method->cached(params); });
}

int serve(const fs::path& state_dir, std::ostream& log, std::ostream& err,
          const ServeConfig& config) {
  // A long-lived, mostly idle server: two malloc arenas (not one per busy thread) keep what the
  // workers freed reusable instead of resident in per-thread arenas.
  ::mallopt(M_ARENA_MAX, 2);
  // The log is a stream the operator chose (a pipe to a logger, say): a reader that went away
  // makes its writes fail, it must not kill the server (and every request in flight) by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    MethodTable table;
    register_builtin_methods(table, state_dir);
    register_service_methods(table, state_dir);
    ServerOptions options;
    options.state_dir = state_dir;
    options.handle_signals = true;
    options.log = &log;
    options.idle_exit = config.idle_exit;
    options.inherited_lock_fd = config.inherited_lock_fd;
    // Started by a hook: its log is a file in the state dir that nobody rotates, so it gets one
    // line when the server starts and one when it stops by itself, not one per request.
    const bool started_by_hook = config.inherited_lock_fd >= 0;
    options.log_requests = !started_by_hook;
    Server server(std::move(options), std::move(table));
    if (started_by_hook) {
      log << core::Json{{"event", "start"},
                        {"pid", ::getpid()},
                        {"idle_exit_s", config.idle_exit.count()}}
                 .dump()
          << std::endl;
    }
    server.run();
    return 0;
  } catch (const std::exception& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    err << "ctx serve: " << message << "\n";
    return 1;
  }
}

}  // namespace ctx::server
