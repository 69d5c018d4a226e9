// Errors of the planner: retrieval, authentication, net-benefit selection and the benefit audit
// store port (spec §8, §9). Thread-safe (plain exception types).
#ifndef CTX_HOST_ENGINE_PLANNING_ERRORS_HPP_
#define CTX_HOST_ENGINE_PLANNING_ERRORS_HPP_

#include <string>

#include "host/core/error.hpp"

namespace ctx::engine::planning {

// Planner input or a port's output violates the closed planning contract.
// Code: kInvalidArgument. Retry: no.
class PlannerValidationError : public InvalidArgument {
 public:
  explicit PlannerValidationError(const std::string& message) : InvalidArgument(message) {}
};

// A net-benefit input or result violates the deterministic contract ("search exceeded its
// deterministic evaluation bound", ...). Code: kInvalidArgument. Retry: no.
class BenefitValidationError : public InvalidArgument {
 public:
  explicit BenefitValidationError(const std::string& message) : InvalidArgument(message) {}
};

// The pinned catalog snapshot cannot serve candidates; the plan degrades to
// "catalog-unavailable". Code: kUnavailable. Retry: with a repaired or re-pinned artifact.
class CandidateSourceUnavailable : public Error {
 public:
  explicit CandidateSourceUnavailable(const std::string& message)
      : Error(message, ErrorCode::kUnavailable) {}

 protected:
  // For a subclass whose retry contract differs; catching the base still degrades the plan.
  CandidateSourceUnavailable(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// The graph artifact's bytes do not hash to the pinned sha256. It is a CandidateSourceUnavailable,
// so planning degrades. Code: kDataLoss. Retry: never with these bytes.
class GraphArtifactPinMismatch : public CandidateSourceUnavailable {
 public:
  explicit GraphArtifactPinMismatch(const std::string& message)
      : CandidateSourceUnavailable(message, ErrorCode::kDataLoss) {}
};

// One candidate's effect authority (material / install bundle) is missing or malformed; only that
// candidate is dropped. Code: kFailedPrecondition. Retry: not until the catalog changes.
class CandidateAuthorityUnavailable : public Error {
 public:
  explicit CandidateAuthorityUnavailable(const std::string& message)
      : Error(message, ErrorCode::kFailedPrecondition) {}
};

// The benefit audit store cannot durably record a result for an operational reason (open, lock,
// filesystem). The plan degrades to "planner-failed". Code: kUnavailable. Retry: with backoff.
class BenefitAuditStoreUnavailable : public Error {
 public:
  explicit BenefitAuditStoreUnavailable(const std::string& message)
      : Error(message, ErrorCode::kUnavailable) {}
};

// Base of the audit store's integrity refusals. Code: whatever the subclass says. Retry: never.
class BenefitAuditStoreError : public Error {
 public:
  BenefitAuditStoreError(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// The digest is already stored with other bytes. Code: kAlreadyExists. Retry: no.
class BenefitAuditDigestCollision : public BenefitAuditStoreError {
 public:
  explicit BenefitAuditDigestCollision(const std::string& message)
      : BenefitAuditStoreError(message, ErrorCode::kAlreadyExists) {}
};

// A stored row's bytes, length, content digest or the schema is not what was written.
// Code: kDataLoss. Retry: never.
class BenefitAuditCorruption : public BenefitAuditStoreError {
 public:
  explicit BenefitAuditCorruption(const std::string& message)
      : BenefitAuditStoreError(message, ErrorCode::kDataLoss) {}
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_ERRORS_HPP_
