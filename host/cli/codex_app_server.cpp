#include "host/cli/codex_app_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "host/core/error.hpp"

namespace ctx::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxLineBytes = 16u << 20;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

fs::path find_codex(const std::optional<fs::path>& explicit_path,
                    const std::optional<std::string>& path_env) {
  if (explicit_path) {
    if (::access(explicit_path->c_str(), X_OK) != 0) {
      throw NotFound("--codex " + explicit_path->string() + " is not an executable");
    }
    return fs::absolute(*explicit_path);
  }
  std::string_view rest = path_env ? std::string_view(*path_env) : std::string_view();
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const fs::path dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (!dir.is_absolute()) continue;
    const fs::path candidate = dir / "codex";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw NotFound("codex was not found on PATH: give --codex PATH");
}

CodexAppServer::CodexAppServer(const fs::path& codex, const fs::path& cwd,
                               std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    close_fd(in_pipe[0]);
    close_fd(in_pipe[1]);
    throw SystemError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const std::string program = codex.string();
  const std::string cwd_text = cwd.string();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1]}) close_fd(*fd);
    throw SystemError(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (::dup2(in_pipe[0], STDIN_FILENO) < 0 || ::dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
        null < 0 || ::dup2(null, STDERR_FILENO) < 0 || ::chdir(cwd_text.c_str()) != 0) {
      ::_exit(126);
    }
    char* args[] = {const_cast<char*>(program.c_str()), const_cast<char*>("app-server"), nullptr};
    ::execv(args[0], args);
    ::_exit(127);
  }
  pid_ = pid;
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  try {
    call("initialize", {{"clientInfo", {{"name", "ctx"}, {"version", "1"}}}});
    send({{"method", "initialized"}});
  } catch (...) {
    stop();
    throw;
  }
}

CodexAppServer::~CodexAppServer() { stop(); }

void CodexAppServer::stop() noexcept {
  close_fd(to_child_);  // end of input: the app server exits
  close_fd(from_child_);
  if (pid_ <= 0) return;
  for (int waited_ms = 0; waited_ms < 2000; waited_ms += 20) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_ || (done < 0 && errno != EINTR)) {
      pid_ = -1;
      return;
    }
    ::usleep(20 * 1000);
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void CodexAppServer::send(const core::Json& message) {
  const std::string line = message.dump() + "\n";
  std::size_t written = 0;
  ::signal(SIGPIPE, SIG_IGN);
  while (written < line.size()) {
    const ssize_t n = ::write(to_child_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FailedPrecondition("codex app-server stopped reading its input");
    written += static_cast<std::size_t>(n);
  }
}

std::string CodexAppServer::read_line(std::string_view method) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw FailedPrecondition("codex app-server did not answer " + std::string(method) +
                               " within " + std::to_string(timeout_.count() / 1000) + " s");
    }
    pollfd pfd{from_child_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw FailedPrecondition("codex app-server exited before it answered " + std::string(method));
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    if (buffer_.size() > kMaxLineBytes) {
      throw FailedPrecondition("codex app-server sent a line over 16 MiB");
    }
  }
}

core::Json CodexAppServer::call(std::string_view method, const core::Json& params) {
  const long id = next_id_++;
  send({{"id", id}, {"method", std::string(method)}, {"params", params}});
  for (;;) {
    const std::string line = read_line(method);
    const core::Json message = core::Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!message.is_object()) {
      throw FailedPrecondition("codex app-server sent a line that is not a JSON object");
    }
    const auto found = message.find("id");
    if (found == message.end() || !found->is_number_integer() || found->get<long>() != id) {
      continue;  // a notification, or a request ctx does not serve
    }
    if (const auto error = message.find("error"); error != message.end()) {
      const auto text = error->is_object() ? error->find("message") : error->end();
      throw FailedPrecondition(
          "codex app-server refused " + std::string(method) + ": " +
          (text != error->end() && text->is_string() ? text->get<std::string>() : error->dump()));
    }
    const auto result = message.find("result");
    if (result == message.end()) {
      throw FailedPrecondition("codex app-server answered " + std::string(method) +
                               " without a result");
    }
    return *result;
  }
}

CodexHookList list_codex_hooks(CodexAppServer& server, const fs::path& cwd) {
  const core::Json result =
      server.call("hooks/list", {{"cwds", core::Json::array({cwd.string()})}});
  CodexHookList list;
  const auto text = [](const core::Json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  const auto data = result.find("data");
  if (data == result.end() || !data->is_array()) {
    throw FailedPrecondition("codex app-server answered hooks/list without data");
  }
  for (const core::Json& entry : *data) {
    if (!entry.is_object()) continue;
    if (const auto warnings = entry.find("warnings");
        warnings != entry.end() && warnings->is_array()) {
      for (const core::Json& warning : *warnings) {
        if (warning.is_string()) list.warnings.push_back(warning.get<std::string>());
      }
    }
    const auto hooks = entry.find("hooks");
    if (hooks == entry.end() || !hooks->is_array()) continue;
    for (const core::Json& hook : *hooks) {
      if (!hook.is_object()) continue;
      list.hooks.push_back({text(hook, "key"), text(hook, "sourcePath"), text(hook, "command"),
                            text(hook, "currentHash"), text(hook, "trustStatus")});
    }
  }
  return list;
}

void trust_codex_hooks(CodexAppServer& server, const std::vector<CodexHook>& hooks) {
  core::Json state = core::Json::object();
  for (const CodexHook& hook : hooks) state[hook.key] = {{"trusted_hash", hook.current_hash}};
  server.call("config/batchWrite", {{"edits", core::Json::array({{{"keyPath", "hooks.state"},
                                                                  {"mergeStrategy", "upsert"},
                                                                  {"value", state}}})}});
}

}  // namespace ctx::cli
