// One owner of one POSIX file descriptor, closed on destruction; move-only. The one fd RAII
// type of ctx (host and plugins). Not thread-safe (one owner).
#ifndef CTX_SUPPORT_UNIQUE_FD_HPP_
#define CTX_SUPPORT_UNIQUE_FD_HPP_

#include <unistd.h>

#include <utility>

namespace ctx::support {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  // Gives up ownership: the descriptor stays open and is returned.
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace ctx::support

#endif  // CTX_SUPPORT_UNIQUE_FD_HPP_
