// The one-use authority port (spec §6.4–6.5): an action the journal emitted (InstallCapability
// or ActivateCapability) is claimed once (durable claim bound to an execution binding), its
// observed outcome is recorded once (bound to the claim), and the claim is settled once — by
// the receipt append (JournalStore::append with a SettlementGuard), in the same transaction.
// Speaks plain values and canon-U JSON text, never reducer types. Trusted time comes from the
// implementation's core::Clock. Implementation: store::SqliteJournalStore (same file and
// connection as the journal).
#ifndef CTX_HOST_ENGINE_CLAIM_STORE_HPP_
#define CTX_HOST_ENGINE_CLAIM_STORE_HPP_

#include <optional>
#include <string>
#include <string_view>

#include "host/engine/journal_store.hpp"
#include "host/engine/stream_id.hpp"

namespace ctx::engine {

// ---- Errors (spec §9). All are EngineStoreErrors. ----

// Code: kAlreadyExists. Retry: no; read the status and continue from it.
class InstallActionAlreadyClaimed : public EngineStoreError {
 public:
  explicit InstallActionAlreadyClaimed(const std::string& m)
      : EngineStoreError(m, ErrorCode::kAlreadyExists) {}
};
// Trusted now >= action expires_at before the claim. Code: kDeadlineExceeded. Retry: no.
class InstallActionClaimExpired : public EngineStoreError {
 public:
  explicit InstallActionClaimExpired(const std::string& m)
      : EngineStoreError(m, ErrorCode::kDeadlineExceeded) {}
};
// A receipt tried to settle an unclaimed action. Code: kFailedPrecondition. Retry: no.
class InstallActionClaimRequired : public EngineStoreError {
 public:
  explicit InstallActionClaimRequired(const std::string& m)
      : EngineStoreError(m, ErrorCode::kFailedPrecondition) {}
};
// The claim already has its terminal settlement. Code: kAlreadyExists. Retry: no.
class InstallActionClaimSettled : public EngineStoreError {
 public:
  explicit InstallActionClaimSettled(const std::string& m)
      : EngineStoreError(m, ErrorCode::kAlreadyExists) {}
};
// No durable claim / no verified outcome where one is required. Code: kFailedPrecondition.
class InstallExecutionOutcomeRequired : public EngineStoreError {
 public:
  explicit InstallExecutionOutcomeRequired(const std::string& m)
      : EngineStoreError(m, ErrorCode::kFailedPrecondition) {}
};
// The action is bound to a different outcome, binding or result material.
// Code: kFailedPrecondition. Retry: no.
class InstallExecutionOutcomeConflict : public EngineStoreError {
 public:
  explicit InstallExecutionOutcomeConflict(const std::string& m)
      : EngineStoreError(m, ErrorCode::kFailedPrecondition) {}
};
// Code: kAlreadyExists. Retry: no; read the status and continue from it.
class ActivationActionAlreadyClaimed : public EngineStoreError {
 public:
  explicit ActivationActionAlreadyClaimed(const std::string& m)
      : EngineStoreError(m, ErrorCode::kAlreadyExists) {}
};
// "expired before claim" / "expired before observation". Code: kDeadlineExceeded. Retry: no.
class ActivationActionClaimExpired : public EngineStoreError {
 public:
  explicit ActivationActionClaimExpired(const std::string& m)
      : EngineStoreError(m, ErrorCode::kDeadlineExceeded) {}
};
// Code: kFailedPrecondition. Retry: no.
class ActivationExecutionOutcomeRequired : public EngineStoreError {
 public:
  explicit ActivationExecutionOutcomeRequired(const std::string& m)
      : EngineStoreError(m, ErrorCode::kFailedPrecondition) {}
};
// Code: kFailedPrecondition. Retry: no.
class ActivationExecutionOutcomeConflict : public EngineStoreError {
 public:
  explicit ActivationExecutionOutcomeConflict(const std::string& m)
      : EngineStoreError(m, ErrorCode::kFailedPrecondition) {}
};
// Code: kAlreadyExists. Retry: no.
class ActivationActionClaimSettled : public EngineStoreError {
 public:
  explicit ActivationActionClaimSettled(const std::string& m)
      : EngineStoreError(m, ErrorCode::kAlreadyExists) {}
};

// ---- Values ----

// Claim an action the journal emitted. action_json is the exact canon-U HostAction text the
// issuing record's transition carries (its action_id, kind, precondition_revision, expires_at
// and payload are read from it). The head must still be at expected_revision /
// expected_head_record_digest (else RevisionConflict).
struct ClaimRequest {
  StreamId stream;
  Revision expected_revision = 0;
  std::string expected_head_record_digest;
  std::string action_json;
  std::string authorization_digest;      // computed by the coordinator (spec §2.2)
  std::string execution_binding_json;    // canon-A InstallExecutionBinding text
  std::string execution_binding_digest;  // its binding_digest
  // Activation only: the lineage's install_action_content_digest. When set, the install claim
  // with that action content digest must be applied and settled, and trusted now must not
  // precede its outcome's observed_at ("trusted utc clock moved before installation").
  std::optional<std::string> installed_by_action_content_digest;
};

// A durable claim row (spec §6.2). action_kind is kInstallCapability or kActivateCapability,
// stored and digested as its kActionKindStrings spelling (the activation claim digest does not
// cover it; the activation table does not store it).
struct ActionClaim {
  StreamId stream;
  std::string action_id;
  std::string action_content_digest;
  ActionKind action_kind = ActionKind::kInstallCapability;
  Revision precondition_revision = 0;
  std::string action_json;
  std::string issuing_record_digest;
  Revision claimed_head_revision = 0;
  std::string claimed_head_record_digest;
  std::string claimed_head_state_digest;
  std::string action_expires_at;
  std::string claimed_at;
  std::string authorization_digest;
  std::string execution_binding_json;
  std::string execution_binding_digest;
  std::string claim_digest;

  friend bool operator==(const ActionClaim&, const ActionClaim&) = default;
};

// What an install driver verified; persisted (outcome rows, outcome digests) as its
// kInstallOutcomeStrings spelling, "applied" / "failed".
enum class InstallOutcome : int { kApplied = 1, kFailed = 2 };
inline constexpr core::EnumStrings<InstallOutcome, 2> kInstallOutcomeStrings{
    "install outcome", {InstallOutcome::kApplied, InstallOutcome::kFailed}, {"applied", "failed"}};

// The persisted spelling of `outcome`, from kInstallOutcomeStrings.
constexpr std::string_view install_outcome_name(InstallOutcome outcome) noexcept {
  return kInstallOutcomeStrings.to_string(outcome);
}

// Record what an install driver verified. applied requires observed material (and it must
// equal expected_result_material_identity_digest when that is given); failed requires none.
// An "indeterminate" reconcile is not recorded: the claim stays unsettled.
struct InstallOutcomeRequest {
  StreamId stream;
  std::string action_json;
  std::string execution_binding_digest;
  InstallOutcome outcome = InstallOutcome::kApplied;
  std::optional<std::string> observed_material_identity_digest;
  std::string verification_digest;
  // The action's authorized result material identity digest (from its payload).
  std::optional<std::string> expected_result_material_identity_digest;
};

// Record what an activation verifier observed (always material present; no failed outcome).
struct ActivationOutcomeRequest {
  StreamId stream;
  std::string action_json;
  std::string execution_binding_digest;
  std::string observed_material_identity_digest;
  std::string verification_digest;
};

// A durable outcome row. `outcome` is set for install outcomes only.
struct ExecutionOutcome {
  StreamId stream;
  std::string action_id;
  std::string action_content_digest;
  std::string claim_digest;
  std::string execution_binding_digest;
  std::optional<InstallOutcome> outcome;
  std::optional<std::string> observed_material_identity_digest;
  std::string verification_digest;
  std::string observed_at;
  std::string outcome_digest;

  // The guard that settles this outcome through JournalStore::append.
  SettlementGuard settlement_guard() const;

  friend bool operator==(const ExecutionOutcome&, const ExecutionOutcome&) = default;
};

// Durable progress of one install action (spec §6.5). Unclaimed: all false / nullopt.
struct InstallExecutionStatus {
  bool claimed = false;
  bool outcome_recorded = false;
  bool settled = false;
  std::optional<std::string> execution_binding_digest;
  std::optional<InstallOutcome> outcome;
  std::optional<std::string> outcome_digest;
  std::optional<std::string> observed_at;

  friend bool operator==(const InstallExecutionStatus&, const InstallExecutionStatus&) = default;
};

// Durable progress of one activation action (no outcome field).
struct ActivationExecutionStatus {
  bool claimed = false;
  bool outcome_recorded = false;
  bool settled = false;
  std::optional<std::string> execution_binding_digest;
  std::optional<std::string> outcome_digest;
  std::optional<std::string> observed_at;

  friend bool operator==(const ActivationExecutionStatus&,
                         const ActivationExecutionStatus&) = default;
};

// ---- Digests (spec §2.2), over the rows' stored fields ----
std::string install_claim_digest(const ActionClaim& claim);
std::string activation_claim_digest(const ActionClaim& claim);
std::string install_outcome_digest(const ExecutionOutcome& outcome);
std::string activation_outcome_digest(const ExecutionOutcome& outcome);

// ---- The port ----

class ClaimStore {
 public:
  virtual ~ClaimStore() = default;

  // Durably claims a journal-emitted v3 InstallCapability (spec §6.4 step 1): the issuing
  // record (revision = action precondition_revision) must have emitted exactly this action
  // text once; the head must match the request; trusted now < action expires_at.
  // Returns the stored claim. Errors: InvalidArgument (malformed request or not an
  // InstallCapability), InstallActionAlreadyClaimed ("has already been claimed"),
  // RevisionConflict, InstallActionClaimExpired ("expired before it was claimed"),
  // EngineStoreError ("trusted utc clock failed"), StoreBusy, JournalCorruption (the action
  // is not exact journal authority, or an existing claim row differs).
  virtual ActionClaim claim_install(const ClaimRequest& request) = 0;

  // Same for a v3 ActivateCapability. Errors as above with ActivationActionAlreadyClaimed
  // ("is already claimed"), ActivationActionClaimExpired ("expired before claim").
  virtual ActionClaim claim_activation(const ClaimRequest& request) = 0;

  // Records the install outcome bound to the claim (spec §6.4 step 2); an identical prior
  // outcome is returned unchanged (idempotent). observed_at = trusted now (not before
  // claimed_at). Errors: InstallExecutionOutcomeRequired ("has no durable execution claim"),
  // InstallExecutionOutcomeConflict (other binding, other prior outcome, "does not match
  // authorized result material"), InstallActionClaimSettled, InvalidArgument, StoreBusy,
  // JournalCorruption, EngineStoreError (clock).
  virtual ExecutionOutcome record_install_outcome(const InstallOutcomeRequest& request) = 0;

  // Same for activation; also refuses observations at/after the action's expiry
  // (ActivationActionClaimExpired "expired before observation").
  virtual ExecutionOutcome record_activation_outcome(const ActivationOutcomeRequest& request) = 0;

  // Durable progress of an action (unknown action: all false). Errors: StoreBusy,
  // JournalCorruption.
  virtual InstallExecutionStatus install_execution_status(const StreamId& stream,
                                                          std::string_view action_id) const = 0;
  virtual ActivationExecutionStatus activation_execution_status(
      const StreamId& stream, std::string_view action_id) const = 0;

  // The stored claim / outcome rows, if any.
  virtual std::optional<ActionClaim> find_install_claim(const StreamId& stream,
                                                        std::string_view action_id) const = 0;
  virtual std::optional<ExecutionOutcome> find_install_outcome(
      const StreamId& stream, std::string_view action_id) const = 0;
};

}  // namespace ctx::engine

namespace ctx::core {
template <>
struct EnumTraits<engine::InstallOutcome> {
  static constexpr const auto& kStrings = engine::kInstallOutcomeStrings;
};
}  // namespace ctx::core

#endif  // CTX_HOST_ENGINE_CLAIM_STORE_HPP_
