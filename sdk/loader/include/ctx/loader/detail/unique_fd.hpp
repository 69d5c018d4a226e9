// Small RAII helpers for POSIX file descriptors and temporary files. Implementation detail of
// ctx::plugins; not thread-safe (each object has one owner).
#ifndef CTX_LOADER_DETAIL_UNIQUE_FD_HPP_
#define CTX_LOADER_DETAIL_UNIQUE_FD_HPP_

#include <unistd.h>

#include <ctx/support/unique_fd.hpp>
#include <string>
#include <utility>

namespace ctx::plugins::detail {

// Owns one file descriptor: the one fd RAII type of ctx.
using UniqueFd = support::UniqueFd;

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

#endif  // CTX_LOADER_DETAIL_UNIQUE_FD_HPP_
