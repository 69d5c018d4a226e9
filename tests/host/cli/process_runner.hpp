// Runs a real process (fork + execv) with bytes on stdin, capturing stdout and stderr, under a
// deadline: a child still running at the deadline is SIGKILLed and reported as timed out, so a
// hang fails a test instead of stalling it. Header-only; one call per thread.
#ifndef CTX_TESTS_HOST_CLI_PROCESS_RUNNER_HPP_
#define CTX_TESTS_HOST_CLI_PROCESS_RUNNER_HPP_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ctx::testing {

struct ProcessResult {
  bool exited = false;     // exited normally
  int code = -1;           // exit code when exited
  int signal = 0;          // the terminating signal otherwise
  bool timed_out = false;  // killed at the deadline
  std::string out;
  std::string err;
};

inline ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(60),
                                 const std::vector<std::string>& extra_env = {}) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  // This process's environment, where `extra_env` overrides: "NAME=VALUE" replaces NAME,
  // "NAME" alone removes it.
  const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    bool overridden = false;
    for (const auto& extra : extra_env) overridden = overridden || name_of(extra) == name_of(entry);
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& e : extra_env) {
    if (e.find('=') != std::string::npos) env_strings.push_back(e);
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  // Our own writes to a closed stdin must not kill the test.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  ProcessResult result;
  std::size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  const auto end = std::chrono::steady_clock::now() + deadline;
  char buffer[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (::poll(fds, n, static_cast<int>(std::min<long>(left.count(), 1000))) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = ::write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();  // the child closed stdin
        if (written == input.size()) {
          ::close(in_fd);
          in_fd = -1;
        }
      } else {
        const ssize_t r = ::read(fds[i].fd, buffer, sizeof buffer);
        std::string& sink = fds[i].fd == out_fd ? result.out : result.err;
        if (r > 0) {
          sink.append(buffer, static_cast<std::size_t>(r));
        } else {
          ::close(fds[i].fd);
          (fds[i].fd == out_fd ? out_fd : err_fd) = -1;
        }
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) ::close(fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::sigaction(SIGPIPE, &previous, nullptr);
  if (WIFEXITED(status)) {
    result.exited = true;
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

// What one `ctx` run gave: its exit code (-1 when it did not exit normally) and its output.
struct CtxRun {
  int code = -1;
  std::string out, err;
};

#ifdef CTX_BINARY
// Runs the built `ctx` with `args` and `input` on stdin, under a 120 s deadline.
inline CtxRun ctx_run(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), CTX_BINARY);
  const auto result = run_process(args, input, std::chrono::seconds(120));
  return {result.exited ? result.code : -1, result.out, result.err};
}
#endif

}  // namespace ctx::testing

#endif  // CTX_TESTS_HOST_CLI_PROCESS_RUNNER_HPP_
