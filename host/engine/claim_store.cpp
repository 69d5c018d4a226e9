#include "host/engine/claim_store.hpp"

#include "host/core/canonical_json.hpp"

namespace ctx::engine {
namespace {

core::Json claim_fields(const ActionClaim& claim) {
  return core::Json{
      {"action_content_digest", claim.action_content_digest},
      {"action_expires_at", claim.action_expires_at},
      {"action_id", claim.action_id},
      {"action_json", claim.action_json},
      {"authorization_digest", claim.authorization_digest},
      {"claimed_at", claim.claimed_at},
      {"claimed_head_record_digest", claim.claimed_head_record_digest},
      {"claimed_head_revision", claim.claimed_head_revision},
      {"claimed_head_state_digest", claim.claimed_head_state_digest},
      {"execution_binding_digest", claim.execution_binding_digest},
      {"execution_binding_json", claim.execution_binding_json},
      {"issuing_record_digest", claim.issuing_record_digest},
      {"precondition_revision", claim.precondition_revision},
      {"stream_key", claim.stream.stream_key()},
  };
}

core::Json outcome_fields(const ExecutionOutcome& outcome) {
  core::Json observed = nullptr;
  if (outcome.observed_material_identity_digest) {
    observed = *outcome.observed_material_identity_digest;
  }
  return core::Json{
      {"action_content_digest", outcome.action_content_digest},
      {"action_id", outcome.action_id},
      {"claim_digest", outcome.claim_digest},
      {"execution_binding_digest", outcome.execution_binding_digest},
      {"observed_at", outcome.observed_at},
      {"observed_material_identity_digest", observed},
      {"stream_key", outcome.stream.stream_key()},
      {"verification_digest", outcome.verification_digest},
  };
}

}  // namespace

SettlementGuard ExecutionOutcome::settlement_guard() const {
  SettlementGuard guard;
  guard.authority = outcome ? ExecutionAuthority::kInstall : ExecutionAuthority::kActivation;
  guard.action_id = action_id;
  guard.action_content_digest = action_content_digest;
  guard.mode = (outcome && *outcome == InstallOutcome::kFailed) ? GuardMode::kFailed
                                                                 : GuardMode::kApplied;
  guard.execution_outcome_digest = outcome_digest;
  return guard;
}

std::string install_claim_digest(const ActionClaim& claim) {
  core::Json fields = claim_fields(claim);
  fields["action_kind"] = claim.action_kind;
  return core::canonical_digest(fields);
}

std::string activation_claim_digest(const ActionClaim& claim) {
  return core::canonical_digest(claim_fields(claim));
}

std::string install_outcome_digest(const ExecutionOutcome& outcome) {
  core::Json fields = outcome_fields(outcome);
  fields["outcome"] = outcome.outcome ? core::Json(install_outcome_name(*outcome.outcome))
                                      : core::Json(nullptr);
  return core::canonical_digest(fields);
}

std::string activation_outcome_digest(const ExecutionOutcome& outcome) {
  return core::canonical_digest(outcome_fields(outcome));
}

}  // namespace ctx::engine
