// Test helpers for the server: a blocking newline-delimited client over a Unix socket (plain
// POSIX, so it checks the server's wire format, not Asio's), and a private temporary state dir.
#ifndef CTX_TESTS_HOST_SERVER_RPC_CLIENT_HPP_
#define CTX_TESTS_HOST_SERVER_RPC_CLIENT_HPP_

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

namespace ctx::server::testing {

class RpcClient {
 public:
  RpcClient() = default;
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;
  ~RpcClient() {
    if (fd_ >= 0) ::close(fd_);
  }

  // False when the server refuses (no socket, nobody listening).
  bool connect(const std::filesystem::path& socket) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    return true;
  }

  // Writes all of `bytes`; false on EPIPE and the like (never SIGPIPE).
  bool send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // One reply line (without the newline), or nullopt at EOF/error.
  std::optional<std::string> read_line() {
    for (;;) {
      if (const auto nl = pending_.find('\n'); nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      pending_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  std::optional<std::string> call(std::string_view line) {
    if (!send_all(std::string(line) + "\n")) return std::nullopt;
    return read_line();
  }

  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
  std::string pending_;
};

// Sends the JSON-RPC 2.0 request {id, method, params} and parses its reply line; a lost
// connection is a test failure naming the method, and a null result.
inline nlohmann::json call(RpcClient& client, int id, const std::string& method,
                           const nlohmann::json& params) {
  const auto line = client.call(
      nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}
          .dump());
  EXPECT_TRUE(line.has_value()) << method;
  return line ? nlohmann::json::parse(*line) : nlohmann::json();
}

// A fresh 0700 directory under the system temp dir, removed afterwards. Kept short: socket
// paths are limited to 107 bytes.
class TempStateDir {
 public:
  TempStateDir() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("ctx-srv-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    std::filesystem::create_directory(path_);
    ::chmod(path_.c_str(), 0700);
  }
  TempStateDir(const TempStateDir&) = delete;
  TempStateDir& operator=(const TempStateDir&) = delete;
  ~TempStateDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Waits up to 10 s for `path` to exist.
inline bool wait_for_file(const std::filesystem::path& path) {
  for (int i = 0; i < 1000; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Runs the ctx binary with `args` (stdin from `stdin_text`, stderr discarded); returns its exit
// status and stdout.
inline std::pair<int, std::string> run_ctx(const std::string& args,
                                           const std::string& stdin_text = "") {
  char pattern[] = "/tmp/ctx-run-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return {-1, ""};
  const std::filesystem::path io(pattern);
  std::ofstream(io / "in") << stdin_text;
  const std::string command = std::string(CTX_BINARY) + " " + args + " <" + (io / "in").string() +
                              " >" + (io / "out").string() + " 2>/dev/null";
  const int status = std::system(command.c_str());
  std::ifstream reader(io / "out");
  std::stringstream text;
  text << reader.rdbuf();
  std::error_code ignored;
  std::filesystem::remove_all(io, ignored);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// `ctx init` (bundled plugins pinned) and the example catalog imported into `state`.
inline bool prepare_state_dir(const std::filesystem::path& state) {
  return run_ctx("init --state " + state.string()).first == 0 &&
         run_ctx("catalog import " + std::string(CTX_SOURCE_DIR) + "/examples/catalog --state " +
                 state.string())
                 .first == 0;
}

}  // namespace ctx::server::testing

#endif  // CTX_TESTS_HOST_SERVER_RPC_CLIENT_HPP_
