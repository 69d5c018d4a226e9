// ManagedQueryService::set_desired (runtime spec §3.9–§3.11) in its stages: the predecessor
// check, the canonical subset of the committed plan, the reservation of its event, the exactly-once
// commit and mark, the automatic installs and consent (preapproved_install.cpp,
// consent_publication.cpp), and the status derivation.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/state.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/preapproved_install.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

std::string desired_owner_id(const engine::ScopeRef& scope) {
  return "ctx-desired:" + core::canonical_digest({{"schema", "ctx.managed-desired-owner.v1"},
                                                  {"stream", scope.stream_id().stream_key()}},
                                                 core::Encoding::kAscii);
}

std::string lease_id(const engine::PlanCapabilityV3& row, const std::string& owner_id) {
  return "ctx-lease:" + core::canonical_digest({{"capability_id", row.capability_id()},
                                                {"kind", row.kind()},
                                                {"owner_id", owner_id},
                                                {"schema", "ctx.managed-desired-lease.v1"},
                                                {"source_digest", row.source_digest()}},
                                               core::Encoding::kAscii);
}

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// The head committed plan must still be the parent's (§3.9 step 6).
const engine::CommittedPlanV3& exact_parent_plan(const EngineSnapshot& snapshot,
                                                 const ManagedQueryRecord& parent) {
  if (!snapshot.state || !snapshot.state->committed_plan() ||
      std::optional<std::string>(snapshot.state->committed_plan()->plan_id()) != parent.plan_id() ||
      std::optional<std::string>(snapshot.state->committed_plan()->decision_digest()) !=
          parent.decision_digest() ||
      snapshot.state->committed_plan()->catalog_snapshot_id() !=
          parent.planning_environment_digest()) {
    throw ManagedDesiredSetSupersededError(
        "managed desired choice's parent plan is no longer authoritative");
  }
  return *snapshot.state->committed_plan();
}

// §3.9.1: a retried choice must name exactly the predecessor its stored event follows.
void require_retry_predecessor(ManagedQueryStore& store, const ManagedQueryRecord& parent,
                               const ManagedDesiredSetRecord& stored,
                               const ManagedDesiredSetRequest& request) {
  const auto& causation = stored.event().causation_id();
  if (causation == std::optional<std::string>(parent.decision_event().event_id())) {
    if (request.expected_previous_desired_set_ref()) {
      throw ManagedDesiredSetSupersededError("first desired choice cannot name a predecessor");
    }
    return;
  }
  if (!request.expected_previous_desired_set_ref()) {
    throw ManagedDesiredSetSupersededError("later desired choice must name its exact predecessor");
  }
  std::optional<ManagedDesiredSetRecord> previous;
  try {
    previous.emplace(store.load_desired_set(*request.expected_previous_desired_set_ref()));
  } catch (const ManagedQueryStoreNotFound&) {
    throw ManagedDesiredSetSupersededError("desired choice predecessor is unavailable");
  }
  if (!previous->committed() || previous->query_ref() != parent.query_ref() ||
      std::optional<std::string>(previous->event().event_id()) != causation) {
    throw ManagedDesiredSetSupersededError(
        "desired choice does not name the exact predecessor of its stored event");
  }
}

// The stream's latest desired set, and whether `request` retries it (same logical choice).
struct Predecessor {
  std::optional<ManagedDesiredSetRecord> latest;
  bool retry = false;
};

// §3.9 steps 1–4: a new choice follows the exact latest committed one; a retry names what its
// stored event follows; no other choice is pending on the stream.
Predecessor check_predecessor(ManagedQueryStore& store, const ManagedQueryRecord& parent,
                              const ManagedDesiredSetRequest& request) {
  Predecessor p{store.find_latest_desired_set(parent.query_ref()), false};
  p.retry = p.latest && p.latest->logical_choice_id() == request.logical_choice_id();
  if (!p.latest && request.expected_previous_desired_set_ref()) {
    throw ManagedDesiredSetSupersededError(
        "desired choice names a predecessor but the query has none");
  }
  if (p.latest && !p.retry) {
    if (!p.latest->committed()) {
      throw ManagedDesiredSetBusyError("another managed desired choice is pending on this stream");
    }
    if (request.expected_previous_desired_set_ref() !=
        std::optional<std::string>(p.latest->desired_set_ref())) {
      throw ManagedDesiredSetSupersededError(
          "desired choice does not name the exact latest committed predecessor");
    }
  }
  if (p.retry) require_retry_predecessor(store, parent, *p.latest, request);
  if (auto pending = store.find_pending_desired_set(parent.decision_event().scope());
      pending && !(p.retry && pending->desired_set_ref() == p.latest->desired_set_ref())) {
    throw ManagedDesiredSetBusyError("another managed desired choice is pending on this stream");
  }
  return p;
}

// The requested ids in the plan's order; each must be in the plan.
std::vector<std::string> canonical_ids(const engine::CommittedPlanV3& plan,
                                       const ManagedDesiredSetRequest& request) {
  const auto& wanted = request.capability_ids();
  for (const auto& id : wanted) {
    if (plan.find(id) == nullptr) {
      throw ManagedDesiredSetConflictError(
          "desired capability is not contained in the committed managed plan");
    }
  }
  std::vector<std::string> canonical;
  for (const auto& row : plan.capabilities()) {
    if (std::find(wanted.begin(), wanted.end(), row.capability_id()) != wanted.end()) {
      canonical.push_back(row.capability_id());
    }
  }
  return canonical;
}

// What one new desired event is made of.
struct DesiredChoice {
  const ManagedQueryRecord& parent;
  const ManagedDesiredSetRequest& request;
  const std::optional<ManagedDesiredSetRecord>& latest;
  const std::vector<std::string>& canonical;
  const EngineSnapshot& snapshot;
  const engine::CommittedPlanV3& plan;
  const std::string& policy_digest;
};

// §3.9 step 8: the ReassessmentRequested event of a new choice, identified by its content.
engine::EngineEvent desired_event(const DesiredChoice& choice, const core::Clock& clock) {
  const auto& decision = choice.parent.decision_event();
  const std::string owner = desired_owner_id(decision.scope());
  Json rows = Json::array();
  for (const auto& id : choice.canonical) {
    const auto* row = choice.plan.find(id);
    rows.push_back({{"actionability", row->actionability()},
                    {"capability_id", row->capability_id()},
                    {"install_descriptor_digest", optional_json(row->install_descriptor_digest())},
                    {"install_plan_digest", optional_json(row->install_plan_digest())},
                    {"kind", row->kind()},
                    {"lease_id", lease_id(*row, owner)},
                    {"source_digest", row->source_digest()}});
  }
  const std::string digest =
      core::canonical_digest({{"capability_ids", choice.canonical},
                              {"logical_choice_id", choice.request.logical_choice_id()},
                              {"plan_id", *choice.parent.plan_id()},
                              {"policy_snapshot_digest", choice.policy_digest},
                              {"query_ref", choice.parent.query_ref()},
                              {"revision", choice.snapshot.revision},
                              {"schema", "ctx.managed-desired-event.v1"}},
                             core::Encoding::kAscii);
  engine::EngineEvent::Fields fields = decision.fields();
  fields.event_id = "ctx-desired:" + digest;
  fields.kind = "ReassessmentRequested";
  fields.expected_revision = choice.snapshot.revision;
  fields.occurred_at = core::format_rfc3339(clock.now());
  fields.payload = {{"desired_capabilities", rows},
                    {"owner_id", owner},
                    {"policy_snapshot_digest", choice.policy_digest}};
  fields.correlation_id = choice.parent.plan_id();
  fields.causation_id = choice.latest ? choice.latest->event().event_id() : decision.event_id();
  return engine::EngineEvent::create(std::move(fields));
}

// §3.9 steps 7–9: reserves a new choice's event (a lost race to the same choice is that choice).
ManagedDesiredSetRecord reserve_choice(ManagedQueryStore& store, const DesiredChoice& choice,
                                       const core::Clock& clock) {
  const auto& state = *choice.snapshot.state;
  // A consent asked under an older policy is deferred, not pending: it does not hold the stream.
  if (!state.pending_effects().empty() ||
      detail::consent_pending_under(state, choice.policy_digest)) {
    throw ManagedDesiredSetBusyError("managed stream has an unresolved lifecycle effect");
  }
  auto event = desired_event(choice, clock);
  const auto& query_ref = choice.parent.query_ref();
  const auto& logical = choice.request.logical_choice_id();
  try {
    return store.reserve_desired_set(query_ref, logical, choice.canonical, event);
  } catch (const ManagedQueryStoreConflict&) {
    auto raced = store.find_latest_desired_set(query_ref);
    if (raced && raced->logical_choice_id() == logical &&
        raced->capability_ids() == choice.canonical &&
        raced->event().causation_id() == event.causation_id()) {
      return std::move(*raced);
    }
    throw ManagedDesiredSetBusyError("managed desired choice lost a concurrent stream race");
  }
}

// §3.9.3 recover-or-process: the reserved event commits exactly once; returns its verified
// journal record. The head may have moved on by exactly the one transition that followed it.
engine::JournalRecord commit_choice(EngineComposition& composition,
                                    store::SqliteJournalStore& journal,
                                    const engine::EngineEvent& event) {
  const engine::Transition transition = [&] {
    try {
      return composition.process(event);
    } catch (const engine::RevisionConflict&) {
      throw ManagedDesiredSetConflictError(
          "managed desired-set journal revision was committed by another event");
    }
  }();
  if (transition.event_id() != event.event_id() ||
      transition.from_revision() != event.expected_revision() ||
      transition.to_revision() != event.expected_revision() + 1 ||
      transition.actions().size() > kMaxManagedActionSummaries) {
    throw ManagedQueryServiceError("managed desired transition does not match its event");
  }
  const auto& stream = event.scope().stream_id();
  const auto head = composition.snapshot(event.scope());
  auto record = journal.find(stream, event.event_id());
  if (!record || record->revision != event.expected_revision() + 1 ||
      record->event_content_digest != event.content_digest() ||
      record->transition_digest != core::sha256_hex(transition.to_json_text())) {
    throw ManagedDesiredSetConflictError(
        "managed desired-set journal revision was committed by another event");
  }
  if (head.revision != record->revision) {
    auto tail = journal.read(stream, head.revision - 1);
    if (tail.size() != 1) throw ManagedQueryHeadDriftError("managed stream head moved");
    static_cast<void>(engine::Transition::from_json_text(tail.front().transition_json));
  }
  return std::move(*record);
}

// The marked ids matching `pick`, in the marked (plan) order.
template <typename Pick>
std::vector<std::string> marked_where(const ManagedDesiredSetRecord& marked, Pick pick) {
  std::vector<std::string> out;
  for (const auto& id : marked.capability_ids()) {
    if (pick(id)) out.push_back(id);
  }
  return out;
}

// §3.11 status derivation, in its order.
ManagedDesiredSetResult desired_result(const engine::CommittedPlanV3& plan,
                                       const ManagedDesiredSetRecord& marked,
                                       const detail::DesiredProgress& progress,
                                       std::optional<ManagedConsentChallengeProjection> challenge) {
  const auto& state = *progress.head.state;
  const auto& blocked = state.fields().blocked_install_descriptor_digests;
  const auto installable = [&](const std::string& id) {
    return plan.find(id)->actionability() == engine::Actionability::kInstall;
  };
  const auto absent = [&](const std::string& id) {
    const auto* capability = state.capability(id);
    return capability == nullptr || capability->installation == engine::Installation::kAbsent;
  };
  const auto manual = marked_where(marked, [&](const std::string& id) {
    return plan.find(id)->actionability() == engine::Actionability::kManual;
  });
  auto failed = marked_where(marked, [&](const std::string& id) {
    const auto& descriptor = plan.find(id)->install_descriptor_digest();
    return installable(id) && absent(id) && descriptor &&
           std::find(blocked.begin(), blocked.end(), *descriptor) != blocked.end();
  });
  const auto install_missing = marked_where(marked, [&](const std::string& id) {
    const auto* capability = state.capability(id);
    return installable(id) && absent(id) && capability != nullptr && capability->desired() &&
           std::find(failed.begin(), failed.end(), id) == failed.end();
  });
  auto actions = ManagedActionSummary::of_all(progress.head_actions);
  ManagedDesiredStatus status = ManagedDesiredStatus::kReconciled;
  std::optional<std::string> reason;
  std::vector<std::string> deferred;
  const auto& indeterminate = progress.indeterminate_ids;
  if (!indeterminate.empty()) {
    status = ManagedDesiredStatus::kLifecycleDeferred;
    reason = "automatic-install-indeterminate";
    deferred = marked_where(marked, [&](const std::string& id) {
      return std::find(indeterminate.begin(), indeterminate.end(), id) != indeterminate.end();
    });
  } else if (challenge) {
    status = ManagedDesiredStatus::kConsentRequired;
  } else if (progress.policy_drift) {
    status = ManagedDesiredStatus::kLifecycleDeferred;
    reason = "install-policy-changed-after-desired-commit";
    deferred = marked_where(marked, [&](const std::string& id) {
      const auto& consents = state.pending_consents();
      return std::any_of(consents.begin(), consents.end(), [&](const auto& consent) {
        return consent.install_action.entity_id() == std::optional<std::string>(id);
      });
    });
  } else if (!manual.empty()) {
    status = ManagedDesiredStatus::kManualDeferred;
    reason = "manual-capability-requires-user-action";
    deferred = manual;
  } else if (!state.pending_effects().empty() || !actions.empty()) {
    status = ManagedDesiredStatus::kEffectPending;
  } else if (!failed.empty()) {
    status = ManagedDesiredStatus::kLifecycleDeferred;
    reason = "automatic-install-failed";
    deferred = failed;
  } else if (!state.pending_consents().empty()) {
    throw ManagedQueryServiceError(
        "managed pending consent has no publication or automatic installation route");
  } else if (!install_missing.empty()) {
    status = ManagedDesiredStatus::kLifecycleDeferred;
    reason = "install-lifecycle-authority-missing";
    deferred = install_missing;
  }
  return ManagedDesiredSetResult::create(marked, std::move(deferred), std::move(failed), status,
                                         std::move(reason), std::move(actions),
                                         std::move(challenge));
}

}  // namespace

ManagedDesiredSetResult ManagedQueryService::set_desired(const ManagedDesiredSetRequest& request) {
  Operation op(*this);
  op.lifecycle();
  auto& store = *options_.query_store;
  const auto parent = store.load(request.query_ref());
  if (!parent.planned() || !parent.decision_digest()) {
    throw ManagedDesiredSetConflictError(
        "managed desired choice requires an exactly planned parent query");
  }
  const auto input = input_of(parent);
  const auto& scope = parent.decision_event().scope();
  auto predecessor = check_predecessor(store, parent, request);

  EngineComposition& composition = op.composition(input->artifact_handle());
  const auto snapshot = composition.snapshot(scope);
  const auto& plan = exact_parent_plan(snapshot, parent);
  const auto canonical = canonical_ids(plan, request);
  std::optional<ManagedDesiredSetRecord> reserved;
  if (predecessor.retry) {
    if (predecessor.latest->capability_ids() != canonical) {
      throw ManagedDesiredSetConflictError(
          "logical desired choice is already bound to another subset");
    }
    reserved.emplace(std::move(*predecessor.latest));
  } else {
    const std::string policy_digest = current_install_policy().policy_digest();
    reserved.emplace(reserve_choice(store,
                                    DesiredChoice{parent, request, predecessor.latest, canonical,
                                                  snapshot, plan, policy_digest},
                                    clock()));
  }
  crash_point(service_crash_points::kAfterDesiredReservation);
  const auto record = commit_choice(composition, journal_reader(), reserved->event());
  crash_point(service_crash_points::kAfterDesiredCommit);
  auto marked = store.mark_desired_set_committed(reserved->desired_set_ref(), record.revision,
                                                 record.record_digest, record.transition_digest);
  crash_point(service_crash_points::kAfterDesiredMark);

  // §3.9 steps 11–13: policy drift defers; otherwise the automatic (preapproved) installs run
  // and the remaining interactive consent, if any, is published.
  auto progress = detail::progress_desired_installs(
      composition, detail::DesiredInstallContext{parent, marked, options_.policy_store_root,
                                                 options_.install_approvals.get(), clock()});
  std::optional<ManagedConsentChallengeProjection> challenge =
      progress.policy_drift || !progress.indeterminate_ids.empty()
          ? std::nullopt
          : publish_current_consent(composition, scope, *parent.plan_id());
  return desired_result(plan, marked, progress, std::move(challenge));
}

}  // namespace ctx::runtime
