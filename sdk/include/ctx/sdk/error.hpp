// ctx::Error: the root of every exception thrown by the host and by a plugin's own C++ code.
// Each error carries a stable ErrorCode whose numbers are the C ABI's CTX_* codes.
#ifndef CTX_SDK_ERROR_HPP_
#define CTX_SDK_ERROR_HPP_

#include <ctx/abi/plugin_abi.h>

#include <stdexcept>
#include <string>

namespace ctx {

// Canonical codes (gRPC numbering), spelled from plugin_abi.h. Persisted and sent on the wire.
enum class ErrorCode : int {
  kOk = CTX_OK,
  kCancelled = CTX_CANCELLED,
  kUnknown = CTX_UNKNOWN,
  kInvalidArgument = CTX_INVALID_ARGUMENT,
  kDeadlineExceeded = CTX_DEADLINE_EXCEEDED,
  kNotFound = CTX_NOT_FOUND,
  kAlreadyExists = CTX_ALREADY_EXISTS,
  kPermissionDenied = CTX_PERMISSION_DENIED,
  kResourceExhausted = CTX_RESOURCE_EXHAUSTED,
  kFailedPrecondition = CTX_FAILED_PRECONDITION,
  kAborted = CTX_ABORTED,
  kOutOfRange = CTX_OUT_OF_RANGE,
  kUnimplemented = CTX_UNIMPLEMENTED,
  kInternal = CTX_INTERNAL,
  kUnavailable = CTX_UNAVAILABLE,
  kDataLoss = CTX_DATA_LOSS,
  kUnauthenticated = CTX_UNAUTHENTICATED,
};

// Lower-case name of a code ("failed-precondition"); "unknown" for numbers outside the table.
inline const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kUnknown: return "unknown";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kDeadlineExceeded: return "deadline-exceeded";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kAlreadyExists: return "already-exists";
    case ErrorCode::kPermissionDenied: return "permission-denied";
    case ErrorCode::kResourceExhausted: return "resource-exhausted";
    case ErrorCode::kFailedPrecondition: return "failed-precondition";
    case ErrorCode::kAborted: return "aborted";
    case ErrorCode::kOutOfRange: return "out-of-range";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kDataLoss: return "data-loss";
    case ErrorCode::kUnauthenticated: return "unauthenticated";
  }
  return "unknown";
}

// Base of all ctx exceptions. `what()` states facts in lower case; keywords tests match are
// contract. Code: whatever the subclass says (kUnknown when thrown bare).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorCode code = ErrorCode::kUnknown)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// A caller passed a value that can never be valid. Code: kInvalidArgument. Retry: no.
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message)
      : Error(message, ErrorCode::kInvalidArgument) {}
};

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

}  // namespace ctx

#endif  // CTX_SDK_ERROR_HPP_
