#include "host/engine/plan.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

using Reader = core::JsonObjectReader;
constexpr core::JsonErrorRaiser kRaise = core::raise_as<StateValidationError>;

[[noreturn]] void invalid(const std::string& message) { throw StateValidationError(message); }

template <typename F>
auto typed(F&& parse, const char* what) -> decltype(parse()) {
  try {
    return parse();
  } catch (const InvalidIdentityError& e) {
    invalid(std::string("schema-v3 plan capability identity, benefit, or authority is invalid: ") +
            what + ": " + e.what());
  }
}

std::vector<std::string> sorted_tokens(const Json& value, const char* field, std::size_t min,
                                       std::size_t max) {
  if (!value.is_array()) invalid(std::string(field) + " must be a JSON array");
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string() || !is_canonical_token(item.get_ref<const std::string&>())) {
      invalid(std::string(field) + " must contain canonical tokens");
    }
    out.push_back(item.get<std::string>());
  }
  if (out.size() < min || out.size() > max) invalid(std::string(field) + " has an invalid size");
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (!(out[i - 1] < out[i])) invalid(std::string(field) + " must be sorted and unique");
  }
  return out;
}

std::tuple<int, std::string, std::string> order_key(const PlanCapabilityV3& row) {
  return {row.tier() == BenefitTier::kExecutable ? 0 : 1, row.capability_id(), row.source_digest()};
}

}  // namespace

std::string surrogate_value_digest(const Json& value) {
  return core::sha256_hex(core::canonical_json(value));
}

// ---- PlanCapabilityV3 -----------------------------------------------------------------------

PlanCapabilityV3 PlanCapabilityV3::from_json(const Json& value) {
  Reader r(value, "schema-v3 plan capability", kRaise);
  r.exact({"actionability", "authority", "benefit", "capability_id", "catalog_entry_digest",
           "catalog_identity", "install_descriptor_digest", "install_plan_digest", "kind",
           "matching_signals", "name", "normalized_score_ppm", "reason_codes"});
  PlanCapabilityV3 out;
  out.json_ = value;
  out.capability_id_ = r.string("capability_id");
  out.kind_ = r.enumerated<CapabilityKind>("kind");
  out.name_ = r.string("name");
  if (!is_capability_identity(out.capability_id_, out.kind_) ||
      out.capability_id_ != std::string(to_string(out.kind_)) + ":" + out.name_) {
    invalid("schema-v3 plan capability_id must be exactly kind:name");
  }
  out.source_digest_ = r.string("catalog_entry_digest", kDigest);
  out.score_ppm_ = r.integer("normalized_score_ppm", 0, 1'000'000);
  out.signals_ =
      sorted_tokens(r.at("matching_signals"), "matching_signals", 0, kMaxMatchingSignals);
  out.reasons_ = sorted_tokens(r.at("reason_codes"), "reason_codes", 1, kMaxReasonCodes);
  const auto actionability = find_enum<Actionability>(r.string("actionability"));
  if (!actionability) invalid("schema-v3 plan actionability is not presentable");
  out.actionability_ = *actionability;
  out.install_descriptor_digest_ = r.optional_string("install_descriptor_digest", kDigest);
  out.install_plan_digest_ = r.optional_string("install_plan_digest", kDigest);
  const bool install = out.is_install();
  if (install != out.install_descriptor_digest_.has_value() ||
      install != out.install_plan_digest_.has_value()) {
    invalid("install digests are required for install rows and forbidden otherwise");
  }
  out.catalog_ =
      typed([&] { return CatalogCapabilityIdentity::from_json(r.at("catalog_identity")); },
            "catalog_identity");
  if (out.catalog_->capability_id() != out.capability_id_ || out.catalog_->kind() != out.kind_) {
    invalid("schema-v3 catalog identity does not match the plan row");
  }

  Reader benefit(r.at("benefit"), "schema-v3 benefit projection", kRaise);
  benefit.exact({"individual_net_benefit_u", "marginal_net_benefit_u", "tier"});
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  const auto tier = find_enum<BenefitTier>(benefit.string("tier"));
  out.individual_ = benefit.integer("individual_net_benefit_u", -kMax, kMax);
  out.marginal_ = benefit.integer("marginal_net_benefit_u", 1, kMax);
  if (tier != (out.is_manual() ? BenefitTier::kAdvisory : BenefitTier::kExecutable)) {
    invalid("schema-v3 benefit tier does not match actionability");
  }
  out.tier_ = *tier;

  const Json& authority = r.at("authority");
  if (!authority.is_object() || !authority.contains("type") || !authority.at("type").is_string() ||
      find_enum<Actionability>(authority.at("type").get_ref<const std::string&>()) !=
          out.actionability_) {
    invalid("schema-v3 planning authority type must equal actionability");
  }
  if (out.is_load()) {
    Reader(authority, "schema-v3 load authority", kRaise).exact({"material", "type"});
    out.material_ = typed([&] { return AuthorizedMaterial::from_json(authority.at("material")); },
                          "load material");
    if (out.material_->origin() != MaterialOrigin::kCatalog ||
        out.material_->capability_id() != out.capability_id_ ||
        out.material_->kind() != out.kind_ ||
        out.material_->catalog_identity_digest() != out.catalog_->identity_digest()) {
      invalid("schema-v3 load authority does not match the plan row");
    }
  } else if (install) {
    Reader(authority, "schema-v3 install authority", kRaise)
        .exact({"descriptor", "result_material", "type"});
    out.descriptor_ = typed(
        [&] { return InstallPlanDescriptor::from_json(authority.at("descriptor")); },
        "install descriptor");
    out.result_material_ = typed(
        [&] { return MaterialIdentity::from_json(authority.at("result_material")); },
        "result material");
    if (out.descriptor_->capability_id() != out.capability_id_ ||
        !out.descriptor_->matches_result_material(*out.result_material_) ||
        out.descriptor_->descriptor_digest() != *out.install_descriptor_digest_ ||
        out.descriptor_->plan_digest() != *out.install_plan_digest_) {
      invalid("schema-v3 install authority does not match the plan row");
    }
  } else {
    Reader(authority, "schema-v3 manual authority", kRaise).exact({"type"});
  }
  return out;
}

MaterialIdentity PlanCapabilityV3::material_identity() const {
  if (result_material_) return *result_material_;
  if (!material_) invalid("manual schema-v3 selection has no material identity");
  const auto& descriptor = *material_->catalog_material_descriptor();
  auto material = MaterialIdentity::create(capability_id_, kind_, *descriptor.content_sha256(),
                                           descriptor.content_bytes());
  if (material.identity_digest() != material_->material_identity_digest()) {
    invalid("load authority material digest does not match exact catalog content");
  }
  return material;
}

// ---- BenefitAuditReference ------------------------------------------------------------------

BenefitAuditReference BenefitAuditReference::from_json(const Json& value) {
  Reader r(value, "benefit audit", kRaise);
  r.exact({"calibration_digest", "candidate_pool_count", "policy_digest", "policy_schema_id",
           "requested_limit", "result_digest", "result_schema_id", "search_evaluation_count",
           "selection_algorithm_id"});
  BenefitAuditReference out;
  r.literal("result_schema_id", "ctx.benefit-selection-result-v1", "benefit audit result schema");
  r.literal("policy_schema_id", "ctx.net-benefit-policy-v3", "benefit audit policy schema");
  r.literal("selection_algorithm_id", "ctx.greedy-bounded-subset-exchange-v1",
            "benefit audit selection algorithm");
  out.result_schema_id = r.string("result_schema_id");
  out.policy_schema_id = r.string("policy_schema_id");
  out.selection_algorithm_id = r.string("selection_algorithm_id");
  out.result_digest = r.string("result_digest", kDigest);
  out.policy_digest = r.string("policy_digest", kDigest);
  out.calibration_digest = r.string("calibration_digest", kDigest);
  out.requested_limit = r.integer("requested_limit", 0, 5);
  out.candidate_pool_count = r.integer("candidate_pool_count", 0, 512);
  out.search_evaluation_count = r.integer("search_evaluation_count", 0, 1'000'000);
  return out;
}

Json BenefitAuditReference::to_json() const {
  return {{"calibration_digest", calibration_digest},
          {"candidate_pool_count", candidate_pool_count},
          {"policy_digest", policy_digest},
          {"policy_schema_id", policy_schema_id},
          {"requested_limit", requested_limit},
          {"result_digest", result_digest},
          {"result_schema_id", result_schema_id},
          {"search_evaluation_count", search_evaluation_count},
          {"selection_algorithm_id", selection_algorithm_id}};
}

// ---- CommittedPlanV3 ------------------------------------------------------------------------

void CommittedPlanV3::validate() const {
  if (!is_trimmed_string(plan_id_)) invalid("plan_id must be a non-empty trimmed string");
  if (!is_digest(catalog_snapshot_id_)) {
    invalid("catalog_snapshot_id must be a lowercase SHA-256 digest");
  }
  if (!is_digest(decision_digest_)) invalid("decision_digest must be a lowercase SHA-256 digest");
  if (capabilities_.size() > kMaxSelectedCapabilities) {
    invalid("schema-v3 committed plan cannot contain more than five capabilities");
  }
  std::set<std::string> ids;
  for (const auto& row : capabilities_) {
    if (!ids.insert(row.capability_id()).second) {
      invalid("schema-v3 committed plan contains duplicate capability IDs");
    }
  }
  for (std::size_t i = 1; i < capabilities_.size(); ++i) {
    if (!(order_key(capabilities_[i - 1]) < order_key(capabilities_[i]))) {
      invalid("schema-v3 committed plan capabilities are not in canonical order");
    }
  }
  if (status_ == PlanStatus::kReady) {
    if (capabilities_.empty() || abstention_code_) {
      invalid("ready schema-v3 plan requires rows and no abstention code");
    }
    if (!audit_) invalid("ready schema-v3 plan requires the exact benefit audit");
  } else if (status_ == PlanStatus::kAbstained) {
    if (!capabilities_.empty() || !abstention_code_ ||
        plan_status_of(*abstention_code_) != PlanStatus::kAbstained) {
      invalid("abstained schema-v3 plan requires no rows and a declared code");
    }
    if (!audit_) invalid("abstained schema-v3 plan requires the exact benefit audit");
  } else {
    if (!capabilities_.empty() || !abstention_code_ ||
        plan_status_of(*abstention_code_) != PlanStatus::kDegraded || audit_) {
      invalid("degraded schema-v3 plan requires no rows or benefit audit");
    }
  }
  if (audit_) {
    const auto rows = static_cast<std::int64_t>(capabilities_.size());
    if (audit_->requested_limit < rows) {
      invalid("benefit audit requested_limit is smaller than persisted rows");
    }
    if (audit_->candidate_pool_count < rows) {
      invalid("benefit audit candidate_pool_count is smaller than persisted rows");
    }
    if (status_ == PlanStatus::kReady && audit_->search_evaluation_count == 0) {
      invalid("ready benefit audit requires positive search evaluations");
    }
    const auto code = abstention_code_;
    if (code == AbstentionCode::kLimitZero &&
        (audit_->requested_limit != 0 || audit_->search_evaluation_count != 0)) {
      invalid("limit-zero benefit audit requires a zero limit and zero search");
    }
    if (code == AbstentionCode::kBelowNetBenefit &&
        (audit_->requested_limit == 0 || audit_->candidate_pool_count == 0 ||
         audit_->search_evaluation_count == 0)) {
      invalid("below-net-benefit audit requires candidates, a positive limit, and search");
    }
    if (code == AbstentionCode::kNoFeasibleCapability &&
        (audit_->requested_limit == 0 || audit_->search_evaluation_count != 0)) {
      invalid("no-feasible-capability audit requires a positive limit and zero search");
    }
  }
}

CommittedPlanV3 CommittedPlanV3::create(std::string plan_id, std::string catalog_snapshot_id,
                                        std::string decision_digest, PlanStatus status,
                                        std::optional<AbstentionCode> abstention_code,
                                        std::optional<BenefitAuditReference> benefit_audit,
                                        std::vector<PlanCapabilityV3> capabilities) {
  CommittedPlanV3 out;
  out.plan_id_ = std::move(plan_id);
  out.catalog_snapshot_id_ = std::move(catalog_snapshot_id);
  out.decision_digest_ = std::move(decision_digest);
  out.status_ = status;
  out.abstention_code_ = std::move(abstention_code);
  out.audit_ = std::move(benefit_audit);
  out.capabilities_ = std::move(capabilities);
  out.validate();
  return out;
}

CommittedPlanV3 CommittedPlanV3::create(std::string plan_id, std::string catalog_snapshot_id,
                                        std::string decision_digest, std::string_view status,
                                        std::optional<AbstentionCode> abstention_code,
                                        std::optional<BenefitAuditReference> benefit_audit,
                                        std::vector<PlanCapabilityV3> capabilities) {
  const auto typed_status = find_enum<PlanStatus>(status);
  if (!typed_status) invalid("schema-v3 committed plan status is unsupported");
  return create(std::move(plan_id), std::move(catalog_snapshot_id), std::move(decision_digest),
                *typed_status, std::move(abstention_code), std::move(benefit_audit),
                std::move(capabilities));
}

namespace {

struct DecisionParts {
  PlanStatus status = PlanStatus::kDegraded;
  std::optional<AbstentionCode> code;
  std::optional<BenefitAuditReference> audit;
  std::vector<PlanCapabilityV3> rows;
};

DecisionParts parse_decision(const Reader& r) {
  DecisionParts out;
  const auto status = find_enum<PlanStatus>(r.string("status"));
  if (!status) invalid("schema-v3 committed plan status is unsupported");
  out.status = *status;
  out.code = r.optional_enumerated<AbstentionCode>("abstention_code");
  if (!r.at("benefit_audit").is_null()) {
    out.audit = BenefitAuditReference::from_json(r.at("benefit_audit"));
  }
  const Json& rows = r.at("capabilities");
  if (!rows.is_array()) invalid("decision.capabilities must be an array");
  for (const auto& row : rows) out.rows.push_back(PlanCapabilityV3::from_json(row));
  return out;
}

}  // namespace

CommittedPlanV3 CommittedPlanV3::from_decision(std::string plan_id,
                                               std::string catalog_snapshot_id,
                                               const Json& decision) {
  Reader r(decision, "decision", kRaise);
  r.exact({"abstention_code", "benefit_audit", "capabilities", "status"});
  auto parts = parse_decision(r);
  return create(std::move(plan_id), std::move(catalog_snapshot_id),
                surrogate_value_digest(decision), parts.status, std::move(parts.code),
                std::move(parts.audit), std::move(parts.rows));
}

CommittedPlanV3 CommittedPlanV3::from_json(const Json& value) {
  Reader r(value, "schema-v3 committed plan", kRaise);
  r.exact({"abstention_code", "benefit_audit", "capabilities", "catalog_snapshot_id",
           "decision_digest", "plan_id", "status"});
  auto parts = parse_decision(r);
  return create(r.string("plan_id"), r.string("catalog_snapshot_id"), r.string("decision_digest"),
                parts.status, std::move(parts.code), std::move(parts.audit),
                std::move(parts.rows));
}

Json CommittedPlanV3::decision_value() const {
  Json rows = Json::array();
  for (const auto& row : capabilities_) rows.push_back(row.to_json());
  return {{"abstention_code",
           abstention_code_ ? Json(to_string(*abstention_code_)) : Json(nullptr)},
          {"benefit_audit", audit_ ? audit_->to_json() : Json(nullptr)},
          {"capabilities", rows},
          {"status", to_string(status_)}};
}

Json CommittedPlanV3::to_json() const {
  Json out = decision_value();
  out["catalog_snapshot_id"] = catalog_snapshot_id_;
  out["decision_digest"] = decision_digest_;
  out["plan_id"] = plan_id_;
  return out;
}

const PlanCapabilityV3* CommittedPlanV3::find(const std::string& capability_id) const noexcept {
  for (const auto& row : capabilities_) {
    if (row.capability_id() == capability_id) return &row;
  }
  return nullptr;
}

}  // namespace ctx::engine
