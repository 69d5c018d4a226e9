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
// The request conflicts with durable content. Code: kAborted. Retry: no (same content).
class ManagedQueryStoreConflict : public ManagedQueryStoreError {
 public:
  explicit ManagedQueryStoreConflict(const std::string& message)
      : ManagedQueryStoreError(message, ErrorCode::kAborted) {}
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

// Base of the service's own failures. Code: kFailedPrecondition.
class ManagedQueryServiceError : public FailedPrecondition {
 public:
  explicit ManagedQueryServiceError(const std::string& message) : FailedPrecondition(message) {}
};
// The query's plan is no longer the stream's committed plan.
class ManagedQuerySupersededError : public ManagedQueryServiceError {
 public:
  using ManagedQueryServiceError::ManagedQueryServiceError;
};
// The journal head moved under an operation that required it to stay.
class ManagedQueryHeadDriftError : public ManagedQueryServiceError {
 public:
  using ManagedQueryServiceError::ManagedQueryServiceError;
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
// Another desired choice or lifecycle effect must settle first. Retry: after recovery.
class ManagedDesiredSetBusyError : public ManagedQueryServiceError {
 public:
  using ManagedQueryServiceError::ManagedQueryServiceError;
};
// The request does not name the exact latest committed predecessor.
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
