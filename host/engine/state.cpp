#include "host/engine/state.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

using Reader = core::JsonObjectReader;
constexpr core::JsonErrorRaiser kRaise = core::raise_as<StateValidationError>;

[[noreturn]] void invalid(const std::string& message) { throw StateValidationError(message); }

Json opt(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

void require_text(const std::string& value, const std::string& field) {
  if (!is_trimmed_string(value)) invalid(field + " must be a non-empty trimmed string");
}

std::vector<std::string> string_list(const Json& value, const char* field) {
  if (!value.is_array()) invalid(std::string(field) + " must be a JSON array");
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) invalid(std::string(field) + " must contain strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

template <typename T>
std::vector<T> object_list(const Json& value, const char* field) {
  if (!value.is_array()) invalid(std::string(field) + " must be a JSON array");
  std::vector<T> out;
  for (const auto& item : value) out.push_back(T::from_json(item));
  return out;
}

template <typename T>
Json list_json(const std::vector<T>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(v.to_json());
  return out;
}

// canon-U of list_json(values), without building it when empty.
template <typename T>
std::string list_text(const std::vector<T>& values) {
  return values.empty() ? std::string("[]") : core::canonical_json(list_json(values));
}

HostAction action_from(const Json& value, const char* what) {
  try {
    return HostAction::from_json(value);
  } catch (const InvalidArgument& e) {
    invalid(std::string(what) + " contains an invalid action: " + e.what());
  }
}

template <typename F>
auto identity(F&& parse, const char* what) -> decltype(parse()) {
  try {
    return parse();
  } catch (const InvalidIdentityError& e) {
    invalid(std::string("schema-v3 ") + what + " is invalid: " + e.what());
  }
}

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

const std::string& installer_digest() {
  static const std::string digest =
      core::sha256_hex("ctx-install-plan-executor-v1:typed-plan-only:no-raw-command");
  return digest;
}

Json install_payload_v3(const CapabilityStateV3& c, const std::string& policy_snapshot_digest) {
  return InstallBinding{c.selection.catalog_identity(), *c.selection.install_descriptor(),
                        installer_digest(), policy_snapshot_digest, c.material_identity}
      .to_json();
}

Json material_payload_v3(const CapabilityStateV3& c) {
  return MaterialBinding{*c.current_authorized_material, c.selection.catalog_identity(),
                         c.material_identity}
      .to_json();
}

// ---- records --------------------------------------------------------------------------------

Json LeaseRef::to_json() const {
  return {{"exposure_id", exposure_id}, {"lease_id", lease_id}, {"owner_id", owner_id}};
}

LeaseRef LeaseRef::from_json(const Json& value) {
  Reader r(value, "lease", kRaise);
  r.exact({"exposure_id", "lease_id", "owner_id"});
  LeaseRef out{r.string("lease_id"), r.string("owner_id"), r.string("exposure_id")};
  require_text(out.lease_id, "lease_id");
  require_text(out.owner_id, "owner_id");
  require_text(out.exposure_id, "exposure_id");
  return out;
}

void CapabilityStateV3::validate() const {
  if (selection.is_manual()) invalid("manual schema-v3 selections cannot create lifecycle state");
  require_text(plan_id, "plan_id");
  if (!is_digest(catalog_snapshot_id)) {
    invalid("catalog_snapshot_id must be a lowercase SHA-256 digest");
  }
  for (std::size_t i = 0; i < leases.size(); ++i) {
    require_text(leases[i].lease_id, "lease_id");
    require_text(leases[i].owner_id, "owner_id");
    require_text(leases[i].exposure_id, "exposure_id");
    if (i > 0 && !(leases[i - 1].lease_id < leases[i].lease_id)) {
      invalid("schema-v3 capability leases must be sorted by lease_id and unique");
    }
  }
  if (activation_lease_id) require_text(*activation_lease_id, "activation_lease_id");
  if (active() != activation_lease_id.has_value()) {
    invalid("activation_lease_id must be set exactly when the capability is active");
  }
  if (active() && !installed()) invalid("active capability must be installed");
  if (rollback_owner_id) require_text(*rollback_owner_id, "rollback_owner_id");
  if (rollback_held != rollback_owner_id.has_value()) {
    invalid("rollback_held and rollback_owner_id must be set together");
  }
  if (material_identity.capability_id() != capability_id() || material_identity.kind() != kind()) {
    invalid("material_identity does not match schema-v3 selection");
  }
  if (selection.is_load()) {
    if (!installed()) invalid("load selection must have installed lifecycle material");
    if (current_authorized_material != selection.load_material()) {
      invalid("current_authorized_material does not match load authority");
    }
  } else {
    if (!(material_identity == *selection.install_result_material())) {
      invalid("material_identity does not match install result authority");
    }
    if (!installed()) {
      if (current_authorized_material) {
        invalid("absent install selection cannot have authorized material");
      }
      if (active()) invalid("absent install selection must be inactive");
      return;
    }
    if (!current_authorized_material ||
        current_authorized_material->origin() != MaterialOrigin::kInstalled) {
      invalid("promoted install requires installed current_authorized_material");
    }
    const auto& lineage = current_authorized_material->installed_material_lineage();
    if (!lineage || lineage->origin_install_descriptor_digest() !=
                        selection.install_descriptor()->descriptor_digest()) {
      invalid("install promotion lineage does not match selected descriptor");
    }
  }
  const auto& current = *current_authorized_material;
  if (current.capability_id() != capability_id() || current.kind() != kind() ||
      current.catalog_identity_digest() != selection.catalog_identity().identity_digest() ||
      current.material_identity_digest() != material_identity.identity_digest()) {
    invalid("current_authorized_material identity does not match selection");
  }
}

Json CapabilityStateV3::to_json() const {
  return {{"activation", activation},
          {"activation_lease_id", opt(activation_lease_id)},
          {"catalog_snapshot_id", catalog_snapshot_id},
          {"current_authorized_material",
           current_authorized_material ? current_authorized_material->to_json() : Json(nullptr)},
          {"installation", installation},
          {"leases", list_json(leases)},
          {"material_identity", material_identity.to_json()},
          {"plan_id", plan_id},
          {"rollback_held", rollback_held},
          {"rollback_owner_id", opt(rollback_owner_id)},
          {"selection", selection.to_json()}};
}

CapabilityStateV3 CapabilityStateV3::from_json(const Json& value) {
  Reader r(value, "schema-v3 capability state", kRaise);
  r.exact({"activation", "activation_lease_id", "catalog_snapshot_id",
           "current_authorized_material", "installation", "leases", "material_identity",
           "plan_id", "rollback_held", "rollback_owner_id", "selection"});
  std::optional<AuthorizedMaterial> current;
  if (!r.at("current_authorized_material").is_null()) {
    current = identity(
        [&] { return AuthorizedMaterial::from_json(r.at("current_authorized_material")); },
        "authorized lineage");
  }
  CapabilityStateV3 out{
      .selection = PlanCapabilityV3::from_json(r.at("selection")),
      .material_identity = identity(
          [&] { return MaterialIdentity::from_json(r.at("material_identity")); },
          "material_identity"),
      .current_authorized_material = std::move(current),
      .installation = r.enumerated<Installation>("installation"),
      .plan_id = r.string("plan_id"),
      .catalog_snapshot_id = r.string("catalog_snapshot_id"),
      .leases = object_list<LeaseRef>(r.at("leases"), "leases"),
      .activation = r.enumerated<Activation>("activation"),
      .activation_lease_id = r.at("activation_lease_id").is_null()
                                 ? std::nullopt
                                 : std::optional(r.string("activation_lease_id")),
      .rollback_held = r.boolean("rollback_held"),
      .rollback_owner_id = r.at("rollback_owner_id").is_null()
                               ? std::nullopt
                               : std::optional(r.string("rollback_owner_id"))};
  out.validate();
  return out;
}

Json PendingEffect::to_json() const {
  return {{"action", action.to_json()},
          {"effect", effect},
          {"rollback_capability_id", opt(rollback_capability_id)}};
}

PendingEffect PendingEffect::from_json(const Json& value) {
  Reader r(value, "pending effect", kRaise);
  r.exact({"action", "effect", "rollback_capability_id"});
  return PendingEffect{
      action_from(r.at("action"), "pending effect"), r.enumerated<Effect>("effect"),
      r.at("rollback_capability_id").is_null() ? std::nullopt
                                               : std::optional(r.string("rollback_capability_id"))};
}

Json PendingConsent::to_json() const {
  return {{"consent_id", consent_id}, {"install_action", install_action.to_json()}};
}

PendingConsent PendingConsent::from_json(const Json& value) {
  Reader r(value, "pending consent", kRaise);
  r.exact({"consent_id", "install_action"});
  return PendingConsent{r.string("consent_id"),
                        action_from(r.at("install_action"), "pending consent")};
}

Json CapabilityEvidence::to_json() const {
  return {{"capability_id", capability_id},
          {"exposure", exposure},
          {"exposure_id", exposure_id},
          {"invocation", invocation},
          {"source_digest", source_digest}};
}

CapabilityEvidence CapabilityEvidence::from_json(const Json& value) {
  Reader r(value, "evidence", kRaise);
  r.exact({"capability_id", "exposure", "exposure_id", "invocation", "source_digest"});
  return CapabilityEvidence{r.string("exposure_id"), r.string("capability_id"),
                            r.string("source_digest"), r.enumerated<Exposure>("exposure"),
                            r.enumerated<Invocation>("invocation")};
}

// ---- EngineState ----------------------------------------------------------------------------

namespace {

ActionKind effect_kind(Effect effect) noexcept {
  switch (effect) {
    case Effect::kInstall:
      return ActionKind::kInstallCapability;
    case Effect::kActivate:
    case Effect::kRollbackActivate:
      return ActionKind::kActivateCapability;
    case Effect::kDeactivate:
      return ActionKind::kDeactivateCapability;
    case Effect::kPrepare:
      return ActionKind::kPrepareExposure;
    case Effect::kPromptContext:
      return ActionKind::kPreparePromptContext;
  }
  core::detail::check_failed("unhandled Effect", __FILE__, __LINE__);
}

void validate_id_list(const std::vector<std::string>& values, const char* field, bool digests) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    require_text(values[i], std::string(field) + "[" + std::to_string(i) + "]");
    if (digests && !is_digest(values[i])) {
      invalid(std::string(field) + " must contain lowercase SHA-256 digests");
    }
    if (i > 0 && !(values[i - 1] < values[i])) {
      invalid(std::string(field) + " must be sorted and contain no duplicate IDs");
    }
  }
}

void validate_action_identity(const HostAction& action, const CapabilityStateV3& c) {
  if (action.source_digest() != c.source_digest()) {
    invalid("pending action source_digest does not match capability");
  }
  if (action.plan_id() != c.plan_id) invalid("pending action plan_id does not match capability");
  if (action.catalog_snapshot_id() != c.catalog_snapshot_id) {
    invalid("pending action catalog snapshot does not match capability");
  }
}

void validate_install_action(const HostAction& action, const CapabilityStateV3& c,
                             const std::optional<std::string>& policy) {
  if (!c.selection.is_install()) invalid("pending install lacks committed install authority");
  if (!policy || action.payload() != install_payload_v3(c, *policy)) {
    invalid("pending install typed authority does not match runtime capability");
  }
}

using CapabilityIndex = std::map<std::string, const CapabilityStateV3*>;

void validate_header(const EngineState::Fields& f) {
  if (f.revision < 1) invalid("revision must be an integer >= 1");
  if (!is_digest(f.host_descriptor_digest)) {
    invalid("host_descriptor_digest must be a lowercase SHA-256 digest");
  }
  if (f.install_policy_snapshot_digest && !is_digest(*f.install_policy_snapshot_digest)) {
    invalid("install_policy_snapshot_digest must be a lowercase SHA-256 digest");
  }
}

// Each capability valid, sorted and unique, leases unique across them, at most five active.
CapabilityIndex validate_capabilities(const EngineState::Fields& f) {
  CapabilityIndex caps;
  std::set<std::string> lease_ids;
  std::size_t active = 0;
  for (std::size_t i = 0; i < f.capabilities.size(); ++i) {
    const auto& c = f.capabilities[i];
    c.validate();
    if (i > 0 && !(f.capabilities[i - 1].capability_id() < c.capability_id())) {
      invalid("capabilities must be sorted by capability_id without duplicates");
    }
    caps[c.capability_id()] = &c;
    for (const auto& lease : c.leases) {
      if (!lease_ids.insert(lease.lease_id).second) {
        invalid("duplicate lease ID across capabilities");
      }
    }
    if (c.active()) ++active;
  }
  if (active > kMaxActiveCapabilities) {
    invalid("projection cannot contain more than five active capabilities");
  }
  return caps;
}

void validate_evidence(const EngineState::Fields& f, const CapabilityIndex& caps) {
  for (std::size_t i = 0; i < f.evidence.size(); ++i) {
    const auto& e = f.evidence[i];
    if (i > 0 && !(std::tie(f.evidence[i - 1].exposure_id, f.evidence[i - 1].capability_id) <
                   std::tie(e.exposure_id, e.capability_id))) {
      invalid("evidence must be sorted by exposure and capability without duplicates");
    }
    const auto it = caps.find(e.capability_id);
    if (it == caps.end()) invalid("evidence references unknown capability");
    if (e.source_digest != it->second->source_digest()) {
      invalid("evidence source_digest does not match capability");
    }
  }
}

// Pending effects and consents: kinds, unique ids, one lifecycle operation per capability.
void validate_pending_shape(const EngineState::Fields& f) {
  std::set<std::string> action_ids, entities, consent_ids, consent_entities;
  for (const auto& p : f.pending_effects) {
    if (p.action.action_kind() != effect_kind(p.effect)) {
      invalid("pending effect does not match its action kind");
    }
    if (p.rollback_capability_id && p.effect != Effect::kActivate) {
      invalid("only a pending activation may name a rollback capability");
    }
    if (!action_ids.insert(p.action.action_id()).second) {
      invalid("duplicate pending action ID in projection");
    }
    if (p.action.entity_id() && !entities.insert(*p.action.entity_id()).second) {
      invalid("capability cannot have multiple pending lifecycle operations");
    }
  }
  for (const auto& c : f.pending_consents) {
    if (c.install_action.action_kind() != ActionKind::kInstallCapability ||
        c.install_action.consent_id() != c.consent_id) {
      invalid("pending consent must hold the InstallCapability bound to its consent_id");
    }
    if (!consent_ids.insert(c.consent_id).second) {
      invalid("duplicate pending consent ID in projection");
    }
    if (action_ids.count(c.install_action.action_id())) {
      invalid("install action cannot await consent and receipt simultaneously");
    }
    const auto& entity = c.install_action.entity_id().value_or("");
    if (!consent_entities.insert(entity).second) {
      invalid("capability cannot have multiple pending install consents");
    }
    if (entities.count(entity)) {
      invalid("install cannot await consent and a pending effect for the same capability");
    }
  }
}

void validate_id_lists(const EngineState::Fields& f) {
  validate_id_list(f.last_manual_bundle, "last_manual_bundle", false);
  validate_id_list(f.blocked_capability_ids, "blocked_capability_ids", false);
  validate_id_list(f.blocked_deactivation_ids, "blocked_deactivation_ids", false);
  validate_id_list(f.blocked_install_descriptor_digests, "blocked_install_descriptor_digests",
                   true);
  validate_id_list(f.rollback_requested_capability_ids, "rollback_requested_capability_ids", false);
  validate_id_list(f.terminal_cleanup_notified_ids, "terminal_cleanup_notified_ids", false);
  if (f.last_manual_bundle.size() > kMaxSelectedCapabilities) {
    invalid("last_manual_bundle cannot contain more than five capabilities");
  }
}

// The runtime capabilities against the committed plan (v3).
void validate_plan_references(const EngineState::Fields& f, const CapabilityIndex& caps) {
  // Cross references (v3).
  const auto& plan = f.committed_plan;
  if (!plan && (!caps.empty() || !f.last_manual_bundle.empty() ||
                !f.blocked_install_descriptor_digests.empty())) {
    invalid("schema-v3 runtime references require a committed plan");
  }
  for (const auto& [id, c] : caps) {
    const PlanCapabilityV3* row = plan ? plan->find(id) : nullptr;
    if (row) {
      if (!(c->selection == *row)) {
        invalid("schema-v3 runtime capability is not the exact committed plan row");
      }
      if (c->plan_id != plan->plan_id() || c->catalog_snapshot_id != plan->catalog_snapshot_id()) {
        invalid("schema-v3 capability plan identity does not match committed plan");
      }
    } else if (plan) {
      if (c->plan_id == plan->plan_id()) {
        invalid("omitted runtime cannot mint current-plan authority");
      }
      if ((plan->status() == PlanStatus::kReady || plan->status() == PlanStatus::kAbstained) &&
          c->desired()) {
        invalid("unselected runtime capability cannot retain current leases");
      }
    }
  }
  std::vector<std::string> expected_manual;
  if (plan && plan->status() == PlanStatus::kReady) {
    for (const auto& row : plan->capabilities()) {
      if (row.is_manual()) expected_manual.push_back(row.capability_id());
    }
  }
  if (f.last_manual_bundle != expected_manual) {
    invalid("last_manual_bundle does not exactly match committed manual rows");
  }
}

// One pending effect against its capability: identity, authority, lease, rollback.
void validate_pending_effect(const EngineState::Fields& f, const CapabilityIndex& caps,
                             const PendingEffect& p) {
  const HostAction& a = p.action;
  if (a.precondition_revision() > f.revision) {
    invalid("persisted pending action exceeds state revision");
  }
  if (!a.scope().same_session(f.scope)) {
    invalid("pending action scope belongs to another session");
  }
  if (p.effect == Effect::kPromptContext) return;
  const auto it = caps.find(a.entity_id().value_or(""));
  if (it == caps.end()) invalid("pending action references unknown capability");
  const auto& c = *it->second;
  validate_action_identity(a, c);
  if (p.effect == Effect::kInstall) {
    if (c.installed() || c.active()) {
      invalid("pending install must target an absent inactive capability");
    }
    validate_install_action(a, c, f.install_policy_snapshot_digest);
  } else {
    if (!c.current_authorized_material || !c.installed()) {
      invalid("pending material action requires installed authorized material");
    }
    if (a.payload() != material_payload_v3(c)) {
      invalid("pending action authorized material does not match runtime capability");
    }
    const bool activating = p.effect == Effect::kActivate || p.effect == Effect::kRollbackActivate;
    if (activating && c.active()) {
      invalid("pending activation targets an already active capability");
    }
    if (!activating && !c.active()) {
      invalid("pending " + std::string(to_string(p.effect)) + " targets an inactive capability");
    }
    if (p.effect == Effect::kActivate) {
      const auto lease = std::find_if(c.leases.begin(), c.leases.end(), [&](const LeaseRef& l) {
        return std::optional(l.lease_id) == a.lease_id();
      });
      if (lease == c.leases.end() || lease->exposure_id != a.scope().exposure_id()) {
        invalid("pending activation is not authorized by the exact current lease");
      }
    } else if (p.effect == Effect::kRollbackActivate) {
      if (!c.rollback_held || !contains(f.rollback_requested_capability_ids, c.capability_id()) ||
          a.lease_id() != "rollback:" + c.capability_id()) {
        invalid("pending rollback activation lacks exact held rollback authority");
      }
    } else if (p.effect == Effect::kPrepare) {
      const bool leased = std::any_of(c.leases.begin(), c.leases.end(), [&](const LeaseRef& l) {
        return l.exposure_id == a.scope().exposure_id();
      });
      if (a.lease_id() != c.activation_lease_id || !leased) {
        invalid("pending exposure preparation lacks a lease for the exact exposure");
      }
    } else if (p.effect == Effect::kDeactivate && a.lease_id() != c.activation_lease_id) {
      invalid("pending deactivation lease does not match activation_lease_id");
    }
  }
  if (p.rollback_capability_id) {
    const auto r = caps.find(*p.rollback_capability_id);
    if (r == caps.end() || !r->second->rollback_held || r->second->active() ||
        r->first == c.capability_id()) {
      invalid("pending activation has invalid rollback capability");
    }
  }
}

void validate_pending_consents(const EngineState::Fields& f, const CapabilityIndex& caps) {
  for (const auto& pc : f.pending_consents) {
    const HostAction& a = pc.install_action;
    const auto it = caps.find(a.entity_id().value_or(""));
    if (it == caps.end()) invalid("pending consent references unknown capability");
    const auto& c = *it->second;
    if (c.installed() || c.active()) {
      invalid("pending consent must target an absent inactive capability");
    }
    validate_action_identity(a, c);
    validate_install_action(a, c, f.install_policy_snapshot_digest);
    if (a.precondition_revision() > f.revision + 1) {
      invalid("persisted pending consent exceeds next revision");
    }
    if (!a.scope().same_session(f.scope)) invalid("pending consent belongs to another session");
  }
}

// The id lists and blocked descriptors reference capabilities (or authority) the state holds.
void validate_list_references(const EngineState::Fields& f, const CapabilityIndex& caps) {
  const auto& plan = f.committed_plan;
  for (const auto* list : {&f.blocked_capability_ids, &f.blocked_deactivation_ids,
                           &f.rollback_requested_capability_ids,
                           &f.terminal_cleanup_notified_ids}) {
    for (const auto& id : *list) {
      if (!caps.count(id)) invalid("capability id list references unknown capability");
    }
  }
  std::set<std::string> descriptors;
  for (const auto& [id, c] : caps) {
    if (c->selection.is_install()) {
      descriptors.insert(c->selection.install_descriptor()->descriptor_digest());
    }
  }
  if (plan) {
    for (const auto& row : plan->capabilities()) {
      if (row.is_install()) descriptors.insert(row.install_descriptor()->descriptor_digest());
    }
  }
  for (const auto& d : f.blocked_install_descriptor_digests) {
    if (!descriptors.count(d)) {
      invalid("blocked install descriptor lacks retained or current authority");
    }
  }
  for (const auto& id : f.terminal_cleanup_notified_ids) {
    if (!contains(f.blocked_deactivation_ids, id)) {
      invalid("terminal cleanup notification must reference blocked deactivation");
    }
  }
}

// What a persisted projection may hold: cleanup, rollback and survival rules.
void validate_persisted_projection(const EngineState::Fields& f, const CapabilityIndex& caps) {
  const auto& plan = f.committed_plan;
  // Persisted projection.
  std::set<std::string> pending_deactivations, rollback_refs, pending_entities;
  for (const auto& p : f.pending_effects) {
    if (p.effect == Effect::kDeactivate && p.action.entity_id()) {
      pending_deactivations.insert(*p.action.entity_id());
    }
    if (p.rollback_capability_id) rollback_refs.insert(*p.rollback_capability_id);
    if (p.action.entity_id()) pending_entities.insert(*p.action.entity_id());
  }
  for (const auto& id : f.rollback_requested_capability_ids) {
    const auto& c = *caps.at(id);
    if (c.active() || !c.rollback_held) {
      invalid("rollback request must target inactive rollback-held capability");
    }
  }
  // Deactivation is sequential (one per transition), so while one is in flight the other
  // unleased active capabilities wait for it; otherwise each needs its own cleanup state.
  for (const auto& [id, c] : caps) {
    if (c->active() && !c->desired() && !c->rollback_held && pending_deactivations.empty() &&
        !contains(f.blocked_deactivation_ids, id)) {
      invalid("unleased active capability requires cleanup or rollback state");
    }
    const bool selected = plan && plan->status() == PlanStatus::kReady && plan->find(id);
    if (selected || (plan && plan->status() == PlanStatus::kDegraded)) continue;
    if (!c->active() && !c->rollback_held && !contains(f.rollback_requested_capability_ids, id) &&
        !rollback_refs.count(id) && !pending_entities.count(id)) {
      invalid("inactive unselected capability cannot survive persisted state");
    }
  }
}

void validate(const EngineState::Fields& f) {
  validate_header(f);
  const CapabilityIndex caps = validate_capabilities(f);
  validate_evidence(f, caps);
  validate_pending_shape(f);
  validate_id_lists(f);
  validate_plan_references(f, caps);
  for (const auto& p : f.pending_effects) validate_pending_effect(f, caps, p);
  validate_pending_consents(f, caps);
  validate_list_references(f, caps);
  validate_persisted_projection(f, caps);
}

}  // namespace

EngineState EngineState::create(Fields fields) {
  validate(fields);
  return EngineState(std::move(fields));
}

EngineState EngineStateInternal::from_reducer(EngineState::Fields fields) {
#ifndef NDEBUG
  try {
    validate(fields);
  } catch (const StateValidationError& e) {
    core::detail::check_failed(e.what(), __FILE__, __LINE__);
  }
#endif
  return EngineState(std::move(fields));
}

EngineState EngineState::from_json(const Json& value) {
  Reader r(value, "engine state", kRaise);
  r.exact({"blocked_capability_ids", "blocked_deactivation_ids",
           "blocked_install_descriptor_digests", "capabilities", "committed_plan", "evidence",
           "host_descriptor_digest", "host_level", "install_policy_snapshot_digest",
           "last_manual_bundle", "pending_consents", "pending_effects", "revision",
           "rollback_requested_capability_ids", "scope", "session_status", "state_schema",
           "terminal_cleanup_notified_ids"});
  r.literal("state_schema", kStateSchemaV3, "schema-v3 engine state discriminator");
  ScopeRef scope = [&] {
    try {
      return ScopeRef::from_json(r.at("scope"));
    } catch (const InvalidArgument&) {
      invalid("engine state contains an invalid scope");
    }
  }();
  Fields f{
      .revision = r.integer("revision", 1, std::numeric_limits<std::int64_t>::max()),
      .scope = std::move(scope),
      .host_level = r.enumerated<HostLevel>("host_level"),
      .host_descriptor_digest = r.string("host_descriptor_digest"),
      .session_status = r.enumerated<SessionStatus>("session_status"),
      .capabilities = object_list<CapabilityStateV3>(r.at("capabilities"), "capabilities"),
      .pending_effects = object_list<PendingEffect>(r.at("pending_effects"), "pending_effects"),
      .pending_consents =
          object_list<PendingConsent>(r.at("pending_consents"), "pending_consents")};
  if (!r.at("committed_plan").is_null()) {
    f.committed_plan = CommittedPlanV3::from_json(r.at("committed_plan"));
  }
  f.evidence = object_list<CapabilityEvidence>(r.at("evidence"), "evidence");
  f.last_manual_bundle = string_list(r.at("last_manual_bundle"), "last_manual_bundle");
  f.blocked_capability_ids = string_list(r.at("blocked_capability_ids"), "blocked_capability_ids");
  f.blocked_deactivation_ids =
      string_list(r.at("blocked_deactivation_ids"), "blocked_deactivation_ids");
  f.blocked_install_descriptor_digests = string_list(
      r.at("blocked_install_descriptor_digests"), "blocked_install_descriptor_digests");
  if (!r.at("install_policy_snapshot_digest").is_null()) {
    f.install_policy_snapshot_digest = r.string("install_policy_snapshot_digest");
  }
  f.rollback_requested_capability_ids = string_list(r.at("rollback_requested_capability_ids"),
                                                    "rollback_requested_capability_ids");
  f.terminal_cleanup_notified_ids =
      string_list(r.at("terminal_cleanup_notified_ids"), "terminal_cleanup_notified_ids");
  return create(std::move(f));
}

EngineState EngineState::from_json_text(std::string_view text) {
  Json value;
  try {
    value = core::parse_json(text);
  } catch (const InvalidArgument& e) {
    invalid(std::string("state must be valid JSON: ") + e.what());
  }
  if (!value.is_object()) invalid("state JSON root must be an object");
  if (core::canonical_json(value) != text) invalid("state JSON must use canonical encoding");
  return from_json(value);
}

Json EngineState::to_json() const {
  return {{"blocked_capability_ids", f_.blocked_capability_ids},
          {"blocked_deactivation_ids", f_.blocked_deactivation_ids},
          {"blocked_install_descriptor_digests", f_.blocked_install_descriptor_digests},
          {"capabilities", list_json(f_.capabilities)},
          {"committed_plan", f_.committed_plan ? f_.committed_plan->to_json() : Json(nullptr)},
          {"evidence", list_json(f_.evidence)},
          {"host_descriptor_digest", f_.host_descriptor_digest},
          {"host_level", f_.host_level},
          {"install_policy_snapshot_digest", opt(f_.install_policy_snapshot_digest)},
          {"last_manual_bundle", f_.last_manual_bundle},
          {"pending_consents", list_json(f_.pending_consents)},
          {"pending_effects", list_json(f_.pending_effects)},
          {"revision", f_.revision},
          {"rollback_requested_capability_ids", f_.rollback_requested_capability_ids},
          {"scope", f_.scope.to_json()},
          {"session_status", f_.session_status},
          {"state_schema", kStateSchemaV3},
          {"terminal_cleanup_notified_ids", f_.terminal_cleanup_notified_ids}};
}

std::string EngineState::to_json_text() const {
  return CanonicalObject()
      .strings("blocked_capability_ids", f_.blocked_capability_ids)
      .strings("blocked_deactivation_ids", f_.blocked_deactivation_ids)
      .strings("blocked_install_descriptor_digests", f_.blocked_install_descriptor_digests)
      .text("capabilities", list_text(f_.capabilities))
      .text("committed_plan", f_.committed_plan
                                  ? core::canonical_json(f_.committed_plan->to_json())
                                  : std::string("null"))
      .text("evidence", list_text(f_.evidence))
      .string("host_descriptor_digest", f_.host_descriptor_digest)
      .string("host_level", to_string(f_.host_level))
      .optional_string("install_policy_snapshot_digest", f_.install_policy_snapshot_digest)
      .strings("last_manual_bundle", f_.last_manual_bundle)
      .text("pending_consents", list_text(f_.pending_consents))
      .text("pending_effects", list_text(f_.pending_effects))
      .integer("revision", f_.revision)
      .strings("rollback_requested_capability_ids", f_.rollback_requested_capability_ids)
      .text("scope", f_.scope.to_json_text())
      .string("session_status", to_string(f_.session_status))
      .string("state_schema", kStateSchemaV3)
      .strings("terminal_cleanup_notified_ids", f_.terminal_cleanup_notified_ids)
      .finish();
}

const CapabilityStateV3* EngineState::capability(std::string_view id) const noexcept {
  for (const auto& c : f_.capabilities) {
    if (c.capability_id() == id) return &c;
  }
  return nullptr;
}

const PendingEffect* EngineState::pending_effect(std::string_view action_id) const noexcept {
  for (const auto& p : f_.pending_effects) {
    if (p.action.action_id() == action_id) return &p;
  }
  return nullptr;
}

std::vector<std::string> EngineState::active_capability_ids() const {
  std::vector<std::string> out;
  for (const auto& c : f_.capabilities) {
    if (c.active()) out.push_back(c.capability_id());
  }
  return out;
}

}  // namespace ctx::engine
