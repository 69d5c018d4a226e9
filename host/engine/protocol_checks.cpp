// The protocol's payload and action checks (protocol_checks.hpp).
#include "host/engine/protocol_checks.hpp"

#include <cmath>
#include <initializer_list>
#include <optional>
#include <set>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine::protocol_checks {

namespace {

bool is_physical(ActionKind kind) noexcept {
  return kind == ActionKind::kInstallCapability || kind == ActionKind::kActivateCapability ||
         kind == ActionKind::kPrepareExposure || kind == ActionKind::kDeactivateCapability ||
         kind == ActionKind::kUninstallCapability;
}

bool is_lease_bounded(ActionKind kind) noexcept {
  return kind == ActionKind::kActivateCapability || kind == ActionKind::kPrepareExposure ||
         kind == ActionKind::kDeactivateCapability;
}

std::optional<HostState> material_expected_state(ActionKind kind) noexcept {
  if (kind == ActionKind::kActivateCapability) return HostState::kActive;
  if (kind == ActionKind::kPrepareExposure) return HostState::kPrepared;
  if (kind == ActionKind::kDeactivateCapability) return HostState::kInactive;
  return std::nullopt;
}

// The enum a JSON value spells, or nullopt when it is not one of the enum's strings.
template <typename E>
std::optional<E> enum_of(const Json& value) noexcept {
  if (!value.is_string()) return std::nullopt;
  return find_enum<E>(value.get_ref<const std::string&>());
}

// The action kind a JSON value spells, or nullopt when it is not a declared kind's string.
std::optional<ActionKind> action_kind_of(const Json& value) noexcept {
  return enum_of<ActionKind>(value);
}

// REQUIRES: `a.kind` was checked by HostAction::create.
ActionKind kind_of(const HostAction::Fields& a) noexcept { return *find_enum<ActionKind>(a.kind); }

void require_sha(const Json& value, std::string_view field) {
  if (!value.is_string() || !is_digest(value.get_ref<const std::string&>())) {
    fail(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

void require_trimmed_json(const Json& value, std::string_view field) {
  if (!value.is_string()) fail(std::string(field) + " must be a non-empty trimmed string");
  require_trimmed(value.get_ref<const std::string&>(), field);
}

// Requires exact key set `keys` on `value` named `name`.
void exact_keys(const Json& value, std::initializer_list<std::string_view> keys,
                const std::string& name) {
  Reader(value, name, kRaise).exact(keys);
}

template <typename T, typename F>
T typed(F&& parse, const std::string& object_name) {
  try {
    return parse();
  } catch (const InvalidIdentityError& e) {
    fail(object_name + " is invalid: " + e.what());
  }
}

// ---- v3 typed payload checks ----

struct Capability {
  std::string id;
  CapabilityKind kind = CapabilityKind::kSkill;
};

Capability check_capability_binding(const Json& id, const Json& kind, const std::string& name) {
  const auto typed_kind = enum_of<CapabilityKind>(kind);
  if (!id.is_string() || !typed_kind ||
      !is_capability_identity(id.get_ref<const std::string&>(), *typed_kind)) {
    fail(name + " capability_kind must exactly match capability_id or entity_id");
  }
  return {id.get<std::string>(), *typed_kind};
}

// catalog_identity + capability_kind; returns the capability.
Capability check_catalog(const Json& payload, const std::string& name) {
  if (!payload.at("catalog_identity").is_object()) {
    fail(name + " catalog_identity must be a JSON object");
  }
  const auto catalog = typed<CatalogCapabilityIdentity>(
      [&] { return CatalogCapabilityIdentity::from_json(payload.at("catalog_identity")); },
      name + " catalog_identity");
  const Capability bound =
      check_capability_binding(Json(catalog.capability_id()), payload.at("capability_kind"), name);
  if (bound.kind != catalog.kind()) {
    fail(name + " capability_kind must exactly match capability_id or entity_id");
  }
  return {catalog.capability_id(), catalog.kind()};
}

// Install binding (install payload / consent request / install receipt): the decoded binding;
// `out` is the capability its identities name.
InstallBinding check_install_binding(const Json& payload, const std::string& name,
                                     const char* material_key, Capability& out) {
  out = check_catalog(payload, name);
  auto material =
      typed<MaterialIdentity>([&] { return MaterialIdentity::from_json(payload.at(material_key)); },
                              name + " " + material_key);
  auto descriptor = typed<InstallPlanDescriptor>(
      [&] { return InstallPlanDescriptor::from_json(payload.at("install_plan_descriptor")); },
      name + " install_plan_descriptor");
  if (descriptor.schema_version() != 2 || !descriptor.matches_result_material(material)) {
    fail(name + " install_plan_descriptor must be schema v2 and bind the result material");
  }
  require_sha(payload.at("installer_digest"), "installer_digest");
  require_sha(payload.at("policy_snapshot_digest"), "policy_snapshot_digest");
  if (material.capability_id() != out.id || material.kind() != out.kind ||
      descriptor.capability_id() != out.id || descriptor.kind() != out.kind) {
    fail(name + " typed identities do not match one capability");
  }
  return {CatalogCapabilityIdentity::from_json(payload.at("catalog_identity")),
          std::move(descriptor), payload.at("installer_digest").get<std::string>(),
          payload.at("policy_snapshot_digest").get<std::string>(), std::move(material)};
}

// The decoded v3 material payload; `out` is the capability its identities name.
MaterialBinding check_material_binding(const Json& payload, const std::string& name,
                                       Capability& out) {
  out = check_catalog(payload, name);
  auto catalog = CatalogCapabilityIdentity::from_json(payload.at("catalog_identity"));
  auto material = typed<MaterialIdentity>(
      [&] { return MaterialIdentity::from_json(payload.at("material_identity")); },
      name + " material_identity");
  auto authorized = typed<AuthorizedMaterial>(
      [&] { return AuthorizedMaterial::from_json(payload.at("authorized_material")); },
      name + " authorized_material");
  if (material.capability_id() != out.id || material.kind() != out.kind ||
      authorized.capability_id() != out.id || authorized.kind() != out.kind ||
      authorized.catalog_identity_digest() != catalog.identity_digest() ||
      authorized.material_identity_digest() != material.identity_digest()) {
    fail(name + " typed identities do not match one capability");
  }
  return {std::move(authorized), std::move(catalog), std::move(material)};
}

void check_target(const HostAction::Fields& a, const Capability& capability,
                  const std::string& name) {
  if (!a.entity_id || *a.entity_id != capability.id) {
    fail(name + " entity_id does not match the exact typed capability identity");
  }
  require_sha(opt(a.source_digest), name + " source_digest");
  require_sha(opt(a.catalog_snapshot_id), name + " catalog_snapshot_id");
}

void check_v3_verification(const Json& verification, HostState expected_state,
                           std::string_view receipt_schema) {
  exact_keys(verification, {"expected_state", "receipt_required", "receipt_schema"},
             "v3 action verification");
  if (verification.at("receipt_required") != true) {
    fail("v3 action verification must require a receipt");
  }
  if (enum_of<HostState>(verification.at("expected_state")) != expected_state) {
    fail("v3 action expected_state must be " + std::string(to_string(expected_state)));
  }
  if (verification.at("receipt_schema") != receipt_schema) {
    fail("v3 action receipt_schema must be " + std::string(receipt_schema));
  }
}

void check_v3_rollback(const HostAction::Fields& a, const std::string& installer_id) {
  const ActionKind kind = kind_of(a);
  Json expected;
  if (kind == ActionKind::kInstallCapability) {
    expected = {{"installer_id", installer_id}, {"kind", "UninstallCapability"}};
  } else if (kind == ActionKind::kActivateCapability) {
    expected = {{"kind", "DeactivateCapability"}};
  } else if (kind == ActionKind::kPrepareExposure) {
    expected = {{"exposure_id", a.scope.exposure_id()}, {"kind", "cleanup-prepared-exposure"}};
  } else {
    expected = {{"kind", "ActivateCapability"}, {"source_digest", opt(a.source_digest)}};
  }
  if (a.rollback != expected) fail("v3 " + a.kind + " rollback is invalid");
}

void check_requested_identity(const Json& payload, const std::string& name) {
  for (const char* key :
       {"requested_action_id", "requested_action_kind", "requested_action_content_digest",
        "requested_action_precondition_revision"}) {
    if (!payload.contains(key)) fail(name + " is missing " + key);
  }
  require_trimmed_json(payload.at("requested_action_id"), "requested_action_id");
  const auto kind = action_kind_of(payload.at("requested_action_kind"));
  if (kind != ActionKind::kInstallCapability && kind != ActionKind::kUninstallCapability) {
    fail("requested_action_kind must be InstallCapability or UninstallCapability");
  }
  require_sha(payload.at("requested_action_content_digest"), "requested_action_content_digest");
  require_nonnegative(payload.at("requested_action_precondition_revision"),
                      "requested_action_precondition_revision");
}

}  // namespace

bool is_decision_causing(EventKind kind) noexcept {
  return kind == EventKind::kWorkspaceObserved || kind == EventKind::kIntentObserved ||
         kind == EventKind::kDevelopmentObserved || kind == EventKind::kTurnStarting ||
         kind == EventKind::kValidationObserved || kind == EventKind::kReassessmentRequested;
}

void fail(const std::string& message) { throw ProtocolValidationError(message); }

void require_version(const Json& value) {
  if (!value.is_number_integer() || value.get<std::int64_t>() != kProtocolVersion) {
    throw UnsupportedProtocolVersionError("unsupported protocol version " + value.dump() +
                                          "; expected 1");
  }
}

void require_trimmed(const std::string& value, std::string_view field) {
  if (!is_trimmed_string(value)) fail(std::string(field) + " must be a non-empty trimmed string");
}

void require_optional_trimmed(const std::optional<std::string>& value, std::string_view field) {
  if (value) require_trimmed(*value, field);
}

void require_nonnegative(const Json& value, std::string_view field) {
  if (!value.is_number_integer() ||
      (!value.is_number_unsigned() && value.get<std::int64_t>() < 0)) {
    fail(std::string(field) + " must be a non-negative integer");
  }
}

// Finite numbers, valid Unicode strings and keys, anywhere in `value`.
void require_json_value(const Json& value, const std::string& field) {
  switch (value.type()) {
    case Json::value_t::string:
      if (!is_valid_unicode(value.get_ref<const std::string&>())) {
        fail(field + " must contain only valid Unicode scalar values");
      }
      return;
    case Json::value_t::number_float:
      if (!std::isfinite(value.get<double>())) fail(field + " numbers must be finite");
      return;
    case Json::value_t::object:
      for (const auto& item : value.items()) {
        if (!is_valid_unicode(item.key())) {
          fail(field + " object key must contain only valid Unicode scalar values");
        }
        require_json_value(item.value(), field + "." + item.key());
      }
      return;
    case Json::value_t::array: {
      std::size_t index = 0;
      for (const auto& item : value) {
        require_json_value(item, field + "[" + std::to_string(index++) + "]");
      }
      return;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      fail(field + " must contain only JSON-compatible values");
    default:
      return;
  }
}

namespace {

// Fails "<name> is required for <what>" for the first of `fields` that is unset.
void require_fields(
    std::initializer_list<std::pair<const char*, const std::optional<std::string>*>> fields,
    const std::string& what) {
  for (const auto& [name, value] : fields) {
    if (!*value) fail(std::string(name) + " is required for " + what);
  }
}

// A physical action (install, uninstall, activate, deactivate, prepare): its authority fields,
// and for v3 payloads the typed binding, target, verification and rollback.
// Returns the decoded v3 payload (install or material; none for a schema-less material payload).
HostAction::TypedPayload check_physical_action(const HostAction::Fields& a, ActionKind kind) {
  const Json& payload = a.payload;
  require_fields({{"entity_id", &a.entity_id},
                  {"source_digest", &a.source_digest},
                  {"plan_id", &a.plan_id},
                  {"catalog_snapshot_id", &a.catalog_snapshot_id},
                  {"required_host_feature", &a.required_host_feature}},
                 "physical action " + a.kind);
  if (a.verification.empty()) fail("verification must be a non-empty JSON object");
  if (is_lease_bounded(kind)) {
    if (!a.lease_id) fail("lease_id is required for " + a.kind);
    if (!a.expires_at) fail("expires_at is required for " + a.kind);
  }
  if ((kind == ActionKind::kInstallCapability || kind == ActionKind::kUninstallCapability) &&
      !a.consent_id) {
    fail("consent_id is required for " + a.kind);
  }
  if (a.rollback.empty()) fail("rollback must be a non-empty JSON object");
  if (kind == ActionKind::kInstallCapability) {
    if (!payload.contains("schema") || payload.at("schema") != kInstallActionPayloadSchemaV3) {
      fail("InstallCapability payload schema is unsupported");
    }
    const std::string name = "v3 InstallCapability payload";
    exact_keys(payload,
               {"capability_kind", "catalog_identity", "install_plan_descriptor",
                "installer_digest", "policy_snapshot_digest", "result_material", "schema"},
               name);
    Capability capability;
    auto install = check_install_binding(payload, name, "result_material", capability);
    check_target(a, capability, name);
    check_v3_verification(a.verification, HostState::kInstalled, kInstallReceiptSchemaV3);
    check_v3_rollback(a, install.install_plan_descriptor.installer_id());
    HostAction::TypedPayload out;
    out.install = std::make_shared<const InstallBinding>(std::move(install));
    return out;
  } else if (const auto state = material_expected_state(kind)) {
    if (!payload.contains("schema")) return {};
    if (payload.at("schema") != kMaterialActionPayloadSchemaV3) {
      fail(a.kind + " payload schema is unsupported");
    }
    const std::string name = "v3 " + a.kind + " payload";
    exact_keys(payload,
               {"authorized_material", "capability_kind", "catalog_identity", "material_identity",
                "schema"},
               name);
    Capability capability;
    auto material = check_material_binding(payload, name, capability);
    check_target(a, capability, name);
    check_v3_verification(a.verification, *state, kMaterialReceiptSchemaV3);
    check_v3_rollback(a, "");
    HostAction::TypedPayload out;
    out.material = std::make_shared<const MaterialBinding>(std::move(material));
    return out;
  }
  return {};
}

// A v3 RequestConsent: its authority fields, and a payload naming the install it asks for at the
// next committed revision.
HostAction::TypedPayload check_request_consent(const HostAction::Fields& a) {
  const Json& payload = a.payload;
  require_fields({{"consent_id", &a.consent_id},
                  {"entity_id", &a.entity_id},
                  {"source_digest", &a.source_digest},
                  {"plan_id", &a.plan_id},
                  {"catalog_snapshot_id", &a.catalog_snapshot_id},
                  {"required_host_feature", &a.required_host_feature}},
                 "RequestConsent");
  if (!payload.contains("schema") || payload.at("schema") != kInstallConsentRequestSchemaV3) {
    fail("RequestConsent payload schema is unsupported");
  }
  const std::string name = "v3 RequestConsent payload";
  exact_keys(payload,
             {"capability_kind", "catalog_identity", "install_plan_descriptor", "installer_digest",
              "policy_snapshot_digest", "requested_action_content_digest", "requested_action_id",
              "requested_action_kind", "requested_action_precondition_revision", "result_material",
              "schema"},
             name);
  check_requested_identity(payload, name);
  if (action_kind_of(payload.at("requested_action_kind")) != ActionKind::kInstallCapability) {
    fail("v3 RequestConsent requested_action_kind must be InstallCapability");
  }
  Capability capability;
  auto install = check_install_binding(payload, name, "result_material", capability);
  check_target(a, capability, name);
  if (payload.at("requested_action_precondition_revision") != a.precondition_revision + 1) {
    fail("requested_action_precondition_revision must target the next committed revision");
  }
  HostAction::TypedPayload out;
  out.consent_request = std::make_shared<const ConsentRequestBinding>(ConsentRequestBinding{
      std::move(install), payload.at("requested_action_id").get<std::string>(),
      payload.at("requested_action_content_digest").get<std::string>(),
      payload.at("requested_action_precondition_revision").get<std::int64_t>()});
  return out;
}

}  // namespace

HostAction::TypedPayload check_action_contract(const HostAction::Fields& a) {
  const Json& payload = a.payload;
  const ActionKind kind = kind_of(a);
  if (kind == ActionKind::kPreparePromptContext) {
    // v4 prompt context: bounded authority fields (the v3 reducer never emits it).
    if (a.entity_id || !a.plan_id || !a.catalog_snapshot_id || !a.lease_id || !a.expires_at ||
        a.required_host_feature != std::optional<std::string>("prompt-context")) {
      fail("PreparePromptContext lacks its bounded host authority");
    }
    check_v3_verification(a.verification, HostState::kPromptContextPrepared,
                          kPromptContextReceiptSchemaV1);
  } else if (is_physical(kind)) {
    return check_physical_action(a, kind);
  } else if (kind == ActionKind::kRequestConsent) {
    return check_request_consent(a);
  } else if (kind == ActionKind::kPresentBundle) {
    const auto it = payload.find("capabilities");
    if (it == payload.end() || !it->is_array()) {
      fail("PresentBundle payload.capabilities must be an array");
    }
    if (it->size() > kMaxSelectedCapabilities) {
      fail("PresentBundle cannot contain more than five capabilities");
    }
  } else if (kind == ActionKind::kNotify) {
    const auto it = payload.find("message");
    if (it == payload.end()) fail("Notify payload.message must be a non-empty trimmed string");
    require_trimmed_json(*it, "Notify payload.message");
  }
  return {};
}

// ---- event payload checks ----

namespace {

// A receipt payload has exactly the action's identity and the kind's own member. Returns the
// receipt's action kind.
ActionKind check_receipt_identity(EventKind kind, const Json& payload) {
  const char* extra = kind == EventKind::kActionApplied  ? "verification"
                      : kind == EventKind::kActionFailed ? "error"
                                                         : "reason";
  const std::string name = std::string(to_string(kind)) + " payload";
  std::string unknown;
  for (const auto& item : payload.items()) {
    const auto& k = item.key();
    if (k != "action_id" && k != "action_kind" && k != "action_content_digest" &&
        k != "action_precondition_revision" && k != extra) {
      unknown += (unknown.empty() ? "" : ", ") + k;
    }
  }
  if (!unknown.empty()) fail(name + " has unknown field(s): " + unknown);
  for (const char* key :
       {"action_id", "action_kind", "action_content_digest", "action_precondition_revision"}) {
    if (!payload.contains(key)) fail(name + " is missing " + key);
  }
  require_trimmed_json(payload.at("action_id"), "action_id");
  const Json& action_kind = payload.at("action_kind");
  require_trimmed_json(action_kind, "action_kind");
  const auto receipt_action_kind = action_kind_of(action_kind);
  if (!receipt_action_kind) {
    fail("action_kind must be a declared action kind, got " + action_kind.dump());
  }
  require_sha(payload.at("action_content_digest"), "action_content_digest");
  require_nonnegative(payload.at("action_precondition_revision"), "action_precondition_revision");
  return *receipt_action_kind;
}

// An ActionApplied verification: a plain host state, or a v3 install / material receipt or a
// prompt-context receipt of the matching action kind.
void check_applied_verification(const Json& v, ActionKind receipt_action_kind) {
  if (!v.contains("schema")) {
    exact_keys(v, {"host_state"}, "ActionApplied verification");
    const auto state = enum_of<HostState>(v.at("host_state"));
    if (!state || *state == HostState::kPromptContextPrepared) {
      fail("ActionApplied host_state is unsupported");
    }
  } else if (v.at("schema") == kInstallReceiptSchemaV3) {
    if (receipt_action_kind != ActionKind::kInstallCapability) {
      fail("install receipt schema does not match action_kind");
    }
    const std::string vname = "v3 install receipt verification";
    exact_keys(
        v,
        {"capability_id", "capability_kind", "catalog_identity", "install_plan_descriptor",
         "installer_digest", "material_identity", "policy_snapshot_digest", "host_state", "schema"},
        vname);
    if (enum_of<HostState>(v.at("host_state")) != HostState::kInstalled) {
      fail("v3 install receipt host_state must be installed");
    }
    check_capability_binding(v.at("capability_id"), v.at("capability_kind"), "v3 install receipt");
    Capability capability;
    check_install_binding(v, "v3 install receipt", "material_identity", capability);
    if (v.at("capability_id") != capability.id) {
      fail("v3 install receipt typed identities do not match one capability");
    }
  } else if (v.at("schema") == kMaterialReceiptSchemaV3) {
    const auto state = material_expected_state(receipt_action_kind);
    if (!state) fail("material receipt schema does not match action_kind");
    exact_keys(v,
               {"authorized_material", "capability_id", "capability_kind", "catalog_identity",
                "host_state", "material_identity", "schema"},
               "v3 material receipt verification");
    if (enum_of<HostState>(v.at("host_state")) != state) {
      fail("v3 material receipt host_state must be " + std::string(to_string(*state)));
    }
    check_capability_binding(v.at("capability_id"), v.at("capability_kind"), "v3 material receipt");
    Capability capability;
    check_material_binding(v, "v3 material receipt verification", capability);
    if (v.at("capability_id") != capability.id) {
      fail("v3 material receipt capability_id does not match typed identities");
    }
  } else if (v.at("schema") == kPromptContextReceiptSchemaV1) {
    if (receipt_action_kind != ActionKind::kPreparePromptContext) {
      fail("prompt context receipt schema does not match action_kind");
    }
    exact_keys(
        v,
        {"capabilities", "host_state", "prompt_context_bytes", "prompt_context_sha256", "schema"},
        "prompt context receipt verification");
  } else {
    fail("ActionApplied verification schema is unsupported");
  }
}

}  // namespace

void check_receipt_payload(EventKind kind, const Json& payload) {
  const ActionKind receipt_action_kind = check_receipt_identity(kind, payload);
  if (kind == EventKind::kActionApplied) {
    const auto it = payload.find("verification");
    if (it == payload.end() || !it->is_object()) {
      fail("ActionApplied verification must be a JSON object");
    }
    check_applied_verification(*it, receipt_action_kind);
  } else if (kind == EventKind::kActionFailed) {
    const auto it = payload.find("error");
    if (it == payload.end()) fail("ActionFailed payload is missing error");
    exact_keys(*it, {"code"}, "ActionFailed error");
    const Json& code = it->at("code");
    if (!code.is_string() || !is_opaque_token(code.get_ref<const std::string&>())) {
      fail("ActionFailed error code must be a machine token");
    }
  } else {
    const auto it = payload.find("reason");
    if (it == payload.end()) fail("ActionExpired payload is missing reason");
    if (!enum_of<ExpiryReason>(*it)) fail("ActionExpired reason must be expired");
  }
}

void check_user_decision(const Json& payload, std::int64_t expected_revision) {
  const std::string name = "UserDecision payload";
  std::string unknown;
  for (const auto& item : payload.items()) {
    static const std::set<std::string> allowed = {"consent_id",
                                                  "decision",
                                                  "decision_basis",
                                                  "policy_snapshot_digest",
                                                  "requested_action_id",
                                                  "requested_action_kind",
                                                  "requested_action_content_digest",
                                                  "requested_action_precondition_revision"};
    if (!allowed.count(item.key())) unknown += (unknown.empty() ? "" : ", ") + item.key();
  }
  if (!unknown.empty()) fail(name + " has unknown field(s): " + unknown);
  for (const char* key : {"consent_id", "decision"}) {
    if (!payload.contains(key)) fail(name + " is missing " + key);
  }
  require_trimmed_json(payload.at("consent_id"), "consent_id");
  require_trimmed_json(payload.at("decision"), "decision");
  if (!enum_of<Decision>(payload.at("decision"))) {
    fail("decision must be granted or denied");
  }
  check_requested_identity(payload, name);
  const bool basis = payload.contains("decision_basis");
  const bool policy = payload.contains("policy_snapshot_digest");
  if (basis != policy) {
    fail(name + " is missing " + (basis ? "policy_snapshot_digest" : "decision_basis"));
  }
  if (basis) {
    if (!enum_of<DecisionBasis>(payload.at("decision_basis"))) {
      fail("decision_basis must be interactive or preapproved-policy");
    }
    require_sha(payload.at("policy_snapshot_digest"), "policy_snapshot_digest");
  }
  if (payload.at("requested_action_precondition_revision") != expected_revision + 1) {
    fail("requested_action_precondition_revision must target the next committed revision");
  }
}

void check_consent_expired(const Json& payload) {
  const std::string name = "InstallConsentExpired payload";
  exact_keys(payload,
             {"consent_id", "install_expires_at", "policy_snapshot_digest",
              "requested_action_content_digest", "requested_action_id", "requested_action_kind",
              "requested_action_precondition_revision"},
             name);
  require_trimmed_json(payload.at("consent_id"), "consent_id");
  check_requested_identity(payload, name);
  if (action_kind_of(payload.at("requested_action_kind")) != ActionKind::kInstallCapability) {
    fail("InstallConsentExpired requested_action_kind must be InstallCapability");
  }
  require_sha(payload.at("policy_snapshot_digest"), "policy_snapshot_digest");
  const Json& expires = payload.at("install_expires_at");
  require_trimmed_json(expires, "install_expires_at");
  const auto normalised =
      normalize_rfc3339(expires.get_ref<const std::string&>(), "install_expires_at");
  if (normalised != expires.get_ref<const std::string&>()) {
    fail("install_expires_at must use canonical UTC RFC 3339");
  }
}

}  // namespace ctx::engine::protocol_checks
