// Applied-only activation execution (runtime spec §6.4): sequences the engine's one-use claim,
// the verified applied outcome and the idempotent ActionApplied receipt for one exact pending
// ActivateCapability. Used through EngineComposition::execute_activation.
#ifndef CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_
#define CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_

#include <optional>
#include <string>

#include "host/core/error.hpp"
#include "host/engine/protocol.hpp"

namespace ctx::runtime {

// The activation could not be executed or settled. Code: kFailedPrecondition.
// Retry: not until the journal or claim state changes.
class ActivationExecutionError : public FailedPrecondition {
 public:
  explicit ActivationExecutionError(const std::string& message) : FailedPrecondition(message) {}
};

// Safe result of an applied activation: digests and flags only (no path, content or lease).
struct ActivationExecutionReport {
  std::string outcome;  // always "applied"
  bool claim_was_new = false;
  bool settled = false;
  std::string execution_binding_digest;
  std::string verification_digest;
  std::string observed_material_identity_digest;
  // The receipt transition this call committed; absent when the activation was already settled.
  std::optional<engine::Transition> transition;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_
