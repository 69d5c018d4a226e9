#include "host/engine/planning/candidates.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"

namespace ctx::engine::planning {
namespace {

using core::Json;

void check_tokens(const std::vector<std::string>& values, const char* field,
                  std::int64_t maximum) {
  if (static_cast<std::int64_t>(values.size()) > maximum) {
    throw PlannerValidationError(std::string(field) + " exceeds its bounded item limit");
  }
  for (const auto& item : values) {
    if (!is_canonical_token(item)) {
      throw PlannerValidationError(std::string(field) + " item must be a canonical safe token");
    }
  }
  const bool sorted = std::is_sorted(values.begin(), values.end());
  // Sorted values repeat only adjacently; the set is built only on the (failing) unsorted path.
  if (std::adjacent_find(values.begin(), values.end()) != values.end() ||
      (!sorted && std::set<std::string>(values.begin(), values.end()).size() != values.size())) {
    throw PlannerValidationError(std::string(field) + " contains duplicate values");
  }
  if (!sorted) {
    throw PlannerValidationError(std::string(field) + " must use canonical sorted order");
  }
}

void check_digest(const std::optional<std::string>& value, const char* field) {
  if (!value || !is_digest(*value)) {
    throw PlannerValidationError(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

std::vector<std::string> token_array(const Json& value, const char* field) {
  if (!value.is_array()) {
    throw PlannerValidationError(std::string("current-work ") + field + " must be a token array");
  }
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) {
      throw PlannerValidationError(std::string("current-work ") + field + " must be a token array");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

Json optional_string(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

void validate_work_observation(const WorkObservation& work) {
  check_tokens(work.signals, "signals", kMaxSignals);
  check_tokens(work.languages, "languages", kMaxLanguages);
  check_tokens(work.baseline_capability_ids, "baseline_capability_ids", kMaxContextCapabilityIds);
  check_tokens(work.active_capability_ids, "active_capability_ids", 5);
  check_tokens(work.rejected_capability_ids, "rejected_capability_ids", kMaxContextCapabilityIds);
  if (work.requested_limit < 0 || work.requested_limit > 5) {
    throw PlannerValidationError("requested_limit must be an integer from 0 through 5");
  }
}

WorkObservation WorkObservation::from_current_work(
    const Json& value, const std::optional<std::vector<std::string>>& state_active_ids) {
  static const std::set<std::string> kFields = {
      "signals", "languages", "baseline_capability_ids", "active_capability_ids",
      "rejected_capability_ids", "requested_limit"};
  if (!value.is_object() || value.size() != kFields.size()) {
    throw PlannerValidationError("current-work observation has missing or unknown fields");
  }
  for (const auto& field : kFields) {
    if (!value.contains(field)) {
      throw PlannerValidationError("current-work observation has missing or unknown fields");
    }
  }
  const Json& limit = value["requested_limit"];
  if (!limit.is_number_integer()) {
    throw PlannerValidationError("current-work requested_limit must be an integer");
  }
  WorkObservation work;
  const auto observed_active = token_array(value["active_capability_ids"], "active_capability_ids");
  work.signals = token_array(value["signals"], "signals");
  work.languages = token_array(value["languages"], "languages");
  work.baseline_capability_ids =
      token_array(value["baseline_capability_ids"], "baseline_capability_ids");
  work.rejected_capability_ids =
      token_array(value["rejected_capability_ids"], "rejected_capability_ids");
  if (state_active_ids) {
    work.active_capability_ids = *state_active_ids;
    std::sort(work.active_capability_ids.begin(), work.active_capability_ids.end());
  } else {
    work.active_capability_ids = observed_active;
  }
  if (limit.is_number_unsigned() && limit.get<std::uint64_t>() > 5) {
    throw PlannerValidationError("requested_limit must be an integer from 0 through 5");
  }
  work.requested_limit = limit.get<std::int64_t>();
  validate_work_observation(work);
  return work;
}

void validate_capability_candidate(const CapabilityCandidate& c) {
  if (!is_canonical_token(c.capability_id)) {
    throw PlannerValidationError("capability_id must be a canonical safe token");
  }
  const std::string_view kind = to_string(c.kind);
  if (kind.empty()) throw PlannerValidationError("kind is not a recommendable capability kind");
  if (!is_capability_name(c.name)) {
    throw PlannerValidationError("name must be a canonical capability name");
  }
  if (c.capability_id.size() != kind.size() + 1 + c.name.size() ||
      c.capability_id.compare(0, kind.size(), kind) != 0 || c.capability_id[kind.size()] != ':' ||
      c.capability_id.compare(kind.size() + 1, std::string::npos, c.name) != 0) {
    throw PlannerValidationError("capability_id must be the canonical kind:name identity");
  }
  if (!is_digest(c.source_digest)) {
    throw PlannerValidationError("source_digest must be a lowercase SHA-256 digest");
  }
  if (c.normalized_score_ppm < 0 || c.normalized_score_ppm > 1'000'000) {
    throw PlannerValidationError("normalized_score_ppm must be an integer from 0 through 1000000");
  }
  check_tokens(c.matching_signals, "matching_signals", kMaxMatchingSignals);
  check_tokens(c.reason_codes, "reason_codes", kMaxReasonCodes);
  if (c.reason_codes.empty()) {
    throw PlannerValidationError("reason_codes must explain the candidate");
  }
  if (kCandidateActionabilityStrings.to_string(c.actionability).empty()) {
    throw PlannerValidationError("actionability is not a declared state");
  }
  if (c.actionability == CandidateActionability::kInstall) {
    check_digest(c.install_descriptor_digest, "install_descriptor_digest");
    check_digest(c.install_plan_digest, "install_plan_digest");
  } else if (c.install_descriptor_digest || c.install_plan_digest) {
    throw PlannerValidationError(
        "install descriptor and plan digests are allowed only for install candidates");
  }
  if (c.equivalence_key && !is_canonical_token(*c.equivalence_key)) {
    throw PlannerValidationError("equivalence_key must be a canonical safe token");
  }
}

core::Json selection_mapping(const CapabilityCandidate& c) {
  Json out = Json::object();
  out["actionability"] = c.actionability;
  out["capability_id"] = c.capability_id;
  out["catalog_entry_digest"] = c.source_digest;
  out["install_descriptor_digest"] = optional_string(c.install_descriptor_digest);
  out["install_plan_digest"] = optional_string(c.install_plan_digest);
  out["kind"] = c.kind;
  out["matching_signals"] = c.matching_signals;
  out["name"] = c.name;
  out["normalized_score_ppm"] = c.normalized_score_ppm;
  out["reason_codes"] = c.reason_codes;
  return out;
}

}  // namespace ctx::engine::planning
