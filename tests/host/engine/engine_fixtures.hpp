// Builders shared by the engine tests: scopes, events with the replay metadata of the seeds,
// schema-v3 plan rows (load / install / manual) and decision values.
#ifndef CTX_TESTS_HOST_ENGINE_ENGINE_FIXTURES_HPP_
#define CTX_TESTS_HOST_ENGINE_ENGINE_FIXTURES_HPP_

#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/protocol.hpp"

namespace ctx::engine::testing {

inline constexpr const char* kNow = "2026-08-02T12:00:00Z";

inline std::string sha(const std::string& text) { return core::sha256_hex(text); }

inline std::string catalog_namespace() { return sha("managed-query-catalog"); }
inline std::string catalog_snapshot() { return sha("catalog-snapshot"); }
inline std::string host_digest() { return sha("host-neutral-managing"); }

inline ScopeRef scope(const std::string& suffix = "one") {
  return ScopeRef::create("tenant-1", "workspace-1", "repository-1", "session-" + suffix,
                          "exposure-" + suffix, "host-neutral");
}

// An event carrying every replay field, like the seeds' _event().
inline EngineEvent::Fields event_fields(const std::string& kind, std::int64_t revision,
                                        const std::string& id, Json payload = Json::object(),
                                        const std::string& suffix = "one") {
  EngineEvent::Fields f{.event_id = id,
                        .kind = kind,
                        .scope = scope(suffix),
                        .expected_revision = revision,
                        .occurred_at = kNow,
                        .payload = std::move(payload)};
  f.correlation_id = "plan-" + suffix;
  f.causation_id = "cause-" + suffix;
  f.engine_version = "ctx-engine-v1";
  f.planner_version = "ctx-managed-query-planner-v3";
  f.policy_version = "policy-v1";
  f.host_descriptor_digest = host_digest();
  f.catalog_snapshot_digest = catalog_snapshot();
  f.semantic_model_digest = sha("semantic-disabled");
  f.semantic_index_digest = sha("semantic-index-disabled");
  f.work_signature = sha("work:" + suffix);
  f.random_seed = 0;
  return f;
}

inline EngineEvent event(const std::string& kind, std::int64_t revision, const std::string& id,
                         Json payload = Json::object(), const std::string& suffix = "one") {
  return EngineEvent::create(event_fields(kind, revision, id, std::move(payload), suffix));
}

inline CapabilityKind kind_of(const std::string& capability_id) {
  return parse_enum<CapabilityKind>(capability_id.substr(0, capability_id.find(':')));
}

inline Json catalog_identity(const std::string& id) {
  return CatalogCapabilityIdentity::create(id, kind_of(id), catalog_namespace()).to_json();
}

inline MaterialIdentity install_result(const std::string& id) {
  return MaterialIdentity::create(id, kind_of(id), sha("installed:" + id), 64);
}

inline InstallPlanDescriptor install_descriptor(const std::string& id) {
  InstallPlanDescriptor::Fields f;
  f.capability_id = id;
  f.kind = kind_of(id);
  f.installer_id = "ctx-" + std::string(to_string(f.kind)) + "-installer-v1";
  f.plan_digest = sha("install-plan:" + id);
  f.provenance_digest = sha("installation-snapshot");
  f.result_material_identity_digest = install_result(id).identity_digest();
  return InstallPlanDescriptor::create(f);
}

inline AuthorizedMaterial load_material(const std::string& id) {
  const auto identity = MaterialIdentity::create(id, kind_of(id), sha("content:" + id), 64);
  const auto descriptor =
      MaterialDescriptor::create(id, kind_of(id), Actionability::kLoad, identity.content_sha256(),
                                 64, 16, sha("material-snapshot"), identity.identity_digest());
  const auto catalog = CatalogCapabilityIdentity::create(id, kind_of(id), catalog_namespace());
  return AuthorizedMaterial::from_catalog(catalog.identity_digest(), descriptor);
}

// One 13-key plan row with actionability load / install / manual.
inline Json plan_row(const std::string& id, const std::string& actionability) {
  const auto kind = kind_of(id);
  Json authority;
  Json descriptor_digest = nullptr, plan_digest = nullptr;
  if (actionability == "load") {
    authority = {{"material", load_material(id).to_json()}, {"type", "load"}};
  } else if (actionability == "install") {
    const auto descriptor = install_descriptor(id);
    authority = {{"descriptor", descriptor.to_json()},
                 {"result_material", install_result(id).to_json()},
                 {"type", "install"}};
    descriptor_digest = descriptor.descriptor_digest();
    plan_digest = descriptor.plan_digest();
  } else {
    authority = {{"type", "manual"}};
  }
  return {{"actionability", actionability},
          {"authority", authority},
          {"benefit",
           {{"individual_net_benefit_u", 700},
            {"marginal_net_benefit_u", 700},
            {"tier", actionability == "manual" ? "advisory" : "executable"}}},
          {"capability_id", id},
          {"catalog_entry_digest", sha("source:" + id + ":" + actionability)},
          {"catalog_identity", catalog_identity(id)},
          {"install_descriptor_digest", descriptor_digest},
          {"install_plan_digest", plan_digest},
          {"kind", kind},
          {"matching_signals", Json::array({"python"})},
          {"name", id.substr(id.find(':') + 1)},
          {"normalized_score_ppm", 900000},
          {"reason_codes", Json::array({"graph-match"})}};
}

inline Json audit(std::int64_t limit, std::int64_t pool, std::int64_t search) {
  return {{"calibration_digest", sha("calibration")},
          {"candidate_pool_count", pool},
          {"policy_digest", sha("policy")},
          {"policy_schema_id", "ctx.net-benefit-policy-v3"},
          {"requested_limit", limit},
          {"result_digest", sha("result")},
          {"result_schema_id", "ctx.benefit-selection-result-v1"},
          {"search_evaluation_count", search},
          {"selection_algorithm_id", "ctx.greedy-bounded-subset-exchange-v1"}};
}

inline Json ready_decision(std::vector<Json> rows) {
  const auto n = static_cast<std::int64_t>(rows.size());
  return {{"abstention_code", nullptr},
          {"benefit_audit", audit(5, n, 10)},
          {"capabilities", rows},
          {"status", "ready"}};
}

inline Json abstained_limit_zero() {
  return {{"abstention_code", "limit-zero"},
          {"benefit_audit", audit(0, 1, 0)},
          {"capabilities", Json::array()},
          {"status", "abstained"}};
}

inline Json degraded(const std::string& code = "planner-failed") {
  return {{"abstention_code", code},
          {"benefit_audit", nullptr},
          {"capabilities", Json::array()},
          {"status", "degraded"}};
}

// A granted UserDecision payload answering `request` (decision_basis `basis`).
inline Json decision_payload(const HostAction& request, const std::string& basis = "interactive") {
  const auto& p = request.payload();
  return {{"consent_id", *request.consent_id()},
          {"decision", "granted"},
          {"decision_basis", basis},
          {"policy_snapshot_digest", p["policy_snapshot_digest"]},
          {"requested_action_content_digest", p["requested_action_content_digest"]},
          {"requested_action_id", p["requested_action_id"]},
          {"requested_action_kind", p["requested_action_kind"]},
          {"requested_action_precondition_revision", p["requested_action_precondition_revision"]}};
}

// An ActionApplied receipt payload for `action` with its `verification`.
inline Json receipt(const HostAction& action, Json verification) {
  return {{"action_content_digest", action.content_digest()},
          {"action_id", action.action_id()},
          {"action_kind", action.action_kind()},
          {"action_precondition_revision", action.precondition_revision()},
          {"verification", std::move(verification)}};
}

// The schema-v3 install verification an honest installer reports for `install`.
inline Json install_verification(const HostAction& install) {
  const auto& p = install.payload();
  return {{"capability_id", *install.entity_id()},
          {"capability_kind", p["capability_kind"]},
          {"catalog_identity", p["catalog_identity"]},
          {"host_state", "installed"},
          {"install_plan_descriptor", p["install_plan_descriptor"]},
          {"installer_digest", p["installer_digest"]},
          {"material_identity", p["result_material"]},
          {"policy_snapshot_digest", p["policy_snapshot_digest"]},
          {"schema", kInstallReceiptSchemaV3}};
}

// The schema-v3 material verification for an activation or deactivation `action`.
inline Json material_verification(const HostAction& action) {
  const auto& p = action.payload();
  return {{"authorized_material", p["authorized_material"]},
          {"capability_id", *action.entity_id()},
          {"capability_kind", p["capability_kind"]},
          {"catalog_identity", p["catalog_identity"]},
          {"host_state", action.verification()["expected_state"]},
          {"material_identity", p["material_identity"]},
          {"schema", kMaterialReceiptSchemaV3}};
}

}  // namespace ctx::engine::testing

#endif  // CTX_TESTS_HOST_ENGINE_ENGINE_FIXTURES_HPP_
