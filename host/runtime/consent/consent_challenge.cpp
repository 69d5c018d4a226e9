#include "host/runtime/consent/consent_challenge.hpp"

#include <ctx/support/text.hpp>

#include "host/core/crypto.hpp"

namespace ctx::runtime {
namespace {

using support::is_token;

[[noreturn]] void invalid(std::string_view field) {
  throw ConsentChallengeError("install consent challenge field " + std::string(field) +
                              " is invalid");
}

core::Json digest_object(const ConsentChallengeFields& f) {
  return core::Json{
      {"audience", f.audience},
      {"capability_id", f.capability_id},
      {"catalog_snapshot_digest", f.catalog_snapshot_digest},
      {"challenge_id", f.challenge_id},
      {"credential_requirement", f.credential_requirement},
      {"descriptor_digest", f.descriptor_digest},
      {"execution_binding_digest", f.execution_binding_digest},
      {"expires_at", f.expires_at},
      {"install_plan_digest", f.install_plan_digest},
      {"kind", f.kind},
      {"material_identity_digest", f.material_identity_digest},
      {"permission_expansion", f.permission_expansion},
      {"plan_id", f.plan_id},
      {"policy_snapshot_digest", f.policy_snapshot_digest},
      {"release_root_digest", f.release_root_digest},
      {"requested_action_content_digest", f.requested_action_content_digest},
      {"requested_action_id", f.requested_action_id},
      {"requested_action_kind", f.requested_action_kind},
      {"requested_action_precondition_revision", f.requested_action_precondition_revision},
      {"schema", kConsentChallengeSchema},
      {"scope", f.scope},
      {"selection_digest", f.selection_digest},
      {"source_digest", f.source_digest},
      {"workspace_identity_digest", f.workspace_identity_digest},
  };
}

const core::Json& member(const core::Json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end()) invalid(key);
  return *it;
}

std::string string_member(const core::Json& json, const char* key) {
  const core::Json& value = member(json, key);
  if (!value.is_string()) invalid(key);
  return value.get<std::string>();
}

// The enum string member `key` spells; any other value is invalid(key).
template <typename E>
E enum_member(const core::Json& json, const char* key) {
  const auto found = engine::find_enum<E>(string_member(json, key));
  if (!found) invalid(key);
  return *found;
}

bool bool_member(const core::Json& json, const char* key) {
  const core::Json& value = member(json, key);
  if (!value.is_boolean()) invalid(key);
  return value.get<bool>();
}

}  // namespace

bool is_consent_token(std::string_view text) noexcept { return is_token(text); }

ConsentChallenge ConsentChallenge::create(ConsentChallengeFields f) {
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"challenge_id", &f.challenge_id},
        {"audience", &f.audience},
        {"capability_id", &f.capability_id},
        {"plan_id", &f.plan_id},
        {"requested_action_id", &f.requested_action_id}}) {
    if (!is_token(*value)) invalid(name);
  }
  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{
                                        "workspace_identity_digest", &f.workspace_identity_digest},
                                    {"source_digest", &f.source_digest},
                                    {"catalog_snapshot_digest", &f.catalog_snapshot_digest},
                                    {"install_plan_digest", &f.install_plan_digest},
                                    {"descriptor_digest", &f.descriptor_digest},
                                    {"execution_binding_digest", &f.execution_binding_digest},
                                    {"selection_digest", &f.selection_digest},
                                    {"material_identity_digest", &f.material_identity_digest},
                                    {"requested_action_content_digest",
                                     &f.requested_action_content_digest},
                                    {"policy_snapshot_digest", &f.policy_snapshot_digest},
                                    {"release_root_digest", &f.release_root_digest}}) {
    if (!core::is_sha256_hex(*value)) invalid(name);
  }
  if (engine::kCapabilityKindStrings.to_string(f.kind).empty() ||
      f.kind == engine::CapabilityKind::kHarness) {
    invalid("kind");
  }
  if (f.requested_action_kind != engine::ActionKind::kInstallCapability) {
    invalid("requested_action_kind");
  }
  if (f.requested_action_precondition_revision < 1) {
    invalid("requested_action_precondition_revision");
  }
  if (!f.scope.is_object() || f.scope.empty()) invalid("scope");
  for (const auto& [key, value] : f.scope.items()) {
    if (!is_token(key) || !value.is_string() || !is_token(value.get_ref<const std::string&>())) {
      invalid("scope");
    }
  }
  ConsentChallenge c;
  if (!core::is_normalized_rfc3339(f.expires_at)) invalid("expires_at");
  try {
    c.expires_ = core::parse_rfc3339(f.expires_at);
  } catch (const InvalidArgument&) {
    invalid("expires_at");
  }
  core::Json json = digest_object(f);
  c.digest_ = core::canonical_digest(json, core::Encoding::kAscii);
  json["challenge_digest"] = c.digest_;
  c.json_text_ = core::canonical_json(json, core::Encoding::kAscii);
  if (c.json_text_.size() > kMaxConsentChallengeBytes) {
    throw ConsentChallengeError("install consent challenge exceeds 16384 bytes");
  }
  c.fields_ = std::move(f);
  return c;
}

ConsentChallenge ConsentChallenge::from_json_text(std::string_view text) {
  if (text.empty() || text.size() > kMaxConsentChallengeBytes) {
    throw ConsentChallengeError("install consent challenge size is out of bounds");
  }
  core::Json json;
  try {
    json = core::parse_canonical_json(text, core::Encoding::kAscii);
  } catch (const InvalidArgument&) {
    throw ConsentChallengeError("install consent challenge is not canonical JSON");
  }
  if (!json.is_object() || json.size() != 25) {
    throw ConsentChallengeError("install consent challenge key set is wrong");
  }
  if (string_member(json, "schema") != kConsentChallengeSchema) invalid("schema");
  ConsentChallengeFields f;
  f.challenge_id = string_member(json, "challenge_id");
  f.audience = string_member(json, "audience");
  f.workspace_identity_digest = string_member(json, "workspace_identity_digest");
  f.scope = member(json, "scope");
  f.capability_id = string_member(json, "capability_id");
  f.kind = enum_member<engine::CapabilityKind>(json, "kind");
  f.source_digest = string_member(json, "source_digest");
  f.catalog_snapshot_digest = string_member(json, "catalog_snapshot_digest");
  f.plan_id = string_member(json, "plan_id");
  f.install_plan_digest = string_member(json, "install_plan_digest");
  f.descriptor_digest = string_member(json, "descriptor_digest");
  f.execution_binding_digest = string_member(json, "execution_binding_digest");
  f.selection_digest = string_member(json, "selection_digest");
  f.material_identity_digest = string_member(json, "material_identity_digest");
  f.requested_action_id = string_member(json, "requested_action_id");
  f.requested_action_kind = enum_member<engine::ActionKind>(json, "requested_action_kind");
  f.requested_action_content_digest = string_member(json, "requested_action_content_digest");
  const core::Json& revision = member(json, "requested_action_precondition_revision");
  if (!revision.is_number_integer()) invalid("requested_action_precondition_revision");
  f.requested_action_precondition_revision = revision.get<std::int64_t>();
  f.policy_snapshot_digest = string_member(json, "policy_snapshot_digest");
  f.release_root_digest = string_member(json, "release_root_digest");
  f.permission_expansion = bool_member(json, "permission_expansion");
  f.credential_requirement = bool_member(json, "credential_requirement");
  f.expires_at = string_member(json, "expires_at");
  const std::string digest = string_member(json, "challenge_digest");
  ConsentChallenge c = create(std::move(f));
  if (c.digest_ != digest || c.json_text_ != text) {
    throw ConsentChallengeError("install consent challenge digest does not match its fields");
  }
  return c;
}

std::string execution_binding_digest(std::string_view driver_id, std::string_view driver_digest,
                                     std::string_view host_identity_digest,
                                     std::string_view target_identity_digest) {
  return core::canonical_digest(core::Json{{"driver_digest", driver_digest},
                                           {"driver_id", driver_id},
                                           {"host_identity_digest", host_identity_digest},
                                           {"schema", "ctx.install-execution-binding-v1"},
                                           {"target_identity_digest", target_identity_digest}});
}

std::string selection_binding_digest(const core::Json& selection) {
  return core::canonical_digest(
      core::Json{{"schema", "ctx.install-consent-selection-binding-v1"}, {"selection", selection}});
}

}  // namespace ctx::runtime
