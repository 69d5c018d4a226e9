// Typed failures of the managed query service, its query store and its artifact registry
// (runtime spec §3.3, §4.1, §7). Every message names what failed, never a path, body or secret.
#ifndef CTX_HOST_RUNTIME_SERVICE_ERRORS_HPP_
#define CTX_HOST_RUNTIME_SERVICE_ERRORS_HPP_

#include <string>
#include <utility>

#include "host/core/error.hpp"

namespace ctx::runtime {

// Base of every query-store failure. Retry: see the subclass.
class ManagedQueryStoreError : public Error {
 public:
  explicit ManagedQueryStoreError(const std::string& message,
                                  ErrorCode code = ErrorCode::kFailedPrecondition)
      : Error(message, code) {}
};
// The store file or its directory cannot be used safely. Code: kUnavailable.
class ManagedQueryStoreUnavailable : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreUnavailable(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kUnavailable) {}
};
// A stored row, reference or schema failed authentication or validation. Code: kDataLoss.
class ManagedQueryStoreCorruption : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreCorruption(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kDataLoss) {}
};
// The request conflicts with durable content. Code: kAlreadyExists (style §6.2). Retry: no (the
// same request meets the same content).
class ManagedQueryStoreConflict : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreConflict(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kAlreadyExists) {}
};
// A row or size bound would be exceeded. Code: kResourceExhausted.
class ManagedQueryStoreCapacityExceeded : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreCapacityExceeded(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kResourceExhausted) {}
};
// No such record. Code: kNotFound.
class ManagedQueryStoreNotFound : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreNotFound(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kNotFound) {}
};

// Base of the service's own failures. Code: kFailedPrecondition (a subclass may say otherwise).
// Retry: not until the state changes.
class ManagedQueryServiceError : public FailedPrecondition {
 public:
  explicit ManagedQueryServiceError(const std::string& message) : FailedPrecondition(message) {}

 protected:
  ManagedQueryServiceError(const std::string& message, ErrorCode code)
      : FailedPrecondition(message, code) {}
};
// The query's plan is no longer the stream's committed plan. Code: kAborted. Retry: yes; reopen
// the stream's current plan (or re-snapshot), then decide again.
class ManagedQuerySupersededError : public ManagedQueryServiceError {
 public:
  explicit ManagedQuerySupersededError(const std::string& message)
      : ManagedQueryServiceError(message, ErrorCode::kAborted) {}
};
// The journal head moved under an operation that required it to stay. Code: kAborted.
// Retry: yes; re-read the head, then decide again.
class ManagedQueryHeadDriftError : public ManagedQueryServiceError {
 public:
  explicit ManagedQueryHeadDriftError(const std::string& message)
      : ManagedQueryServiceError(message, ErrorCode::kAborted) {}
};
// The session's pending consent was requested under an install policy that has since changed, so
// its challenge can no longer be published or decided; it stays pending until `expires_at` (the
// install action's expiry), when recovery expires it. Retry: after that, or with the policy
// restored.
class ManagedConsentPolicyChangedError : public ManagedQueryServiceError {
 public:
  ManagedConsentPolicyChangedError(std::string capability_id, std::string expires_at)
      : ManagedQueryServiceError("managed pending consent policy snapshot is no longer exact"),
        capability_id_(std::move(capability_id)),
        expires_at_(std::move(expires_at)) {}
  const std::string& capability_id() const noexcept { return capability_id_; }
  const std::string& expires_at() const noexcept { return expires_at_; }

 private:
  std::string capability_id_;
  std::string expires_at_;
};
// The desired choice conflicts with the committed plan or the journal.
class ManagedDesiredSetConflictError : public ManagedQueryServiceError {
 public:
  using ManagedQueryServiceError::ManagedQueryServiceError;
};
// Another desired choice or lifecycle effect must settle first. Code: kUnavailable.
// Retry: later (with backoff), or after recovery.
class ManagedDesiredSetBusyError : public ManagedQueryServiceError {
 public:
  explicit ManagedDesiredSetBusyError(const std::string& message)
      : ManagedQueryServiceError(message, ErrorCode::kUnavailable) {}
};
// The request does not name the exact latest committed predecessor. Code: kAborted (as its base).
class ManagedDesiredSetSupersededError : public ManagedQuerySupersededError {
 public:
  using ManagedQuerySupersededError::ManagedQuerySupersededError;
};

// The artifact registry refused a handle, a manifest or an artifact. Code: kFailedPrecondition.
class ManagedArtifactRegistryError : public FailedPrecondition {
 public:
  explicit ManagedArtifactRegistryError(const std::string& message) : FailedPrecondition(message) {}
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_ERRORS_HPP_
