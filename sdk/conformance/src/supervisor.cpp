#include "sdk/conformance/src/supervisor.hpp"

#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <iostream>
#include <sstream>
#include <utility>

namespace ctx::conformance::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Frames on the control pipe, child -> parent: one type byte, a 32-bit length, the payload.
constexpr char kBegin = 'B';    // payload: call name
constexpr char kEnd = 'E';      // no payload
constexpr char kFailure = 'F';  // payload: serialized ChildFailure
constexpr char kReport = 'R';   // payload: opaque bytes
constexpr char kDone = 'D';     // no payload
constexpr std::size_t kMaxFrame = 64u << 20;
// How much of each stream's output per call is quoted in a problem line.
constexpr std::size_t kQuotedOutput = 120;

int g_channel = -1;  // the control pipe's write end, inside a supervised child
int g_ack = -1;      // the acknowledgement pipe's read end, inside a supervised child

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(120);  // the parent is gone; nothing left to report to
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void send_frame(char type, const std::string& payload) {
  if (g_channel < 0) return;
  std::string frame(1, type);
  const auto size = static_cast<std::uint32_t>(payload.size());
  frame.append(reinterpret_cast<const char*>(&size), sizeof size);
  frame += payload;
  write_all(g_channel, frame.data(), frame.size());
}

// Waits until the parent has taken in a begin or end frame (and the output written before it).
void await_ack() {
  char byte = 0;
  for (;;) {
    const ssize_t n = ::read(g_ack, &byte, 1);
    if (n == 1) return;
    if (n < 0 && errno == EINTR) continue;
    ::_exit(121);  // the parent is gone
  }
}

void append_text(std::string& out, const std::string& text) {
  const auto size = static_cast<std::uint32_t>(text.size());
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out += text;
}

std::string serialize(const ChildFailure& f) {
  std::string out;
  const auto line = static_cast<std::int32_t>(f.line);
  out.append(reinterpret_cast<const char*>(&line), sizeof line);
  append_text(out, f.file);
  append_text(out, f.message);
  return out;
}

bool deserialize(const std::string& in, ChildFailure& f) {
  std::size_t at = 0;
  const auto take = [&](void* data, std::size_t size) {
    if (in.size() - at < size) return false;
    std::memcpy(data, in.data() + at, size);
    at += size;
    return true;
  };
  const auto take_text = [&](std::string& text) {
    std::uint32_t size = 0;
    if (!take(&size, sizeof size) || in.size() - at < size) return false;
    text.assign(in, at, size);
    at += size;
    return true;
  };
  std::int32_t line = 0;
  if (!take(&line, sizeof line) || !take_text(f.file) || !take_text(f.message)) return false;
  f.line = line;
  return at == in.size();
}

// Ignores SIGPIPE in the kit while it supervises: acknowledging a child that a plugin thread has
// just ended must be an EPIPE, not the kit's death. Restores the previous action when destroyed;
// the child restores it at once (restore_in_child), so the plugin runs with the kit's own action.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &previous_, nullptr); }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;
  void restore_in_child() const { ::sigaction(SIGPIPE, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

[[noreturn]] void run_child(const std::function<void()>& body, int control, int ack, int out,
                            int err) {
  ::setpgid(0, 0);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  ::close(out);
  ::close(err);
  g_channel = control;
  g_ack = ack;
  ::testing::TestPartResultArray results;
  {
    const ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    try {
      body();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the conformance kit failed: " << e.what();
    } catch (...) {
      ADD_FAILURE() << "the conformance kit failed with an unknown exception";
    }
  }
  for (int i = 0; i < results.size(); ++i) {
    const ::testing::TestPartResult& r = results.GetTestPartResult(i);
    if (!r.failed()) continue;
    send_frame(kFailure, serialize(ChildFailure{r.file_name() != nullptr ? r.file_name() : "",
                                                r.line_number(), r.message()}));
  }
  send_frame(kDone, {});
  ::_exit(0);
}

std::string seconds_text(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << static_cast<double>(duration.count()) / 1000.0 << " s";
  return text.str();
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string quoted(const std::string& bytes) {
  std::string out = "\"";
  for (const char c : bytes.substr(0, kQuotedOutput)) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  out += bytes.size() > kQuotedOutput ? "\"..." : "\"";
  return out;
}

// Output of one stream during one call (or between calls).
struct Written {
  std::string stream;
  std::string call;
  std::string bytes;
};

class Parent {
 public:
  Parent(pid_t child, int control, int ack, int out, int err,
         std::chrono::milliseconds call_deadline, std::chrono::milliseconds kit_deadline)
      : child_(child),
        ack_(ack),
        fds_{control, out, err},
        call_deadline_(call_deadline),
        kit_deadline_(kit_deadline),
        deadline_(Clock::now() + kit_deadline) {
    for (const int fd : fds_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  ~Parent() {
    for (const int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    ::close(ack_);
  }
  Parent(const Parent&) = delete;
  Parent& operator=(const Parent&) = delete;

  Supervision run() {
    // The child's end is seen through waitid(WNOWAIT), not through the pipes closing: processes
    // it left behind may hold them open. WNOWAIT keeps it a zombie, so its process group still
    // exists when finish() kills it.
    while (!child_exited()) {
      const auto now = Clock::now();
      if (now >= deadline_) {
        time_out();
        return finish();
      }
      pollfd polls[3];
      nfds_t count = 0;
      int which[3];
      for (int i = 0; i < 3; ++i) {
        if (fds_[i] < 0) continue;
        polls[count] = pollfd{fds_[i], POLLIN, 0};
        which[count++] = i;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now).count() + 1;
      const int ready = ::poll(polls, count, static_cast<int>(std::min<long long>(left, 20)));
      if (ready < 0 && errno != EINTR) throw SystemError("conformance kit could not poll a child");
      for (nfds_t i = 0; ready > 0 && i < count; ++i) {
        if ((polls[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) drain(which[i]);
      }
    }
    drain(0);  // the frames it sent just before it ended
    return finish();
  }

 private:
  bool child_exited() const {
    siginfo_t info{};
    const int got =
        ::waitid(P_PID, static_cast<id_t>(child_), &info, WEXITED | WNOHANG | WNOWAIT);
    return got == 0 && info.si_pid == child_;
  }

  void time_out() {
    supervision_.reason = "no answer within " +
                          seconds_text(in_call_ ? call_deadline_ : kit_deadline_);
    supervision_.call = in_call_ ? call_ : "";
    timed_out_ = true;
  }

  Supervision finish() {
    ::kill(-child_, SIGKILL);  // the child and anything it left behind in its group
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    drain(1);
    drain(2);
    if (!timed_out_ && !supervision_.answered) {
      supervision_.call = in_call_ ? call_ : "";
      if (WIFSIGNALED(status_)) {
        supervision_.reason = "killed by " + signal_name(WTERMSIG(status_));
      } else {
        supervision_.reason =
            "exited with status " + std::to_string(WEXITSTATUS(status_)) + " before answering";
      }
    }
    for (const Written& w : written_) {
      supervision_.output.push_back(
          "wrote to " + w.stream + " " +
          (w.call.empty() ? std::string("between plugin calls") : "during " + w.call) + ": " +
          quoted(w.bytes));
    }
    return std::move(supervision_);
  }

  // Reads what `index` (0 control, 1 stdout, 2 stderr) has now.
  void drain(int index) {
    int& fd = fds_[index];
    char buffer[1 << 16];
    while (fd >= 0) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        ::close(fd);
        fd = -1;
        return;
      }
      if (index == 0) {
        control_.append(buffer, static_cast<std::size_t>(n));
        parse_frames();
      } else {
        record_output(index == 1 ? "stdout" : "stderr", buffer, static_cast<std::size_t>(n));
      }
    }
  }

  void record_output(const std::string& stream, const char* data, std::size_t size) {
    const std::string call = in_call_ ? call_ : "";
    for (Written& w : written_) {
      if (w.stream == stream && w.call == call) {
        if (w.bytes.size() <= kQuotedOutput) w.bytes.append(data, size);
        return;
      }
    }
    written_.push_back(Written{stream, call, std::string(data, size)});
  }

  void parse_frames() {
    for (;;) {
      if (control_.size() < 5) return;
      std::uint32_t size = 0;
      std::memcpy(&size, control_.data() + 1, sizeof size);
      if (size > kMaxFrame) {
        supervision_.output.push_back("sent a malformed control frame");
        control_.clear();
        return;
      }
      if (control_.size() < 5 + std::size_t{size}) return;
      const char type = control_[0];
      std::string payload = control_.substr(5, size);
      control_.erase(0, 5 + std::size_t{size});
      handle(type, std::move(payload));
    }
  }

  // Lets the child go on after a begin or end frame. Attribution is exact because the child
  // waits: all output it wrote before the frame is in the pipes when the frame is handled, and
  // none written after it can be.
  void acknowledge() {
    const char byte = 'A';
    while (::write(ack_, &byte, 1) < 0 && errno == EINTR) {
    }
  }

  void handle(char type, std::string payload) {
    switch (type) {
      case kBegin:
        drain(1);
        drain(2);
        call_ = std::move(payload);
        in_call_ = true;
        deadline_ = Clock::now() + call_deadline_;
        acknowledge();
        break;
      case kEnd:
        drain(1);
        drain(2);
        in_call_ = false;
        call_.clear();
        deadline_ = Clock::now() + kit_deadline_;
        acknowledge();
        break;
      case kFailure: {
        ChildFailure failure;
        if (deserialize(payload, failure)) supervision_.failures.push_back(std::move(failure));
        break;
      }
      case kReport:
        supervision_.reports.push_back(std::move(payload));
        break;
      case kDone:
        drain(1);
        drain(2);
        supervision_.answered = true;
        break;
      default:
        break;
    }
  }

  pid_t child_;
  int ack_;
  int fds_[3];
  std::chrono::milliseconds call_deadline_;
  std::chrono::milliseconds kit_deadline_;
  Clock::time_point deadline_;
  std::string control_;
  std::string call_;
  bool in_call_ = false;
  bool timed_out_ = false;
  int status_ = 0;
  std::vector<Written> written_;
  Supervision supervision_;
};

}  // namespace

std::vector<std::string> Supervision::problems() const {
  std::vector<std::string> lines;
  if (!reason.empty()) {
    const char* verb = reason.rfind("killed", 0) == 0      ? "was "
                       : reason.rfind("no answer", 0) == 0 ? "gave "
                                                           : "";
    lines.push_back("the plugin " + std::string(verb) + reason + " (" +
                    (call.empty() ? std::string("between plugin calls") : "during " + call) + ")");
  }
  for (const std::string& line : output) lines.push_back("the plugin " + line);
  return lines;
}

Supervision supervise(const std::function<void()>& body, std::chrono::milliseconds call_deadline,
                      std::chrono::milliseconds kit_deadline) {
  // control and output: child -> parent; ack: parent -> child.
  int pipes[4][2];
  for (int i = 0; i < 4; ++i) {
    if (::pipe2(pipes[i], O_CLOEXEC) != 0) {
      for (int j = 0; j < i; ++j) {
        ::close(pipes[j][0]);
        ::close(pipes[j][1]);
      }
      throw SystemError("conformance kit could not create a pipe");
    }
  }
  int* control = pipes[0];
  int* ack = pipes[1];
  int* out = pipes[2];
  int* err = pipes[3];
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const IgnoreSigpipe sigpipe;
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (auto& p : pipes) {
      ::close(p[0]);
      ::close(p[1]);
    }
    throw SystemError("conformance kit could not fork");
  }
  if (pid == 0) {
    sigpipe.restore_in_child();
    ::close(control[0]);
    ::close(ack[1]);
    ::close(out[0]);
    ::close(err[0]);
    run_child(body, control[1], ack[0], out[1], err[1]);
  }
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins, both are the same
  ::close(control[1]);
  ::close(ack[0]);
  ::close(out[1]);
  ::close(err[1]);
  Parent parent(pid, control[0], ack[1], out[0], err[0], call_deadline, kit_deadline);
  return parent.run();
}

bool report_supervision(const Supervision& supervision) {
  for (const ChildFailure& f : supervision.failures) {
    if (f.file.empty()) {
      ADD_FAILURE() << f.message;
    } else {
      ADD_FAILURE_AT(f.file.c_str(), f.line) << f.message;
    }
  }
  for (const std::string& problem : supervision.problems()) ADD_FAILURE() << problem;
  return supervision.clean();
}

CallScope::CallScope(const std::string& name) {
  if (g_channel < 0) return;
  std::fflush(stdout);  // nothing of the kit's own (it writes nothing) or earlier calls lingers
  send_frame(kBegin, name);
  await_ack();
}

CallScope::~CallScope() {
  if (g_channel < 0) return;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  send_frame(kEnd, {});
  await_ack();
}

void send_report(const std::string& payload) { send_frame(kReport, payload); }

}  // namespace ctx::conformance::detail
