#include "host/server/autostart.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctx/support/unique_fd.hpp>
#include <string>
#include <vector>

#include "host/server/server.hpp"

extern char** environ;

namespace ctx::server {
namespace {

using Fd = support::UniqueFd;

// The started server's descriptors: 0 /dev/null, 1 and 2 the log, 3 the lock.
constexpr int kInheritedLockFd = 3;

// In the forked child (async-signal-safe calls only): descriptors in place, every other one
// closed, default signal handling, then exec. Never returns.
[[noreturn]] void exec_server(int lock, int log, const char* executable, char* const* argv,
                              char* const* envp) noexcept {
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (const int signal : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) {
    ::sigaction(signal, &default_action, nullptr);
  }
  const int null = ::open("/dev/null", O_RDWR);
  // Above every target first, so that no dup2 below overwrites a descriptor still to be moved.
  const int high_null = ::fcntl(null, F_DUPFD, 10);
  const int high_log = ::fcntl(log, F_DUPFD, 10);
  const int high_lock = ::fcntl(lock, F_DUPFD, 10);
  if (null < 0 || high_null < 0 || high_log < 0 || high_lock < 0) ::_exit(126);
  if (::dup2(high_null, 0) < 0 || ::dup2(high_log, 1) < 0 || ::dup2(high_log, 2) < 0 ||
      ::dup2(high_lock, kInheritedLockFd) < 0) {
    ::_exit(126);
  }
  if (::close_range(kInheritedLockFd + 1, ~0U, 0) != 0) {
    const long max = ::sysconf(_SC_OPEN_MAX);
    for (int fd = kInheritedLockFd + 1; fd < (max > 0 && max < 65536 ? max : 65536); ++fd) {
      ::close(fd);
    }
  }
  if (::chdir("/") != 0) ::_exit(126);
  ::execve(executable, argv, envp);
  ::_exit(127);
}

}  // namespace

AutoStart start_server_detached(const std::filesystem::path& state_dir,
                                const std::filesystem::path& executable,
                                std::chrono::seconds idle_exit) noexcept {
  try {
    const std::filesystem::path lock_path = state_dir / kSocketLockFile;
    const Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (lock.get() < 0) return AutoStart::kFailed;
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      return errno == EWOULDBLOCK ? AutoStart::kLockHeld : AutoStart::kFailed;
    }
    const std::filesystem::path log_path = state_dir / kServeLogFile;
    const Fd log(
        ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
    struct stat st {};
    if (log.get() < 0 || ::fstat(log.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return AutoStart::kFailed;
    }
    if (st.st_size > kServeLogLimit && ::ftruncate(log.get(), 0) != 0) return AutoStart::kFailed;

    // Everything the child needs is built before fork: after it, only system calls.
    std::vector<std::string> args = {"ctx",         "serve",
                                     "--state",     state_dir.string(),
                                     "--idle-exit", std::to_string(idle_exit.count())};
    const std::string lock_variable =
        std::string(kLockFdVariable) + "=" + std::to_string(kInheritedLockFd);
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, lock_variable.c_str(), std::strlen(kLockFdVariable) + 1) != 0) {
        env.emplace_back(*e);
      }
    }
    env.push_back(lock_variable);
    std::vector<char*> argv, envp;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    for (std::string& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);

    const pid_t child = ::fork();
    if (child < 0) return AutoStart::kFailed;
    if (child == 0) {
      // A new session without a controlling terminal, then a grandchild that is not its leader
      // (it can never acquire one) and is not our child (we wait for nothing but this one).
      if (::setsid() < 0) ::_exit(1);
      const pid_t grandchild = ::fork();
      if (grandchild != 0) ::_exit(grandchild < 0 ? 1 : 0);
      exec_server(lock.get(), log.get(), executable.c_str(), argv.data(), envp.data());
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    // Our descriptors close here; the lock stays held through the server's copy.
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? AutoStart::kStarted : AutoStart::kFailed;
  } catch (...) {
    return AutoStart::kFailed;
  }
}

}  // namespace ctx::server
