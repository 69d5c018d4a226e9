// The client side of `ctx serve` for commands that prefer a running server (`ctx hook`): one
// JSON-RPC 2.0 request over <state>/ctx.sock, one reply line. Plain blocking POSIX I/O with a
// deadline (no Asio: a hook's cold start stays small). Thread-safe (no shared state).
#ifndef CTX_HOST_SERVER_CLIENT_HPP_
#define CTX_HOST_SERVER_CLIENT_HPP_

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"

namespace ctx::server {

// The server answered with a JSON-RPC error. what() is the server's message (one line); code()
// is the server's ErrorCode when it sent one (a ctx::Error's: kUnavailable = back off, kAborted =
// re-read and decide, ...), kInvalidArgument for a malformed request, else kUnavailable.
class RpcError : public Error {
 public:
  RpcError(int rpc_code, const std::string& message);
  int rpc_code() const noexcept { return rpc_code_; }

 private:
  int rpc_code_;
};

// Sends {"jsonrpc":"2.0","id":1,"method":method,"params":params} to the server of `state_dir`
// and returns its result. nullopt when no server serves the state dir (no socket, nobody
// listening, a full listen queue: it is not accepting, or it is shutting down: it closed the
// connection unanswered, or before reading the whole request): the caller then does the work in
// process. Never waits longer than `deadline`.
// Errors: RpcError (the server's error reply); Unavailable (the connection broke or the reply
// did not come within `deadline`: the request may or may not have run; SystemError kUnavailable).
std::optional<core::Json> call_running_server(const std::filesystem::path& state_dir,
                                              std::string_view method, const core::Json& params,
                                              std::chrono::milliseconds deadline);

}  // namespace ctx::server

#endif  // CTX_HOST_SERVER_CLIENT_HPP_
