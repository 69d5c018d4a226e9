// The `ctx serve` server: JSON-RPC 2.0, one message per line, over the Unix stream socket
// <state>/ctx.sock (0600). One server per state dir (flock on <state>/ctx.sock.lock). Methods come
// from a MethodTable (name -> handler); handlers run on a small worker pool under a per-request
// deadline, after a method's optional non-blocking fast path (FastHandler) found no answer on the
// connection's I/O thread. stop() (or SIGTERM/SIGINT when handle_signals) refuses new connections,
// lets in-flight requests finish, removes the socket file; run() then returns. The server also
// stops so by itself when its state dir or socket file is moved, removed or replaced under it, and
// after an idle time when one is set (ServerOptions::idle_exit).
#ifndef CTX_HOST_SERVER_SERVER_HPP_
#define CTX_HOST_SERVER_SERVER_HPP_

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "host/app/state_layout.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"

namespace ctx::server {

// The socket and its lock in the state dir (named in state_layout.hpp).
using runtime::kSocketFile;
using runtime::kSocketLockFile;
inline constexpr std::size_t kDefaultMaxRequestBytes = 1u << 20;

// JSON-RPC 2.0 error codes the server sends.
inline constexpr int kParseError = -32700;      // the line is not JSON
inline constexpr int kInvalidRequest = -32600;  // not a request object, or too large
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kDeadlineExceeded = -32001;  // the handler did not finish in time
inline constexpr int kShuttingDown = -32002;      // the server is stopping

// Thrown by a handler whose params are wrong; the reply is -32602 with the message.
class InvalidParams : public InvalidArgument {
 public:
  explicit InvalidParams(const std::string& message) : InvalidArgument(message) {}
};

// The JSON-RPC error code the server sends for `error`: its ErrorCode's integer (a ctx::Error
// with kOk, which is no error, as kUnknown). JSON-RPC's own -32xxx codes stay for transport
// faults and InvalidParams.
inline int rpc_code_of(const Error& error) noexcept {
  return error.code() == ErrorCode::kOk ? static_cast<int>(ErrorCode::kUnknown)
                                        : static_cast<int>(error.code());
}

// A method: params (object, array or null) -> result. Runs on a worker thread; must be
// thread-safe. InvalidParams -> -32602; ctx::Error -> rpc_code_of(error) (its ErrorCode:
// kUnavailable 14 = back off, kAborted 10 = re-read and decide, kFailedPrecondition 9 = not until
// the state changes) with its message (which must not carry secrets); anything else -> -32603
// "internal error".
using Handler = std::function<core::Json(const core::Json& params)>;

// A method's optional fast path: tried first, on the connection's I/O thread (no hop to the
// worker pool and back), for answers known without waiting (a remembered reply). It returns the
// result as compact JSON text, encoded when it was remembered: the reply carries it as is. It
// must not block (no lock waits, no busy waits, no plugin calls) and is bounded by its own work,
// not by the deadline; nullopt — or any exception — means "not known now": the request then goes
// to the worker pool's Handler as usual, which gives every error.
using FastHandler = std::function<std::optional<std::string>(const core::Json& params)>;

struct Method {
  Handler handler;
  FastHandler fast;  // may be empty
};

// Name -> method. Filled before the server starts; read-only afterwards.
class MethodTable {
 public:
  // Errors: InvalidArgument when `name` is empty or already registered.
  void add(std::string name, Handler handler, FastHandler fast = nullptr);
  const Method* find(std::string_view name) const noexcept;

 private:
  std::map<std::string, Method, std::less<>> methods_;
};

struct ServerOptions {
  std::filesystem::path state_dir;
  // One I/O thread: it runs the reactor and each completion itself (asio wakes no second I/O
  // thread per event); the workers do the slow work. More only for many busy connections.
  std::size_t io_threads = 1;
  std::size_t worker_threads = 4;
  std::size_t max_request_bytes = kDefaultMaxRequestBytes;  // without the newline
  std::chrono::milliseconds deadline{30'000};               // per request
  std::chrono::milliseconds drain_timeout{10'000};          // after stop(), then force-close
  bool handle_signals = false;                              // SIGTERM/SIGINT -> stop()
  std::ostream* log = nullptr;  // one JSON line per request; nullptr: no log
  bool log_requests = true;     // false: only the lines on why the server stopped by itself
  // No connection open for this long: the server stops as by stop(). Zero: never.
  std::chrono::milliseconds idle_exit{0};
  // How often the server checks that its state dir and socket file are still the ones it started
  // with (a directory moved or removed, a socket file removed or replaced: it stops), and its
  // idle time.
  std::chrono::milliseconds watch_interval{1'000};
  // An open file description of <state>/ctx.sock.lock handed down by the process that started
  // this server (ctx hook's auto-start, which holds the lock on it): the server takes the lock
  // over through it instead of opening the file. -1: none.
  int inherited_lock_fd = -1;
};

class Server {
 public:
  // Checks that state_dir is a private directory of this user (no symlink, no group/other
  // access), takes the per-state-dir lock, and binds and listens on <state>/ctx.sock (0600;
  // a stale socket file is replaced). Errors: FailedPrecondition (not private, missing, another
  // server running: the message names the state dir; an inherited_lock_fd that is not an open
  // description of this state dir's lock file), InvalidArgument (path too long), SystemError.
  Server(ServerOptions options, MethodTable methods);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Stops if running and removes the socket file.
  ~Server();

  // Serves until stopped and drained. Call once.
  void run();
  // Thread-safe; idempotent. Also safe before run().
  void stop();

  const std::filesystem::path& socket_path() const noexcept;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Registers `plugin.list` (the state dir's plugins.lock.json entries, without paths; the lock is
// read again only when its file changes).
void register_builtin_methods(MethodTable& table, const std::filesystem::path& state_dir);

// Registers the methods over the state dir's managed query service, each mirroring its CLI
// command's --json result (service_methods.cpp): `hook`, `query.prepare`, `query.reopen`,
// `desired.set`. Nothing is opened until the first request.
void register_service_methods(MethodTable& table, const std::filesystem::path& state_dir);

// How `ctx serve` was asked to run.
struct ServeConfig {
  std::chrono::seconds idle_exit{0};  // --idle-exit SECONDS; zero: never
  // The lock handed down by `ctx hook` (autostart.hpp's kLockFdVariable): the server was started
  // by a hook, logs one start line and the reason it stopped, never a line per request. -1: none.
  int inherited_lock_fd = -1;
};

// `ctx serve`: the built-in and service methods, signals handled, log on `log`. Returns the exit
// code (0 after a graceful stop, also one by itself: idle, state dir moved or removed; 1 when the
// server cannot start, with one line on `err`).
int serve(const std::filesystem::path& state_dir, std::ostream& log, std::ostream& err,
          const ServeConfig& config = {});

}  // namespace ctx::server

#endif  // CTX_HOST_SERVER_SERVER_HPP_
