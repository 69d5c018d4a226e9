#include "host/server/client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctx/support/unique_fd.hpp>

#include "host/server/server.hpp"

namespace ctx::server {
namespace {

using Clock = std::chrono::steady_clock;

// Largest reply line read back (a hook reply is at most a few tens of KiB).
constexpr std::size_t kMaxReplyBytes = std::size_t{16} << 20;

using Fd = support::UniqueFd;

[[noreturn]] void broken(const std::string& why) {
  throw SystemError("ctx serve connection failed: " + why, ErrorCode::kUnavailable);
}

// Waits for `events` on `fd` until `until`.
void wait_for(int fd, short events, Clock::time_point until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) broken("no reply in time");
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) broken(std::strerror(errno));
  }
}

}  // namespace

namespace {

// The ErrorCode a server's error reply carries: its own for a ctx::Error (rpc_code_of); for
// JSON-RPC's codes, kInvalidArgument for a request the server refused as malformed and
// kUnavailable for the rest (the server could not serve it).
ErrorCode code_of_reply(int rpc_code) noexcept {
  if (rpc_code > static_cast<int>(ErrorCode::kOk) &&
      rpc_code <= static_cast<int>(ErrorCode::kUnauthenticated)) {
    return static_cast<ErrorCode>(rpc_code);
  }
  return rpc_code == kInvalidParams || rpc_code == kInvalidRequest ? ErrorCode::kInvalidArgument
                                                                   : ErrorCode::kUnavailable;
}

}  // namespace

RpcError::RpcError(int rpc_code, const std::string& message)
    : Error(message, code_of_reply(rpc_code)), rpc_code_(rpc_code) {}

std::optional<core::Json> call_running_server(const std::filesystem::path& state_dir,
                                              std::string_view method, const core::Json& params,
                                              std::chrono::milliseconds deadline) {
  const std::filesystem::path socket_path = state_dir / kSocketFile;
  struct stat st {};
  if (::lstat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) {
    return std::nullopt;  // no server here (or a socket that is not ours: never talk to it)
  }
  sockaddr_un address{};
  if (socket_path.native().size() >= sizeof(address.sun_path)) return std::nullopt;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.native().size() + 1);
  // Non-blocking: a blocking connect waits, without end, for a server whose listen queue is
  // full to accept (one hung or frozen); refused at once instead (EAGAIN), the caller goes on
  // without the server, as for a stale socket whose server is gone (ECONNREFUSED).
  const Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) broken(std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return std::nullopt;
  }
  const auto until = Clock::now() + deadline;
  std::string request =
      core::Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}}.dump(
          -1, ' ', false, core::Json::error_handler_t::strict);
  request += '\n';
  for (std::size_t sent = 0; sent < request.size();) {
    wait_for(fd.get(), POLLOUT, until);
    const ssize_t n =
        ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    // Closed before it read the request's newline (a server stopping, or one whose listener
    // closed with this connection still queued): the request never ran.
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return std::nullopt;
    if (n <= 0) broken(std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  std::string line;
  char chunk[65536];
  while (line.empty() || line.back() != '\n') {
    wait_for(fd.get(), POLLIN, until);
    const ssize_t n = ::recv(fd.get(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n == 0 && line.empty()) return std::nullopt;  // closed unanswered: it was stopping
    // Reset: the server closed with request bytes still unread, so the request never ran.
    if (n < 0 && errno == ECONNRESET && line.empty()) return std::nullopt;
    if (n <= 0) broken(n == 0 ? "the server closed the connection" : std::strerror(errno));
    line.append(chunk, static_cast<std::size_t>(n));
    if (line.size() > kMaxReplyBytes) broken("the reply is too large");
  }
  line.pop_back();
  const core::Json reply = core::Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || reply.value("jsonrpc", "") != "2.0")
    broken("the reply is not JSON-RPC");
  if (const auto error = reply.find("error"); error != reply.end()) {
    const int code = error->value("code", kInternalError);
    if (code == kShuttingDown) return std::nullopt;
    throw RpcError(code, error->value("message", std::string("ctx serve failed")));
  }
  const auto result = reply.find("result");
  if (result == reply.end()) broken("the reply has no result");
  return *result;
}

}  // namespace ctx::server
