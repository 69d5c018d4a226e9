// Small RAII helpers for POSIX file descriptors and temporary files. Implementation detail of
// ctx::plugins; not thread-safe (each object has one owner).
#ifndef CTX_HOST_PLUGINS_DETAIL_UNIQUE_FD_HPP_
#define CTX_HOST_PLUGINS_DETAIL_UNIQUE_FD_HPP_

#include <unistd.h>

#include <string>
#include <utility>

namespace ctx::plugins::detail {

// Owns one file descriptor (-1 = none) and closes it on destruction. Move-only.
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
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives up ownership: the descriptor stays open and is returned.
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Unlinks `path` on destruction unless release() was called. Not copyable.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void release() noexcept { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace ctx::plugins::detail

#endif  // CTX_HOST_PLUGINS_DETAIL_UNIQUE_FD_HPP_
