// Typed payloads of the v3 capability actions. HostAction::create decodes and cross-checks each
// once (protocol_checks.cpp) and keeps it; callers read HostAction::install_payload(),
// material_payload() and consent_request() rather than the payload JSON by key.
#ifndef CTX_HOST_ENGINE_ACTION_PAYLOAD_HPP_
#define CTX_HOST_ENGINE_ACTION_PAYLOAD_HPP_

#include <cstdint>
#include <string>

#include "host/engine/identities.hpp"

namespace ctx::engine {

// What an install binds: the InstallCapability payload, and the install a RequestConsent asks for.
// The four identities name one capability (checked when decoded).
struct InstallBinding {
  CatalogCapabilityIdentity catalog_identity;
  InstallPlanDescriptor install_plan_descriptor;
  std::string installer_digest;
  std::string policy_snapshot_digest;
  MaterialIdentity result_material;

  CapabilityKind capability_kind() const noexcept { return catalog_identity.kind(); }
  // The InstallCapability payload (schema kInstallActionPayloadSchemaV3), all seven keys.
  Json to_json() const;
};

// The v3 payload of a material action (activate, deactivate, verify, uninstall, reconcile): the
// exact material it acts on and the authority that allowed it.
struct MaterialBinding {
  AuthorizedMaterial authorized_material;
  CatalogCapabilityIdentity catalog_identity;
  MaterialIdentity material_identity;

  CapabilityKind capability_kind() const noexcept { return catalog_identity.kind(); }
  // The payload (schema kMaterialActionPayloadSchemaV3), all five keys.
  Json to_json() const;
};

// A v3 RequestConsent payload: the install it asks for, and that install action as it will be
// committed at the next revision.
struct ConsentRequestBinding {
  InstallBinding install;
  std::string requested_action_id;
  std::string requested_action_content_digest;
  std::int64_t requested_action_precondition_revision = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_ACTION_PAYLOAD_HPP_
