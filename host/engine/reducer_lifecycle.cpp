// The lifecycle steps of the v3 reducer (reducer_parts.hpp): plan commit (§3.4), desired
// update (§3.5) and reconcile (§3.6).
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "host/core/error.hpp"
#include "host/engine/reducer_parts.hpp"

namespace ctx::engine::reducer_parts {
namespace {
// ---- reconcile (§3.6) -----------------------------------------------------------------------

// An ended session deactivates its active capabilities, one per transition.
Out reconcile_ended_session(W& w, const Builder& b) {
  Out out;
  for (const auto& c : w.capabilities) {
    if (c.active() && !contains(w.blocked_deactivation_ids, c.capability_id()) &&
        !pending_for(w, c.capability_id(), {Effect::kDeactivate, Effect::kPrepare})) {
      auto action = b.material(ActionKind::kDeactivateCapability, c, 0,
                               c.activation_lease_id.value_or("session-end:" + c.capability_id()));
      with_pending(w, action, Effect::kDeactivate);
      out.actions.push_back(std::move(action));
      return out;
    }
  }
  return out;
}

// The first desired, uninstalled, unblocked install asks for consent (one at a time). Returns
// whether it did.
bool request_install_consent(W& w, const Builder& b, Out& out) {
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
      return true;
    }
  }
  return false;
}

// A requested rollback re-activates its capability (one at a time). Returns whether a rollback
// is requested or in flight (then nothing else reconciles).
bool reconcile_rollback(W& w, const Builder& b, Out& out) {
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
  return !w.rollback_requested_capability_ids.empty() || rollback_pending;
}

// Desired capabilities activate up to the active budget, each naming a held rollback capability
// not yet assigned to another pending activation.
void activate_within_budget(W& w, const Builder& b,
                            const std::vector<std::string>& inactive_desired, Out& out) {
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
}

// ---- desired update (§3.5) ------------------------------------------------------------------

// The reassessment names the committed ready plan and exactly the desired and policy fields.
const CommittedPlanV3& reassessed_plan(const W& w, const EngineEvent& event) {
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
  if (keys_of(event.payload()) !=
      std::set<std::string>{"owner_id", "desired_capabilities", "policy_snapshot_digest"}) {
    invalid("v3 reassessment requires exact desired and policy fields");
  }
  return *plan;
}

// The policy the reassessment runs under: a pending install keeps the committed one; another
// policy replaces it and drops the pending consents.
std::string reassessment_policy(W& w, const Json& payload) {
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
  return policy;
}

using DesiredRows = std::vector<std::pair<const PlanCapabilityV3*, std::string>>;

// The explicitly desired rows, each the exact committed identity of a plan row under a lease id
// used once (`lease_ids` collects them).
DesiredRows explicit_desired(const CommittedPlanV3& plan, const Json& raw,
                             std::set<std::string>& lease_ids) {
  DesiredRows desired;
  std::size_t index = 0;
  for (const auto& item : raw) {
    const std::string at = "desired_capabilities[" + std::to_string(index++) + "]";
    if (!item.is_object()) invalid(at + " must be an object");
    const std::string lease = text(item, "lease_id", at + ".lease_id");
    const std::string id = text(item, "capability_id", at + ".capability_id");
    if (!lease_ids.insert(lease).second) invalid("duplicate lease_id '" + lease + "'");
    const auto* row = plan.find(id);
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
  return desired;
}

// The owner's leases on active capabilities it did not name, still exact plan rows, stay desired.
void keep_active_leases(const W& w, const CommittedPlanV3& plan, const std::string& owner,
                        DesiredRows& desired, std::set<std::string>& lease_ids) {
  std::set<std::string> explicit_ids;
  for (const auto& [row, lease] : desired) explicit_ids.insert(row->capability_id());
  for (const auto& c : w.capabilities) {
    if (explicit_ids.count(c.capability_id()) || !c.active()) continue;
    const auto* row = plan.find(c.capability_id());
    if (!row || !(c.selection == *row)) continue;
    for (const auto& lease : c.leases) {
      if (lease.owner_id != owner) continue;
      if (!lease_ids.insert(lease.lease_id).second) {
        invalid("duplicate lease_id '" + lease.lease_id + "'");
      }
      desired.emplace_back(row, lease.lease_id);
    }
  }
}

// The owner's leases are replaced by `desired` (no lease id of another owner reused).
void replace_owner_leases(W& w, const EngineEvent& event, const std::string& owner,
                          const DesiredRows& desired, const std::set<std::string>& lease_ids) {
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
}

// Blocks that no longer apply are lifted: undesired capabilities, every deactivation block, and
// install descriptors no desired capability retains.
void lift_stale_blocks(W& w) {
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

}  // namespace

Out reconcile(W& w, const Builder& b) {
  if (w.session_status == SessionStatus::kEnded) return reconcile_ended_session(w, b);
  Out out;
  if (w.host_level != HostLevel::kActivating && w.host_level != HostLevel::kManaging) {
    out.diagnostics.push_back(
        {{"code", "host_activation_unsupported"}, {"host_level", to_string(w.host_level)}});
    return out;
  }
  if (!w.pending_consents.empty()) return out;
  if (request_install_consent(w, b, out)) return out;
  if (reconcile_rollback(w, b, out)) return out;

  std::vector<std::string> inactive_desired, active_undesired;
  bool replacement_in_progress = false;
  for (const auto& c : w.capabilities) {
    const auto& id = c.capability_id();
    if (c.desired() && c.installed() && !c.active() && !contains(w.blocked_capability_ids, id) &&
        !pending_for(w, id, {Effect::kActivate})) {
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
    // One undesired capability deactivates first; it is held for rollback while a desired one
    // replaces it.
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
  activate_within_budget(w, b, inactive_desired, out);
  return out;
}

void update_desired(W& w, const EngineEvent& event) {
  const CommittedPlanV3& plan = reassessed_plan(w, event);
  const Json& payload = event.payload();
  const std::string policy = reassessment_policy(w, payload);
  const std::string owner = text(payload, "owner_id", "owner_id");
  std::set<std::string> lease_ids;
  DesiredRows desired = explicit_desired(
      plan, array_of(payload, "desired_capabilities", "desired_capabilities"), lease_ids);
  keep_active_leases(w, plan, owner, desired, lease_ids);
  replace_owner_leases(w, event, owner, desired, lease_ids);
  lift_stale_blocks(w);
  w.install_policy_snapshot_digest = policy;
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
      const bool safe_rebind = !current->installed() && !current->active() && !current->desired() &&
                               !current->rollback_held;
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

}  // namespace ctx::engine::reducer_parts
