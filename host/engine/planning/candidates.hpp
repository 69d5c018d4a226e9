// Planning values of spec §1.8: the current-work observation the planner consumes and the
// typed, scored candidate (presentation row) that retrieval produces. Plain values checked by
// their factories / validate_*; thread-safe (immutable once built).
#ifndef CTX_HOST_ENGINE_PLANNING_CANDIDATES_HPP_
#define CTX_HOST_ENGINE_PLANNING_CANDIDATES_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine::planning {

inline constexpr std::int64_t kMaxSignals = 32;
inline constexpr std::int64_t kMaxLanguages = 10;
inline constexpr std::int64_t kMaxContextCapabilityIds = 100;
inline constexpr std::int64_t kMaxMatchingSignals = 32;
inline constexpr std::int64_t kMaxReasonCodes = 16;

// Privacy-safe current-work signals (sorted unique canonical tokens) and the requested bound.
struct WorkObservation {
  std::vector<std::string> signals;
  std::vector<std::string> languages;
  std::vector<std::string> baseline_capability_ids;
  std::vector<std::string> active_capability_ids;
  std::vector<std::string> rejected_capability_ids;
  std::int64_t requested_limit = 5;
  friend bool operator==(const WorkObservation&, const WorkObservation&) = default;

  // Reads the value of a "ctx.observation.current-work" v1 surrogate: exactly the six keys
  // signals, languages, baseline_capability_ids, active_capability_ids, rejected_capability_ids,
  // requested_limit. When `state_active_ids` is given (a committed state exists) it replaces the
  // observed active ids, as the engine state is authoritative for them.
  // Errors: PlannerValidationError naming the field.
  static WorkObservation from_current_work(
      const core::Json& value,
      const std::optional<std::vector<std::string>>& state_active_ids = std::nullopt);
};

// Errors: PlannerValidationError naming the field.
void validate_work_observation(const WorkObservation& work);

// One typed, scored candidate. Install digests are present iff actionability is kInstall.
struct CapabilityCandidate {
  std::string capability_id;
  CapabilityKind kind = CapabilityKind::kSkill;
  std::string name;
  std::string source_digest;
  std::int64_t normalized_score_ppm = 0;
  std::vector<std::string> matching_signals;
  std::vector<std::string> reason_codes;
  CandidateActionability actionability = CandidateActionability::kNone;
  std::optional<std::string> install_descriptor_digest;
  std::optional<std::string> install_plan_digest;
  std::optional<std::string> equivalence_key;
  friend bool operator==(const CapabilityCandidate&, const CapabilityCandidate&) = default;
};

// Errors: PlannerValidationError naming the field.
void validate_capability_candidate(const CapabilityCandidate& candidate);

// The schema-v2 selection mapping of a presentation: actionability, capability_id,
// catalog_entry_digest (= source_digest), install_descriptor_digest, install_plan_digest, kind,
// matching_signals, name, normalized_score_ppm, reason_codes.
core::Json selection_mapping(const CapabilityCandidate& candidate);

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_CANDIDATES_HPP_
