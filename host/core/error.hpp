// The host's error vocabulary: ctx::Error (from the SDK, shared with plugins) plus generic types
// and CTX_CHECK for broken invariants (bugs abort; they are not exceptions).
#ifndef CTX_HOST_CORE_ERROR_HPP_
#define CTX_HOST_CORE_ERROR_HPP_

#include <ctx/sdk/error.hpp>

#include <string>

namespace ctx {

// The requested thing does not exist. Code: kNotFound. Retry: no.
class NotFound : public Error {
 public:
  explicit NotFound(const std::string& message) : Error(message, ErrorCode::kNotFound) {}
};

// The system is not in a state where the operation may run. Code: kFailedPrecondition.
// Retry: not until the state changes.
class FailedPrecondition : public Error {
 public:
  explicit FailedPrecondition(const std::string& message)
      : Error(message, ErrorCode::kFailedPrecondition) {}

 protected:
  // For a subclass whose reaction differs (style §6.2): a caller catching FailedPrecondition
  // still catches it (the tree mirrors the seeds' classes), while its code says whether to retry.
  FailedPrecondition(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// Stored bytes are not what was written or pinned. Code: kDataLoss. Retry: never.
class DataLoss : public Error {
 public:
  explicit DataLoss(const std::string& message) : Error(message, ErrorCode::kDataLoss) {}
};

// An operating-system or library call failed. Code: kInternal (kUnavailable when transient).
class SystemError : public Error {
 public:
  explicit SystemError(const std::string& message, ErrorCode code = ErrorCode::kInternal)
      : Error(message, code) {}
};

namespace core::detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line) noexcept;
}  // namespace core::detail

}  // namespace ctx

// Aborts with the condition's text when `condition` is false. For invariants only.
#define CTX_CHECK(condition) \
  ((condition) ? (void)0 : ::ctx::core::detail::check_failed(#condition, __FILE__, __LINE__))

#endif  // CTX_HOST_CORE_ERROR_HPP_
