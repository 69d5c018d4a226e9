// Internal parts of the v3 reducer (reducer.cpp), shared by its translation units: the working
// state, the helpers that edit it, the action builder, and the lifecycle steps (plan commit,
// desired update, reconcile). Not installed; nothing outside host/engine/reducer*.cpp includes it.
#ifndef CTX_HOST_ENGINE_REDUCER_PARTS_HPP_
#define CTX_HOST_ENGINE_REDUCER_PARTS_HPP_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/reducer.hpp"

namespace ctx::engine::reducer_parts {

using W = EngineState::Fields;

// What one reduction emits: actions in order, and diagnostics.
struct Out {
  std::vector<HostAction> actions;
  std::vector<Json> diagnostics;
};

// Throws InvalidEventError(message).
[[noreturn]] void invalid(const std::string& message);

// Members of an event payload; each throws InvalidEventError naming `field` when absent or not of
// the named shape.
const std::string& text(const Json& object, const std::string& key, const std::string& field);
const std::string& sha_text(const Json& object, const std::string& key, const std::string& field);
const Json& array_of(const Json& object, const std::string& key, const std::string& field);
std::set<std::string> keys_of(const Json& object);

// Sorted id lists.
void insert_sorted(std::vector<std::string>& values, const std::string& value);
void erase_value(std::vector<std::string>& values, const std::string& value);
bool contains(const std::vector<std::string>& values, const std::string& value);

// `occurred_at` (RFC 3339) plus one hour: an action's expiry.
std::string plus_one_hour(const std::string& occurred_at);

CapabilityStateV3* find_cap(W& w, const std::string& id);
const CapabilityStateV3* find_cap(const W& w, const std::string& id);
// True when `value` spells `action`'s kind.
bool same_action_kind(const Json& value, const HostAction& action);
// True when `id` has a pending effect of one of `effects`.
bool pending_for(const W& w, const std::string& id, std::initializer_list<Effect> effects);
void with_pending(W& w, const HostAction& action, Effect effect,
                  std::optional<std::string> rollback = std::nullopt);
void remove_pending(W& w, const std::string& action_id);
std::size_t active_count(const W& w);
// True when nothing holds `c` any longer (not planned, active, desired, held or pending).
bool can_prune(const W& w, const CapabilityStateV3& c);
// Removes `id` with its evidence and every list entry naming it.
void remove_cap(W& w, const std::string& id);
// Replaces `id` with `updated`, or prunes it when eligible.
void replace_or_prune(W& w, const CapabilityStateV3& updated);
CapabilityEvidence evidence_for(const W& w, const std::string& exposure_id, const std::string& id);
void replace_evidence(W& w, const CapabilityEvidence& evidence);

// Builds the actions of one reduction (ids derived from the event and the new revision).
class Builder {
 public:
  Builder(const EngineEvent& event, std::int64_t revision) : event_(event), revision_(revision) {}

  HostAction present_bundle(std::int64_t ordinal, Json payload) const {
    return HostAction::create(HostAction::Fields{
        .action_id = reducer_action_id(event_.content_digest(), "PresentBundle", "", ordinal),
        .kind = "PresentBundle",
        .scope = event_.scope(),
        .precondition_revision = revision_,
        .payload = std::move(payload),
        .privacy = event_.privacy()});
  }

  HostAction material(ActionKind action_kind, const CapabilityStateV3& c, std::int64_t ordinal,
                      const std::string& lease_id) const {
    if (!c.current_authorized_material || !c.installed()) {
      invalid("schema-v3 material action requires installed authorized material");
    }
    const std::string kind(to_string(action_kind));
    const char* state = action_kind == ActionKind::kActivateCapability ? "active"
                        : action_kind == ActionKind::kPrepareExposure  ? "prepared"
                                                                       : "inactive";
    Json rollback;
    if (action_kind == ActionKind::kActivateCapability) {
      rollback = {{"kind", "DeactivateCapability"}};
    } else if (action_kind == ActionKind::kPrepareExposure) {
      rollback = {{"exposure_id", event_.scope().exposure_id()},
                  {"kind", "cleanup-prepared-exposure"}};
    } else {
      rollback = {{"kind", "ActivateCapability"}, {"source_digest", c.source_digest()}};
    }
    HostAction::Fields f = capability_action(kind, c, ordinal, revision_, material_payload_v3(c));
    f.lease_id = lease_id;
    f.expires_at = plus_one_hour(event_.occurred_at());
    f.required_host_feature = "activation";
    f.verification = {{"expected_state", state},
                      {"receipt_required", true},
                      {"receipt_schema", kMaterialReceiptSchemaV3}};
    f.rollback = std::move(rollback);
    return HostAction::create(std::move(f));
  }

  // RequestConsent (precondition R+1) and the pre-computed InstallCapability (R+2).
  std::pair<HostAction, HostAction> install_consent(const CapabilityStateV3& c,
                                                    const std::string& policy) const {
    if (!c.selection.is_install()) {
      invalid("schema-v3 install consent requires exact install authority");
    }
    if (!is_digest(policy)) invalid("policy_snapshot_digest must be a lowercase SHA-256 digest");
    const auto consent_id = reducer_consent_id(event_.content_digest(), c.capability_id());
    const Json typed = install_payload_v3(c, policy);
    HostAction::Fields install = capability_action("InstallCapability", c, 0, revision_ + 1, typed);
    install.consent_id = consent_id;
    install.expires_at = plus_one_hour(event_.occurred_at());
    install.required_host_feature = "installation";
    install.verification = {{"expected_state", "installed"},
                            {"receipt_required", true},
                            {"receipt_schema", kInstallReceiptSchemaV3}};
    install.rollback = {{"installer_id", c.selection.install_descriptor()->installer_id()},
                        {"kind", "UninstallCapability"}};
    auto install_action = HostAction::create(std::move(install));
    Json request_payload = typed;
    request_payload["schema"] = kInstallConsentRequestSchemaV3;
    request_payload["requested_action_id"] = install_action.action_id();
    request_payload["requested_action_kind"] = install_action.action_kind();
    request_payload["requested_action_content_digest"] = install_action.content_digest();
    request_payload["requested_action_precondition_revision"] =
        install_action.precondition_revision();
    HostAction::Fields request =
        capability_action("RequestConsent", c, 0, revision_, std::move(request_payload));
    request.consent_id = consent_id;
    request.required_host_feature = "installation-consent";
    return {HostAction::create(std::move(request)), std::move(install_action)};
  }

  const EngineEvent& event() const noexcept { return event_; }
  std::int64_t revision() const noexcept { return revision_; }

 private:
  // The fields every action on capability `c` has: its id (from the event, kind, capability and
  // ordinal), scope, precondition, payload and privacy, and c's entity, source, plan and catalog.
  HostAction::Fields capability_action(const std::string& kind, const CapabilityStateV3& c,
                                       std::int64_t ordinal, std::int64_t precondition,
                                       Json payload) const {
    HostAction::Fields f{
        .action_id = reducer_action_id(event_.content_digest(), kind, c.capability_id(), ordinal),
        .kind = kind,
        .scope = event_.scope(),
        .precondition_revision = precondition,
        .payload = std::move(payload),
        .privacy = event_.privacy()};
    f.entity_id = c.capability_id();
    f.source_digest = c.source_digest();
    f.plan_id = c.plan_id;
    f.catalog_snapshot_id = c.catalog_snapshot_id;
    return f;
  }

  const EngineEvent& event_;
  std::int64_t revision_;
};

// §3.4: commits a decided plan to the working state.
void commit_plan(W& w, const CommittedPlanV3& plan);
// §3.5: a reassessment's desired capabilities and policy.
void update_desired(W& w, const EngineEvent& event);
// §3.6: the next lifecycle actions of the working state.
Out reconcile(W& w, const Builder& b);

}  // namespace ctx::engine::reducer_parts

#endif  // CTX_HOST_ENGINE_REDUCER_PARTS_HPP_
