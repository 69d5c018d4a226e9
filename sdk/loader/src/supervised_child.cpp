#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctx/loader/detail/unique_fd.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/supervised_child.hpp>
#include <ctx/sdk/error.hpp>
#include <exception>

namespace ctx::plugins {
namespace {

using detail::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxAnswerBytes = 1u << 20;
constexpr std::size_t kShownOutputBytes = 80;

void make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw SystemError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  read_end = UniqueFd(fds[0]);
  write_end = UniqueFd(fds[1]);
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Runs in the child; never returns.
[[noreturn]] void child_main(int answer_fd, int output_fd,
                             const std::function<std::string()>& work) {
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  std::string answer;
  try {
    answer = "ok " + work();
  } catch (const std::exception& e) {
    answer = std::string("error ") + e.what();
  } catch (...) {
    answer = "error unknown failure";
  }
  write_all(answer_fd, answer);
  ::_exit(0);
}

// Printable, bounded excerpt of what a child wrote.
std::string excerpt(const std::string& output) {
  std::string shown;
  for (const char c : output.substr(0, kShownOutputBytes)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
      shown += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      shown += hex;
    }
  }
  if (output.size() > kShownOutputBytes) shown += "...";
  return shown;
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string seconds_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

}  // namespace

std::string run_supervised(const std::string& plugin, std::chrono::milliseconds deadline,
                           const std::function<std::string()>& work) {
  UniqueFd answer_read, answer_write, output_read, output_write;
  make_pipe(answer_read, answer_write);
  make_pipe(output_read, output_write);
  std::fflush(nullptr);  // nothing buffered may be written twice by the child
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    answer_read.reset();
    output_read.reset();
    child_main(answer_write.get(), output_write.get(), work);
  }
  answer_write.reset();
  output_write.reset();

  const Clock::time_point until = Clock::now() + deadline;
  std::string answer, output;
  bool answer_open = true, output_open = true, timed_out = false;
  int status = 0;
  bool reaped = false;
  while (answer_open || output_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{answer_open ? answer_read.get() : -1, POLLIN, 0},
                     {output_open ? output_read.get() : -1, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 100)));
    if (n < 0 && errno != EINTR) break;
    char buffer[4096];
    const auto drain = [&](int index, UniqueFd& fd, bool& open, std::string& into) {
      if ((fds[index].revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
      const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
      if (got > 0) {
        if (into.size() < kMaxAnswerBytes) into.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        open = false;
      }
    };
    if (n > 0) {
      drain(0, answer_read, answer_open, answer);
      drain(1, output_read, output_open, output);
    }
    // The child may be gone while a grandchild still holds the output pipe: stop waiting then.
    if (!answer_open && !reaped && ::waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      break;
    }
  }
  if (output_open) {  // whatever the child wrote before it exited is still in the pipe
    ::fcntl(output_read.get(), F_SETFL, O_NONBLOCK);
    char buffer[4096];
    for (ssize_t got; (got = ::read(output_read.get(), buffer, sizeof buffer)) > 0;) {
      if (output.size() < kMaxAnswerBytes) output.append(buffer, static_cast<std::size_t>(got));
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  if (!reaped) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  const std::string name = "plugin " + plugin;
  const bool answered = answer.rfind("ok ", 0) == 0 || answer.rfind("error ", 0) == 0;
  if (timed_out && !answered) {
    throw PluginTrialFailed(name + " gave no answer within " + seconds_text(deadline));
  }
  if (WIFSIGNALED(status) && !(timed_out && answered)) {
    throw PluginTrialFailed(name + " was killed by " + signal_name(WTERMSIG(status)) +
                            (answered ? "" : " before answering"));
  }
  if (!answered) {
    throw PluginTrialFailed(name + " exited with status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                            " before answering");
  }
  if (timed_out) {
    throw PluginTrialFailed(name + " answered but did not exit within " + seconds_text(deadline));
  }
  if (!output.empty()) {
    throw PluginTrialFailed(name + " wrote to stdout/stderr (" + std::to_string(output.size()) +
                            " bytes: \"" + excerpt(output) +
                            "\"); plugins must log through the "
                            "host's log service");
  }
  if (answer.rfind("error ", 0) == 0) throw PluginTrialFailed(answer.substr(6));
  return answer.substr(3);
}

}  // namespace ctx::plugins
