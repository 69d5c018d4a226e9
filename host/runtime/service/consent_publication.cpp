// ManagedQueryService::publish_current_consent (spec §3.13) and the challenge derivation it uses
// (consent_publication.hpp).
#include "host/runtime/service/consent_publication.hpp"

#include <algorithm>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/service_crash_points.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

// The policy digest a RequestConsent asks under (decoded by HostAction::create).
const std::string& requested_policy(const engine::HostAction& request) {
  const auto* binding = request.consent_request();
  if (!binding) throw ManagedQueryServiceError("managed consent request payload is not exact");
  return binding->install.policy_snapshot_digest;
}

bool same_head(const EngineSnapshot& a, const EngineSnapshot& b) {
  return a.revision == b.revision && a.record_digest == b.record_digest;
}

}  // namespace

std::optional<engine::HostAction> consent_request_for(const engine::Transition& transition,
                                                      const engine::PendingConsent& pending) {
  const auto found =
      engine::consent_requests_offering(transition, pending.consent_id, pending.install_action);
  if (found.size() != 1) return std::nullopt;
  return *found.front();
}

ConsentChallenge derive_install_consent_challenge(const engine::EngineState& state,
                                                  const engine::PendingConsent& pending,
                                                  const engine::HostAction& request,
                                                  const engine::InstallExecutionBinding& binding,
                                                  const ConsentPublicationIdentity& identity) {
  const auto& install = pending.install_action;
  const auto* capability = state.capability(install.entity_id().value_or(""));
  if (capability == nullptr || !capability->selection.is_install() ||
      !capability->selection.install_descriptor() ||
      !capability->selection.install_result_material()) {
    throw ManagedQueryServiceError(
        "managed pending consent capability has no exact schema-v3 install authority");
  }
  const auto& selection = capability->selection;
  const auto& descriptor = *selection.install_descriptor();
  const auto& material = *selection.install_result_material();
  const std::pair<bool, const char*> checks[] = {
      {install.action_kind() == engine::ActionKind::kInstallCapability, "kind"},
      {install.consent_id() == std::optional<std::string>(pending.consent_id), "consent"},
      {install.source_digest() == std::optional<std::string>(selection.source_digest()), "source"},
      {install.expires_at() && install.plan_id() && install.catalog_snapshot_id(), "identity"},
      {request.catalog_snapshot_id() == install.catalog_snapshot_id(), "catalog"},
      {request.plan_id() == install.plan_id(), "plan"},
      {install.required_host_feature() == std::optional<std::string>("installation"),
       "host feature"},
      {material == capability->material_identity, "material"},
      {descriptor.result_material_identity_digest() ==
           std::optional<std::string>(material.identity_digest()),
       "descriptor material"}};
  for (const auto& [ok, what] : checks) {
    if (!ok) {
      throw ManagedQueryServiceError(
          std::string("managed pending consent does not agree with its capability authority (") +
          what + ")");
    }
  }
  if (binding.driver_id() != descriptor.installer_id()) {
    throw ManagedQueryServiceError(
        "managed consent execution binding does not name the descriptor's installer");
  }
  ConsentChallengeFields f;
  f.challenge_id = pending.consent_id;
  f.audience = identity.audience;
  f.workspace_identity_digest = identity.workspace_identity_digest;
  // The scope's set fields (an unset parent exposure is omitted: the challenge scope holds tokens).
  const Json scope = install.scope().to_json();
  f.scope = Json::object();
  for (auto it = scope.begin(); it != scope.end(); ++it) {
    if (!it->is_null()) f.scope[it.key()] = *it;
  }
  f.capability_id = capability->capability_id();
  f.kind = capability->kind();
  f.source_digest = selection.source_digest();
  f.catalog_snapshot_digest = *install.catalog_snapshot_id();
  f.plan_id = *install.plan_id();
  f.install_plan_digest = descriptor.plan_digest();
  f.descriptor_digest = descriptor.descriptor_digest();
  f.execution_binding_digest =
      execution_binding_digest(binding.driver_id(), binding.driver_digest(),
                               binding.host_identity_digest(), binding.target_identity_digest());
  f.selection_digest = selection_binding_digest(selection.to_json());
  f.material_identity_digest = material.identity_digest();
  f.requested_action_id = install.action_id();
  f.requested_action_kind = install.action_kind();
  f.requested_action_content_digest = install.content_digest();
  f.requested_action_precondition_revision = install.precondition_revision();
  f.policy_snapshot_digest = requested_policy(request);
  f.release_root_digest = identity.release_root_digest;
  f.permission_expansion = descriptor.permission_expansion();
  f.credential_requirement = descriptor.credential_requirement();
  f.expires_at = *install.expires_at();
  return ConsentChallenge::create(std::move(f));
}

ManagedConsentChallengeProjection ManagedConsentChallengeProjection::of(
    const ConsentChallenge& challenge) {
  ManagedConsentChallengeProjection projection;
  const auto& f = challenge.fields();
  projection.audience_ = f.audience;
  projection.capability_id_ = f.capability_id;
  projection.challenge_digest_ = challenge.digest();
  projection.expires_at_ = f.expires_at;
  projection.kind_ = f.kind;
  return projection;
}

InstallConsentPolicy ManagedQueryService::current_install_policy() const {
  if (!options_.policy_store_root) return InstallConsentPolicy::safe_default();
  return InstallPolicyStore(*options_.policy_store_root).load();
}

std::optional<ManagedConsentChallengeProjection> ManagedQueryService::publish_current_consent(
    EngineComposition& composition, const engine::ScopeRef& scope,
    const std::string& expected_plan_id) {
  const auto head = composition.snapshot(scope);
  const auto require_plan = [&](const EngineSnapshot& snapshot, const char* message) {
    if (!snapshot.state || !snapshot.record_digest || !snapshot.state->committed_plan() ||
        snapshot.state->committed_plan()->plan_id() != expected_plan_id) {
      throw ManagedQueryHeadDriftError(message);
    }
  };
  require_plan(head, "managed plan changed before consent publication");
  const auto& state = *head.state;
  if (state.pending_consents().empty()) return std::nullopt;
  if (state.pending_consents().size() != 1) {
    throw ManagedQueryServiceError("managed stream has more than one pending consent");
  }
  const auto& pending = state.pending_consents().front();
  const auto head_transition = composition.transition_at(scope, head.revision);
  if (!head_transition) {
    throw ManagedQueryHeadDriftError("managed stream head changed before consent publication");
  }
  const auto request = consent_request_for(*head_transition, pending);
  if (!request) {
    throw ManagedQueryServiceError("managed pending consent is not offered by the head transition");
  }
  const auto* capability = state.capability(pending.install_action.entity_id().value_or(""));
  if (capability == nullptr || !capability->selection.is_install() ||
      !capability->selection.install_descriptor()) {
    throw ManagedQueryServiceError(
        "managed pending consent capability has no exact schema-v3 install authority");
  }
  const auto& descriptor = *capability->selection.install_descriptor();

  const auto policy = current_install_policy();
  if (policy.policy_digest() != requested_policy(*request)) {
    throw ManagedConsentPolicyChangedError(capability->capability_id(),
                                           pending.install_action.expires_at().value_or(""));
  }
  std::optional<InstallPolicyStore::Hold> held;
  std::optional<InstallPolicyStore> policy_store;
  if (options_.policy_store_root) {
    policy_store.emplace(*options_.policy_store_root);
    if (policy_store->has_persisted()) held.emplace(policy_store->hold(policy.policy_digest()));
  }
  const auto route =
      route_install_authorization(policy, capability->kind(), descriptor.permission_expansion(),
                                  descriptor.credential_requirement());
  // Nothing to publish: the policy grants it, or the human approved exactly this install before
  // (the automatic installs of set_desired grant it).
  if (!route.interactive ||
      approves_install(options_.install_approvals.get(), descriptor, policy.policy_digest())) {
    return std::nullopt;
  }
  if (!options_.consent_broker) {
    throw ManagedQueryServiceError(
        "managed pending consent requires captured consent publication authorities");
  }
  if (!options_.install_actuators) {
    throw InstallActuatorError("managed pending consent has no physical installation actuator");
  }
  const auto binding = options_.install_actuators->binding(descriptor);
  auto& broker = *options_.consent_broker;
  const ConsentPublicationIdentity identity{broker.audience(),
                                            options_.consent_workspace_identity_digest,
                                            options_.consent_release_root_digest};
  const auto challenge =
      derive_install_consent_challenge(state, pending, *request, binding, identity);

  // The head must not move while the challenge is bound and published (§3.13 step 10).
  const auto unchanged = [&](const char* message) {
    const auto now = composition.snapshot(scope);
    require_plan(now, message);
    if (!same_head(now, head)) throw ManagedQueryHeadDriftError(message);
  };
  unchanged("managed consent authority changed during execution binding");
  try {
    broker.prepare(challenge);
  } catch (const ConsentBrokerExpired&) {
    return std::nullopt;  // past its expiry (perhaps retired from a full broker): nothing to offer
  } catch (const ConsentBrokerConflict&) {
    // Its id (or digest) is taken by a challenge published with another binding: the state
    // directory was moved or copied since, so that one can never be decided here and this one
    // cannot be published. Nothing to offer.
    return std::nullopt;
  }
  unchanged("managed consent authority changed; the published challenge is stale");
  const auto record = broker.status(challenge.challenge_id());
  unchanged("managed consent authority changed; the published challenge is stale");
  if (!(record.challenge == challenge)) {
    throw ManagedQueryHeadDriftError(
        "managed consent broker record changed; the published challenge is stale");
  }
  if (held) held->assert_current();
  if (record.state != ConsentState::kPending) return std::nullopt;
  crash_point(service_crash_points::kAfterChallengePublication);
  return ManagedConsentChallengeProjection::of(challenge);
}

}  // namespace ctx::runtime
