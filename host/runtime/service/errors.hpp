// Typed failures of the managed query service, its query store and its artifact registry
// (runtime spec §3.3, §4.1, §7). Every message names what failed, never a path, body or secret.
#ifndef CTX_HOST_RUNTIME_SERVICE_ERRORS_HPP_
#define CTX_HOST_RUNTIME_SERVICE_ERRORS_HPP_

#include <string>
#include <utility>

#include "host/core/error.hpp"
#include "host/engine/managed_query_store.hpp"

namespace ctx::runtime {

// The query store's failures are the port's (host/engine/managed_query_store.hpp).
using engine::ManagedQueryStoreCapacityExceeded;
using engine::ManagedQueryStoreConflict;
using engine::ManagedQueryStoreCorruption;
using engine::ManagedQueryStoreError;
using engine::ManagedQueryStoreNotFound;
using engine::ManagedQueryStoreUnavailable;

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
