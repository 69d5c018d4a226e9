// Activation execution (runtime spec §6.4, issue 6 item 8): sequences the engine's one-use claim,
// the installer's observation through the ActivationPort, the durable outcome and the idempotent
// ActionApplied receipt for one exact pending ActivateCapability. Every durable step passes a
// named crash point (crash_point.hpp), and every re-entry after a crash recovers to exactly one
// outcome: a claim without an outcome asks the installer's reconcile first. Used through
// EngineComposition::execute_activation.
#ifndef CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_
#define CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/engine.hpp"
#include "host/engine/ports/installer_port.hpp"
#include "host/engine/protocol.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {

// The activation could not be executed or settled. Code: kFailedPrecondition.
// Retry: not until the journal or claim state changes.
class ActivationExecutionError : public FailedPrecondition {
 public:
  explicit ActivationExecutionError(const std::string& message) : FailedPrecondition(message) {}
};

// Schema of the verification digest an applied activation outcome records:
// sha256(canon-A{"caller_verification_digest", "installer_verification_digest",
// "observed_material_identity_digest", "schema"}).
inline constexpr std::string_view kActivationVerificationSchema =
    "ctx.activation-verification-v1";

// Safe result of one execution: digests and flags only (no path, content or lease).
struct ActivationExecutionReport {
  // kApplied (durably recorded and settled), kFailed (the installer verified it is not active)
  // or kIndeterminate (no trustworthy observation). Only kApplied records an outcome; the
  // other two leave the claim open, and a later call recovers through the installer's reconcile.
  engine::Outcome outcome = engine::Outcome::kIndeterminate;
  bool claim_was_new = false;
  bool settled = false;
  std::string execution_binding_digest;
  // The verification digest (kActivationVerificationSchema) this call recorded; absent when the
  // outcome was recorded by an earlier call or nothing was recorded.
  std::optional<std::string> verification_digest;
  // Applied: the authorised MaterialIdentity digest (an applied outcome records only that one).
  // Failed / indeterminate: what the installer reported active, if anything.
  std::optional<std::string> observed_material_identity_digest;
  // The receipt transition this call committed; absent when nothing was committed by this call.
  std::optional<engine::Transition> transition;
};

// Safe result of one deactivation: kApplied (the installer verified the capability inactive; the
// ActionApplied receipt is committed, now or by an earlier call), kFailed (the installer reported
// it cannot; ActionFailed is committed and the engine blocks that deactivation) or kIndeterminate
// (nothing committed: the effect stays pending and a later call tries again).
// What a deactivation does besides settling the session's effect: kInstaller asks the installer
// to deactivate the capability; kRelease (another session still uses it) settles the effect as
// applied without calling the installer, leaving the capability where it is.
enum class DeactivationMode { kInstaller, kRelease };

struct DeactivationExecutionReport {
  engine::Outcome outcome = engine::Outcome::kIndeterminate;
  bool settled = false;
  // The receipt transition this call committed; absent when nothing was committed by this call.
  std::optional<engine::Transition> transition;
};

namespace detail {

// What one composition executes activations with. `activation` may be null: then only an already
// recorded outcome can be settled, and anything that needs the installer fails ("no activation
// actuator"). `journal_path` names the journal file; per-action execution locks live beside it.
struct ActivationActuators {
  engine::Engine& engine;
  engine::ActivationPort* activation;
  const std::filesystem::path& journal_path;
};

// Slot sha(canon-U{action_id, schema, stream_key}) of `<journal dir>/install-execution.lock`: one
// execution lock per action (install or activation), shared by every composition and process
// on the same journal, in one file.
LockSlot execution_lock_slot(const std::filesystem::path& journal_path,
                             const engine::HostAction& action);

// The body of EngineComposition::execute_activation (the caller holds the composition's lock).
ActivationExecutionReport execute_activation(const ActivationActuators& actuators,
                                             const engine::HostAction& action,
                                             const engine::InstallExecutionBinding& binding,
                                             std::string_view expected_host_descriptor_digest,
                                             std::string_view verification_digest);

// The body of EngineComposition::execute_deactivation (the caller holds the composition's lock).
// `clock` dates the receipt.
DeactivationExecutionReport execute_deactivation(const ActivationActuators& actuators,
                                                 const core::Clock& clock,
                                                 const engine::HostAction& action,
                                                 DeactivationMode mode);

}  // namespace detail
}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_ACTIVATION_EXECUTION_HPP_
