#include "host/runtime/managed_query.hpp"

#include <algorithm>
#include <ostream>
#include <utility>

#include "host/engine/lexical.hpp"
#include "host/runtime/detail/managed_query_projector.hpp"

namespace ctx::runtime {
namespace {

constexpr std::size_t kMaxSelectedCapabilities = 5;

const std::string& require_digest(const std::string& value, const char* field) {
  if (!engine::is_digest(value)) {
    throw ManagedQueryError(std::string(field) + " must be a lowercase sha-256 digest");
  }
  return value;
}

std::optional<std::string> require_optional_digest(const std::optional<std::string>& value,
                                                   const char* field) {
  if (value) require_digest(*value, field);
  return value;
}

}  // namespace

ManagedCapabilitySelection ManagedQueryProjector::selection(const engine::PlanCapabilityV3& row) {
  // The actionability is re-derived from the typed authority the row carries, never trusted
  // from its label alone.
  engine::Actionability derived;
  if (row.load_material().has_value() && !row.install_descriptor().has_value()) {
    derived = engine::Actionability::kLoad;
  } else if (row.install_descriptor().has_value() && row.install_result_material().has_value() &&
             !row.load_material().has_value()) {
    derived = engine::Actionability::kInstall;
  } else if (!row.load_material() && !row.install_descriptor() && !row.install_result_material()) {
    derived = engine::Actionability::kManual;
  } else {
    throw ManagedQueryError("committed capability has unsupported planning authority");
  }
  if (row.actionability() != derived) {
    throw ManagedQueryError(
        "committed capability actionability does not match its typed authority");
  }
  if (!engine::is_capability_identity(row.capability_id(), row.kind())) {
    throw ManagedQueryError("committed capability identity is invalid");
  }
  ManagedCapabilitySelection out;
  out.capability_id_ = row.capability_id();
  out.kind_ = row.kind();
  out.name_ = row.name();
  out.actionability_ = derived;
  out.matching_signals_ = row.matching_signals();
  out.reason_codes_ = row.reason_codes();
  out.benefit_tier_ = row.tier();
  out.individual_net_benefit_u_ = row.individual_net_benefit_u();
  out.marginal_net_benefit_u_ = row.marginal_net_benefit_u();
  out.source_digest_ = require_digest(row.source_digest(), "source_digest");
  out.catalog_identity_digest_ =
      require_digest(row.catalog_identity().identity_digest(), "catalog_identity_digest");
  out.install_descriptor_digest_ =
      require_optional_digest(row.install_descriptor_digest(), "install_descriptor_digest");
  out.install_plan_digest_ =
      require_optional_digest(row.install_plan_digest(), "install_plan_digest");
  return out;
}

std::vector<const ManagedCapabilitySelection*> PreparedManagedQuery::by_relevance() const {
  std::vector<const ManagedCapabilitySelection*> out;
  out.reserve(selections_.size());
  for (const auto& row : selections_) out.push_back(&row);
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    if (a->individual_net_benefit_u() != b->individual_net_benefit_u()) {
      return a->individual_net_benefit_u() > b->individual_net_benefit_u();
    }
    return a->capability_id() < b->capability_id();
  });
  return out;
}

PreparedManagedQuery ManagedQueryProjector::prepared(const engine::CommittedPlanV3& committed,
                                                     std::int64_t journal_revision,
                                                     const std::string& journal_record_digest) {
  if (committed.capabilities().size() > kMaxSelectedCapabilities) {
    throw ManagedQueryError("committed plan exceeds the global capability bound");
  }
  if (journal_revision < 2) {
    throw ManagedQueryError("managed query journal revision must be at least two");
  }
  PreparedManagedQuery out;
  out.selections_.reserve(committed.capabilities().size());
  for (const auto& row : committed.capabilities()) out.selections_.push_back(selection(row));
  out.status_ = committed.status();
  out.abstention_code_ = committed.abstention_code();
  out.plan_id_ = committed.plan_id();
  out.planning_environment_digest_ =
      require_digest(committed.catalog_snapshot_id(), "planning_environment_digest");
  out.decision_digest_ = require_digest(committed.decision_digest(), "decision_digest");
  out.journal_revision_ = journal_revision;
  out.journal_record_digest_ = require_digest(journal_record_digest, "journal_record_digest");
  if (const auto& audit = committed.benefit_audit()) {
    out.benefit_result_digest_ = require_digest(audit->result_digest, "benefit_result_digest");
    out.requested_limit_ = audit->requested_limit;
    out.candidate_pool_count_ = audit->candidate_pool_count;
    out.search_evaluation_count_ = audit->search_evaluation_count;
  }
  return out;
}

ManagedAdvanceResult ManagedQueryProjector::advance(PreparedManagedQuery prepared,
                                                    engine::Transition transition) {
  return ManagedAdvanceResult(std::move(prepared), std::move(transition));
}

ManagedAdvanceResult::ManagedAdvanceResult(PreparedManagedQuery prepared,
                                           engine::Transition transition)
    : prepared_(std::move(prepared)), transition_(std::move(transition)) {}

std::ostream& operator<<(std::ostream& out, const ManagedCapabilitySelection& value) {
  return out << "ManagedCapabilitySelection(capability_id=" << value.capability_id_
             << ", kind=" << engine::to_string(value.kind_)
             << ", actionability=" << engine::to_string(value.actionability_) << ")";
}

std::ostream& operator<<(std::ostream& out, const PreparedManagedQuery& value) {
  return out << "PreparedManagedQuery(decision_digest=" << value.decision_digest_ << ")";
}

std::ostream& operator<<(std::ostream& out, const ManagedAdvanceResult& value) {
  return out << "ManagedAdvanceResult(plan_id=" << value.prepared_.plan_id()
             << ", event_id=" << value.transition_.event_id() << ")";
}

PreparedManagedQuery project_prepared_managed_query_snapshot(
    const EngineSnapshot& snapshot, const std::optional<std::string>& expected_plan_id) {
  if (expected_plan_id && !engine::is_opaque_token(*expected_plan_id)) {
    throw ManagedQueryError("expected_plan_id must be a canonical token");
  }
  if (snapshot.revision < 2) {
    throw ManagedQueryError("managed query snapshot revision must be at least two");
  }
  if (!snapshot.state.has_value() || snapshot.state->revision() != snapshot.revision) {
    throw ManagedQueryError("managed query snapshot must contain its exact state head");
  }
  if (!(snapshot.stream_id == snapshot.state->scope().stream_id())) {
    throw ManagedQueryError("managed query snapshot stream does not match its state");
  }
  const auto& committed = snapshot.state->committed_plan();
  if (!committed.has_value()) {
    throw ManagedQueryError("managed query snapshot has no exact committed schema-v3 plan");
  }
  if (!engine::is_opaque_token(committed->plan_id())) {
    throw ManagedQueryError("committed managed plan identity is not canonical");
  }
  if (expected_plan_id && committed->plan_id() != *expected_plan_id) {
    throw ManagedQueryError("managed query snapshot does not match the expected plan identity");
  }
  if (!snapshot.record_digest || !engine::is_digest(*snapshot.record_digest)) {
    throw ManagedQueryError("journal_record_digest must be a lowercase sha-256 digest");
  }
  return ManagedQueryProjector::prepared(*committed, snapshot.revision, *snapshot.record_digest);
}

std::optional<std::string> managed_replacement_refusal(const engine::EngineState& state) {
  if (state.session_status() == engine::SessionStatus::kEnded) {
    return "managed query session has ended";
  }
  if (!state.pending_effects().empty() || !state.pending_consents().empty()) {
    return "managed query must settle pending authority before replacement";
  }
  return std::nullopt;
}

}  // namespace ctx::runtime
