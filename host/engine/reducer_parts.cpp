#include "host/engine/reducer_parts.hpp"

#include <algorithm>
#include <tuple>

#include "host/core/time.hpp"

namespace ctx::engine::reducer_parts {

void invalid(const std::string& message) { throw InvalidEventError(message); }

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
                  std::optional<std::string> rollback) {
  w.pending_effects.push_back(PendingEffect{action, effect, std::move(rollback)});
}

void remove_pending(W& w, const std::string& action_id) {
  auto& v = w.pending_effects;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const PendingEffect& p) { return p.action.action_id() == action_id; }),
          v.end());
}

std::size_t active_count(const W& w) {
  return static_cast<std::size_t>(
      std::count_if(w.capabilities.begin(), w.capabilities.end(),
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
  const auto pos = std::lower_bound(
      ev.begin(), ev.end(), evidence, [](const CapabilityEvidence& a, const CapabilityEvidence& b) {
        return std::tie(a.exposure_id, a.capability_id) < std::tie(b.exposure_id, b.capability_id);
      });
  ev.insert(pos, evidence);
}

}  // namespace ctx::engine::reducer_parts
