#include "host/engine/planning/planner.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"

namespace ctx::engine::planning {
namespace {

using core::Json;

Json optional_string(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

auto pool_key(const CapabilityCandidate& c) {
  return std::make_tuple(
      std::cref(c.capability_id), std::cref(c.source_digest), to_string(c.actionability),
      -c.normalized_score_ppm,
      c.equivalence_key ? std::string_view(*c.equivalence_key) : std::string_view(),
      std::cref(c.matching_signals), std::cref(c.reason_codes));
}

constexpr std::size_t kSelectionMemoEntries = 8;

void append_joined(std::string& out, const std::vector<std::string>& values) {
  for (const auto& v : values) out.append(v).push_back(',');
}

// Canonical tokens and digests never contain '|' or ',', so these keys are unambiguous.
std::string observation_key(const WorkObservation& w) {
  std::string key;
  for (const auto* values : {&w.signals, &w.languages, &w.baseline_capability_ids,
                             &w.active_capability_ids, &w.rejected_capability_ids}) {
    append_joined(key, *values);
    key.push_back('|');
  }
  key.append(std::to_string(w.requested_limit));
  return key;
}

std::string facts_key(const CapabilityCandidate& p, std::string_view observation) {
  std::string key;
  key.reserve(256 + observation.size());
  for (std::string_view part : {std::string_view(p.capability_id), to_string(p.kind),
                                 std::string_view(p.name), std::string_view(p.source_digest)}) {
    key.append(part).push_back('|');
  }
  key.append(std::to_string(p.normalized_score_ppm)).push_back('|');
  append_joined(key, p.matching_signals);
  key.push_back('|');
  append_joined(key, p.reason_codes);
  key.push_back('|');
  key.append(to_string(p.actionability)).push_back('|');
  for (const auto* part :
       {&p.install_descriptor_digest, &p.install_plan_digest, &p.equivalence_key}) {
    key.append(part->has_value() ? **part : std::string_view("-")).push_back('|');
  }
  key.push_back('|');
  key.append(observation);
  return key;
}

// normalize_candidate_pool over candidates already validated (the candidate source's own rows),
// consuming them.
std::vector<CapabilityCandidate> normalize_validated_pool(
    std::vector<CapabilityCandidate> candidates, const WorkObservation& observation) {
  if (static_cast<std::int64_t>(candidates.size()) > kMaxCandidates) {
    throw PlannerValidationError("candidate source exceeded its candidate pool limit");
  }
  std::set<std::string_view> excluded(observation.baseline_capability_ids.begin(),
                                      observation.baseline_capability_ids.end());
  excluded.insert(observation.rejected_capability_ids.begin(),
                  observation.rejected_capability_ids.end());
  // Keys view candidates' ids; they are only compared while the map is filled, before any
  // candidate is moved out below.
  std::map<std::string_view, std::vector<std::size_t>> by_id;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    if (excluded.count(c.capability_id)) continue;
    if (!presentable(c.actionability)) continue;
    by_id[c.capability_id].push_back(i);
  }
  std::vector<CapabilityCandidate> out;
  out.reserve(by_id.size());
  for (const auto& entry : by_id) {
    const auto& rows = entry.second;
    const CapabilityCandidate& first = candidates[rows.front()];
    if (std::any_of(rows.begin() + 1, rows.end(),
                    [&](std::size_t r) { return !(candidates[r] == first); })) {
      continue;
    }
    out.push_back(std::move(candidates[rows.front()]));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return pool_key(a) < pool_key(b); });
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values

core::Json PlanningAuthority::to_json() const {
  if (type == Actionability::kLoad) {
    return Json{{"type", "load"}, {"material", material->to_json()}};
  }
  if (type == Actionability::kInstall) {
    return Json{{"type", "install"},
                {"descriptor", descriptor->to_json()},
                {"result_material", result_material->to_json()}};
  }
  return Json{{"type", "manual"}};
}

core::Json PlanCapabilityRow::to_json() const {
  Json row = selection_mapping(presentation);
  row["catalog_identity"] = catalog_identity.to_json();
  row["benefit"] = Json{{"individual_net_benefit_u", individual_net_benefit_u},
                        {"marginal_net_benefit_u", marginal_net_benefit_u},
                        {"tier", tier}};
  row["authority"] = authority.to_json();
  return row;
}

CapabilityPlanV3 CapabilityPlanV3::degraded(AbstentionCode code) {
  if (plan_status_of(code) != PlanStatus::kDegraded) {
    throw PlannerValidationError("degraded schema-v3 plan requires a degradation code");
  }
  CapabilityPlanV3 plan;
  plan.status_ = PlanStatus::kDegraded;
  plan.abstention_code_ = code;
  return plan;
}

core::Json CapabilityPlanV3::decision_value() const {
  Json rows = Json::array();
  for (const auto& row : rows_) rows.push_back(row.to_json());
  return Json{{"abstention_code",
               abstention_code_ ? Json(to_string(*abstention_code_)) : Json(nullptr)},
              {"benefit_audit", audit_ ? audit_->to_json() : Json(nullptr)},
              {"capabilities", std::move(rows)},
              {"status", status_}};
}

core::Json CapabilityPlanV3::decision_surrogate() const {
  return Json{{"schema_id", std::string(kDecisionSchemaId)},
              {"schema_version", kDecisionSchemaVersion},
              {"value", decision_value()}};
}

std::string CapabilityPlanV3::decision_digest() const {
  return core::canonical_digest(decision_value(), core::Encoding::kUtf8);
}

std::vector<CapabilityCandidate> normalize_candidate_pool(
    const std::vector<CapabilityCandidate>& candidates, const WorkObservation& observation) {
  if (static_cast<std::int64_t>(candidates.size()) > kMaxCandidates) {
    throw PlannerValidationError("candidate source exceeded its candidate pool limit");
  }
  for (const auto& c : candidates) validate_capability_candidate(c);
  return normalize_validated_pool(candidates, observation);
}

// ---------------------------------------------------------------------------------------------
// CapabilityPlanner

CapabilityPlanner::CapabilityPlanner(CapabilityPlannerConfig config, NetBenefitPolicy policy,
                                     const GraphRetrievalPort& graph, BenefitFactsPort& facts,
                                     MaterialPort* material, InstallBundlePort* install,
                                     BenefitAuditStore& audit_store)
    : config_(std::move(config)),
      policy_(std::move(policy)),
      facts_(facts),
      material_(material),
      install_(install),
      audit_store_(audit_store),
      source_(graph, material, install, config_.candidate_limit, config_.memo_capacity),
      facts_seen_(config_.memo_capacity),
      identities_(config_.memo_capacity) {
  if (!engine::is_opaque_token(config_.planner_version)) {
    throw PlannerValidationError("planner_version must be an opaque safe token");
  }
  if (!is_digest(config_.catalog_namespace_digest)) {
    throw PlannerValidationError("catalog_namespace_digest must be a lowercase SHA-256 digest");
  }
  facts_snapshot_digest_ = facts_.benefit_facts_snapshot_digest();
  if (!is_digest(facts_snapshot_digest_)) {
    throw PlannerValidationError(
        "benefit facts snapshot digest must be a lowercase SHA-256 digest");
  }
  relevance_share_of_best_ppm_ = facts_.relevance_share_of_best_ppm();
  if (relevance_share_of_best_ppm_ < 0 || relevance_share_of_best_ppm_ > kMaxPpm) {
    throw PlannerValidationError("relevance share of the best must be 0 through 1000000 ppm");
  }
  environment_digest_ = core::canonical_digest(
      Json{
          {"benefit_facts_snapshot_digest", facts_snapshot_digest_},
          {"calibration_digest", policy_.calibration_digest()},
          {"catalog_namespace_digest", config_.catalog_namespace_digest},
          {"catalog_retrieval_snapshot_digest", source_.catalog_snapshot_digest()},
          {"installation_snapshot_digest", optional_string(source_.installation_snapshot_digest())},
          {"material_snapshot_digest", optional_string(source_.material_snapshot_digest())},
          {"planner_version", config_.planner_version},
          {"policy_digest", policy_.policy_digest()},
          {"schema", std::string(kPlanningEnvironmentSchema)}},
      core::Encoding::kAscii);
}

void CapabilityPlanner::assert_pins() const {
  if (facts_.benefit_facts_snapshot_digest() != facts_snapshot_digest_) {
    throw PlannerValidationError("benefit facts snapshot drifted");
  }
  if (material_ != nullptr &&
      material_->material_snapshot_digest() != *source_.material_snapshot_digest()) {
    throw PlannerValidationError("material snapshot drifted");
  }
  if (install_ != nullptr &&
      install_->installation_snapshot_digest() != *source_.installation_snapshot_digest()) {
    throw PlannerValidationError("installation snapshot drifted");
  }
}

BenefitCandidate CapabilityPlanner::checked_facts(const CapabilityCandidate& p,
                                                 const WorkObservation& work,
                                                 std::string_view observation) const {
  std::optional<BenefitCandidate> facts = facts_.benefit_candidate(p, work);
  if (!facts) throw PlannerValidationError("candidate is missing authenticated benefit facts");
  const std::string key = facts_key(p, observation);
  BenefitCandidate* const seen = facts_seen_.find(key);
  if (seen == nullptr || !(*seen == *facts)) {
    // A memo entry was validated when stored; only a new or different answer is checked.
    try {
      validate_benefit_candidate(*facts);
    } catch (const BenefitValidationError& e) {
      throw PlannerValidationError(std::string("benefit facts are invalid: ") + e.what());
    }
    if (facts->capability_id != p.capability_id || facts->source_digest != p.source_digest) {
      throw PlannerValidationError("benefit facts do not exactly match candidate identity");
    }
    if (seen != nullptr) {
      throw PlannerValidationError("benefit facts output drifted without a snapshot digest change");
    }
    facts_seen_.put(key, *facts);
  }
  return std::move(*facts);
}

const CatalogCapabilityIdentity& CapabilityPlanner::identity_of(
    const CapabilityCandidate& p) const {
  // A validated presentation's kind is the prefix of its capability id.
  const CatalogCapabilityIdentity* identity = identities_.find(p.capability_id);
  if (identity == nullptr) {
    try {
      identity = identities_.put(p.capability_id,
                                  CatalogCapabilityIdentity::create(
                                      p.capability_id, p.kind, config_.catalog_namespace_digest));
    } catch (const InvalidIdentityError&) {
      throw PlannerValidationError("catalog capability identity is invalid");
    }
  }
  return *identity;
}

PlanningAuthority CapabilityPlanner::authority_of(const CapabilityCandidate& p,
                                                  const CatalogCapabilityIdentity& identity,
                                                  const BenefitCandidate& facts) const {
  const std::optional<Actionability> presented = presentable(p.actionability);
  if (!presented) {
    throw PlannerValidationError(
        "schema-v3 planning accepts only load, install, or manual presentation");
  }
  PlanningAuthority authority;
  authority.type = *presented;
  if (authority.type == Actionability::kLoad) {
    if (material_ == nullptr) {
      throw CandidateAuthorityUnavailable("load candidate has no authenticated material port");
    }
    try {
      const MaterialDescriptor descriptor = material_->describe(p.capability_id, p.kind);
      if (descriptor.schema_version() != 2 || descriptor.capability_id() != p.capability_id ||
          descriptor.kind() != p.kind || descriptor.actionability() != Actionability::kLoad ||
          descriptor.provenance_digest() != *source_.material_snapshot_digest()) {
        throw CandidateAuthorityUnavailable(
            "load bundle does not match the exact retrieval presentation or pinned snapshots");
      }
      if (source_.observed_material(p.capability_id) != descriptor) {
        throw PlannerValidationError(
            "load authority output drifted without a snapshot digest change");
      }
      authority.material = AuthorizedMaterial::from_catalog(identity.identity_digest(), descriptor);
    } catch (const InvalidIdentityError&) {
      throw CandidateAuthorityUnavailable("load material authority is invalid");
    }
    if (facts.availability != Availability::kExecutable) {
      throw PlannerValidationError("load authority requires executable benefit facts");
    }
  } else if (authority.type == Actionability::kInstall) {
    if (install_ == nullptr) {
      throw CandidateAuthorityUnavailable("install candidate has no authenticated install port");
    }
    try {
      const std::optional<InstallPlanningBundle> bundle =
          install_->describe_bundle(p.capability_id, p.kind);
      if (!bundle) {
        throw CandidateAuthorityUnavailable("install candidate is missing an exact install bundle");
      }
      const auto& d = bundle->descriptor();
      const auto& result = bundle->result_material();
      if (d.schema_version() != 2 || d.capability_id() != p.capability_id || d.kind() != p.kind ||
          d.descriptor_digest() != p.install_descriptor_digest ||
          d.plan_digest() != p.install_plan_digest ||
          d.provenance_digest() != *source_.installation_snapshot_digest() ||
          result.capability_id() != p.capability_id || result.kind() != p.kind ||
          !d.matches_result_material(result)) {
        throw CandidateAuthorityUnavailable(
            "install bundle does not match presentation or installation snapshot");
      }
      authority.descriptor = d;
      authority.result_material = result;
    } catch (const InvalidIdentityError&) {
      throw CandidateAuthorityUnavailable("install bundle authority is invalid");
    }
    if (facts.availability != Availability::kExecutable) {
      throw PlannerValidationError("install authority requires executable benefit facts");
    }
  } else if (facts.availability != Availability::kAdvisory) {
    throw PlannerValidationError("manual authority is advisory only");
  }
  return authority;
}

AuthenticatedCandidate CapabilityPlanner::authenticate_one(const CapabilityCandidate& p,
                                                           const WorkObservation& work,
                                                           std::string_view observation) const {
  BenefitCandidate facts = checked_facts(p, work, observation);
  const CatalogCapabilityIdentity& identity = identity_of(p);
  PlanningAuthority authority = authority_of(p, identity, facts);
  return AuthenticatedCandidate{p, identity, std::move(facts), std::move(authority)};
}

std::vector<AuthenticatedCandidate> CapabilityPlanner::authenticate(
    const std::vector<CapabilityCandidate>& pool, const WorkObservation& work) const {
  const std::string observation = observation_key(work);
  std::vector<AuthenticatedCandidate> out;
  out.reserve(pool.size());
  for (const auto& presentation : pool) {
    try {
      out.push_back(authenticate_one(presentation, work, observation));
    } catch (const CandidateAuthorityUnavailable&) {
      // Authority failure is local to this candidate: never downgraded to manual.
    }
  }
  return out;
}

bool CapabilityPlanner::reauthenticates(const std::vector<CapabilityCandidate>& pool,
                                        const WorkObservation& work,
                                        const std::vector<AuthenticatedCandidate>& earlier) const {
  const std::string observation = observation_key(work);
  std::size_t next = 0;  // earlier holds pool's authenticated presentations, in pool order
  for (const auto& presentation : pool) {
    const bool expected = next < earlier.size() && earlier[next].presentation == presentation;
    try {
      const BenefitCandidate facts = checked_facts(presentation, work, observation);
      const CatalogCapabilityIdentity& identity = identity_of(presentation);
      const PlanningAuthority authority = authority_of(presentation, identity, facts);
      if (!expected) return false;
      const AuthenticatedCandidate& before = earlier[next++];
      if (!(before.benefit_candidate == facts) || !(before.catalog_identity == identity) ||
          !(before.authority == authority)) {
        return false;
      }
    } catch (const CandidateAuthorityUnavailable&) {
      if (expected) return false;  // authenticated before, unavailable now
    }
  }
  return next == earlier.size();
}

std::vector<BenefitCandidate> CapabilityPlanner::policy_inputs(
    const std::vector<AuthenticatedCandidate>& candidates) const {
  std::vector<BenefitCandidate> facts;
  facts.reserve(candidates.size());
  std::int64_t best = 0;
  for (const auto& c : candidates) {
    facts.push_back(c.benefit_candidate);
    best = std::max(best, c.benefit_candidate.relevance_ppm);
  }
  // Relevance is at most 10^6 (validated), so the product cannot overflow.
  const std::int64_t floor = best * relevance_share_of_best_ppm_ / kMaxPpm;
  for (auto& f : facts) {
    if (f.relevance_ppm < floor) f.relevance_ppm = 0;
  }
  return facts;
}

CapabilityPlanV3 CapabilityPlanner::select(const std::vector<AuthenticatedCandidate>& candidates,
                                           std::int64_t requested_limit) const {
  if (static_cast<std::int64_t>(candidates.size()) > kMaxCandidates) {
    throw PlannerValidationError("candidate pool exceeds its bounded limit");
  }
  if (requested_limit < 0 || requested_limit > kMaxSelectedCapabilities) {
    throw PlannerValidationError("requested_limit must be an integer from zero through five");
  }
  std::map<std::string_view, const AuthenticatedCandidate*> by_id;
  for (const auto& c : candidates) {
    if (!by_id.emplace(c.presentation.capability_id, &c).second) {
      throw PlannerValidationError("candidate pool contains duplicate identities");
    }
  }
  // The result is this process's own, fully validated selection: it is never re-run or re-parsed,
  // and an identical pool reuses it (with its canonical text and digest) instead of re-encoding.
  std::vector<BenefitCandidate> facts = policy_inputs(candidates);
  std::shared_ptr<const BenefitSelectionResult> result;
  for (auto it = selections_.begin(); it != selections_.end(); ++it) {
    if (it->requested_limit == requested_limit && it->facts == facts) {
      result = it->result;
      selections_.splice(selections_.begin(), selections_, it);
      break;
    }
  }
  if (!result) {
    try {
      result =
          std::make_shared<const BenefitSelectionResult>(policy_.select(facts, requested_limit));
    } catch (const BenefitValidationError&) {
      throw PlannerValidationError("net-benefit policy rejected the authenticated candidate pool");
    }
    if (selections_.size() >= kSelectionMemoEntries) selections_.pop_back();
    selections_.push_front(SelectionMemo{requested_limit, std::move(facts), result});
  }
  CapabilityPlanV3 plan;
  for (const auto& s : result->selections()) {
    const auto& c = *by_id.at(std::string_view(s.capability_id));
    if (c.presentation.source_digest != s.source_digest) {
      throw PlannerValidationError(
          "selected benefit identity does not match authenticated candidate");
    }
    const bool executable = c.authority.type != Actionability::kManual;
    if (s.tier != (executable ? BenefitTier::kExecutable : BenefitTier::kAdvisory) ||
        s.marginal_net_benefit_u < 1) {
      throw PlannerValidationError("selection tier does not match its planning authority");
    }
    plan.rows_.push_back(PlanCapabilityRow{c.presentation, c.catalog_identity, s.tier,
                                           s.individual_net_benefit_u, s.marginal_net_benefit_u,
                                           c.authority});
  }
  std::string stored;
  try {
    stored = audit_store_.store(*result);
  } catch (const BenefitAuditStoreUnavailable&) {
    return CapabilityPlanV3::degraded(AbstentionCode::kPlannerFailed);
  }
  if (stored != result->result_digest()) {
    throw PlannerValidationError("audit store acknowledged a different benefit result digest");
  }
  plan.audit_ = BenefitAuditReference{std::string(kResultSchemaId),
                                      result->result_digest(),
                                      std::string(kPolicySchemaId),
                                      result->policy_digest(),
                                      std::string(kSelectionAlgorithmId),
                                      policy_.calibration_digest(),
                                      result->requested_limit(),
                                      result->candidate_pool_count(),
                                      result->search_evaluation_count()};
  if (plan.rows_.empty()) {
    plan.status_ = PlanStatus::kAbstained;
    plan.abstention_code_ = result->abstention_code();
  } else {
    plan.status_ = PlanStatus::kReady;
  }
  return plan;
}

CapabilityPlanV3 CapabilityPlanner::plan(const WorkObservation& work) const {
  validate_work_observation(work);
  std::lock_guard lock(mutex_);
  assert_pins();
  CandidateRetrieval retrieval;
  try {
    retrieval = source_.retrieve_pinned(work);
  } catch (const CandidateSourceUnavailable&) {
    // An unchanged snapshot cannot become available within one decision; the second attempt is
    // the end validation of the degraded plan.
    try {
      source_.retrieve(work);
    } catch (const CandidateSourceUnavailable&) {
    }
    return CapabilityPlanV3::degraded(AbstentionCode::kCatalogUnavailable);
  }
  // The source's rows are validated as they are built; they are not validated again here.
  const auto pool = normalize_validated_pool(std::move(retrieval.candidates), work);
  const auto authenticated = authenticate(pool, work);
  assert_pins();
  CapabilityPlanV3 result = select(authenticated, work.requested_limit);
  assert_pins();
  // End validation: the same graph rows and port answers (hence the same pool), and the same
  // authentication of that pool.
  if (!source_.unchanged(work, retrieval) || !reauthenticates(pool, work, authenticated)) {
    throw PlannerValidationError("planning inputs drifted during end validation");
  }
  assert_pins();
  return result;
}

core::Json CapabilityPlanner::decide(
    const core::Json& observation, const std::optional<std::vector<std::string>>& state_active_ids,
    std::string_view context_planner_version,
    std::string_view context_catalog_snapshot_digest) const {
  if (context_planner_version != config_.planner_version) {
    throw PlannerValidationError("planner version mismatch");
  }
  if (context_catalog_snapshot_digest != environment_digest_) {
    throw PlannerValidationError("catalog snapshot does not match the pinned planning environment");
  }
  if (!observation.is_object() || !observation.contains("schema_id") ||
      !observation.contains("schema_version") || !observation.contains("value") ||
      observation["schema_id"] != std::string(kCurrentWorkSchemaId) ||
      observation["schema_version"] != 1) {
    throw PlannerValidationError("planner requires a current-work observation v1");
  }
  const WorkObservation work =
      WorkObservation::from_current_work(observation["value"], state_active_ids);
  return plan(work).decision_surrogate();
}

}  // namespace ctx::engine::planning
