// The engine's protocol, state, reducer, replay and coordinator errors (spec §9). The store
// errors the journal port names (RevisionConflict, EventIdCollision, ...) live with that port.
// Thread-safe (plain exception types).
#ifndef CTX_HOST_ENGINE_ERRORS_HPP_
#define CTX_HOST_ENGINE_ERRORS_HPP_

#include <cstdint>
#include <string>

#include "host/core/error.hpp"

namespace ctx::engine {

// A typed identity (§1.7) or planning value is malformed or its digest does not recompute.
// Code: kInvalidArgument. Retry: no.
class InvalidIdentityError : public InvalidArgument {
 public:
  explicit InvalidIdentityError(const std::string& message) : InvalidArgument(message) {}
};

// A malformed event, action, transition or scope (§1.2–1.6). Code: kInvalidArgument. Retry: no.
class ProtocolValidationError : public InvalidArgument {
 public:
  explicit ProtocolValidationError(const std::string& message) : InvalidArgument(message) {}
};

// protocol_version is not 1. Code: kInvalidArgument. Retry: no.
class UnsupportedProtocolVersionError : public ProtocolValidationError {
 public:
  explicit UnsupportedProtocolVersionError(const std::string& message)
      : ProtocolValidationError(message) {}
};

// Engine state that fails decoding or a cross-reference invariant (§1.9). Code: kInvalidArgument.
class StateValidationError : public InvalidArgument {
 public:
  explicit StateValidationError(const std::string& message) : InvalidArgument(message) {}
};

// Base of the reducer's refusals. Code: kInvalidArgument. Retry: no.
class ReducerError : public InvalidArgument {
 public:
  explicit ReducerError(const std::string& message) : InvalidArgument(message) {}
};

// The event is semantically invalid for the current state (§3). Code: kInvalidArgument.
class InvalidEventError : public ReducerError {
 public:
  explicit InvalidEventError(const std::string& message) : ReducerError(message) {}
};

// The event was derived from another revision than the state's ("expected revision R, received
// N"). Code: kInvalidArgument (the store's RevisionConflict is the retryable kAborted twin).
class RevisionConflictError : public ReducerError {
 public:
  RevisionConflictError(std::int64_t expected, std::int64_t received)
      : ReducerError("expected revision " + std::to_string(expected) + ", received " +
                     std::to_string(received)),
        expected_(expected),
        received_(received) {}
  std::int64_t expected() const noexcept { return expected_; }
  std::int64_t received() const noexcept { return received_; }

 private:
  std::int64_t expected_;
  std::int64_t received_;
};

// Base of the replay boundary's refusals (§4). Code: kInvalidArgument. Retry: no.
class ReplayError : public InvalidArgument {
 public:
  explicit ReplayError(const std::string& message) : InvalidArgument(message) {}
};
class ReplayValidationError : public ReplayError {
 public:
  explicit ReplayValidationError(const std::string& message) : ReplayError(message) {}
};
// An unsafe token, retention or observation payload. Code: kInvalidArgument.
class ReplayPrivacyError : public ReplayValidationError {
 public:
  explicit ReplayPrivacyError(const std::string& message) : ReplayValidationError(message) {}
};
// A stored record does not bind to its replay input. Code: kInvalidArgument.
class ReplayBindingError : public ReplayValidationError {
 public:
  explicit ReplayBindingError(const std::string& message) : ReplayValidationError(message) {}
};
// The replay boundary does not accept this event kind here. Code: kInvalidArgument.
class UnsupportedReplayEvent : public ReplayValidationError {
 public:
  explicit UnsupportedReplayEvent(const std::string& message) : ReplayValidationError(message) {}
};

// Coordinator refusals of authority (§5, §9). Code: kFailedPrecondition. Retry: not until the
// journal state changes.
class CtxEngineError : public Error {
 public:
  explicit CtxEngineError(const std::string& message)
      : Error(message, ErrorCode::kFailedPrecondition) {}

 protected:
  CtxEngineError(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// Replaying the journal did not reproduce the stored bytes. Code: kDataLoss. Retry: never.
class ReplayDivergenceError : public CtxEngineError {
 public:
  ReplayDivergenceError(std::int64_t revision, const std::string& component)
      : CtxEngineError("deterministic replay diverged at revision " + std::to_string(revision) +
                           ": " + component,
                       ErrorCode::kDataLoss),
        revision_(revision),
        component_(component) {}
  std::int64_t revision() const noexcept { return revision_; }
  const std::string& component() const noexcept { return component_; }

 private:
  std::int64_t revision_;
  std::string component_;
};

// No reducer is registered for the requested version. Code: kFailedPrecondition.
class UnsupportedReducerVersionError : public CtxEngineError {
 public:
  explicit UnsupportedReducerVersionError(const std::string& message) : CtxEngineError(message) {}
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_ERRORS_HPP_
