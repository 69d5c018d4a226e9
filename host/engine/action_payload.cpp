#include "host/engine/action_payload.hpp"

#include "host/engine/protocol.hpp"

namespace ctx::engine {

Json InstallBinding::to_json() const {
  return {{"capability_kind", capability_kind()},
          {"catalog_identity", catalog_identity.to_json()},
          {"install_plan_descriptor", install_plan_descriptor.to_json()},
          {"installer_digest", installer_digest},
          {"policy_snapshot_digest", policy_snapshot_digest},
          {"result_material", result_material.to_json()},
          {"schema", kInstallActionPayloadSchemaV3}};
}

Json MaterialBinding::to_json() const {
  return {{"authorized_material", authorized_material.to_json()},
          {"capability_kind", capability_kind()},
          {"catalog_identity", catalog_identity.to_json()},
          {"material_identity", material_identity.to_json()},
          {"schema", kMaterialActionPayloadSchemaV3}};
}

std::vector<const HostAction*> consent_requests_offering(const Transition& transition,
                                                         const std::string& consent_id,
                                                         const HostAction& install) {
  std::vector<const HostAction*> found;
  for (const auto& action : transition.actions()) {
    const ConsentRequestBinding* request = action.consent_request();
    if (request == nullptr || action.consent_id() != std::optional<std::string>(consent_id) ||
        action.entity_id() != install.entity_id() ||
        request->requested_action_id != install.action_id() ||
        request->requested_action_content_digest != install.content_digest() ||
        request->requested_action_precondition_revision != install.precondition_revision()) {
      continue;
    }
    found.push_back(&action);
  }
  return found;
}

}  // namespace ctx::engine
