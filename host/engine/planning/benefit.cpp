#include "host/engine/planning/benefit.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/planning/benefit_search.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"

namespace ctx::engine::planning {
namespace {

using core::Json;

std::int64_t checked_integer(std::int64_t value, const char* field, std::int64_t minimum = 0,
                             std::int64_t maximum = kMaxQuantity) {
  if (value < minimum || value > maximum) {
    throw BenefitValidationError(std::string(field) + " must be an integer from " +
                                 std::to_string(minimum) + " through " + std::to_string(maximum));
  }
  return value;
}

void check_digest(const std::string& value, const char* field) {
  if (!is_digest(value)) {
    throw BenefitValidationError(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

void check_capability_id(const std::string& value, const char* field) {
  if (!is_canonical_token(value)) {
    throw BenefitValidationError(std::string(field) + " must be a canonical safe token");
  }
  if (!is_capability_id(value)) {
    throw BenefitValidationError(std::string(field) +
                                 " must be a canonical declared-kind capability identity");
  }
}

void check_tokens(const std::vector<std::string>& values, const char* field,
                  bool capability_ids = false) {
  if (static_cast<std::int64_t>(values.size()) > kMaxRelationKeys) {
    throw BenefitValidationError(std::string(field) + " exceeds its bounded item limit");
  }
  for (const auto& item : values) {
    if (!is_canonical_token(item)) {
      throw BenefitValidationError(std::string(field) + " item must be a canonical safe token");
    }
  }
  if (!std::is_sorted(values.begin(), values.end())) {
    throw BenefitValidationError(std::string(field) + " must use canonical sorted order");
  }
  if (std::adjacent_find(values.begin(), values.end()) != values.end()) {
    throw BenefitValidationError(std::string(field) + " contains duplicate values");
  }
  if (capability_ids) {
    for (const auto& item : values) check_capability_id(item, field);
  }
}

bool contains(const std::vector<std::string>& sorted, const std::string& value) {
  return std::binary_search(sorted.begin(), sorted.end(), value);
}

// The kind part of a checked capability id.
std::optional<CapabilityKind> kind_of(std::string_view capability_id) {
  return find_enum<CapabilityKind>(capability_id.substr(0, capability_id.find(':')));
}

std::int64_t ppm_multiply(std::int64_t left, std::int64_t right) {
  return (left * right + kMaxPpm / 2) / kMaxPpm;
}

std::int64_t signed_rounded_divide(std::int64_t numerator, std::int64_t denominator) {
  if (denominator <= 0) throw BenefitValidationError("evidence denominator must be positive");
  if (numerator >= 0) return (numerator + denominator / 2) / denominator;
  return -((-numerator + denominator / 2) / denominator);
}

Json string_array(const std::vector<std::string>& values) {
  Json array = Json::array();
  for (const auto& v : values) array.push_back(v);
  return array;
}

// ---- JSON decoding helpers (closed mappings, exact types) ----

const Json& closed_object(const Json& value, const char* field,
                          std::initializer_list<const char*> fields) {
  if (!value.is_object()) {
    throw BenefitValidationError(std::string(field) + " must be a JSON object");
  }
  if (value.size() != fields.size()) {
    throw BenefitValidationError(std::string(field) + " has invalid fields");
  }
  for (const char* key : fields) {
    if (!value.contains(key)) {
      throw BenefitValidationError(std::string(field) + " has invalid fields");
    }
  }
  return value;
}

std::int64_t json_int(const Json& value, const char* field) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      throw BenefitValidationError(std::string(field) + " exceeds the signed utility bound");
    }
    return value.get<std::int64_t>();
  }
  throw BenefitValidationError(std::string(field) + " must be an integer");
}

bool json_bool(const Json& value, const char* field) {
  if (!value.is_boolean()) throw BenefitValidationError(std::string(field) + " must be a boolean");
  return value.get<bool>();
}

std::string json_string(const Json& value, const char* field) {
  if (!value.is_string()) throw BenefitValidationError(std::string(field) + " must be a string");
  return value.get<std::string>();
}

constexpr AssessmentTier assessment_tier(BenefitTier tier) noexcept {
  return tier == BenefitTier::kExecutable ? AssessmentTier::kExecutable : AssessmentTier::kAdvisory;
}

// The enum spelled by string `value`; `unknown` is the message for any other spelling.
template <typename E>
E json_enum(const Json& value, const char* field, const char* unknown) {
  const auto found = find_enum<E>(json_string(value, field));
  if (!found) throw BenefitValidationError(unknown);
  return *found;
}

std::vector<std::string> json_tokens(const Json& value, const char* field, std::int64_t maximum) {
  if (!value.is_array()) throw BenefitValidationError(std::string(field) + " must be a JSON array");
  if (static_cast<std::int64_t>(value.size()) > maximum) {
    throw BenefitValidationError(std::string(field) + " exceeds its bounded item limit");
  }
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) {
      throw BenefitValidationError(std::string(field) + " items must be strings");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

ResourceCosts costs_from_json(const Json& value) {
  closed_object(
      value, "costs",
      {"context_tokens", "tool_schema_tokens", "runtime_millis", "permission_burden_units",
       "credential_burden_units", "approval_prompts", "process_units", "child_agent_units"});
  ResourceCosts c;
  c.context_tokens = json_int(value["context_tokens"], "context_tokens");
  c.tool_schema_tokens = json_int(value["tool_schema_tokens"], "tool_schema_tokens");
  c.runtime_millis = json_int(value["runtime_millis"], "runtime_millis");
  c.permission_burden_units = json_int(value["permission_burden_units"], "permission_burden_units");
  c.credential_burden_units = json_int(value["credential_burden_units"], "credential_burden_units");
  c.approval_prompts = json_int(value["approval_prompts"], "approval_prompts");
  c.process_units = json_int(value["process_units"], "process_units");
  c.child_agent_units = json_int(value["child_agent_units"], "child_agent_units");
  return c;
}

EvidenceSummary evidence_from_json(const Json& value) {
  closed_object(value, "evidence",
                {"capability_id", "effective_outcomes", "evidence_window_digest", "exposed_count",
                 "failed_invocations", "harmful_outcomes", "kind", "opportunities_observed",
                 "opportunity_observable", "source_digest", "successful_invocations",
                 "validated_outcomes"});
  EvidenceSummary e;
  e.capability_id = json_string(value["capability_id"], "capability_id");
  e.kind = json_enum<CapabilityKind>(value["kind"], "kind",
                                     "evidence kind does not match capability_id");
  e.source_digest = json_string(value["source_digest"], "source_digest");
  e.evidence_window_digest = json_string(value["evidence_window_digest"], "evidence_window_digest");
  e.opportunity_observable = json_bool(value["opportunity_observable"], "opportunity_observable");
  e.opportunities_observed = json_int(value["opportunities_observed"], "opportunities_observed");
  e.exposed_count = json_int(value["exposed_count"], "exposed_count");
  e.successful_invocations = json_int(value["successful_invocations"], "successful_invocations");
  e.failed_invocations = json_int(value["failed_invocations"], "failed_invocations");
  e.effective_outcomes = json_int(value["effective_outcomes"], "effective_outcomes");
  e.validated_outcomes = json_int(value["validated_outcomes"], "validated_outcomes");
  e.harmful_outcomes = json_int(value["harmful_outcomes"], "harmful_outcomes");
  validate_evidence(e);
  return e;
}

BenefitCandidate candidate_from_json(const Json& value) {
  closed_object(value, "candidate",
                {"availability", "capability_id", "complements", "conflicts", "costs",
                 "coverage_keys", "credentials_available", "equivalence_key", "evidence",
                 "expected_task_benefit_ppm", "permissions_allowed", "relevance_ppm",
                 "resource_profile_digest", "security_approved", "source_digest",
                 "source_trusted", "trust_ppm"});
  BenefitCandidate c;
  c.availability = json_enum<Availability>(value["availability"], "availability",
                                           "availability is not a declared state");
  c.capability_id = json_string(value["capability_id"], "capability_id");
  c.complements = json_tokens(value["complements"], "complements", kMaxRelationKeys);
  c.conflicts = json_tokens(value["conflicts"], "conflicts", kMaxRelationKeys);
  if (!value["costs"].is_null()) c.costs = costs_from_json(value["costs"]);
  c.coverage_keys = json_tokens(value["coverage_keys"], "coverage_keys", kMaxRelationKeys);
  c.credentials_available = json_bool(value["credentials_available"], "credentials_available");
  if (!value["equivalence_key"].is_null()) {
    if (!value["equivalence_key"].is_string()) {
      throw BenefitValidationError("equivalence_key must be a string or null");
    }
    c.equivalence_key = value["equivalence_key"].get<std::string>();
  }
  c.evidence = evidence_from_json(value["evidence"]);
  c.expected_task_benefit_ppm =
      json_int(value["expected_task_benefit_ppm"], "expected_task_benefit_ppm");
  c.permissions_allowed = json_bool(value["permissions_allowed"], "permissions_allowed");
  c.relevance_ppm = json_int(value["relevance_ppm"], "relevance_ppm");
  c.resource_profile_digest =
      json_string(value["resource_profile_digest"], "resource_profile_digest");
  c.security_approved = json_bool(value["security_approved"], "security_approved");
  c.source_digest = json_string(value["source_digest"], "source_digest");
  c.source_trusted = json_bool(value["source_trusted"], "source_trusted");
  c.trust_ppm = json_int(value["trust_ppm"], "trust_ppm");
  validate_benefit_candidate(c);
  return c;
}

void validate_assessment(const CandidateAssessment& a) {
  validate_benefit_candidate(a.candidate);
  if (kAssessmentTierStrings.to_string(a.tier).empty()) {
    throw BenefitValidationError("assessment tier is not declared");
  }
  check_tokens(a.reason_codes, "reason_codes");
  checked_integer(a.evidence_adjustment_ppm, "evidence_adjustment_ppm", -kMaxPpm, kMaxPpm);
  checked_integer(a.expected_benefit_u, "expected_benefit_u", 0, kMaxUtilityUnits);
  checked_integer(a.expected_cost_u, "expected_cost_u", 0, kMaxUtilityUnits);
  if (a.individual_net_benefit_u < -kMaxUtilityUnits) {
    throw BenefitValidationError("individual_net_benefit_u exceeds the signed utility bound");
  }
}

void validate_selection(const BenefitSelection& s) {
  check_capability_id(s.capability_id, "capability_id");
  check_digest(s.source_digest, "source_digest");
  if (kBenefitTierStrings.to_string(s.tier).empty()) {
    throw BenefitValidationError("selection tier must be executable or advisory");
  }
  if (s.individual_net_benefit_u < -kMaxUtilityUnits) {
    throw BenefitValidationError("individual_net_benefit_u exceeds the signed utility bound");
  }
  checked_integer(s.marginal_net_benefit_u, "marginal_net_benefit_u", 1, kMaxUtilityUnits);
}

CandidateAssessment assessment_from_json(const Json& value) {
  closed_object(value, "assessment",
                {"candidate", "evidence_adjustment_ppm", "expected_benefit_u", "expected_cost_u",
                 "individual_net_benefit_u", "reason_codes", "tier"});
  CandidateAssessment a;
  a.candidate = candidate_from_json(value["candidate"]);
  a.tier = json_enum<AssessmentTier>(value["tier"], "tier", "assessment tier is not declared");
  a.reason_codes = json_tokens(value["reason_codes"], "reason_codes", kMaxRelationKeys);
  a.evidence_adjustment_ppm = json_int(value["evidence_adjustment_ppm"], "evidence_adjustment_ppm");
  a.expected_benefit_u = json_int(value["expected_benefit_u"], "expected_benefit_u");
  a.expected_cost_u = json_int(value["expected_cost_u"], "expected_cost_u");
  a.individual_net_benefit_u =
      json_int(value["individual_net_benefit_u"], "individual_net_benefit_u");
  validate_assessment(a);
  return a;
}

BenefitSelection selection_from_json(const Json& value) {
  closed_object(value, "selection",
                {"capability_id", "individual_net_benefit_u", "marginal_net_benefit_u",
                 "source_digest", "tier"});
  BenefitSelection s;
  s.capability_id = json_string(value["capability_id"], "capability_id");
  s.individual_net_benefit_u =
      json_int(value["individual_net_benefit_u"], "individual_net_benefit_u");
  s.marginal_net_benefit_u = json_int(value["marginal_net_benefit_u"], "marginal_net_benefit_u");
  s.source_digest = json_string(value["source_digest"], "source_digest");
  s.tier = json_enum<BenefitTier>(value["tier"], "tier",
                                  "selection tier must be executable or advisory");
  validate_selection(s);
  return s;
}

// ---- The search (§8.6): detail::Search, benefit_search.hpp ----

using detail::Search;
using detail::Set;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Validation and mappings

void validate_resource_costs(const ResourceCosts& c) {
  checked_integer(c.context_tokens, "context_tokens");
  checked_integer(c.tool_schema_tokens, "tool_schema_tokens");
  checked_integer(c.runtime_millis, "runtime_millis");
  checked_integer(c.permission_burden_units, "permission_burden_units");
  checked_integer(c.credential_burden_units, "credential_burden_units");
  checked_integer(c.approval_prompts, "approval_prompts");
  checked_integer(c.process_units, "process_units");
  checked_integer(c.child_agent_units, "child_agent_units");
}

void validate_evidence(const EvidenceSummary& e) {
  check_capability_id(e.capability_id, "capability_id");
  if (kind_of(e.capability_id) != std::optional(e.kind)) {
    throw BenefitValidationError("evidence kind does not match capability_id");
  }
  check_digest(e.source_digest, "source_digest");
  check_digest(e.evidence_window_digest, "evidence_window_digest");
  checked_integer(e.opportunities_observed, "opportunities_observed");
  checked_integer(e.exposed_count, "exposed_count");
  checked_integer(e.successful_invocations, "successful_invocations");
  checked_integer(e.failed_invocations, "failed_invocations");
  checked_integer(e.effective_outcomes, "effective_outcomes");
  checked_integer(e.validated_outcomes, "validated_outcomes");
  checked_integer(e.harmful_outcomes, "harmful_outcomes");
  const std::int64_t opportunities = e.opportunities_observed;
  const std::int64_t attempts = e.successful_invocations + e.failed_invocations;
  const std::int64_t observed = e.exposed_count + attempts + e.effective_outcomes +
                                e.validated_outcomes + e.harmful_outcomes;
  if (observed != 0 && opportunities == 0) {
    throw BenefitValidationError(
        "observed evidence requires at least one opportunity in its window");
  }
  if (e.exposed_count > opportunities) {
    throw BenefitValidationError("exposures cannot exceed observed opportunities");
  }
  if (attempts > opportunities) {
    throw BenefitValidationError("invocation attempts cannot exceed observed opportunities");
  }
  if (e.validated_outcomes > e.effective_outcomes) {
    throw BenefitValidationError("validated outcomes cannot exceed effective outcomes");
  }
  if (e.kind == CapabilityKind::kSkill && e.effective_outcomes > e.exposed_count) {
    throw BenefitValidationError("skill effective outcomes cannot exceed exposures");
  }
  if (e.kind != CapabilityKind::kSkill && e.effective_outcomes > e.successful_invocations) {
    throw BenefitValidationError(
        "agent, MCP, and harness effective outcomes cannot exceed successful invocations");
  }
  if (e.harmful_outcomes > e.exposed_count + attempts) {
    throw BenefitValidationError(
        "harmful outcomes cannot exceed attributable exposure or invocation observations");
  }
  if (e.harmful_outcomes > opportunities) {
    throw BenefitValidationError("harmful outcomes cannot exceed observed opportunities");
  }
  if (e.effective_outcomes + e.harmful_outcomes > opportunities) {
    throw BenefitValidationError(
        "effective and harmful outcomes cannot exceed the evidence window");
  }
}

void validate_benefit_candidate(const BenefitCandidate& c) {
  check_capability_id(c.capability_id, "capability_id");
  check_digest(c.source_digest, "source_digest");
  check_digest(c.resource_profile_digest, "resource_profile_digest");
  if (kAvailabilityStrings.to_string(c.availability).empty()) {
    throw BenefitValidationError("availability is not a declared state");
  }
  checked_integer(c.expected_task_benefit_ppm, "expected_task_benefit_ppm", 0, kMaxPpm);
  checked_integer(c.relevance_ppm, "relevance_ppm", 0, kMaxPpm);
  checked_integer(c.trust_ppm, "trust_ppm", 0, kMaxPpm);
  if (c.costs) validate_resource_costs(*c.costs);
  validate_evidence(c.evidence);
  if (c.evidence.capability_id != c.capability_id ||
      kind_of(c.capability_id) != std::optional(c.evidence.kind) ||
      c.evidence.source_digest != c.source_digest) {
    throw BenefitValidationError(
        "evidence must exactly match candidate capability, kind, and source");
  }
  check_tokens(c.coverage_keys, "coverage_keys");
  check_tokens(c.complements, "complements", true);
  check_tokens(c.conflicts, "conflicts", true);
  if (c.equivalence_key && !is_canonical_token(*c.equivalence_key)) {
    throw BenefitValidationError("equivalence_key must be a canonical safe token");
  }
  if (contains(c.conflicts, c.capability_id)) {
    throw BenefitValidationError("a capability cannot conflict with itself");
  }
  if (contains(c.complements, c.capability_id)) {
    throw BenefitValidationError("a capability cannot complement itself");
  }
  for (const auto& peer : c.complements) {
    if (contains(c.conflicts, peer)) {
      throw BenefitValidationError("a peer cannot be both a complement and a conflict");
    }
  }
}

core::Json to_json(const ResourceCosts& c) {
  return Json{{"approval_prompts", c.approval_prompts},
              {"child_agent_units", c.child_agent_units},
              {"context_tokens", c.context_tokens},
              {"credential_burden_units", c.credential_burden_units},
              {"permission_burden_units", c.permission_burden_units},
              {"process_units", c.process_units},
              {"runtime_millis", c.runtime_millis},
              {"tool_schema_tokens", c.tool_schema_tokens}};
}

core::Json to_json(const EvidenceSummary& e) {
  return Json{{"capability_id", e.capability_id},
              {"effective_outcomes", e.effective_outcomes},
              {"evidence_window_digest", e.evidence_window_digest},
              {"exposed_count", e.exposed_count},
              {"failed_invocations", e.failed_invocations},
              {"harmful_outcomes", e.harmful_outcomes},
              {"kind", e.kind},
              {"opportunities_observed", e.opportunities_observed},
              {"opportunity_observable", e.opportunity_observable},
              {"source_digest", e.source_digest},
              {"successful_invocations", e.successful_invocations},
              {"validated_outcomes", e.validated_outcomes}};
}

core::Json to_json(const BenefitCandidate& c) {
  Json out = Json::object();
  out["availability"] = c.availability;
  out["capability_id"] = c.capability_id;
  out["complements"] = string_array(c.complements);
  out["conflicts"] = string_array(c.conflicts);
  out["costs"] = c.costs ? to_json(*c.costs) : Json(nullptr);
  out["coverage_keys"] = string_array(c.coverage_keys);
  out["credentials_available"] = c.credentials_available;
  out["equivalence_key"] = c.equivalence_key ? Json(*c.equivalence_key) : Json(nullptr);
  out["evidence"] = to_json(c.evidence);
  out["expected_task_benefit_ppm"] = c.expected_task_benefit_ppm;
  out["permissions_allowed"] = c.permissions_allowed;
  out["relevance_ppm"] = c.relevance_ppm;
  out["resource_profile_digest"] = c.resource_profile_digest;
  out["security_approved"] = c.security_approved;
  out["source_digest"] = c.source_digest;
  out["source_trusted"] = c.source_trusted;
  out["trust_ppm"] = c.trust_ppm;
  return out;
}

core::Json to_json(const CandidateAssessment& a) {
  return Json{{"candidate", to_json(a.candidate)},
              {"evidence_adjustment_ppm", a.evidence_adjustment_ppm},
              {"expected_benefit_u", a.expected_benefit_u},
              {"expected_cost_u", a.expected_cost_u},
              {"individual_net_benefit_u", a.individual_net_benefit_u},
              {"reason_codes", string_array(a.reason_codes)},
              {"tier", a.tier}};
}

core::Json to_json(const BenefitSelection& s) {
  return Json{{"capability_id", s.capability_id},
              {"individual_net_benefit_u", s.individual_net_benefit_u},
              {"marginal_net_benefit_u", s.marginal_net_benefit_u},
              {"source_digest", s.source_digest},
              {"tier", s.tier}};
}

// ---------------------------------------------------------------------------------------------
// BenefitSelectionResult

// Encodes the result once. Every key of the digested object sorts either before or after
// "result_digest", so the canonical text of {head, tail} is head's members, ',' and tail's members,
// and the stored text is the same object with result_digest spliced in at its sorted place.
std::string BenefitSelectionResult::encode() {
  Json assessments = Json::array();
  for (const auto& a : assessments_) assessments.push_back(planning::to_json(a));
  Json selections = Json::array();
  for (const auto& s : selections_) selections.push_back(planning::to_json(s));
  Json head = Json::object();
  head["abstention_code"] =
      abstention_code_ ? Json(to_string(*abstention_code_)) : Json(nullptr);
  head["assessments"] = std::move(assessments);
  head["candidate_pool_count"] = candidate_pool_count_;
  head["policy_digest"] = policy_digest_;
  head["requested_limit"] = requested_limit_;
  Json tail = Json::object();
  tail["schema"] = std::string(kResultSchemaId);
  tail["search_evaluation_count"] = search_evaluation_count_;
  tail["selections"] = std::move(selections);
  const std::string head_text = core::canonical_json(head, core::Encoding::kAscii);
  const std::string tail_text = core::canonical_json(tail, core::Encoding::kAscii);
  const std::string_view head_members(head_text.data(), head_text.size() - 1);  // "{...", no '}'
  const std::string_view tail_members(tail_text.data() + 1, tail_text.size() - 1);  // "...}"
  std::string digested;
  digested.reserve(head_members.size() + 1 + tail_members.size());
  digested.append(head_members).append(",").append(tail_members);
  std::string digest = core::sha256_hex(digested);
  std::string text;
  text.reserve(digested.size() + 84);
  text.append(head_members).append(",\"result_digest\":\"").append(digest).append("\",");
  text.append(tail_members);
  if (text.size() > kMaxBenefitResultJsonBytes) {
    throw BenefitValidationError("benefit result JSON exceeds its bounded byte limit");
  }
  text_ = std::move(text);
  return digest;
}

BenefitSelectionResult BenefitSelectionResult::create(
    std::vector<BenefitSelection> selections, std::vector<CandidateAssessment> assessments,
    std::optional<AbstentionCode> abstention_code, std::string policy_digest,
    std::int64_t requested_limit, std::int64_t search_evaluation_count) {
  BenefitSelectionResult r;
  r.selections_ = std::move(selections);
  r.candidate_pool_count_ = static_cast<std::int64_t>(assessments.size());
  r.assessments_ = std::move(assessments);
  r.abstention_code_ = abstention_code;
  r.policy_digest_ = std::move(policy_digest);
  r.requested_limit_ = requested_limit;
  r.search_evaluation_count_ = search_evaluation_count;
  r.validate();
  r.result_digest_ = r.encode();
  return r;
}

void BenefitSelectionResult::validate() const {
  if (static_cast<std::int64_t>(selections_.size()) > kMaxSelectedCapabilities) {
    throw BenefitValidationError("selection cannot contain more than five capabilities");
  }
  for (const auto& s : selections_) validate_selection(s);
  const auto selection_key = [](const BenefitSelection& s) {
    return std::make_tuple(s.tier == BenefitTier::kExecutable ? 0 : 1, std::cref(s.capability_id),
                           std::cref(s.source_digest));
  };
  for (std::size_t i = 1; i < selections_.size(); ++i) {
    if (selection_key(selections_[i]) < selection_key(selections_[i - 1])) {
      throw BenefitValidationError("selections must use canonical tier and identity order");
    }
  }
  std::set<std::string> selection_ids;
  for (const auto& s : selections_) {
    if (!selection_ids.insert(s.capability_id).second) {
      throw BenefitValidationError("selection contains duplicate capability identities");
    }
  }
  for (const auto& a : assessments_) validate_assessment(a);
  for (std::size_t i = 1; i < assessments_.size(); ++i) {
    if (std::tie(assessments_[i].capability_id(), assessments_[i].source_digest()) <
        std::tie(assessments_[i - 1].capability_id(), assessments_[i - 1].source_digest())) {
      throw BenefitValidationError("assessments must use canonical identity order");
    }
  }
  std::set<std::string> assessment_ids;
  for (const auto& a : assessments_) {
    if (!assessment_ids.insert(a.capability_id()).second) {
      throw BenefitValidationError("assessments contain duplicate candidate identities");
    }
  }
  for (const auto& s : selections_) {
    const auto it = std::find_if(assessments_.begin(), assessments_.end(), [&](const auto& a) {
      return a.capability_id() == s.capability_id && a.source_digest() == s.source_digest;
    });
    if (it == assessments_.end() || it->tier != assessment_tier(s.tier) ||
        it->individual_net_benefit_u != s.individual_net_benefit_u) {
      throw BenefitValidationError("selection does not exactly project a matching assessment");
    }
  }
  checked_integer(requested_limit_, "requested_limit", 0, kMaxSelectedCapabilities);
  if (static_cast<std::int64_t>(selections_.size()) > requested_limit_) {
    throw BenefitValidationError("selection count cannot exceed requested_limit");
  }
  checked_integer(candidate_pool_count_, "candidate_pool_count", 0, kMaxCandidates);
  checked_integer(search_evaluation_count_, "search_evaluation_count", 0, kMaxSearchEvaluations);
  if (candidate_pool_count_ != static_cast<std::int64_t>(assessments_.size())) {
    throw BenefitValidationError("candidate_pool_count must equal the canonical assessment count");
  }
  const bool feasible = std::any_of(assessments_.begin(), assessments_.end(),
                                    [](const auto& a) {
                                      return a.tier != AssessmentTier::kIneligible;
                                    });
  std::optional<AbstentionCode> expected;
  if (selections_.empty()) {
    expected = requested_limit_ == 0 ? AbstentionCode::kLimitZero
               : !feasible           ? AbstentionCode::kNoFeasibleCapability
                                     : AbstentionCode::kBelowNetBenefit;
  }
  if (abstention_code_ != expected) {
    throw BenefitValidationError(
        "abstention_code does not match selection and feasibility semantics");
  }
  if ((abstention_code_ == AbstentionCode::kLimitZero ||
       abstention_code_ == AbstentionCode::kNoFeasibleCapability) &&
      search_evaluation_count_ != 0) {
    throw BenefitValidationError("non-search abstention must have zero search evaluations");
  }
  check_digest(policy_digest_, "policy_digest");
}

BenefitSelectionResult BenefitSelectionResult::from_json(std::string_view text) {
  if (text.size() > kMaxBenefitResultJsonBytes) {
    throw BenefitValidationError("benefit result JSON exceeds its bounded byte limit");
  }
  Json decoded;
  try {
    decoded = core::parse_json(text);
  } catch (const InvalidArgument& e) {
    throw BenefitValidationError(std::string("benefit result must be valid canonical JSON: ") +
                                 e.what());
  }
  closed_object(decoded, "benefit result",
                {"abstention_code", "assessments", "candidate_pool_count", "policy_digest",
                 "requested_limit", "result_digest", "schema", "search_evaluation_count",
                 "selections"});
  if (decoded["schema"] != std::string(kResultSchemaId)) {
    throw BenefitValidationError("benefit result schema is unsupported");
  }
  BenefitSelectionResult r;
  const Json& code = decoded["abstention_code"];
  if (!code.is_null()) {
    if (!code.is_string()) throw BenefitValidationError("abstention_code must be a string or null");
    r.abstention_code_ = find_enum<AbstentionCode>(code.get_ref<const std::string&>());
    if (!r.abstention_code_) throw BenefitValidationError("abstention_code is not a declared code");
  }
  const Json& selections = decoded["selections"];
  if (!selections.is_array() ||
      static_cast<std::int64_t>(selections.size()) > kMaxSelectedCapabilities) {
    throw BenefitValidationError("selections must be a bounded JSON array");
  }
  for (const auto& s : selections) r.selections_.push_back(selection_from_json(s));
  const Json& assessments = decoded["assessments"];
  if (!assessments.is_array() || static_cast<std::int64_t>(assessments.size()) > kMaxCandidates) {
    throw BenefitValidationError("assessments must be a bounded JSON array");
  }
  for (const auto& a : assessments) r.assessments_.push_back(assessment_from_json(a));
  r.policy_digest_ = json_string(decoded["policy_digest"], "policy_digest");
  r.requested_limit_ = json_int(decoded["requested_limit"], "requested_limit");
  r.candidate_pool_count_ = json_int(decoded["candidate_pool_count"], "candidate_pool_count");
  r.search_evaluation_count_ =
      json_int(decoded["search_evaluation_count"], "search_evaluation_count");
  r.result_digest_ = json_string(decoded["result_digest"], "result_digest");
  check_digest(r.result_digest_, "result_digest");
  r.validate();
  // One re-encoding of the decoded fields checks both the digest and the canonical form.
  if (r.encode() != r.result_digest_) {
    throw BenefitValidationError("result_digest does not match canonical result fields");
  }
  if (r.text_ != text) {
    throw BenefitValidationError("benefit result JSON must use canonical encoding");
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// NetBenefitPolicy

NetBenefitPolicy::NetBenefitPolicy(NetBenefitPolicyConfig config) : config_(std::move(config)) {
  const auto& c = config_;
  check_digest(c.calibration_digest, "calibration_digest");
  checked_integer(c.minimum_relevance_ppm, "minimum_relevance_ppm", 0, kMaxPpm);
  checked_integer(c.minimum_trust_ppm, "minimum_trust_ppm", 0, kMaxPpm);
  checked_integer(c.minimum_marginal_net_benefit_u, "minimum_marginal_net_benefit_u", 1,
                  kMaxUtilityUnits);
  const std::pair<const char*, std::int64_t> nonnegative[] = {
      {"context_token_cost_u", c.context_token_cost_u},
      {"tool_schema_token_cost_u", c.tool_schema_token_cost_u},
      {"runtime_millisecond_cost_u", c.runtime_millisecond_cost_u},
      {"permission_burden_cost_u", c.permission_burden_cost_u},
      {"credential_burden_cost_u", c.credential_burden_cost_u},
      {"approval_prompt_cost_u", c.approval_prompt_cost_u},
      {"process_unit_cost_u", c.process_unit_cost_u},
      {"child_agent_unit_cost_u", c.child_agent_unit_cost_u},
      {"new_coverage_bonus_u_per_key", c.new_coverage_bonus_u_per_key},
      {"overlap_penalty_u_per_key", c.overlap_penalty_u_per_key},
      {"complementarity_bonus_u", c.complementarity_bonus_u}};
  for (const auto& [name, value] : nonnegative) checked_integer(value, name);
  checked_integer(c.successful_invocation_evidence_ppm, "successful_invocation_evidence_ppm", 0,
                  kMaxPpm);
  checked_integer(c.effective_outcome_evidence_ppm, "effective_outcome_evidence_ppm", 0, kMaxPpm);
  checked_integer(c.validated_outcome_evidence_ppm, "validated_outcome_evidence_ppm", 0, kMaxPpm);
  checked_integer(c.failed_invocation_evidence_ppm, "failed_invocation_evidence_ppm", -kMaxPpm, 0);
  checked_integer(c.harmful_outcome_evidence_ppm, "harmful_outcome_evidence_ppm", -kMaxPpm, 0);
  checked_integer(c.idle_opportunity_evidence_ppm, "idle_opportunity_evidence_ppm", -kMaxPpm, 0);
  checked_integer(c.evidence_prior_observations, "evidence_prior_observations", 1);
  if (!(c.successful_invocation_evidence_ppm < c.effective_outcome_evidence_ppm &&
        c.effective_outcome_evidence_ppm < c.validated_outcome_evidence_ppm)) {
    throw BenefitValidationError(
        "positive evidence weights must order success below effect below validation");
  }
  if (!(c.harmful_outcome_evidence_ppm < c.failed_invocation_evidence_ppm &&
        c.failed_invocation_evidence_ppm <= 0)) {
    throw BenefitValidationError(
        "negative evidence weights must order harm below invocation failure");
  }
  Json mapping = Json::object();
  mapping["calibration_digest"] = c.calibration_digest;
  mapping["minimum_relevance_ppm"] = c.minimum_relevance_ppm;
  mapping["minimum_trust_ppm"] = c.minimum_trust_ppm;
  mapping["minimum_marginal_net_benefit_u"] = c.minimum_marginal_net_benefit_u;
  for (const auto& [name, value] : nonnegative) mapping[name] = value;
  mapping["successful_invocation_evidence_ppm"] = c.successful_invocation_evidence_ppm;
  mapping["effective_outcome_evidence_ppm"] = c.effective_outcome_evidence_ppm;
  mapping["validated_outcome_evidence_ppm"] = c.validated_outcome_evidence_ppm;
  mapping["failed_invocation_evidence_ppm"] = c.failed_invocation_evidence_ppm;
  mapping["harmful_outcome_evidence_ppm"] = c.harmful_outcome_evidence_ppm;
  mapping["idle_opportunity_evidence_ppm"] = c.idle_opportunity_evidence_ppm;
  mapping["evidence_prior_observations"] = c.evidence_prior_observations;
  mapping["policy_schema_id"] = std::string(kPolicySchemaId);
  mapping["selection_algorithm_id"] = std::string(kSelectionAlgorithmId);
  policy_digest_ = core::canonical_digest(mapping, core::Encoding::kAscii);
}

CandidateAssessment NetBenefitPolicy::assess(const BenefitCandidate& candidate) const {
  validate_benefit_candidate(candidate);
  const auto& c = config_;
  std::set<std::string> reasons;
  if (candidate.availability == Availability::kUnsupported) reasons.insert("host-unsupported");
  if (!candidate.source_trusted) reasons.insert("source-untrusted");
  if (!candidate.security_approved) reasons.insert("security-blocked");
  if (!candidate.permissions_allowed) reasons.insert("permission-blocked");
  if (!candidate.credentials_available) reasons.insert("credential-unavailable");
  if (candidate.relevance_ppm < c.minimum_relevance_ppm) {
    reasons.insert("relevance-below-threshold");
  }
  if (candidate.trust_ppm < c.minimum_trust_ppm) reasons.insert("trust-below-threshold");
  if (!candidate.costs) reasons.insert("resource-cost-unknown");
  CandidateAssessment out;
  out.candidate = candidate;
  if (!reasons.empty()) {
    out.tier = AssessmentTier::kIneligible;
    out.reason_codes.assign(reasons.begin(), reasons.end());
    return out;
  }
  const auto& e = candidate.evidence;
  const std::int64_t attempted = e.successful_invocations + e.failed_invocations;
  const std::int64_t idle = e.opportunity_observable
                                ? std::max<std::int64_t>(e.opportunities_observed - attempted, 0)
                                : 0;
  const std::int64_t weighted = e.successful_invocations * c.successful_invocation_evidence_ppm +
                                e.failed_invocations * c.failed_invocation_evidence_ppm +
                                e.effective_outcomes * c.effective_outcome_evidence_ppm +
                                e.validated_outcomes * c.validated_outcome_evidence_ppm +
                                e.harmful_outcomes * c.harmful_outcome_evidence_ppm +
                                idle * c.idle_opportunity_evidence_ppm;
  const std::int64_t observations = e.successful_invocations + e.failed_invocations +
                                    e.effective_outcomes + e.validated_outcomes +
                                    e.harmful_outcomes + idle;
  const std::int64_t adjustment = std::clamp(
      signed_rounded_divide(weighted, c.evidence_prior_observations + observations), -kMaxPpm,
      kMaxPpm);
  const std::int64_t effect =
      std::clamp(candidate.expected_task_benefit_ppm + adjustment, std::int64_t{0}, kMaxPpm);
  const std::int64_t benefit =
      ppm_multiply(ppm_multiply(candidate.relevance_ppm, effect), candidate.trust_ppm);
  const auto& q = *candidate.costs;
  const std::int64_t cost = q.context_tokens * c.context_token_cost_u +
                            q.tool_schema_tokens * c.tool_schema_token_cost_u +
                            q.runtime_millis * c.runtime_millisecond_cost_u +
                            q.permission_burden_units * c.permission_burden_cost_u +
                            q.credential_burden_units * c.credential_burden_cost_u +
                            q.approval_prompts * c.approval_prompt_cost_u +
                            q.process_units * c.process_unit_cost_u +
                            q.child_agent_units * c.child_agent_unit_cost_u;
  std::set<std::string> codes{"net-benefit-assessed"};
  if (candidate.availability == Availability::kAdvisory) codes.insert("advisory-only");
  if (adjustment > 0) codes.insert("positive-outcome-evidence");
  if (adjustment < 0) codes.insert("negative-outcome-evidence");
  out.tier = candidate.availability == Availability::kExecutable ? AssessmentTier::kExecutable
                                                                  : AssessmentTier::kAdvisory;
  out.reason_codes.assign(codes.begin(), codes.end());
  out.evidence_adjustment_ppm = adjustment;
  out.expected_benefit_u = benefit;
  out.expected_cost_u = cost;
  out.individual_net_benefit_u = benefit - cost;
  return out;
}

BenefitSelectionResult NetBenefitPolicy::select(const std::vector<BenefitCandidate>& candidates,
                                                std::int64_t requested_limit) const {
  if (static_cast<std::int64_t>(candidates.size()) > kMaxCandidates) {
    throw BenefitValidationError("candidate pool exceeds its bounded limit");
  }
  checked_integer(requested_limit, "requested_limit", 0, kMaxSelectedCapabilities);
  std::map<std::string, const BenefitCandidate*> by_id;
  for (const auto& candidate : candidates) {
    validate_benefit_candidate(candidate);
    if (!by_id.emplace(candidate.capability_id, &candidate).second) {
      throw BenefitValidationError("candidate pool contains duplicate capability identities");
    }
  }
  for (const auto& candidate : candidates) {
    for (const auto& peer_id : candidate.complements) {
      const auto it = by_id.find(peer_id);
      if (it != by_id.end() && (contains(candidate.conflicts, peer_id) ||
                                contains(it->second->conflicts, candidate.capability_id))) {
        throw BenefitValidationError(
            "candidate pool contains a cross-record complement/conflict contradiction");
      }
    }
  }
  std::vector<CandidateAssessment> assessments;
  assessments.reserve(candidates.size());
  for (const auto& candidate : candidates) assessments.push_back(assess(candidate));
  std::sort(assessments.begin(), assessments.end(), [](const auto& x, const auto& y) {
    return std::tie(x.capability_id(), x.source_digest()) <
           std::tie(y.capability_id(), y.source_digest());
  });
  if (requested_limit == 0) {
    return BenefitSelectionResult::create({}, std::move(assessments), AbstentionCode::kLimitZero,
                                          policy_digest_,
                                          requested_limit, 0);
  }
  Set executable;
  Set advisory;
  for (std::size_t i = 0; i < assessments.size(); ++i) {
    const AssessmentTier tier = assessments[i].tier;
    if (tier == AssessmentTier::kExecutable) executable.push_back(static_cast<int>(i));
    if (tier == AssessmentTier::kAdvisory) advisory.push_back(static_cast<int>(i));
  }
  if (executable.empty() && advisory.empty()) {
    return BenefitSelectionResult::create({}, std::move(assessments),
                                          AbstentionCode::kNoFeasibleCapability,
                                          policy_digest_, requested_limit, 0);
  }
  Search search(config_, assessments);
  const Set selected_executable = search.search_tier(executable, {}, requested_limit);
  const std::int64_t executable_evaluations = search.evaluations;
  const Set selected = search.search_tier(advisory, selected_executable, requested_limit);
  const std::int64_t evaluations = executable_evaluations + search.evaluations;
  Set ordered = selected;
  std::stable_sort(ordered.begin(), ordered.end(), [&](int x, int y) {
    const auto rank = [&](int i) {
      return assessments[static_cast<std::size_t>(i)].tier == AssessmentTier::kExecutable ? 0 : 1;
    };
    const int tx = rank(x);
    const int ty = rank(y);
    return std::make_tuple(tx, x) < std::make_tuple(ty, y);
  });
  std::vector<BenefitSelection> selections;
  for (int i : ordered) {
    const auto& a = assessments[static_cast<std::size_t>(i)];
    const BenefitTier tier =
        a.tier == AssessmentTier::kExecutable ? BenefitTier::kExecutable : BenefitTier::kAdvisory;
    selections.push_back(BenefitSelection{a.capability_id(), a.source_digest(), tier,
                                          a.individual_net_benefit_u,
                                          search.leave_one_out(i, selected)});
  }
  std::optional<AbstentionCode> code;
  if (selections.empty()) code = AbstentionCode::kBelowNetBenefit;
  return BenefitSelectionResult::create(std::move(selections), std::move(assessments), code,
                                        policy_digest_, requested_limit, evaluations);
}

void NetBenefitPolicy::validate_result(const BenefitSelectionResult& result) const {
  if (result.policy_digest() != policy_digest_) {
    throw BenefitValidationError("result policy digest does not match this policy");
  }
  std::vector<BenefitCandidate> candidates;
  for (const auto& a : result.assessments()) candidates.push_back(a.candidate);
  const BenefitSelectionResult recomputed = select(candidates, result.requested_limit());
  if (!(recomputed == result)) {
    throw BenefitValidationError("result does not match exact policy revalidation");
  }
}

}  // namespace ctx::engine::planning
