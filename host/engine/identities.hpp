// Typed identities of spec §1.7: immutable values whose digests are canon-A SHA-256 over their
// fields plus a schema id. Factories validate and compute the digest; from_json() demands the
// exact key set and recomputes the digest ("... does not match ..."). Errors:
// InvalidIdentityError naming the field. Thread-safe (immutable values).
#ifndef CTX_HOST_ENGINE_IDENTITIES_HPP_
#define CTX_HOST_ENGINE_IDENTITIES_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

using core::Json;

inline constexpr std::string_view kCatalogIdentitySchema = "ctx.catalog-capability-identity-v1";
inline constexpr std::string_view kMaterialIdentitySchema = "ctx.material-identity-v2";
inline constexpr std::string_view kMaterialDescriptorV1Schema = "ctx.material-descriptor-v1";
inline constexpr std::string_view kMaterialDescriptorV2Schema = "ctx.material-descriptor-v2";
inline constexpr std::string_view kAuthorizedMaterialSchema = "ctx.authorized-material-v1";
inline constexpr std::string_view kInstalledLineageSchema = "ctx.installed-material-lineage-v1";
inline constexpr std::string_view kInstallDescriptorV1Schema = "ctx.install-plan-descriptor-v1";
inline constexpr std::string_view kInstallDescriptorV2Schema = "ctx.install-plan-descriptor-v2";
inline constexpr std::string_view kExecutionBindingSchema = "ctx.install-execution-binding-v1";
inline constexpr std::string_view kConsentPolicySchema = "ctx.install-consent-policy-v1";

// Stable catalog identity of one capability, independent of ranking and material version.
class CatalogCapabilityIdentity {
 public:
  static CatalogCapabilityIdentity create(std::string capability_id, CapabilityKind kind,
                                          std::string catalog_namespace_digest);
  static CatalogCapabilityIdentity from_json(const Json& value);
  // {capability_id, catalog_namespace_digest, identity_digest, kind, schema}
  Json to_json() const;

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  const std::string& catalog_namespace_digest() const noexcept { return namespace_digest_; }
  const std::string& identity_digest() const noexcept { return identity_digest_; }
  friend bool operator==(const CatalogCapabilityIdentity&,
                         const CatalogCapabilityIdentity&) = default;

 private:
  CatalogCapabilityIdentity() = default;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  std::string namespace_digest_, identity_digest_;
};

// Digest identity of exact capability material (content sha256 + size 1..6000).
class MaterialIdentity {
 public:
  static MaterialIdentity create(std::string capability_id, CapabilityKind kind,
                                 std::string content_sha256, std::int64_t content_bytes);
  static MaterialIdentity from_json(const Json& value);
  // {capability_id, content_bytes, content_sha256, identity_digest, kind, schema}
  Json to_json() const;

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  const std::string& content_sha256() const noexcept { return content_sha256_; }
  std::int64_t content_bytes() const noexcept { return content_bytes_; }
  const std::string& identity_digest() const noexcept { return identity_digest_; }
  friend bool operator==(const MaterialIdentity&, const MaterialIdentity&) = default;

 private:
  MaterialIdentity() = default;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  std::string content_sha256_;
  std::int64_t content_bytes_ = 0;
  std::string identity_digest_;
};

// Prose-free catalog fact deciding whether material is loadable. Schema v2 iff it names a
// material identity digest (load only).
class MaterialDescriptor {
 public:
  // actionability: kLoad (content_sha256 required) or kManual (content_sha256 absent); kInstall
  // → InvalidIdentityError ("descriptor actionability is unsupported").
  static MaterialDescriptor create(std::string capability_id, CapabilityKind kind,
                                   Actionability actionability,
                                   std::optional<std::string> content_sha256,
                                   std::int64_t content_bytes, std::int64_t estimated_tokens,
                                   std::string provenance_digest,
                                   std::optional<std::string> material_identity_digest);
  static MaterialDescriptor from_json(const Json& value);
  // {actionability, capability_id, content_bytes, content_sha256, descriptor_digest,
  //  estimated_tokens, kind, material_snapshot_digest, schema [, material_identity_digest]}
  Json to_json() const;

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  // kLoad or kManual.
  Actionability actionability() const noexcept { return actionability_; }
  const std::optional<std::string>& content_sha256() const noexcept { return content_sha256_; }
  std::int64_t content_bytes() const noexcept { return content_bytes_; }
  std::int64_t estimated_tokens() const noexcept { return estimated_tokens_; }
  const std::string& provenance_digest() const noexcept { return provenance_digest_; }
  const std::optional<std::string>& material_identity_digest() const noexcept {
    return material_identity_digest_;
  }
  const std::string& descriptor_digest() const noexcept { return descriptor_digest_; }
  int schema_version() const noexcept { return material_identity_digest_ ? 2 : 1; }
  friend bool operator==(const MaterialDescriptor&, const MaterialDescriptor&) = default;

 private:
  MaterialDescriptor() = default;
  Json digest_mapping() const;
  void validate() const;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  Actionability actionability_ = Actionability::kManual;
  std::optional<std::string> content_sha256_;
  std::int64_t content_bytes_ = 0, estimated_tokens_ = 0;
  std::string provenance_digest_;
  std::optional<std::string> material_identity_digest_;
  std::string descriptor_digest_;
};

// Digest-bound proof connecting an install descriptor, the install action and its receipt.
class InstalledMaterialLineage {
 public:
  static InstalledMaterialLineage create(std::string capability_id, CapabilityKind kind,
                                         std::string catalog_identity_digest,
                                         std::string material_identity_digest,
                                         std::string origin_install_descriptor_digest,
                                         std::string install_action_content_digest,
                                         std::string install_receipt_content_digest);
  static InstalledMaterialLineage from_json(const Json& value);
  Json to_json() const;

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  const std::string& catalog_identity_digest() const noexcept { return catalog_identity_digest_; }
  const std::string& material_identity_digest() const noexcept {
    return material_identity_digest_;
  }
  const std::string& origin_install_descriptor_digest() const noexcept {
    return origin_descriptor_digest_;
  }
  const std::string& install_action_content_digest() const noexcept {
    return action_content_digest_;
  }
  const std::string& install_receipt_content_digest() const noexcept {
    return receipt_content_digest_;
  }
  const std::string& lineage_digest() const noexcept { return lineage_digest_; }
  friend bool operator==(const InstalledMaterialLineage&,
                         const InstalledMaterialLineage&) = default;

 private:
  InstalledMaterialLineage() = default;
  Json digest_mapping() const;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  std::string catalog_identity_digest_, material_identity_digest_, origin_descriptor_digest_,
      action_content_digest_, receipt_content_digest_, lineage_digest_;
};

// Journal-authorized material without content or paths: origin "catalog" (with a v2
// descriptor) or "installed" (with a lineage). No own digest.
class AuthorizedMaterial {
 public:
  static AuthorizedMaterial from_catalog(std::string catalog_identity_digest,
                                         const MaterialDescriptor& descriptor);
  static AuthorizedMaterial from_installed(const InstalledMaterialLineage& lineage);
  static AuthorizedMaterial from_json(const Json& value);
  // {capability_id, catalog_identity_digest, catalog_material_descriptor,
  //  installed_material_lineage, kind, material_identity_digest, origin, schema}
  Json to_json() const;

  const std::string& capability_id() const noexcept { return capability_id_; }
  CapabilityKind kind() const noexcept { return kind_; }
  const std::string& catalog_identity_digest() const noexcept { return catalog_identity_digest_; }
  const std::string& material_identity_digest() const noexcept {
    return material_identity_digest_;
  }
  MaterialOrigin origin() const noexcept { return origin_; }
  const std::optional<MaterialDescriptor>& catalog_material_descriptor() const noexcept {
    return descriptor_;
  }
  const std::optional<InstalledMaterialLineage>& installed_material_lineage() const noexcept {
    return lineage_;
  }
  // The descriptor digest (catalog) or lineage digest (installed).
  const std::string& origin_proof_digest() const noexcept;
  friend bool operator==(const AuthorizedMaterial&, const AuthorizedMaterial&) = default;

 private:
  AuthorizedMaterial() = default;
  void validate() const;
  std::string capability_id_;
  CapabilityKind kind_ = CapabilityKind::kSkill;
  std::string catalog_identity_digest_, material_identity_digest_;
  MaterialOrigin origin_ = MaterialOrigin::kCatalog;
  std::optional<MaterialDescriptor> descriptor_;
  std::optional<InstalledMaterialLineage> lineage_;
};

// Authenticated, prose-free identity of one catalog installation plan. Schema v2 iff it binds
// a result material identity digest.
class InstallPlanDescriptor {
 public:
  struct Fields {
    std::string capability_id;
    CapabilityKind kind = CapabilityKind::kSkill;
    std::string installer_id;
    std::string plan_digest;
    std::string provenance_digest;
    TargetScope target_scope = TargetScope::kUser;
    RollbackStrategy rollback_strategy = RollbackStrategy::kAtomicRestore;
    bool permission_expansion = false;
    bool credential_requirement = false;
    std::optional<std::string> result_material_identity_digest;
    friend bool operator==(const Fields&, const Fields&) = default;
  };
  static InstallPlanDescriptor create(Fields fields);
  static InstallPlanDescriptor from_json(const Json& value);
  Json to_json() const;

  const std::string& capability_id() const noexcept { return f_.capability_id; }
  CapabilityKind kind() const noexcept { return f_.kind; }
  const std::string& installer_id() const noexcept { return f_.installer_id; }
  const std::string& plan_digest() const noexcept { return f_.plan_digest; }
  const std::string& provenance_digest() const noexcept { return f_.provenance_digest; }
  TargetScope target_scope() const noexcept { return f_.target_scope; }
  RollbackStrategy rollback_strategy() const noexcept { return f_.rollback_strategy; }
  bool permission_expansion() const noexcept { return f_.permission_expansion; }
  bool credential_requirement() const noexcept { return f_.credential_requirement; }
  const std::optional<std::string>& result_material_identity_digest() const noexcept {
    return f_.result_material_identity_digest;
  }
  const std::string& descriptor_digest() const noexcept { return descriptor_digest_; }
  int schema_version() const noexcept { return f_.result_material_identity_digest ? 2 : 1; }
  // v2, same capability and kind, and the result digest equals `material`'s identity digest.
  bool matches_result_material(const MaterialIdentity& material) const noexcept;
  friend bool operator==(const InstallPlanDescriptor&, const InstallPlanDescriptor&) = default;

 private:
  InstallPlanDescriptor() = default;
  Json digest_mapping() const;
  void validate() const;
  Fields f_;
  std::string descriptor_digest_;
};

// An install descriptor frozen together with the full result material it binds (v2 only).
class InstallPlanningBundle {
 public:
  // Errors: InvalidIdentityError unless descriptor is v2 and matches `result_material`.
  InstallPlanningBundle(InstallPlanDescriptor descriptor, MaterialIdentity result_material);
  const InstallPlanDescriptor& descriptor() const noexcept { return descriptor_; }
  const MaterialIdentity& result_material() const noexcept { return result_material_; }

 private:
  InstallPlanDescriptor descriptor_;
  MaterialIdentity result_material_;
};

// Non-executable identity of the concrete driver, host and install target.
class InstallExecutionBinding {
 public:
  static InstallExecutionBinding create(std::string driver_id, std::string driver_digest,
                                        std::string host_identity_digest,
                                        std::string target_identity_digest);
  static InstallExecutionBinding from_json(const Json& value);
  // Parses canon-A text and demands it be byte-identical to to_json_text().
  static InstallExecutionBinding from_json_text(std::string_view text);
  Json to_json() const;
  // canon-A text of to_json().
  std::string to_json_text() const;

  const std::string& driver_id() const noexcept { return driver_id_; }
  const std::string& driver_digest() const noexcept { return driver_digest_; }
  const std::string& host_identity_digest() const noexcept { return host_identity_digest_; }
  const std::string& target_identity_digest() const noexcept { return target_identity_digest_; }
  const std::string& binding_digest() const noexcept { return binding_digest_; }
  friend bool operator==(const InstallExecutionBinding&,
                         const InstallExecutionBinding&) = default;

 private:
  InstallExecutionBinding() = default;
  Json digest_mapping() const;
  std::string driver_id_, driver_digest_, host_identity_digest_, target_identity_digest_,
      binding_digest_;
};

// Per-kind install consent modes.
class InstallConsentPolicy {
 public:
  static InstallConsentPolicy create(ConsentMode skill_mode, ConsentMode agent_mode,
                                     ConsentMode mcp_server_mode);
  // As above from the modes' persisted spellings.
  // Errors: InvalidIdentityError "<field> is not a declared install consent mode".
  static InstallConsentPolicy create(std::string_view skill_mode, std::string_view agent_mode,
                                     std::string_view mcp_server_mode);
  // All kinds ask-each-time.
  static InstallConsentPolicy safe_default();
  static InstallConsentPolicy from_json(const Json& value);
  Json to_json() const;

  ConsentMode skill_mode() const noexcept { return skill_mode_; }
  ConsentMode agent_mode() const noexcept { return agent_mode_; }
  ConsentMode mcp_server_mode() const noexcept { return mcp_server_mode_; }
  const std::string& policy_digest() const noexcept { return policy_digest_; }
  // Errors: InvalidIdentityError "kind is not an installable capability kind" (a harness).
  ConsentMode mode_for(CapabilityKind kind) const;
  friend bool operator==(const InstallConsentPolicy&, const InstallConsentPolicy&) = default;

 private:
  InstallConsentPolicy() = default;
  Json digest_mapping() const;
  ConsentMode skill_mode_ = ConsentMode::kAskEachTime;
  ConsentMode agent_mode_ = ConsentMode::kAskEachTime;
  ConsentMode mcp_server_mode_ = ConsentMode::kAskEachTime;
  std::string policy_digest_;
};

// §7 routing of one install under `policy`.
struct InstallAuthorizationRoute {
  DecisionBasis decision_basis = DecisionBasis::kInteractive;
  std::string reason_code;
  std::string policy_snapshot_digest;
};
InstallAuthorizationRoute route_install_authorization(const InstallConsentPolicy& policy,
                                                      const InstallPlanDescriptor& descriptor);

// sha256 of canon-A(value): the digest rule of every typed identity.
std::string identity_digest_of(const Json& value);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_IDENTITIES_HPP_
