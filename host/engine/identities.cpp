#include "host/engine/identities.hpp"

#include <utility>

#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

using Reader = core::JsonObjectReader;
constexpr core::JsonErrorRaiser kRaise = core::raise_as<InvalidIdentityError>;

void require_identity(const std::string& capability_id, CapabilityKind kind) {
  if (!is_capability_identity(capability_id, kind)) {
    throw InvalidIdentityError("kind and capability_id must form one canonical identity");
  }
}

void require_installable(const std::string& capability_id, CapabilityKind kind) {
  require_identity(capability_id, kind);
  if (!is_installable_kind(kind)) {
    throw InvalidIdentityError("kind is not an installable capability kind");
  }
}

void require_digest(const std::string& value, const char* field) {
  if (!is_digest(value)) {
    throw InvalidIdentityError(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

void require_canonical_token(const std::string& value, const char* field) {
  if (!is_canonical_token(value)) {
    throw InvalidIdentityError(std::string(field) + " must be a canonical token");
  }
}

void require_bounded(std::int64_t value, const char* field, std::int64_t max) {
  if (value < 0 || value > max) {
    throw InvalidIdentityError(std::string(field) + " is outside its bounded range");
  }
}

void require_match(const std::string& supplied, const std::string& recomputed,
                   const char* message) {
  if (supplied != recomputed) throw InvalidIdentityError(message);
}

}  // namespace

std::string identity_digest_of(const Json& value) {
  return core::canonical_digest(value, core::Encoding::kAscii);
}

// ---- CatalogCapabilityIdentity ------------------------------------------------------------

CatalogCapabilityIdentity CatalogCapabilityIdentity::create(std::string capability_id,
                                                            CapabilityKind kind,
                                                            std::string namespace_digest) {
  require_identity(capability_id, kind);
  require_digest(namespace_digest, "catalog_namespace_digest");
  CatalogCapabilityIdentity out;
  out.capability_id_ = std::move(capability_id);
  out.kind_ = kind;
  out.namespace_digest_ = std::move(namespace_digest);
  out.identity_digest_ = identity_digest_of({{"capability_id", out.capability_id_},
                                             {"catalog_namespace_digest", out.namespace_digest_},
                                             {"kind", out.kind_},
                                             {"schema", kCatalogIdentitySchema}});
  return out;
}

CatalogCapabilityIdentity CatalogCapabilityIdentity::from_json(const Json& value) {
  Reader r(value, "catalog capability identity", kRaise);
  r.exact({"capability_id", "catalog_namespace_digest", "identity_digest", "kind", "schema"});
  r.literal("schema", kCatalogIdentitySchema, "catalog capability identity schema");
  auto out = create(r.string("capability_id"), r.enumerated<CapabilityKind>("kind"),
                    r.string("catalog_namespace_digest", kDigest));
  require_match(r.string("identity_digest", kDigest), out.identity_digest_,
                "identity_digest does not match catalog identity fields");
  return out;
}

Json CatalogCapabilityIdentity::to_json() const {
  return {{"capability_id", capability_id_},
          {"catalog_namespace_digest", namespace_digest_},
          {"identity_digest", identity_digest_},
          {"kind", kind_},
          {"schema", kCatalogIdentitySchema}};
}

// ---- MaterialIdentity -----------------------------------------------------------------------

MaterialIdentity MaterialIdentity::create(std::string capability_id, CapabilityKind kind,
                                          std::string content_sha256,
                                          std::int64_t content_bytes) {
  require_identity(capability_id, kind);
  require_digest(content_sha256, "content_sha256");
  require_bounded(content_bytes, "content_bytes", kMaxPreparedContentBytes);
  if (content_bytes == 0) {
    throw InvalidIdentityError("content_bytes must describe non-empty material");
  }
  MaterialIdentity out;
  out.capability_id_ = std::move(capability_id);
  out.kind_ = kind;
  out.content_sha256_ = std::move(content_sha256);
  out.content_bytes_ = content_bytes;
  out.identity_digest_ = identity_digest_of({{"capability_id", out.capability_id_},
                                             {"content_bytes", out.content_bytes_},
                                             {"content_sha256", out.content_sha256_},
                                             {"kind", out.kind_},
                                             {"schema", kMaterialIdentitySchema}});
  return out;
}

MaterialIdentity MaterialIdentity::from_json(const Json& value) {
  Reader r(value, "material identity", kRaise);
  r.exact({"capability_id", "content_bytes", "content_sha256", "identity_digest", "kind",
           "schema"});
  r.literal("schema", kMaterialIdentitySchema, "material identity schema");
  auto out = create(r.string("capability_id"), r.enumerated<CapabilityKind>("kind"),
                    r.string("content_sha256", kDigest),
                    r.integer("content_bytes", 0, kMaxPreparedContentBytes));
  require_match(r.string("identity_digest", kDigest), out.identity_digest_,
                "identity_digest does not match material identity fields");
  return out;
}

Json MaterialIdentity::to_json() const {
  return {{"capability_id", capability_id_},   {"content_bytes", content_bytes_},
          {"content_sha256", content_sha256_}, {"identity_digest", identity_digest_},
          {"kind", kind_},                     {"schema", kMaterialIdentitySchema}};
}

// ---- MaterialDescriptor ---------------------------------------------------------------------

Json MaterialDescriptor::digest_mapping() const {
  Json out = {{"actionability", to_string(actionability_)},
              {"capability_id", capability_id_},
              {"content_bytes", content_bytes_},
              {"content_sha256", content_sha256_ ? Json(*content_sha256_) : Json(nullptr)},
              {"estimated_tokens", estimated_tokens_},
              {"kind", kind_},
              {"material_snapshot_digest", provenance_digest_},
              {"schema", schema_version() == 2 ? kMaterialDescriptorV2Schema
                                               : kMaterialDescriptorV1Schema}};
  if (material_identity_digest_) out["material_identity_digest"] = *material_identity_digest_;
  return out;
}

void MaterialDescriptor::validate() const {
  require_identity(capability_id_, kind_);
  if (content_sha256_) require_digest(*content_sha256_, "content_sha256");
  if (actionability_ == Actionability::kLoad && !content_sha256_) {
    throw InvalidIdentityError("loadable material requires an exact content digest");
  }
  if (actionability_ == Actionability::kManual && content_sha256_) {
    throw InvalidIdentityError("manual material cannot claim exposed content");
  }
  require_bounded(content_bytes_, "content_bytes", kMaxPreparedContentBytes);
  require_bounded(estimated_tokens_, "estimated_tokens", kMaxPreparedContentTokens);
  require_digest(provenance_digest_, "provenance_digest");
  if (material_identity_digest_) {
    require_digest(*material_identity_digest_, "material_identity_digest");
    if (actionability_ != Actionability::kLoad) {
      throw InvalidIdentityError("v2 material descriptor must be loadable");
    }
    const auto expected =
        MaterialIdentity::create(capability_id_, kind_, *content_sha256_, content_bytes_);
    require_match(*material_identity_digest_, expected.identity_digest(),
                  "material_identity_digest does not match descriptor content");
  }
}

MaterialDescriptor MaterialDescriptor::create(std::string capability_id, CapabilityKind kind,
                                              Actionability actionability,
                                              std::optional<std::string> content_sha256,
                                              std::int64_t content_bytes,
                                              std::int64_t estimated_tokens,
                                              std::string provenance_digest,
                                              std::optional<std::string> material_identity) {
  MaterialDescriptor out;
  out.capability_id_ = std::move(capability_id);
  out.kind_ = kind;
  if (actionability == Actionability::kInstall) {
    throw InvalidIdentityError("descriptor actionability is unsupported");
  }
  out.actionability_ = actionability;
  out.content_sha256_ = std::move(content_sha256);
  out.content_bytes_ = content_bytes;
  out.estimated_tokens_ = estimated_tokens;
  out.provenance_digest_ = std::move(provenance_digest);
  out.material_identity_digest_ = std::move(material_identity);
  out.validate();
  out.descriptor_digest_ = identity_digest_of(out.digest_mapping());
  return out;
}

MaterialDescriptor MaterialDescriptor::from_json(const Json& value) {
  Reader r(value, "material descriptor", kRaise);
  const bool v2 = r.has("schema") && r.at("schema") == kMaterialDescriptorV2Schema;
  if (!v2) r.literal("schema", kMaterialDescriptorV1Schema, "material descriptor schema");
  if (v2) {
    r.exact({"actionability", "capability_id", "content_bytes", "content_sha256",
             "descriptor_digest", "estimated_tokens", "kind", "material_identity_digest",
             "material_snapshot_digest", "schema"});
  } else {
    r.exact({"actionability", "capability_id", "content_bytes", "content_sha256",
             "descriptor_digest", "estimated_tokens", "kind", "material_snapshot_digest",
             "schema"});
  }
  std::optional<std::string> content;
  if (!r.at("content_sha256").is_null()) content = r.string("content_sha256", kDigest);
  std::optional<std::string> identity;
  if (v2) identity = r.string("material_identity_digest", kDigest);
  // The stored spelling is parsed here, at the boundary: an unknown one (or "install", which
  // no material descriptor holds) is the same typed error create() gives.
  const auto actionability = find_enum<Actionability>(r.string("actionability"));
  if (!actionability) throw InvalidIdentityError("descriptor actionability is unsupported");
  auto out = create(r.string("capability_id"), r.enumerated<CapabilityKind>("kind"), *actionability,
                    std::move(content), r.integer("content_bytes", 0, kMaxPreparedContentBytes),
                    r.integer("estimated_tokens", 0, kMaxPreparedContentTokens),
                    r.string("material_snapshot_digest", kDigest), std::move(identity));
  require_match(r.string("descriptor_digest", kDigest), out.descriptor_digest_,
                "descriptor_digest does not match descriptor fields");
  return out;
}

Json MaterialDescriptor::to_json() const {
  Json out = digest_mapping();
  out["descriptor_digest"] = descriptor_digest_;
  return out;
}

// ---- InstalledMaterialLineage ---------------------------------------------------------------

Json InstalledMaterialLineage::digest_mapping() const {
  return {{"capability_id", capability_id_},
          {"catalog_identity_digest", catalog_identity_digest_},
          {"install_action_content_digest", action_content_digest_},
          {"install_receipt_content_digest", receipt_content_digest_},
          {"kind", kind_},
          {"material_identity_digest", material_identity_digest_},
          {"origin_install_descriptor_digest", origin_descriptor_digest_},
          {"schema", kInstalledLineageSchema}};
}

InstalledMaterialLineage InstalledMaterialLineage::create(
    std::string capability_id, CapabilityKind kind, std::string catalog_identity_digest,
    std::string material_identity_digest, std::string origin_install_descriptor_digest,
    std::string install_action_content_digest, std::string install_receipt_content_digest) {
  require_identity(capability_id, kind);
  require_digest(catalog_identity_digest, "catalog_identity_digest");
  require_digest(material_identity_digest, "material_identity_digest");
  require_digest(origin_install_descriptor_digest, "origin_install_descriptor_digest");
  require_digest(install_action_content_digest, "install_action_content_digest");
  require_digest(install_receipt_content_digest, "install_receipt_content_digest");
  InstalledMaterialLineage out;
  out.capability_id_ = std::move(capability_id);
  out.kind_ = kind;
  out.catalog_identity_digest_ = std::move(catalog_identity_digest);
  out.material_identity_digest_ = std::move(material_identity_digest);
  out.origin_descriptor_digest_ = std::move(origin_install_descriptor_digest);
  out.action_content_digest_ = std::move(install_action_content_digest);
  out.receipt_content_digest_ = std::move(install_receipt_content_digest);
  out.lineage_digest_ = identity_digest_of(out.digest_mapping());
  return out;
}

InstalledMaterialLineage InstalledMaterialLineage::from_json(const Json& value) {
  Reader r(value, "installed material lineage", kRaise);
  r.exact({"capability_id", "catalog_identity_digest", "install_action_content_digest",
           "install_receipt_content_digest", "kind", "lineage_digest",
           "material_identity_digest", "origin_install_descriptor_digest", "schema"});
  r.literal("schema", kInstalledLineageSchema, "installed material lineage schema");
  auto out = create(r.string("capability_id"), r.enumerated<CapabilityKind>("kind"),
                    r.string("catalog_identity_digest", kDigest),
                    r.string("material_identity_digest", kDigest),
                    r.string("origin_install_descriptor_digest", kDigest),
                    r.string("install_action_content_digest", kDigest),
                    r.string("install_receipt_content_digest", kDigest));
  require_match(r.string("lineage_digest", kDigest), out.lineage_digest_,
                "lineage_digest does not match installed material lineage fields");
  return out;
}

Json InstalledMaterialLineage::to_json() const {
  Json out = digest_mapping();
  out["lineage_digest"] = lineage_digest_;
  return out;
}

// ---- AuthorizedMaterial ---------------------------------------------------------------------

void AuthorizedMaterial::validate() const {
  require_identity(capability_id_, kind_);
  require_digest(catalog_identity_digest_, "catalog_identity_digest");
  require_digest(material_identity_digest_, "material_identity_digest");
  if (origin_ == MaterialOrigin::kCatalog) {
    if (!descriptor_) {
      throw InvalidIdentityError("catalog material requires an exact catalog descriptor");
    }
    if (lineage_) {
      throw InvalidIdentityError(
          "catalog material requires a descriptor and forbids installed lineage");
    }
    if (!descriptor_->material_identity_digest()) {
      throw InvalidIdentityError("catalog material requires a material-identity descriptor");
    }
    if (capability_id_ != descriptor_->capability_id() || kind_ != descriptor_->kind() ||
        material_identity_digest_ != *descriptor_->material_identity_digest()) {
      throw InvalidIdentityError("catalog descriptor identity does not match authorized material");
    }
  } else {
    if (descriptor_) {
      throw InvalidIdentityError("installed material forbids a catalog descriptor");
    }
    if (!lineage_) {
      throw InvalidIdentityError("installed material requires exact installed lineage");
    }
    if (capability_id_ != lineage_->capability_id() || kind_ != lineage_->kind() ||
        catalog_identity_digest_ != lineage_->catalog_identity_digest() ||
        material_identity_digest_ != lineage_->material_identity_digest()) {
      throw InvalidIdentityError("installed material identity does not match installed lineage");
    }
  }
}

AuthorizedMaterial AuthorizedMaterial::from_catalog(std::string catalog_identity_digest,
                                                    const MaterialDescriptor& descriptor) {
  if (!descriptor.material_identity_digest()) {
    throw InvalidIdentityError("catalog material requires a material-identity descriptor");
  }
  AuthorizedMaterial out;
  out.capability_id_ = descriptor.capability_id();
  out.kind_ = descriptor.kind();
  out.catalog_identity_digest_ = std::move(catalog_identity_digest);
  out.material_identity_digest_ = *descriptor.material_identity_digest();
  out.origin_ = MaterialOrigin::kCatalog;
  out.descriptor_ = descriptor;
  out.validate();
  return out;
}

AuthorizedMaterial AuthorizedMaterial::from_installed(const InstalledMaterialLineage& lineage) {
  AuthorizedMaterial out;
  out.capability_id_ = lineage.capability_id();
  out.kind_ = lineage.kind();
  out.catalog_identity_digest_ = lineage.catalog_identity_digest();
  out.material_identity_digest_ = lineage.material_identity_digest();
  out.origin_ = MaterialOrigin::kInstalled;
  out.lineage_ = lineage;
  out.validate();
  return out;
}

AuthorizedMaterial AuthorizedMaterial::from_json(const Json& value) {
  Reader r(value, "authorized material", kRaise);
  r.exact({"capability_id", "catalog_identity_digest", "catalog_material_descriptor",
           "installed_material_lineage", "kind", "material_identity_digest", "origin",
           "schema"});
  r.literal("schema", kAuthorizedMaterialSchema, "authorized material schema");
  AuthorizedMaterial out;
  out.capability_id_ = r.string("capability_id");
  out.kind_ = r.enumerated<CapabilityKind>("kind");
  out.catalog_identity_digest_ = r.string("catalog_identity_digest", kDigest);
  out.material_identity_digest_ = r.string("material_identity_digest", kDigest);
  const auto origin = find_enum<MaterialOrigin>(r.string("origin"));
  if (!origin) throw InvalidIdentityError("material origin must be catalog or installed");
  out.origin_ = *origin;
  if (!r.at("catalog_material_descriptor").is_null()) {
    out.descriptor_ = MaterialDescriptor::from_json(r.at("catalog_material_descriptor"));
  }
  if (!r.at("installed_material_lineage").is_null()) {
    out.lineage_ = InstalledMaterialLineage::from_json(r.at("installed_material_lineage"));
  }
  out.validate();
  return out;
}

Json AuthorizedMaterial::to_json() const {
  return {{"capability_id", capability_id_},
          {"catalog_identity_digest", catalog_identity_digest_},
          {"catalog_material_descriptor", descriptor_ ? descriptor_->to_json() : Json(nullptr)},
          {"installed_material_lineage", lineage_ ? lineage_->to_json() : Json(nullptr)},
          {"kind", kind_},
          {"material_identity_digest", material_identity_digest_},
          {"origin", to_string(origin_)},
          {"schema", kAuthorizedMaterialSchema}};
}

const std::string& AuthorizedMaterial::origin_proof_digest() const noexcept {
  return descriptor_ ? descriptor_->descriptor_digest() : lineage_->lineage_digest();
}

// ---- InstallPlanDescriptor ------------------------------------------------------------------

Json InstallPlanDescriptor::digest_mapping() const {
  Json out = {{"capability_id", f_.capability_id},
              {"credential_requirement", f_.credential_requirement},
              {"installer_id", f_.installer_id},
              {"kind", f_.kind},
              {"permission_expansion", f_.permission_expansion},
              {"plan_digest", f_.plan_digest},
              {"provenance_digest", f_.provenance_digest},
              {"rollback_strategy", f_.rollback_strategy},
              {"schema", schema_version() == 2 ? kInstallDescriptorV2Schema
                                               : kInstallDescriptorV1Schema},
              {"target_scope", f_.target_scope}};
  if (f_.result_material_identity_digest) {
    out["result_material_identity_digest"] = *f_.result_material_identity_digest;
  }
  return out;
}

void InstallPlanDescriptor::validate() const {
  require_installable(f_.capability_id, f_.kind);
  require_canonical_token(f_.installer_id, "installer_id");
  require_digest(f_.plan_digest, "plan_digest");
  require_digest(f_.provenance_digest, "provenance_digest");
  if (f_.result_material_identity_digest) {
    require_digest(*f_.result_material_identity_digest, "result_material_identity_digest");
  }
}

InstallPlanDescriptor InstallPlanDescriptor::create(Fields fields) {
  InstallPlanDescriptor out;
  out.f_ = std::move(fields);
  out.validate();
  out.descriptor_digest_ = identity_digest_of(out.digest_mapping());
  return out;
}

InstallPlanDescriptor InstallPlanDescriptor::from_json(const Json& value) {
  Reader r(value, "install plan descriptor", kRaise);
  const bool v2 = r.has("schema") && r.at("schema") == kInstallDescriptorV2Schema;
  if (!v2) r.literal("schema", kInstallDescriptorV1Schema, "install plan descriptor schema");
  if (v2) {
    r.exact({"capability_id", "credential_requirement", "descriptor_digest", "installer_id",
             "kind", "permission_expansion", "plan_digest", "provenance_digest",
             "result_material_identity_digest", "rollback_strategy", "schema", "target_scope"});
  } else {
    r.exact({"capability_id", "credential_requirement", "descriptor_digest", "installer_id",
             "kind", "permission_expansion", "plan_digest", "provenance_digest",
             "rollback_strategy", "schema", "target_scope"});
  }
  Fields f;
  f.capability_id = r.string("capability_id");
  f.kind = r.enumerated<CapabilityKind>("kind");
  f.installer_id = r.string("installer_id", kCanonicalToken);
  f.plan_digest = r.string("plan_digest", kDigest);
  f.provenance_digest = r.string("provenance_digest", kDigest);
  f.target_scope = r.enumerated<TargetScope>("target_scope");
  f.rollback_strategy = r.enumerated<RollbackStrategy>("rollback_strategy");
  f.permission_expansion = r.boolean("permission_expansion");
  f.credential_requirement = r.boolean("credential_requirement");
  if (v2) f.result_material_identity_digest = r.string("result_material_identity_digest", kDigest);
  auto out = create(std::move(f));
  require_match(r.string("descriptor_digest", kDigest), out.descriptor_digest_,
                "descriptor_digest does not match descriptor fields");
  return out;
}

Json InstallPlanDescriptor::to_json() const {
  Json out = digest_mapping();
  out["descriptor_digest"] = descriptor_digest_;
  return out;
}

bool InstallPlanDescriptor::matches_result_material(
    const MaterialIdentity& material) const noexcept {
  return schema_version() == 2 && f_.capability_id == material.capability_id() &&
         f_.kind == material.kind() &&
         *f_.result_material_identity_digest == material.identity_digest();
}

InstallPlanningBundle::InstallPlanningBundle(InstallPlanDescriptor descriptor,
                                             MaterialIdentity result_material)
    : descriptor_(std::move(descriptor)), result_material_(std::move(result_material)) {
  if (descriptor_.schema_version() != 2) {
    throw InvalidIdentityError("install planning bundle requires descriptor schema v2");
  }
  if (!descriptor_.matches_result_material(result_material_)) {
    throw InvalidIdentityError("install descriptor does not match the full result material");
  }
}

// ---- InstallExecutionBinding ----------------------------------------------------------------

Json InstallExecutionBinding::digest_mapping() const {
  return {{"driver_digest", driver_digest_},
          {"driver_id", driver_id_},
          {"host_identity_digest", host_identity_digest_},
          {"schema", kExecutionBindingSchema},
          {"target_identity_digest", target_identity_digest_}};
}

InstallExecutionBinding InstallExecutionBinding::create(std::string driver_id,
                                                        std::string driver_digest,
                                                        std::string host_identity_digest,
                                                        std::string target_identity_digest) {
  require_canonical_token(driver_id, "driver_id");
  require_digest(driver_digest, "driver_digest");
  require_digest(host_identity_digest, "host_identity_digest");
  require_digest(target_identity_digest, "target_identity_digest");
  InstallExecutionBinding out;
  out.driver_id_ = std::move(driver_id);
  out.driver_digest_ = std::move(driver_digest);
  out.host_identity_digest_ = std::move(host_identity_digest);
  out.target_identity_digest_ = std::move(target_identity_digest);
  out.binding_digest_ = identity_digest_of(out.digest_mapping());
  return out;
}

InstallExecutionBinding InstallExecutionBinding::from_json(const Json& value) {
  Reader r(value, "install execution binding", kRaise);
  r.exact({"binding_digest", "driver_digest", "driver_id", "host_identity_digest", "schema",
           "target_identity_digest"});
  r.literal("schema", kExecutionBindingSchema, "install execution binding schema");
  auto out = create(r.string("driver_id", kCanonicalToken), r.string("driver_digest", kDigest),
                    r.string("host_identity_digest", kDigest),
                    r.string("target_identity_digest", kDigest));
  require_match(r.string("binding_digest", kDigest), out.binding_digest_,
                "binding_digest does not match execution binding fields");
  return out;
}

InstallExecutionBinding InstallExecutionBinding::from_json_text(std::string_view text) {
  Json parsed;
  try {
    parsed = core::parse_json(text);
  } catch (const InvalidArgument&) {
    throw InvalidIdentityError("install execution binding must be valid JSON");
  }
  auto out = from_json(parsed);
  if (out.to_json_text() != text) {
    throw InvalidIdentityError("install execution binding JSON must use canonical encoding");
  }
  return out;
}

Json InstallExecutionBinding::to_json() const {
  Json out = digest_mapping();
  out["binding_digest"] = binding_digest_;
  return out;
}

std::string InstallExecutionBinding::to_json_text() const {
  return core::canonical_json(to_json(), core::Encoding::kAscii);
}

// ---- InstallConsentPolicy -------------------------------------------------------------------

Json InstallConsentPolicy::digest_mapping() const {
  return {{"agent_mode", agent_mode_},
          {"mcp_server_mode", mcp_server_mode_},
          {"schema", kConsentPolicySchema},
          {"skill_mode", skill_mode_}};
}

InstallConsentPolicy InstallConsentPolicy::create(ConsentMode skill_mode, ConsentMode agent_mode,
                                                  ConsentMode mcp_server_mode) {
  InstallConsentPolicy out;
  out.skill_mode_ = skill_mode;
  out.agent_mode_ = agent_mode;
  out.mcp_server_mode_ = mcp_server_mode;
  out.policy_digest_ = identity_digest_of(out.digest_mapping());
  return out;
}

InstallConsentPolicy InstallConsentPolicy::create(std::string_view skill_mode,
                                                  std::string_view agent_mode,
                                                  std::string_view mcp_server_mode) {
  const auto mode = [](std::string_view text, const char* field) {
    const auto found = find_enum<ConsentMode>(text);
    if (!found) {
      throw InvalidIdentityError(std::string(field) + " is not a declared install consent mode");
    }
    return *found;
  };
  return create(mode(skill_mode, "skill_mode"), mode(agent_mode, "agent_mode"),
                mode(mcp_server_mode, "mcp_server_mode"));
}

InstallConsentPolicy InstallConsentPolicy::safe_default() {
  return create(ConsentMode::kAskEachTime, ConsentMode::kAskEachTime, ConsentMode::kAskEachTime);
}

InstallConsentPolicy InstallConsentPolicy::from_json(const Json& value) {
  Reader r(value, "install consent policy", kRaise);
  r.exact({"agent_mode", "mcp_server_mode", "policy_digest", "schema", "skill_mode"});
  r.literal("schema", kConsentPolicySchema, "install consent policy schema");
  auto out = create(std::string_view(r.string_ref("skill_mode")),
                    std::string_view(r.string_ref("agent_mode")),
                    std::string_view(r.string_ref("mcp_server_mode")));
  require_match(r.string("policy_digest", kDigest), out.policy_digest_,
                "policy_digest does not match policy fields");
  return out;
}

Json InstallConsentPolicy::to_json() const {
  Json out = digest_mapping();
  out["policy_digest"] = policy_digest_;
  return out;
}

ConsentMode InstallConsentPolicy::mode_for(CapabilityKind kind) const {
  switch (kind) {
    case CapabilityKind::kSkill:
      return skill_mode_;
    case CapabilityKind::kAgent:
      return agent_mode_;
    case CapabilityKind::kMcpServer:
      return mcp_server_mode_;
    case CapabilityKind::kHarness:
      break;
  }
  throw InvalidIdentityError("kind is not an installable capability kind");
}

InstallAuthorizationRoute route_install_authorization(const InstallConsentPolicy& policy,
                                                      const InstallPlanDescriptor& descriptor) {
  const auto& digest = policy.policy_digest();
  if (descriptor.permission_expansion()) {
    return {DecisionBasis::kInteractive, "permission-expansion-requires-consent", digest};
  }
  if (descriptor.credential_requirement()) {
    return {DecisionBasis::kInteractive, "credentials-require-consent", digest};
  }
  if (policy.mode_for(descriptor.kind()) == ConsentMode::kPreapprovedAuto) {
    return {DecisionBasis::kPreapprovedPolicy, "matching-preapproved-policy", digest};
  }
  return {DecisionBasis::kInteractive, "per-install-consent-required", digest};
}

}  // namespace ctx::engine
