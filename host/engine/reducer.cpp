#include "host/engine/reducer.hpp"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <utility>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

using W = EngineState::Fields;

struct Out {
  std::vector<HostAction> actions;
  std::vector<Json> diagnostics;
};

[[noreturn]] void invalid(const std::string& message) { throw InvalidEventError(message); }

const std::string& text(const Json& object, const std::string& key, const std::string& field) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() ||
      !is_trimmed_string(it->get_ref<const std::string&>())) {
    invalid(field + " must be a non-empty trimmed string");
  }
  return it->get_ref<const std::string&>();
}

const std::string& sha_text(const Json& object, const std::string& key, const std::string& field) {
  const auto& value = text(object, key, field);
  if (!is_digest(value)) invalid(field + " must be a lowercase SHA-256 digest");
  return value;
}

const Json& array_of(const Json& object, const std::string& key, const std::string& field) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) invalid(field + " must be an array");
  return *it;
}

std::set<std::string> keys_of(const Json& object) {
  std::set<std::string> out;
  for (const auto& item : object.items()) out.insert(item.key());
  return out;
}

void insert_sorted(std::vector<std::string>& values, const std::string& value) {
  const auto it = std::lower_bound(values.begin(), values.end(), value);
  if (it == values.end() || *it != value) values.insert(it, value);
}

void erase_value(std::vector<std::string>& values, const std::string& value) {
  values.erase(std::remove(values.begin(), values.end(), value), values.end());
}

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string plus_one_hour(const std::string& occurred_at) {
  auto t = core::parse_rfc3339(occurred_at);
  t.micros += 3'600'000'000LL;
  return core::format_rfc3339(t);
}

CapabilityStateV3* find_cap(W& w, const std::string& id) {
  for (auto& c : w.capabilities) {
    if (c.capability_id() == id) return &c;
  }
  return nullptr;
}

const CapabilityStateV3* find_cap(const W& w, const std::string& id) {
  for (const auto& c : w.capabilities) {
    if (c.capability_id() == id) return &c;
  }
  return nullptr;
}

// True when `value` spells `action`'s kind.
bool same_action_kind(const Json& value, const HostAction& action) {
  return value.is_string() &&
         find_enum<ActionKind>(value.get_ref<const std::string&>()) == action.action_kind();
}

bool pending_for(const W& w, const std::string& id, std::initializer_list<Effect> effects) {
  for (const auto& p : w.pending_effects) {
    if (p.action.entity_id() != id) continue;
    for (const auto effect : effects) {
      if (p.effect == effect) return true;
    }
  }
  return false;
}

void with_pending(W& w, const HostAction& action, Effect effect,
                  std::optional<std::string> rollback = std::nullopt) {
  w.pending_effects.push_back(PendingEffect{action, effect, std::move(rollback)});
}

void remove_pending(W& w, const std::string& action_id) {
  auto& v = w.pending_effects;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const PendingEffect& p) { return p.action.action_id() == action_id; }),
          v.end());
}

std::size_t active_count(const W& w) {
  return static_cast<std::size_t>(std::count_if(
      w.capabilities.begin(), w.capabilities.end(),
      [](const CapabilityStateV3& c) { return c.active(); }));
}

bool can_prune(const W& w, const CapabilityStateV3& c) {
  const auto& plan = w.committed_plan;
  if (!plan || plan->status() == PlanStatus::kDegraded) return false;
  const auto& id = c.capability_id();
  if (plan->find(id) || c.active() || c.desired() || c.rollback_held ||
      contains(w.rollback_requested_capability_ids, id)) {
    return false;
  }
  for (const auto& p : w.pending_effects) {
    if (p.action.entity_id() == id) return false;
  }
  for (const auto& p : w.pending_consents) {
    if (p.install_action.entity_id() == id) return false;
  }
  return true;
}

void remove_cap(W& w, const std::string& id) {
  std::optional<std::string> descriptor;
  if (const auto* c = find_cap(w, id); c && c->selection.is_install()) {
    descriptor = c->selection.install_descriptor()->descriptor_digest();
  }
  auto& caps = w.capabilities;
  caps.erase(std::remove_if(caps.begin(), caps.end(),
                            [&](const CapabilityStateV3& c) { return c.capability_id() == id; }),
             caps.end());
  auto& ev = w.evidence;
  ev.erase(std::remove_if(ev.begin(), ev.end(),
                          [&](const CapabilityEvidence& e) { return e.capability_id == id; }),
           ev.end());
  erase_value(w.blocked_capability_ids, id);
  erase_value(w.blocked_deactivation_ids, id);
  if (descriptor) erase_value(w.blocked_install_descriptor_digests, *descriptor);
  erase_value(w.rollback_requested_capability_ids, id);
  erase_value(w.terminal_cleanup_notified_ids, id);
}

// Replaces `id` with `updated`, or prunes it when eligible.
void replace_or_prune(W& w, const CapabilityStateV3& updated) {
  *find_cap(w, updated.capability_id()) = updated;
  if (can_prune(w, updated)) remove_cap(w, updated.capability_id());
}

CapabilityEvidence evidence_for(const W& w, const std::string& exposure_id, const std::string& id) {
  for (const auto& e : w.evidence) {
    if (e.exposure_id == exposure_id && e.capability_id == id) return e;
  }
  const auto* c = find_cap(w, id);
  return CapabilityEvidence{exposure_id, id, c ? c->source_digest() : std::string()};
}

void replace_evidence(W& w, const CapabilityEvidence& evidence) {
  auto& ev = w.evidence;
  ev.erase(std::remove_if(ev.begin(), ev.end(),
                          [&](const CapabilityEvidence& e) {
                            return e.exposure_id == evidence.exposure_id &&
                                   e.capability_id == evidence.capability_id;
                          }),
           ev.end());
  const auto pos = std::lower_bound(ev.begin(), ev.end(), evidence,
                                    [](const CapabilityEvidence& a, const CapabilityEvidence& b) {
                                      return std::tie(a.exposure_id, a.capability_id) <
                                             std::tie(b.exposure_id, b.capability_id);
                                    });
  ev.insert(pos, evidence);
}

// ---- actions --------------------------------------------------------------------------------

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
    HostAction::Fields f{
        .action_id = reducer_action_id(event_.content_digest(), kind, c.capability_id(), ordinal),
        .kind = kind,
        .scope = event_.scope(),
        .precondition_revision = revision_,
        .payload = material_payload_v3(c),
        .privacy = event_.privacy()};
    f.entity_id = c.capability_id();
    f.source_digest = c.source_digest();
    f.plan_id = c.plan_id;
    f.catalog_snapshot_id = c.catalog_snapshot_id;
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
    HostAction::Fields install{
        .action_id = reducer_action_id(event_.content_digest(), "InstallCapability",
                                       c.capability_id(), 0),
        .kind = "InstallCapability",
        .scope = event_.scope(),
        .precondition_revision = revision_ + 1,
        .payload = typed,
        .privacy = event_.privacy()};
    install.entity_id = c.capability_id();
    install.source_digest = c.source_digest();
    install.plan_id = c.plan_id;
    install.catalog_snapshot_id = c.catalog_snapshot_id;
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
    HostAction::Fields request{
        .action_id =
            reducer_action_id(event_.content_digest(), "RequestConsent", c.capability_id(), 0),
        .kind = "RequestConsent",
        .scope = event_.scope(),
        .precondition_revision = revision_,
        .payload = std::move(request_payload),
        .privacy = event_.privacy()};
    request.entity_id = c.capability_id();
    request.source_digest = c.source_digest();
    request.plan_id = c.plan_id;
    request.catalog_snapshot_id = c.catalog_snapshot_id;
    request.consent_id = consent_id;
    request.required_host_feature = "installation-consent";
    return {HostAction::create(std::move(request)), std::move(install_action)};
  }

  const EngineEvent& event() const noexcept { return event_; }
  std::int64_t revision() const noexcept { return revision_; }

 private:
  const EngineEvent& event_;
  std::int64_t revision_;
};

// ---- reconcile (§3.6) -----------------------------------------------------------------------

Out reconcile(W& w, const Builder& b) {
  Out out;
  if (w.session_status == SessionStatus::kEnded) {
    for (const auto& c : w.capabilities) {
      if (c.active() && !contains(w.blocked_deactivation_ids, c.capability_id()) &&
          !pending_for(w, c.capability_id(), {Effect::kDeactivate, Effect::kPrepare})) {
        auto action =
            b.material(ActionKind::kDeactivateCapability, c, 0,
                       c.activation_lease_id.value_or("session-end:" + c.capability_id()));
        with_pending(w, action, Effect::kDeactivate);
        out.actions.push_back(std::move(action));
        return out;
      }
    }
    return out;
  }
  if (w.host_level != HostLevel::kActivating && w.host_level != HostLevel::kManaging) {
    out.diagnostics.push_back(
        {{"code", "host_activation_unsupported"}, {"host_level", to_string(w.host_level)}});
    return out;
  }
  if (!w.pending_consents.empty()) return out;

  for (const auto& c : w.capabilities) {
    if (c.desired() && !c.installed() && c.selection.is_install() &&
        !contains(w.blocked_install_descriptor_digests,
                  c.selection.install_descriptor()->descriptor_digest()) &&
        !pending_for(w, c.capability_id(), {Effect::kInstall})) {
      if (!w.install_policy_snapshot_digest) {
        invalid("install consent requires a committed policy snapshot");
      }
      auto [request, install] = b.install_consent(c, *w.install_policy_snapshot_digest);
      w.pending_consents.push_back(PendingConsent{*request.consent_id(), std::move(install)});
      out.actions.push_back(std::move(request));
      return out;
    }
  }

  for (const auto& id : w.rollback_requested_capability_ids) {
    const auto* c = find_cap(w, id);
    if (!c || c->active() || pending_for(w, id, {Effect::kActivate, Effect::kRollbackActivate})) {
      continue;
    }
    auto action = b.material(ActionKind::kActivateCapability, *c, 0, "rollback:" + id);
    with_pending(w, action, Effect::kRollbackActivate);
    out.actions.push_back(std::move(action));
    break;
  }
  const bool rollback_pending =
      std::any_of(w.pending_effects.begin(), w.pending_effects.end(),
                  [](const PendingEffect& p) { return p.effect == Effect::kRollbackActivate; });
  if (!w.rollback_requested_capability_ids.empty() || rollback_pending) return out;

  std::vector<std::string> inactive_desired, active_undesired;
  bool replacement_in_progress = false;
  for (const auto& c : w.capabilities) {
    const auto& id = c.capability_id();
    if (c.desired() && c.installed() && !c.active() &&
        !contains(w.blocked_capability_ids, id) && !pending_for(w, id, {Effect::kActivate})) {
      inactive_desired.push_back(id);
    }
    if (c.active() && !c.desired() && !c.rollback_held &&
        !contains(w.blocked_deactivation_ids, id) &&
        !pending_for(w, id, {Effect::kDeactivate, Effect::kPrepare})) {
      active_undesired.push_back(id);
    }
    if (c.rollback_held && !c.active()) replacement_in_progress = true;
  }
  if (!active_undesired.empty() && !replacement_in_progress) {
    auto* c = find_cap(w, active_undesired.front());
    if (!inactive_desired.empty()) {
      c->rollback_held = true;
      c->rollback_owner_id = find_cap(w, inactive_desired.front())->leases.front().owner_id;
    } else {
      c->rollback_held = false;
      c->rollback_owner_id.reset();
    }
    auto action = b.material(ActionKind::kDeactivateCapability, *c, 0,
                             c->activation_lease_id.value_or("release:" + c->capability_id()));
    with_pending(w, action, Effect::kDeactivate);
    out.actions.push_back(std::move(action));
    return out;
  }

  const auto reserved = static_cast<std::size_t>(
      std::count_if(w.pending_effects.begin(), w.pending_effects.end(), [](const PendingEffect& p) {
        return p.effect == Effect::kActivate || p.effect == Effect::kRollbackActivate;
      }));
  const auto used = active_count(w) + reserved;
  const std::size_t capacity = used >= kMaxActiveCapabilities ? 0 : kMaxActiveCapabilities - used;
  for (std::size_t i = 0; i < inactive_desired.size() && i < capacity; ++i) {
    std::set<std::string> assigned;
    for (const auto& p : w.pending_effects) {
      if (p.effect == Effect::kActivate && p.rollback_capability_id) {
        assigned.insert(*p.rollback_capability_id);
      }
    }
    std::optional<std::string> rollback;
    for (const auto& candidate : w.capabilities) {
      if (candidate.rollback_held && !candidate.active() &&
          !assigned.count(candidate.capability_id())) {
        rollback = candidate.capability_id();
        break;
      }
    }
    const auto* c = find_cap(w, inactive_desired[i]);
    auto action =
        b.material(ActionKind::kActivateCapability, *c,
                   static_cast<std::int64_t>(out.actions.size()), c->leases.front().lease_id);
    with_pending(w, action, Effect::kActivate, rollback);
    out.actions.push_back(std::move(action));
  }
  if (inactive_desired.size() > capacity) {
    out.diagnostics.push_back({{"code", "active_capability_budget_exhausted"},
                               {"deferred", inactive_desired.size() - capacity},
                               {"limit", kMaxActiveCapabilities}});
  }
  return out;
}

// ---- desired update (§3.5) ------------------------------------------------------------------

void update_desired(W& w, const EngineEvent& event) {
  const auto& plan = w.committed_plan;
  if (!plan) invalid("v3 reassessment requires a committed capability plan");
  if (plan->status() != PlanStatus::kReady) {
    invalid("v3 reassessment requires a ready committed capability plan");
  }
  if (event.correlation_id() != plan->plan_id()) {
    invalid("reassessment plan_id does not match the committed plan");
  }
  if (event.catalog_snapshot_digest() != plan->catalog_snapshot_id()) {
    invalid("reassessment catalog snapshot does not match the committed plan");
  }
  const Json& payload = event.payload();
  if (keys_of(payload) !=
      std::set<std::string>{"owner_id", "desired_capabilities", "policy_snapshot_digest"}) {
    invalid("v3 reassessment requires exact desired and policy fields");
  }
  std::string policy = sha_text(payload, "policy_snapshot_digest", "policy_snapshot_digest");
  const bool pending_install =
      std::any_of(w.pending_effects.begin(), w.pending_effects.end(),
                  [](const PendingEffect& p) { return p.effect == Effect::kInstall; });
  if (pending_install) {
    CTX_CHECK(w.install_policy_snapshot_digest.has_value());
    policy = *w.install_policy_snapshot_digest;
  } else if (std::optional(policy) != w.install_policy_snapshot_digest) {
    w.install_policy_snapshot_digest = policy;
    w.pending_consents.clear();
  }
  const std::string owner = text(payload, "owner_id", "owner_id");
  const Json& raw = array_of(payload, "desired_capabilities", "desired_capabilities");
  std::vector<std::pair<const PlanCapabilityV3*, std::string>> desired;
  std::set<std::string> lease_ids;
  std::size_t index = 0;
  for (const auto& item : raw) {
    const std::string at = "desired_capabilities[" + std::to_string(index++) + "]";
    if (!item.is_object()) invalid(at + " must be an object");
    const std::string lease = text(item, "lease_id", at + ".lease_id");
    const std::string id = text(item, "capability_id", at + ".capability_id");
    if (!lease_ids.insert(lease).second) invalid("duplicate lease_id '" + lease + "'");
    const auto* row = plan->find(id);
    if (!row) invalid("capability '" + id + "' was not in the committed plan");
    const Json expected = {
        {"actionability", row->actionability()},
        {"capability_id", row->capability_id()},
        {"install_descriptor_digest",
         row->install_descriptor_digest() ? Json(*row->install_descriptor_digest()) : Json()},
        {"install_plan_digest",
         row->install_plan_digest() ? Json(*row->install_plan_digest()) : Json()},
        {"kind", row->kind()},
        {"lease_id", lease},
        {"source_digest", row->source_digest()}};
    if (item != expected) {
      invalid("desired capability '" + id + "' does not match committed identity");
    }
    desired.emplace_back(row, lease);
  }
  std::set<std::string> explicit_ids;
  for (const auto& [row, lease] : desired) explicit_ids.insert(row->capability_id());
  for (const auto& c : w.capabilities) {
    if (explicit_ids.count(c.capability_id()) || !c.active()) continue;
    const auto* row = plan->find(c.capability_id());
    if (!row || !(c.selection == *row)) continue;
    for (const auto& lease : c.leases) {
      if (lease.owner_id != owner) continue;
      if (!lease_ids.insert(lease.lease_id).second) {
        invalid("duplicate lease_id '" + lease.lease_id + "'");
      }
      desired.emplace_back(row, lease.lease_id);
    }
  }
  for (const auto& c : w.capabilities) {
    for (const auto& lease : c.leases) {
      if (lease.owner_id != owner && lease_ids.count(lease.lease_id)) {
        invalid("lease_id '" + lease.lease_id + "' already belongs to '" + c.capability_id() + "'");
      }
    }
  }
  for (auto& c : w.capabilities) {
    auto& l = c.leases;
    l.erase(
        std::remove_if(l.begin(), l.end(), [&](const LeaseRef& x) { return x.owner_id == owner; }),
        l.end());
  }
  for (const auto& [row, lease_id] : desired) {
    if (row->is_manual()) continue;
    auto* c = find_cap(w, row->capability_id());
    if (!c || !(c->selection == *row)) {
      invalid("desired executable capability lacks exact committed runtime authority");
    }
    LeaseRef lease{lease_id, owner, event.scope().exposure_id()};
    const auto pos = std::lower_bound(
        c->leases.begin(), c->leases.end(), lease,
        [](const LeaseRef& a, const LeaseRef& b) { return a.lease_id < b.lease_id; });
    c->leases.insert(pos, lease);
  }
  std::set<std::string> retained_descriptors;
  for (const auto& c : w.capabilities) {
    if (c.desired() && c.selection.is_install()) {
      retained_descriptors.insert(c.selection.install_descriptor()->descriptor_digest());
    }
  }
  std::vector<std::string> blocked;
  for (const auto& id : w.blocked_capability_ids) {
    const auto* c = find_cap(w, id);
    if (c && c->desired()) blocked.push_back(id);
  }
  w.blocked_capability_ids = std::move(blocked);
  w.blocked_deactivation_ids.clear();
  std::vector<std::string> descriptors;
  for (const auto& d : w.blocked_install_descriptor_digests) {
    if (retained_descriptors.count(d)) descriptors.push_back(d);
  }
  w.blocked_install_descriptor_digests = std::move(descriptors);
  w.install_policy_snapshot_digest = policy;
}

// ---- plan commit (§3.4) ---------------------------------------------------------------------

std::optional<CapabilityStateV3> promote_install_to_load(const W& w,
                                                         const CapabilityStateV3& current,
                                                         const PlanCapabilityV3& row,
                                                         const CommittedPlanV3& plan) {
  // Only an exact, receipt-proven install → load lineage promotion keeps runtime state (§3.9).
  if (!current.selection.is_install() || !row.is_load()) return std::nullopt;
  if (current.kind() != row.kind()) return std::nullopt;
  if (current.selection.catalog_identity().identity_digest() !=
      row.catalog_identity().identity_digest()) {
    return std::nullopt;
  }
  const auto& material = *row.load_material();
  if (current.material_identity.identity_digest() != material.material_identity_digest()) {
    return std::nullopt;
  }
  if (!current.current_authorized_material) return std::nullopt;
  const auto& lineage = current.current_authorized_material->installed_material_lineage();
  if (!lineage) return std::nullopt;
  for (const auto& p : w.pending_effects) {
    if (p.action.entity_id() == current.capability_id()) return std::nullopt;
  }
  for (const auto& p : w.pending_consents) {
    if (p.install_action.entity_id() == current.capability_id()) return std::nullopt;
  }
  if (lineage->capability_id() != current.capability_id() || lineage->kind() != current.kind() ||
      lineage->catalog_identity_digest() !=
          current.selection.catalog_identity().identity_digest() ||
      lineage->material_identity_digest() != current.material_identity.identity_digest() ||
      lineage->origin_install_descriptor_digest() !=
          current.selection.install_descriptor()->descriptor_digest()) {
    return std::nullopt;
  }
  if (current.source_digest() != row.source_digest()) return std::nullopt;
  CapabilityStateV3 promoted = current;
  promoted.selection = row;
  promoted.current_authorized_material = material;
  promoted.plan_id = plan.plan_id();
  promoted.catalog_snapshot_id = plan.catalog_snapshot_id();
  return promoted;
}

std::optional<CapabilityStateV3> new_capability(const PlanCapabilityV3& row,
                                                const CommittedPlanV3& plan) {
  if (row.is_manual()) return std::nullopt;
  CapabilityStateV3 out{.selection = row,
                        .material_identity = row.material_identity(),
                        .current_authorized_material = std::nullopt,
                        .installation = Installation::kAbsent,
                        .plan_id = plan.plan_id(),
                        .catalog_snapshot_id = plan.catalog_snapshot_id()};
  if (row.is_load()) {
    out.current_authorized_material = row.load_material();
    out.installation = Installation::kInstalled;
  }
  return out;
}

void commit_plan(W& w, const CommittedPlanV3& plan) {
  if (plan.status() == PlanStatus::kDegraded) {
    w.committed_plan = plan;
    w.last_manual_bundle.clear();
    return;
  }
  if (!w.pending_effects.empty() || !w.pending_consents.empty()) {
    invalid("a ready or abstained plan cannot replace pending schema-v3 authority");
  }
  std::vector<CapabilityStateV3> next;
  for (const auto& row : plan.capabilities()) {
    if (row.is_manual()) continue;
    const auto* current = find_cap(std::as_const(w), row.capability_id());
    if (current && current->selection == row) {
      CapabilityStateV3 kept = *current;
      kept.plan_id = plan.plan_id();
      kept.catalog_snapshot_id = plan.catalog_snapshot_id();
      next.push_back(std::move(kept));
      continue;
    }
    if (current) {
      if (auto promoted = promote_install_to_load(w, *current, row, plan)) {
        next.push_back(std::move(*promoted));
        continue;
      }
      const bool safe_rebind = !current->installed() && !current->active() &&
                               !current->desired() && !current->rollback_held;
      if (!safe_rebind) {
        invalid("schema-v3 selection changed while prior same-ID runtime authority exists");
      }
    }
    if (auto created = new_capability(row, plan)) next.push_back(std::move(*created));
  }
  for (const auto& c : w.capabilities) {
    if (!c.active()) continue;
    const bool kept = std::any_of(next.begin(), next.end(), [&](const CapabilityStateV3& n) {
      return n.capability_id() == c.capability_id();
    });
    if (kept) continue;
    CapabilityStateV3 retired = c;
    retired.leases.clear();
    next.push_back(std::move(retired));
  }
  std::sort(next.begin(), next.end(), [](const CapabilityStateV3& a, const CapabilityStateV3& b) {
    return a.capability_id() < b.capability_id();
  });
  std::set<std::string> ids;
  for (const auto& c : next) ids.insert(c.capability_id());
  auto keep = [&](std::vector<std::string>& values) {
    values.erase(std::remove_if(values.begin(), values.end(),
                                [&](const std::string& v) { return !ids.count(v); }),
                 values.end());
  };
  w.capabilities = std::move(next);
  w.committed_plan = plan;
  auto& ev = w.evidence;
  ev.erase(std::remove_if(ev.begin(), ev.end(),
                          [&](const CapabilityEvidence& e) { return !ids.count(e.capability_id); }),
           ev.end());
  w.last_manual_bundle.clear();
  for (const auto& row : plan.capabilities()) {
    if (row.is_manual()) w.last_manual_bundle.push_back(row.capability_id());
  }
  keep(w.blocked_capability_ids);
  keep(w.blocked_deactivation_ids);
  keep(w.rollback_requested_capability_ids);
  keep(w.terminal_cleanup_notified_ids);
  std::set<std::string> descriptors;
  for (const auto& row : plan.capabilities()) {
    if (row.is_install()) descriptors.insert(row.install_descriptor()->descriptor_digest());
  }
  auto& blocked = w.blocked_install_descriptor_digests;
  blocked.erase(std::remove_if(blocked.begin(), blocked.end(),
                               [&](const std::string& d) { return !descriptors.count(d); }),
                blocked.end());
}

// ---- receipts (§3.7) ------------------------------------------------------------------------

PendingEffect receipt_pending(const W& w, const EngineEvent& event) {
  const Json& payload = event.payload();
  const std::string action_id = text(payload, "action_id", "action_id");
  const PendingEffect* found = nullptr;
  for (const auto& p : w.pending_effects) {
    if (p.action.action_id() == action_id) found = &p;
  }
  if (!found) invalid("receipt references unknown or completed action '" + action_id + "'");
  const HostAction& action = found->action;
  if (!(event.scope() == action.scope())) {
    invalid("receipt scope does not match pending action scope");
  }
  if (!payload.at("action_kind").is_string() ||
      find_enum<ActionKind>(payload.at("action_kind").get_ref<const std::string&>()) !=
          action.action_kind()) {
    invalid("receipt action_kind does not match pending action");
  }
  if (payload.at("action_content_digest") != action.content_digest()) {
    invalid("receipt action_content_digest does not match pending action");
  }
  if (payload.at("action_precondition_revision") != action.precondition_revision()) {
    invalid("receipt action_precondition_revision does not match pending action");
  }
  if (event.event_kind() != EventKind::kActionApplied) return *found;
  const Json& verification = payload.at("verification");
  if (verification.value("host_state", Json()) !=
      action.verification().value("expected_state", Json())) {
    invalid("receipt verification contradicts the requested physical state");
  }
  Json expected;
  const Json& ap = action.payload();
  const ActionKind kind = action.action_kind();
  if (kind == ActionKind::kInstallCapability) {
    expected = {{"capability_id", *action.entity_id()},
                {"capability_kind", ap.at("capability_kind")},
                {"catalog_identity", ap.at("catalog_identity")},
                {"host_state", "installed"},
                {"install_plan_descriptor", ap.at("install_plan_descriptor")},
                {"installer_digest", ap.at("installer_digest")},
                {"material_identity", ap.at("result_material")},
                {"policy_snapshot_digest", ap.at("policy_snapshot_digest")},
                {"schema", kInstallReceiptSchemaV3}};
  } else if (kind == ActionKind::kActivateCapability || kind == ActionKind::kPrepareExposure ||
             kind == ActionKind::kDeactivateCapability) {
    expected = {{"authorized_material", ap.at("authorized_material")},
                {"capability_id", *action.entity_id()},
                {"capability_kind", ap.at("capability_kind")},
                {"catalog_identity", ap.at("catalog_identity")},
                {"host_state", action.verification().at("expected_state")},
                {"material_identity", ap.at("material_identity")},
                {"schema", kMaterialReceiptSchemaV3}};
  } else {
    invalid("schema-v3 receipt action kind is unsupported");
  }
  if (verification != expected) {
    invalid("schema-v3 receipt does not byte-match the exact pending action authority");
  }
  return *found;
}

void apply_receipt(W& w, const PendingEffect& pending, const EngineEvent& event) {
  remove_pending(w, pending.action.action_id());
  const std::string id = pending.action.entity_id().value_or("");
  auto* c = find_cap(w, id);
  if (!c) invalid("schema-v3 receipt references missing runtime capability");
  if (pending.effect == Effect::kInstall) {
    if (!c->selection.is_install()) {
      invalid("schema-v3 install receipt lacks committed install authority");
    }
    const auto lineage = InstalledMaterialLineage::create(
        c->capability_id(), c->kind(), c->selection.catalog_identity().identity_digest(),
        c->material_identity.identity_digest(),
        c->selection.install_descriptor()->descriptor_digest(), pending.action.content_digest(),
        event.content_digest());
    c->installation = Installation::kInstalled;
    c->current_authorized_material = AuthorizedMaterial::from_installed(lineage);
    return;
  }
  if (pending.effect == Effect::kActivate || pending.effect == Effect::kRollbackActivate) {
    c->activation = Activation::kActive;
    c->activation_lease_id = pending.action.lease_id();
    if (pending.rollback_capability_id) {
      if (auto* rollback = find_cap(w, *pending.rollback_capability_id)) {
        CapabilityStateV3 cleared = *rollback;
        cleared.rollback_held = false;
        cleared.rollback_owner_id.reset();
        replace_or_prune(w, cleared);
      }
    }
    if (pending.effect == Effect::kRollbackActivate) {
      erase_value(w.rollback_requested_capability_ids, id);
    }
    return;
  }
  if (pending.effect == Effect::kDeactivate) {
    CapabilityStateV3 deactivated = *c;
    deactivated.activation = Activation::kInactive;
    deactivated.activation_lease_id.reset();
    replace_or_prune(w, deactivated);
    return;
  }
  if (pending.effect == Effect::kPrepare) {
    auto evidence = evidence_for(w, pending.action.scope().exposure_id(), id);
    if (evidence.exposure == Exposure::kUnexposed) {
      evidence.source_digest = c->source_digest();
      evidence.exposure = Exposure::kPrepared;
      replace_evidence(w, evidence);
    }
    return;
  }
  invalid("schema-v3 pending effect is unsupported");
}

void fail_receipt(W& w, const PendingEffect& pending) {
  remove_pending(w, pending.action.action_id());
  if (pending.effect == Effect::kPromptContext) return;
  const std::string id = pending.action.entity_id().value_or("");
  if (pending.effect == Effect::kInstall) {
    insert_sorted(w.blocked_install_descriptor_digests,
                  pending.action.payload().at("install_plan_descriptor").at("descriptor_digest"));
  } else if (pending.effect == Effect::kActivate) {
    insert_sorted(w.blocked_capability_ids, id);
    if (pending.rollback_capability_id && w.session_status != SessionStatus::kEnded) {
      insert_sorted(w.rollback_requested_capability_ids, *pending.rollback_capability_id);
    }
  } else if (pending.effect == Effect::kDeactivate) {
    if (auto* c = find_cap(w, id)) {
      c->rollback_held = false;
      c->rollback_owner_id.reset();
    }
    insert_sorted(w.blocked_deactivation_ids, id);
  } else if (pending.effect == Effect::kRollbackActivate) {
    erase_value(w.rollback_requested_capability_ids, id);
  }
}

// ---- other handlers -------------------------------------------------------------------------

Out handle_decision(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const Json& payload = event.payload();
  if (keys_of(payload) != std::set<std::string>{"consent_id", "decision", "decision_basis",
                                                "policy_snapshot_digest", "requested_action_id",
                                                "requested_action_kind",
                                                "requested_action_content_digest",
                                                "requested_action_precondition_revision"}) {
    invalid("v3 UserDecision requires exact decision provenance and action identity");
  }
  const std::string consent_id = text(payload, "consent_id", "consent_id");
  const auto it = std::find_if(w.pending_consents.begin(), w.pending_consents.end(),
                               [&](const PendingConsent& p) { return p.consent_id == consent_id; });
  if (it == w.pending_consents.end()) {
    invalid("UserDecision references unknown or completed consent");
  }
  const HostAction install = it->install_action;
  if (!(event.scope() == install.scope())) {
    invalid("UserDecision scope does not match pending consent");
  }
  if (payload.at("requested_action_id") != install.action_id() ||
      !same_action_kind(payload.at("requested_action_kind"), install) ||
      payload.at("requested_action_content_digest") != install.content_digest() ||
      payload.at("requested_action_precondition_revision") != install.precondition_revision()) {
    invalid("UserDecision does not match the exact requested install");
  }
  if (payload.at("policy_snapshot_digest") != install.payload().at("policy_snapshot_digest")) {
    invalid("UserDecision policy snapshot does not match pending install");
  }
  if (install.precondition_revision() != b.revision()) {
    invalid("UserDecision was not the immediate next committed revision");
  }
  w.pending_consents.erase(it);
  const bool expired =
      core::parse_rfc3339(event.occurred_at()) >= core::parse_rfc3339(*install.expires_at());
  if (find_enum<Decision>(text(payload, "decision", "decision")) == Decision::kDenied || expired) {
    insert_sorted(w.blocked_install_descriptor_digests,
                  install.payload().at("install_plan_descriptor").at("descriptor_digest"));
    Out out = reconcile(w, b);
    out.diagnostics.insert(
        out.diagnostics.begin(),
        Json{{"capability_id", *install.entity_id()},
             {"code", expired ? "install_consent_expired" : "install_consent_denied"}});
    return out;
  }
  with_pending(w, install, Effect::kInstall);
  return Out{{install}, {}};
}

Out handle_consent_expiry(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const Json& payload = event.payload();
  const std::string consent_id = text(payload, "consent_id", "consent_id");
  const auto it = std::find_if(w.pending_consents.begin(), w.pending_consents.end(),
                               [&](const PendingConsent& p) { return p.consent_id == consent_id; });
  if (it == w.pending_consents.end()) {
    invalid("InstallConsentExpired references unknown or completed consent");
  }
  const HostAction install = it->install_action;
  if (!(event.scope() == install.scope()) ||
      payload.at("policy_snapshot_digest") != install.payload().at("policy_snapshot_digest") ||
      payload.at("requested_action_id") != install.action_id() ||
      !same_action_kind(payload.at("requested_action_kind"), install) ||
      payload.at("requested_action_content_digest") != install.content_digest() ||
      payload.at("requested_action_precondition_revision") != install.precondition_revision() ||
      payload.at("install_expires_at") != *install.expires_at()) {
    invalid("InstallConsentExpired does not match the exact pending consent");
  }
  if (install.precondition_revision() != b.revision()) {
    invalid("InstallConsentExpired does not match the exact pending consent revision");
  }
  w.pending_consents.erase(it);
  return Out{{},
             {Json{{"capability_id", *install.entity_id()},
                   {"code", "install_consent_expired"},
                   {"consent_id", consent_id}}}};
}

Out prepare_exposure(W& w, const Builder& b) {
  Out out;
  const auto& exposure = b.event().scope().exposure_id();
  if (w.host_level != HostLevel::kActivating && w.host_level != HostLevel::kManaging) {
    out.diagnostics.push_back(
        {{"code", "host_activation_unsupported"}, {"host_level", to_string(w.host_level)}});
    return out;
  }
  for (std::size_t i = 0; i < w.capabilities.size(); ++i) {
    const auto& c = w.capabilities[i];
    const bool leased = std::any_of(c.leases.begin(), c.leases.end(),
                                    [&](const LeaseRef& l) { return l.exposure_id == exposure; });
    const bool pending = std::any_of(
        w.pending_effects.begin(), w.pending_effects.end(),
        [&](const PendingEffect& p) { return p.action.entity_id() == c.capability_id(); });
    if (!c.active() || !leased ||
        evidence_for(w, exposure, c.capability_id()).exposure != Exposure::kUnexposed || pending) {
      continue;
    }
    auto action = b.material(
        ActionKind::kPrepareExposure, c, static_cast<std::int64_t>(out.actions.size()),
        c.activation_lease_id.value_or("exposure:" + exposure + ":" + c.capability_id()));
    with_pending(w, action, Effect::kPrepare);
    out.actions.push_back(std::move(action));
  }
  return out;
}

Out observe_submission(W& w, const EngineEvent& event) {
  Out out;
  const Json& rows = array_of(event.payload(), "capabilities", "capabilities");
  std::size_t index = 0;
  for (const auto& item : rows) {
    const std::string at = "capabilities[" + std::to_string(index++) + "]";
    if (!item.is_object()) invalid(at + " must be an object");
    const std::string id = text(item, "capability_id", at + ".capability_id");
    const std::string source = text(item, "source_digest", at + ".source_digest");
    const auto* c = find_cap(w, id);
    if (!c || c->source_digest() != source) {
      out.diagnostics.push_back({{"capability_id", id}, {"code", "source_digest_mismatch"}});
      continue;
    }
    auto evidence = evidence_for(w, event.scope().exposure_id(), id);
    evidence.source_digest = source;
    evidence.exposure = Exposure::kSubmitted;
    replace_evidence(w, evidence);
  }
  return out;
}

Out observe_invocation(W& w, const EngineEvent& event) {
  const Json& payload = event.payload();
  const std::string id = text(payload, "capability_id", "capability_id");
  const std::string source = text(payload, "source_digest", "source_digest");
  const Json outcome = payload.value("outcome", Json());
  const std::optional<Invocation> invocation =
      outcome.is_string() ? kToolCallOutcomeStrings.find(outcome.get_ref<const std::string&>())
                          : std::nullopt;
  if (!invocation) invalid("outcome must be 'failed' or 'succeeded'");
  const auto* c = find_cap(w, id);
  if (!c || c->source_digest() != source) {
    return Out{{}, {Json{{"capability_id", id}, {"code", "source_digest_mismatch"}}}};
  }
  auto evidence = evidence_for(w, event.scope().exposure_id(), id);
  evidence.source_digest = source;
  evidence.invocation = *invocation;
  replace_evidence(w, evidence);
  return {};
}

Out retry_terminal_cleanup(W& w, const Builder& b) {
  const Json& payload = b.event().payload();
  if (keys_of(payload) != std::set<std::string>{"retry_failed_deactivations"}) {
    invalid("ended-session ReassessmentRequested must contain only retry_failed_deactivations");
  }
  std::vector<std::string> values;
  std::size_t index = 0;
  for (const auto& item :
       array_of(payload, "retry_failed_deactivations", "retry_failed_deactivations")) {
    const std::string at = "retry_failed_deactivations[" + std::to_string(index++) + "]";
    if (!item.is_string() || !is_trimmed_string(item.get_ref<const std::string&>())) {
      invalid(at + " must be a non-empty trimmed string");
    }
    values.push_back(item.get<std::string>());
  }
  const std::set<std::string> unique(values.begin(), values.end());
  if (values.empty() || values.size() > kMaxActiveCapabilities || unique.size() != values.size()) {
    invalid("retry_failed_deactivations must contain one to five unique IDs");
  }
  for (const auto& id : values) {
    const auto* c = find_cap(w, id);
    if (!contains(w.blocked_deactivation_ids, id) || !c || !c->active()) {
      invalid("terminal cleanup retry must target blocked active capabilities");
    }
  }
  for (const auto& id : values) {
    erase_value(w.blocked_deactivation_ids, id);
    erase_value(w.terminal_cleanup_notified_ids, id);
  }
  Out out = reconcile(w, b);
  out.diagnostics.push_back(
      {{"capability_ids", values}, {"code", "terminal_cleanup_retry_requested"}});
  return out;
}

Out refresh_stale_consent(W& w, const Builder& b, bool had_consent, Out out) {
  if (!had_consent || w.session_status == SessionStatus::kEnded || !w.pending_consents.empty()) {
    return out;
  }
  Out more = reconcile(w, b);
  out.actions.insert(out.actions.end(), more.actions.begin(), more.actions.end());
  out.diagnostics.insert(out.diagnostics.end(), more.diagnostics.begin(), more.diagnostics.end());
  return out;
}

Out handle_event(W& w, const Builder& b) {
  const EngineEvent& event = b.event();
  const EventKind kind = event.event_kind();
  if (kind == EventKind::kUserDecision) return handle_decision(w, b);
  if (kind == EventKind::kInstallConsentExpired) return handle_consent_expiry(w, b);
  const bool had_consent = !w.pending_consents.empty();
  if (had_consent && !is_planning_kind(kind)) w.pending_consents.clear();
  if (kind == EventKind::kReassessmentRequested) {
    if (w.session_status != SessionStatus::kEnded) {
      update_desired(w, event);
      return reconcile(w, b);
    }
    return retry_terminal_cleanup(w, b);
  }
  if (is_receipt_kind(kind)) {
    const PendingEffect pending = receipt_pending(w, event);
    if (kind == EventKind::kActionApplied) {
      apply_receipt(w, pending, event);
    } else if (kind == EventKind::kActionExpired &&
               (pending.effect == Effect::kInstall ||
                (pending.effect == Effect::kActivate &&
                 pending.action.payload().value("schema", Json()) ==
                     kMaterialActionPayloadSchemaV3))) {
      remove_pending(w, pending.action.action_id());
      if (pending.effect == Effect::kActivate && pending.rollback_capability_id &&
          w.session_status != SessionStatus::kEnded) {
        insert_sorted(w.rollback_requested_capability_ids, *pending.rollback_capability_id);
      }
      return {};
    } else {
      fail_receipt(w, pending);
    }
    if (pending.effect == Effect::kPromptContext) {
      return refresh_stale_consent(w, b, had_consent, {});
    }
    return reconcile(w, b);
  }
  if (kind == EventKind::kProviderSubmissionObserved) {
    return refresh_stale_consent(w, b, had_consent, observe_submission(w, event));
  }
  if (kind == EventKind::kToolCallObserved) {
    return refresh_stale_consent(w, b, had_consent, observe_invocation(w, event));
  }
  if (kind == EventKind::kTurnStarting) {
    return refresh_stale_consent(w, b, had_consent, prepare_exposure(w, b));
  }
  if (kind == EventKind::kSessionEnded) {
    std::set<std::string> retained;
    for (const auto& p : w.pending_effects) {
      if (p.effect == Effect::kActivate && p.rollback_capability_id) {
        retained.insert(*p.rollback_capability_id);
      }
    }
    for (auto& c : w.capabilities) {
      c.leases.clear();
      if (!retained.count(c.capability_id())) {
        c.rollback_held = false;
        c.rollback_owner_id.reset();
      }
    }
    w.session_status = SessionStatus::kEnded;
    w.blocked_deactivation_ids.clear();
    w.rollback_requested_capability_ids.clear();
    return reconcile(w, b);
  }
  if (!had_consent || is_planning_kind(kind) || w.session_status == SessionStatus::kEnded ||
      !w.pending_consents.empty()) {
    return {};
  }
  return reconcile(w, b);
}

}  // namespace

std::string reducer_action_id(std::string_view digest, std::string_view kind,
                              std::string_view capability_id, std::int64_t ordinal) {
  std::string material = "ctx-engine-action-v1:";
  material.append(digest).append(":").append(kind).append(":");
  material.append(capability_id.empty() ? std::string_view("session") : capability_id);
  material.append(":").append(std::to_string(ordinal));
  return "action-" + core::sha256_hex(material);
}

std::string reducer_consent_id(std::string_view digest, std::string_view capability_id) {
  std::string material = "ctx-engine-consent-v1:";
  material.append(digest).append(":").append(capability_id);
  return "consent-" + core::sha256_hex(material);
}

Reduction reduce_v3(const EngineState* state, const ReducerEvent& input) {
  const EngineEvent& event = input.event;
  const bool planning = is_planning_kind(event.event_kind());
  if (input.decision && !planning) invalid("decision is not valid for this event kind");
  if (planning && !input.decision) invalid("planning event is missing its durable decision");

  if (!state) {
    if (event.event_kind() != EventKind::kSessionStarted) {
      invalid("SessionStarted must be the first event");
    }
    if (event.expected_revision() != 0) throw RevisionConflictError(0, event.expected_revision());
    if (!event.host_descriptor_digest()) invalid("SessionStarted requires host_descriptor_digest");
    const Json level = event.payload().value("host_level", Json("query-only"));
    const auto host_level = level.is_string()
                                ? find_enum<HostLevel>(level.get_ref<const std::string&>())
                                : std::nullopt;
    if (!host_level) invalid("unknown host_level " + level.dump());
    if (!is_digest(*event.host_descriptor_digest())) {
      invalid("host_descriptor_digest must be a lowercase SHA-256 digest");
    }
    auto next = EngineStateInternal::from_reducer(
        W{.revision = 1,
          .scope = event.scope(),
          .host_level = *host_level,
          .host_descriptor_digest = *event.host_descriptor_digest()});
    return Reduction{std::move(next),
                     Transition::create(event.event_id(), event.scope(), 0, 1, {}, {})};
  }

  if (event.expected_revision() != state->revision()) {
    throw RevisionConflictError(state->revision(), event.expected_revision());
  }
  if (!event.scope().same_session(state->scope())) {
    invalid("event scope does not match the current-work session scope");
  }
  if (event.host_descriptor_digest() &&
      *event.host_descriptor_digest() != state->host_descriptor_digest()) {
    invalid("host descriptor changed within a current-work session");
  }
  if (event.event_kind() == EventKind::kSessionStarted) invalid("session is already started");
  if (state->session_status() == SessionStatus::kEnded && !is_receipt_kind(event.event_kind()) &&
      event.event_kind() != EventKind::kReassessmentRequested) {
    invalid("session has ended; only pending receipts or explicit cleanup recovery are accepted");
  }

  const std::int64_t revision = state->revision() + 1;
  const Builder builder(event, revision);
  W w = state->fields();
  Out out = handle_event(w, builder);

  if (planning) {
    if (!event.correlation_id()) invalid("correlation_id must be a non-empty trimmed string");
    if (!event.catalog_snapshot_digest() || !is_digest(*event.catalog_snapshot_digest())) {
      invalid("catalog_snapshot_digest must be a lowercase SHA-256 digest");
    }
    const auto plan = CommittedPlanV3::from_decision(*event.correlation_id(),
                                                     *event.catalog_snapshot_digest(),
                                                     *input.decision);
    std::set<std::string> retained_active;
    for (const auto& row : plan.capabilities()) {
      const auto* c = state->capability(row.capability_id());
      if (c && c->active() && c->selection == row) retained_active.insert(row.capability_id());
    }
    if (plan.status() == PlanStatus::kDegraded) {
      const W before = w;
      commit_plan(w, plan);
      CTX_CHECK(w.capabilities == before.capabilities &&
                w.pending_effects == before.pending_effects &&
                w.pending_consents == before.pending_consents && w.evidence == before.evidence &&
                w.blocked_capability_ids == before.blocked_capability_ids &&
                w.blocked_install_descriptor_digests == before.blocked_install_descriptor_digests &&
                w.install_policy_snapshot_digest == before.install_policy_snapshot_digest);
      out.diagnostics.push_back({{"code", *plan.abstention_code()}});
    } else {
      commit_plan(w, plan);
      Out lifecycle = reconcile(w, builder);
      out.actions.insert(out.actions.end(), lifecycle.actions.begin(), lifecycle.actions.end());
      out.diagnostics.insert(out.diagnostics.end(), lifecycle.diagnostics.begin(),
                             lifecycle.diagnostics.end());
      if (plan.status() == PlanStatus::kReady) {
        Json rows = Json::array();
        for (const auto& row : plan.capabilities()) {
          if (!retained_active.count(row.capability_id())) rows.push_back(row.to_json());
        }
        if (!rows.empty()) {
          out.actions.push_back(builder.present_bundle(
              static_cast<std::int64_t>(out.actions.size()),
              Json{{"capabilities", rows}, {"plan_digest", plan.decision_digest()}}));
        }
      } else {
        out.diagnostics.push_back({{"code", *plan.abstention_code()}});
      }
    }
  }

  w.revision = revision;
  CTX_CHECK(active_count(w) <= kMaxActiveCapabilities);
  auto next = EngineStateInternal::from_reducer(std::move(w));
  auto transition = Transition::create(event.event_id(), event.scope(), state->revision(), revision,
                                       std::move(out.actions), std::move(out.diagnostics));
  return Reduction{std::move(next), std::move(transition)};
}

}  // namespace ctx::engine
