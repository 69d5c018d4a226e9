// Typed identities (§1.7): digests match the Python canon-A reference values, exact key sets,
// tampering is refused with an error naming the field.
#include "host/engine/identities.hpp"

#include <gtest/gtest.h>

#include "host/core/crypto.hpp"
#include "host/engine/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

std::string sha(const std::string& text) { return core::sha256_hex(text); }

MaterialIdentity lint_material() {
  return MaterialIdentity::create("skill:lint", CapabilityKind::kSkill, sha("content:skill:lint"),
                                  64);
}

MaterialDescriptor lint_descriptor() {
  const auto material = lint_material();
  return MaterialDescriptor::create("skill:lint", CapabilityKind::kSkill, Actionability::kLoad,
                                    material.content_sha256(), 64, 16, sha("material-snapshot"),
                                    material.identity_digest());
}

InstallPlanDescriptor installer_descriptor() {
  InstallPlanDescriptor::Fields f;
  f.capability_id = "agent:installer";
  f.kind = CapabilityKind::kAgent;
  f.installer_id = "ctx-agent-installer-v1";
  f.plan_digest = sha("install-plan:agent:installer");
  f.provenance_digest = sha("snap");
  f.result_material_identity_digest = sha("rm");
  return InstallPlanDescriptor::create(f);
}

TEST(Identities, DigestsMatchPythonCanonAReference) {
  const auto catalog = CatalogCapabilityIdentity::create("skill:lint", CapabilityKind::kSkill,
                                                         sha("managed-query-catalog"));
  EXPECT_EQ(catalog.identity_digest(),
            "da40f9804ede1f96d5d76eb3f1208c4ef4c6eb7eb788d5f523013b911aef5c46");
  EXPECT_EQ(lint_material().identity_digest(),
            "bb97a04fab61772471d2332a6c2c9a9001f46d89e6e6762587e240902d310cdb");
  EXPECT_EQ(lint_descriptor().descriptor_digest(),
            "1b68235d651581d0a76d24d19385bdada548ba84c78ae96a2b0fead8333efa00");
  EXPECT_EQ(installer_descriptor().descriptor_digest(),
            "58526d832fc592b631fb8856a8ffcdbe8c108e75f54db50d4dc31e72901d3a13");
  EXPECT_EQ(InstallConsentPolicy::safe_default().policy_digest(),
            "e2ad57139141aea54f58c5f24b1bee718305a21b85355c9ab273679002cf6ff1");
  const auto binding = InstallExecutionBinding::create("ctx-skill-installer-v1", sha("dd"),
                                                       sha("h"), sha("t"));
  EXPECT_EQ(binding.binding_digest(),
            "af00a8b4e196f22b4c430b14b6610765e31859ba8696894fa5b08ec2e5dd8c59");
}

TEST(Identities, RoundTripThroughJsonWithExactKeys) {
  const auto catalog =
      CatalogCapabilityIdentity::create("skill:lint", CapabilityKind::kSkill, sha("ns"));
  EXPECT_EQ(CatalogCapabilityIdentity::from_json(catalog.to_json()), catalog);
  EXPECT_EQ(catalog.to_json().size(), 5u);
  EXPECT_EQ(MaterialIdentity::from_json(lint_material().to_json()), lint_material());
  EXPECT_EQ(lint_material().to_json().size(), 6u);
  EXPECT_EQ(MaterialDescriptor::from_json(lint_descriptor().to_json()), lint_descriptor());
  EXPECT_EQ(lint_descriptor().to_json().size(), 10u);
  EXPECT_EQ(InstallPlanDescriptor::from_json(installer_descriptor().to_json()),
            installer_descriptor());
  EXPECT_EQ(installer_descriptor().to_json().size(), 12u);
  const auto policy = InstallConsentPolicy::create("preapproved-auto", "ask-each-time",
                                                   "ask-each-time");
  EXPECT_EQ(InstallConsentPolicy::from_json(policy.to_json()), policy);
  EXPECT_NE(policy.policy_digest(), InstallConsentPolicy::safe_default().policy_digest());
  const auto binding = InstallExecutionBinding::create("driver-1", sha("a"), sha("b"), sha("c"));
  EXPECT_EQ(InstallExecutionBinding::from_json_text(binding.to_json_text()), binding);
}

TEST(Identities, ManualDescriptorIsV1WithoutContent) {
  const auto manual =
      MaterialDescriptor::create("harness:runner", CapabilityKind::kHarness, Actionability::kManual,
                                 std::nullopt, 0, 0, sha("snap"), std::nullopt);
  EXPECT_EQ(manual.schema_version(), 1);
  EXPECT_EQ(manual.to_json()["schema"], "ctx.material-descriptor-v1");
  EXPECT_TRUE(manual.to_json()["content_sha256"].is_null());
  EXPECT_FALSE(manual.to_json().contains("material_identity_digest"));
  EXPECT_EQ(MaterialDescriptor::from_json(manual.to_json()), manual);
}

TEST(Identities, TamperedDigestsAreRefused) {
  auto json = lint_material().to_json();
  json["content_bytes"] = 65;
  CTX_EXPECT_THROW(MaterialIdentity::from_json(json), InvalidIdentityError,
                   "identity_digest does not match");
  auto catalog =
      CatalogCapabilityIdentity::create("skill:lint", CapabilityKind::kSkill, sha("ns")).to_json();
  catalog["catalog_namespace_digest"] = sha("other");
  CTX_EXPECT_THROW(CatalogCapabilityIdentity::from_json(catalog), InvalidIdentityError,
                   "does not match");
  auto descriptor = lint_descriptor().to_json();
  descriptor["estimated_tokens"] = 17;
  CTX_EXPECT_THROW(MaterialDescriptor::from_json(descriptor), InvalidIdentityError,
                   "descriptor_digest does not match");
  auto install = installer_descriptor().to_json();
  install["permission_expansion"] = true;
  CTX_EXPECT_THROW(InstallPlanDescriptor::from_json(install), InvalidIdentityError,
                   "descriptor_digest does not match");
  auto policy = InstallConsentPolicy::safe_default().to_json();
  policy["skill_mode"] = "preapproved-auto";
  CTX_EXPECT_THROW(InstallConsentPolicy::from_json(policy), InvalidIdentityError,
                   "policy_digest does not match");
}

TEST(Identities, ExactKeySetsAreEnforced) {
  auto extra = lint_material().to_json();
  extra["path"] = "/tmp/x";
  CTX_EXPECT_THROW(MaterialIdentity::from_json(extra), InvalidIdentityError,
                   "unknown field(s): path");
  auto missing = lint_material().to_json();
  missing.erase("content_sha256");
  CTX_EXPECT_THROW(MaterialIdentity::from_json(missing), InvalidIdentityError,
                   "is missing content_sha256");
  auto schema = lint_material().to_json();
  schema["schema"] = "ctx.material-identity-v1";
  CTX_EXPECT_THROW(MaterialIdentity::from_json(schema), InvalidIdentityError,
                   "schema is unsupported");
  CTX_EXPECT_THROW(MaterialIdentity::from_json(Json::array()), InvalidIdentityError,
                   "must be an object");
}

TEST(Identities, FieldValidationNamesTheField) {
  CTX_EXPECT_THROW(MaterialIdentity::create("skill:lint", CapabilityKind::kSkill, "ABC", 64),
                   InvalidIdentityError, "content_sha256 must be a lowercase SHA-256 digest");
  CTX_EXPECT_THROW(MaterialIdentity::create("skill:lint", CapabilityKind::kSkill, sha("x"), 6001),
                   InvalidIdentityError, "content_bytes");
  CTX_EXPECT_THROW(MaterialIdentity::create("skill:lint", CapabilityKind::kAgent, sha("x"), 1),
                   InvalidIdentityError, "canonical identity");
  CTX_EXPECT_THROW(MaterialIdentity::create("skill:a:b", CapabilityKind::kSkill, sha("x"), 1),
                   InvalidIdentityError, "canonical identity");
  InstallPlanDescriptor::Fields f;
  f.capability_id = "harness:runner";
  f.kind = CapabilityKind::kHarness;
  f.installer_id = "x";
  f.plan_digest = sha("p");
  f.provenance_digest = sha("q");
  CTX_EXPECT_THROW(InstallPlanDescriptor::create(f), InvalidIdentityError,
                   "kind is not an installable capability kind");
  f.capability_id = "skill:x";
  f.kind = CapabilityKind::kSkill;
  f.installer_id = "Upper";
  CTX_EXPECT_THROW(InstallPlanDescriptor::create(f), InvalidIdentityError,
                   "installer_id must be a canonical token");
  f.installer_id = "ok";
  // Target scope and rollback strategy have one declared spelling each, checked where parsed.
  Json stored = InstallPlanDescriptor::create(f).to_json();
  EXPECT_EQ(stored["target_scope"], "user");
  EXPECT_EQ(stored["rollback_strategy"], "atomic-restore");
  EXPECT_NO_THROW(InstallPlanDescriptor::from_json(stored));
  stored["target_scope"] = "system";
  CTX_EXPECT_THROW(InstallPlanDescriptor::from_json(stored), InvalidIdentityError, "target_scope");
  stored["target_scope"] = "user";
  stored["rollback_strategy"] = "none";
  CTX_EXPECT_THROW(InstallPlanDescriptor::from_json(stored), InvalidIdentityError,
                   "rollback_strategy");
  stored["rollback_strategy"] = "atomic-restore";
  stored["kind"] = "plugin";
  CTX_EXPECT_THROW(InstallPlanDescriptor::from_json(stored), InvalidIdentityError, "kind");
  CTX_EXPECT_THROW(InstallConsentPolicy::create("always", "ask-each-time", "ask-each-time"),
                   InvalidIdentityError, "skill_mode");
  CTX_EXPECT_THROW(InstallConsentPolicy::safe_default().mode_for(CapabilityKind::kHarness),
                   InvalidIdentityError,
                   "installable");
  CTX_EXPECT_THROW(
      MaterialDescriptor::create("skill:lint", CapabilityKind::kSkill, Actionability::kManual,
                                 sha("c"), 1, 1, sha("s"), std::nullopt),
      InvalidIdentityError, "manual material cannot claim exposed content");
  CTX_EXPECT_THROW(
      MaterialDescriptor::create("skill:lint", CapabilityKind::kSkill, Actionability::kLoad,
                                 sha("c"), 64, 1, sha("s"), sha("wrong")),
      InvalidIdentityError, "material_identity_digest does not match");
}

// A material descriptor is loadable or manual: create() takes the enum and refuses kInstall; the
// stored spelling is parsed in from_json, where an unknown one (or "install") is the same error.
TEST(Identities, MaterialDescriptorActionabilityIsTypedAndParsedAtTheBoundary) {
  const auto material = lint_material();
  CTX_EXPECT_THROW(
      MaterialDescriptor::create("skill:lint", CapabilityKind::kSkill, Actionability::kInstall,
                                 material.content_sha256(), 64, 16, sha("material-snapshot"),
                                 std::nullopt),
      InvalidIdentityError, "descriptor actionability is unsupported");
  const auto descriptor = lint_descriptor();
  EXPECT_EQ(descriptor.actionability(), Actionability::kLoad);
  EXPECT_EQ(descriptor.to_json()["actionability"], "load");
  EXPECT_EQ(MaterialDescriptor::from_json(descriptor.to_json()), descriptor);
  for (const char* spelling : {"install", "Load", "loaded", "no-such-actionability"}) {
    auto stored = descriptor.to_json();
    stored["actionability"] = spelling;
    CTX_EXPECT_THROW(MaterialDescriptor::from_json(stored), InvalidIdentityError,
                     "descriptor actionability is unsupported");
  }
  auto stored = descriptor.to_json();
  stored["actionability"] = 1;
  CTX_EXPECT_THROW(MaterialDescriptor::from_json(stored), InvalidIdentityError, "actionability");
}

TEST(Identities, AuthorizedMaterialOriginsAreExclusive) {
  const auto descriptor = lint_descriptor();
  const auto catalog = AuthorizedMaterial::from_catalog(sha("cat"), descriptor);
  EXPECT_EQ(catalog.origin(), MaterialOrigin::kCatalog);
  EXPECT_EQ(catalog.origin_proof_digest(), descriptor.descriptor_digest());
  EXPECT_EQ(AuthorizedMaterial::from_json(catalog.to_json()), catalog);
  EXPECT_EQ(catalog.to_json().size(), 8u);

  const auto lineage = InstalledMaterialLineage::create(
      "skill:lint", CapabilityKind::kSkill, sha("cat"), lint_material().identity_digest(),
      sha("desc"), sha("action"), sha("receipt"));
  EXPECT_EQ(InstalledMaterialLineage::from_json(lineage.to_json()), lineage);
  const auto installed = AuthorizedMaterial::from_installed(lineage);
  EXPECT_EQ(installed.origin_proof_digest(), lineage.lineage_digest());
  EXPECT_EQ(AuthorizedMaterial::from_json(installed.to_json()), installed);

  auto both = catalog.to_json();
  both["installed_material_lineage"] = lineage.to_json();
  CTX_EXPECT_THROW(AuthorizedMaterial::from_json(both), InvalidIdentityError,
                   "forbids installed lineage");
  auto origin = installed.to_json();
  origin["origin"] = "catalog";
  CTX_EXPECT_THROW(AuthorizedMaterial::from_json(origin), InvalidIdentityError,
                   "catalog material requires an exact catalog descriptor");
  const auto manual =
      MaterialDescriptor::create("skill:lint", CapabilityKind::kSkill, Actionability::kManual,
                                 std::nullopt, 0, 0, sha("snap"), std::nullopt);
  CTX_EXPECT_THROW(AuthorizedMaterial::from_catalog(sha("cat"), manual), InvalidIdentityError,
                   "material-identity descriptor");
}

TEST(Identities, BindingJsonTextMustBeCanonical) {
  const auto binding = InstallExecutionBinding::create("driver-1", sha("a"), sha("b"), sha("c"));
  const auto text = binding.to_json_text();
  CTX_EXPECT_THROW(InstallExecutionBinding::from_json_text(" " + text), InvalidIdentityError,
                   "canonical encoding");
  CTX_EXPECT_THROW(InstallExecutionBinding::from_json_text("{"), InvalidIdentityError,
                   "valid JSON");
}

TEST(Identities, PlanningBundleRequiresMatchingResultMaterial) {
  const auto material =
      MaterialIdentity::create("agent:installer", CapabilityKind::kAgent, sha("m"), 64);
  InstallPlanDescriptor::Fields f;
  f.capability_id = "agent:installer";
  f.kind = CapabilityKind::kAgent;
  f.installer_id = "ctx-agent-installer-v1";
  f.plan_digest = sha("p");
  f.provenance_digest = sha("q");
  f.result_material_identity_digest = material.identity_digest();
  const auto descriptor = InstallPlanDescriptor::create(f);
  EXPECT_TRUE(descriptor.matches_result_material(material));
  EXPECT_NO_THROW(InstallPlanningBundle(descriptor, material));
  const auto other =
      MaterialIdentity::create("agent:installer", CapabilityKind::kAgent, sha("n"), 64);
  CTX_EXPECT_THROW(InstallPlanningBundle(descriptor, other), InvalidIdentityError,
                   "does not match the full result material");
}

TEST(Identities, RoutingSendsSensitiveDescriptorsToAHuman) {
  const auto auto_policy = InstallConsentPolicy::create("preapproved-auto", "preapproved-auto",
                                                        "preapproved-auto");
  auto f = InstallPlanDescriptor::Fields{};
  f.capability_id = "skill:x";
  f.kind = CapabilityKind::kSkill;
  f.installer_id = "i";
  f.plan_digest = sha("p");
  f.provenance_digest = sha("q");
  EXPECT_EQ(route_install_authorization(auto_policy, InstallPlanDescriptor::create(f)).reason_code,
            "matching-preapproved-policy");
  f.credential_requirement = true;
  EXPECT_EQ(
      route_install_authorization(auto_policy, InstallPlanDescriptor::create(f)).decision_basis,
      DecisionBasis::kInteractive);
  f.credential_requirement = false;
  EXPECT_EQ(route_install_authorization(InstallConsentPolicy::safe_default(),
                                        InstallPlanDescriptor::create(f))
                .reason_code,
            "per-install-consent-required");
}

}  // namespace
}  // namespace ctx::engine
