#include "host/runtime/composition.hpp"

#include <unistd.h>

#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/detail/composition_parts.hpp"
#include "host/runtime/detail/managed_query_projector.hpp"

namespace ctx::runtime {
namespace {

void require_digest(const std::string& value, const char* field) {
  if (!engine::is_digest(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase sha-256 digest");
  }
}

bool same_optional(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  return a == b;
}

}  // namespace

EngineComposition::EngineComposition(std::unique_ptr<detail::CompositionParts> parts)
    : parts_(std::move(parts)), owner_pid_(::getpid()) {
  catalog_snapshot_digest_ = parts_->planner->planning_environment_digest();
  planner_version_ = parts_->planner->planner_version();
}

EngineComposition::~EngineComposition() {
  if (owner_pid_ == ::getpid()) {
    close();
    return;
  }
  // A forked child inherited the parent's SQLite connections and file descriptors. Closing them
  // here would finalize statements, release locks or checkpoint under the parent (SQLite forbids
  // carrying a connection across fork), so the child deliberately leaks them; its exit reclaims
  // the memory and the kernel drops its descriptor copies.
  static_cast<void>(parts_.release());
}

void EngineComposition::assert_usable() const {
  if (::getpid() != owner_pid_) {
    throw FailedPrecondition("engine composition cannot be used from a forked process");
  }
  if (closed_) throw FailedPrecondition("engine composition is closed");
}

bool EngineComposition::closed() const {
  if (::getpid() != owner_pid_) {
    throw FailedPrecondition("engine composition cannot be used from a forked process");
  }
  std::lock_guard lock(mutex_);
  return closed_;
}

void EngineComposition::close() {
  if (::getpid() != owner_pid_) {
    throw FailedPrecondition("engine composition cannot be used from a forked process");
  }
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  // Release in dependency order: the engine and planner reference the graph snapshot.
  parts_->release();
}

engine::Transition EngineComposition::process(const engine::EngineEvent& event) {
  std::lock_guard lock(mutex_);
  assert_usable();
  // A policy the engine held for a preapproved grant stays held only for this one transition.
  struct ReleaseHeldPolicy {
    detail::CompositionParts& parts;
    ~ReleaseHeldPolicy() { parts.release_held_policy(); }
  } release{*parts_};
  auto transition = parts_->engine->process(event);
  last_committed_.emplace(Committed{event.scope().stream_id(), transition});
  return transition;
}

EngineSnapshot EngineComposition::snapshot(const engine::ScopeRef& scope) {
  std::lock_guard lock(mutex_);
  assert_usable();
  return parts_->engine->snapshot(scope.stream_id());
}

PreparedManagedQuery EngineComposition::prepare_managed_query(
    const engine::EngineEvent& session_started, const engine::EngineEvent& intent_observed) {
  std::lock_guard lock(mutex_);
  assert_usable();
  if (session_started.event_kind() != engine::EventKind::kSessionStarted ||
      session_started.expected_revision() != 0) {
    throw ManagedQueryError("managed query must begin with SessionStarted revision zero");
  }
  if (intent_observed.event_kind() != engine::EventKind::kIntentObserved ||
      intent_observed.expected_revision() != 1) {
    throw ManagedQueryError("managed query must plan with IntentObserved revision one");
  }
  if (!(session_started.scope() == intent_observed.scope())) {
    throw ManagedQueryError("managed query planning events must share one exact scope");
  }
  if (session_started.correlation_id() != intent_observed.correlation_id()) {
    throw ManagedQueryError("managed query planning events must share one plan identity");
  }
  const std::pair<const char*, bool> agreements[] = {
      {"catalog_snapshot_digest", same_optional(session_started.catalog_snapshot_digest(),
                                                intent_observed.catalog_snapshot_digest())},
      {"planner_version",
       same_optional(session_started.planner_version(), intent_observed.planner_version())},
      {"semantic_index_digest", same_optional(session_started.semantic_index_digest(),
                                              intent_observed.semantic_index_digest())},
      {"work_signature",
       same_optional(session_started.work_signature(), intent_observed.work_signature())}};
  for (const auto& [field, agrees] : agreements) {
    if (!agrees) {
      throw ManagedQueryError(std::string("managed query planning events disagree on ") + field);
    }
  }
  auto& engine = *parts_->engine;
  const auto initial = engine.snapshot(session_started.scope().stream_id());
  if (initial.revision != 0 || initial.state.has_value()) {
    throw ManagedQueryError("managed query scope already contains authoritative state");
  }
  const auto started = engine.process(session_started);
  if (!(started.scope() == session_started.scope()) || started.to_revision() != 1) {
    throw ManagedQueryError("managed query session did not commit exactly revision one");
  }
  const auto planned = engine.process(intent_observed);
  const auto snapshot = engine.snapshot(intent_observed.scope().stream_id());
  if (!(planned.scope() == intent_observed.scope()) || planned.to_revision() != 2 ||
      snapshot.revision != 2 || !snapshot.record_digest || !snapshot.state ||
      !snapshot.state->committed_plan()) {
    throw ManagedQueryError("managed query did not commit one exact schema-v3 plan");
  }
  const auto& committed = *snapshot.state->committed_plan();
  if (std::optional<std::string>(committed.plan_id()) != intent_observed.correlation_id() ||
      std::optional<std::string>(committed.catalog_snapshot_id()) !=
          intent_observed.catalog_snapshot_digest()) {
    throw ManagedQueryError("committed managed plan lost its event identity");
  }
  return ManagedQueryProjector::prepared(committed, snapshot.revision, *snapshot.record_digest);
}

PreparedManagedQuery EngineComposition::reopen_managed_query(
    const engine::ScopeRef& scope, const std::optional<std::string>& expected_plan_id) {
  std::lock_guard lock(mutex_);
  assert_usable();
  return project_managed_snapshot(parts_->engine->snapshot(scope.stream_id()), expected_plan_id);
}

PreparedManagedQuery EngineComposition::project_managed_snapshot(
    const EngineSnapshot& snapshot, const std::optional<std::string>& expected) {
  auto prepared = project_prepared_managed_query_snapshot(snapshot, expected);
  if (prepared.planning_environment_digest() != catalog_snapshot_digest_) {
    throw ManagedQueryError("committed managed plan does not match this planning environment");
  }
  return prepared;
}

void EngineComposition::validate_managed_advance_events(
    const engine::EngineEvent& session_started,
    const engine::EngineEvent& planning_observed) const {
  if (session_started.event_kind() != engine::EventKind::kSessionStarted ||
      session_started.expected_revision() != 0) {
    throw ManagedQueryError("managed advance requires SessionStarted revision zero");
  }
  const auto revision = planning_observed.expected_revision();
  if (revision < 1 ||
      planning_observed.event_kind() != (revision == 1 ? engine::EventKind::kIntentObserved
                                                       : engine::EventKind::kDevelopmentObserved)) {
    throw ManagedQueryError(
        "managed planning must use IntentObserved at revision one and DevelopmentObserved "
        "afterward");
  }
  if (!(session_started.scope().stream_id() == planning_observed.scope().stream_id())) {
    throw ManagedQueryError("managed planning events must share one stable stream");
  }
  for (const auto* event : {&session_started, &planning_observed}) {
    if (event->catalog_snapshot_digest() != std::optional<std::string>(catalog_snapshot_digest_)) {
      throw ManagedQueryError("managed planning event does not match the planning environment");
    }
    if (event->planner_version() != std::optional<std::string>(planner_version_)) {
      throw ManagedQueryError("managed planning event does not match the planner");
    }
  }
  const std::pair<const char*, bool> agreements[] = {
      {"host_descriptor_digest", same_optional(session_started.host_descriptor_digest(),
                                               planning_observed.host_descriptor_digest())},
      {"semantic_model_digest", same_optional(session_started.semantic_model_digest(),
                                              planning_observed.semantic_model_digest())},
      {"semantic_index_digest", same_optional(session_started.semantic_index_digest(),
                                              planning_observed.semantic_index_digest())}};
  for (const auto& [field, agrees] : agreements) {
    if (!agrees) {
      throw ManagedQueryError(std::string("managed planning events disagree on ") + field);
    }
  }
  if (revision == 1 &&
      (session_started.correlation_id() != planning_observed.correlation_id() ||
       session_started.work_signature() != planning_observed.work_signature())) {
    throw ManagedQueryError("initial managed planning must preserve its plan and work identity");
  }
}

ManagedAdvanceResult EngineComposition::advance_managed_query(
    const engine::EngineEvent& session_started, const engine::EngineEvent& planning_observed) {
  std::lock_guard lock(mutex_);
  assert_usable();
  validate_managed_advance_events(session_started, planning_observed);
  auto& engine = *parts_->engine;
  const auto stream = session_started.scope().stream_id();
  const auto initial = engine.snapshot(stream);
  if (initial.revision <= 1 && planning_observed.expected_revision() != 1) {
    throw ManagedQueryError("an unplanned managed session requires IntentObserved revision one");
  }

  const auto started = engine.process(session_started);
  if (started.event_id() != session_started.event_id() ||
      !(started.scope() == session_started.scope()) || started.from_revision() != 0 ||
      started.to_revision() != 1 || !(started.scope().stream_id() == stream)) {
    throw ManagedQueryError("managed query lost its exact session-start identity");
  }

  const auto current = engine.snapshot(stream);
  if (current.revision < 1 || !current.state.has_value()) {
    throw ManagedQueryError("managed query session start is not authoritative");
  }
  const auto& state = *current.state;
  const bool is_new_replacement =
      current.revision >= 2 && planning_observed.expected_revision() == current.revision;
  if (is_new_replacement) {
    if (!state.committed_plan().has_value()) {
      throw ManagedQueryError("managed replacement requires an exact committed schema-v3 plan");
    }
    if (std::optional<std::string>(state.committed_plan()->plan_id()) ==
        planning_observed.correlation_id()) {
      throw ManagedQueryError(
          "managed replacement plan identity is already committed; an exact retry must reuse "
          "its original revision");
    }
    if (const auto refusal = managed_replacement_refusal(state)) throw ManagedQueryError(*refusal);
  }

  auto planned = engine.process(planning_observed);
  if (planned.event_id() != planning_observed.event_id() ||
      !(planned.scope() == planning_observed.scope()) ||
      planned.from_revision() != planning_observed.expected_revision() ||
      planned.to_revision() != planning_observed.expected_revision() + 1 ||
      !(planned.scope().stream_id() == stream)) {
    throw ManagedQueryError("managed query lost its exact planning-event identity");
  }
  auto prepared = project_managed_snapshot(engine.snapshot(stream),
                                           planning_observed.correlation_id());
  return ManagedQueryProjector::advance(std::move(prepared), std::move(planned));
}

ActivationExecutionReport EngineComposition::execute_activation(
    const engine::HostAction& action, const engine::InstallExecutionBinding& binding,
    std::string_view expected_host_descriptor_digest, std::string_view verification_digest) {
  std::lock_guard lock(mutex_);
  assert_usable();
  const detail::ActivationActuators actuators{*parts_->engine, parts_->activation.get(),
                                              parts_->journal_path};
  return detail::execute_activation(actuators, action, binding, expected_host_descriptor_digest,
                                    verification_digest);
}

DeactivationExecutionReport EngineComposition::execute_deactivation(
    const engine::HostAction& action, DeactivationMode mode) {
  std::lock_guard lock(mutex_);
  assert_usable();
  const detail::ActivationActuators actuators{*parts_->engine, parts_->activation.get(),
                                              parts_->journal_path};
  return detail::execute_deactivation(actuators, *parts_->clock, action, mode);
}

engine::InstallExecutionBinding EngineComposition::resolve_install_execution_binding(
    const engine::HostAction& action, const engine::PlanCapabilityV3& selection) {
  std::lock_guard lock(mutex_);
  assert_usable();
  if (!selection.is_install() || !selection.install_descriptor() ||
      !selection.install_result_material()) {
    throw InstallExecutionError("install binding requires a selection with install authority");
  }
  if (!parts_->install_actuator) {
    throw InstallExecutionError("composition has no physical installation actuator");
  }
  const engine::InstallBinding* install = action.install_payload();
  if (install == nullptr ||
      action.entity_id() != std::optional<std::string>(selection.capability_id()) ||
      action.source_digest() != std::optional<std::string>(selection.source_digest()) ||
      action.catalog_snapshot_id() != std::optional<std::string>(catalog_snapshot_digest_) ||
      install->catalog_identity != selection.catalog_identity() ||
      install->install_plan_descriptor != *selection.install_descriptor() ||
      install->result_material != *selection.install_result_material()) {
    throw InstallExecutionError("install action does not match its selection");
  }
  return resolve_install_binding(parts_->install_actuator.get(), selection);
}

InstallExecutionReport EngineComposition::execute_install(
    const engine::HostAction& action, const engine::PlanCapabilityV3& selection,
    const engine::InstallExecutionBinding& captured_binding,
    std::string_view expected_policy_digest) {
  std::lock_guard lock(mutex_);
  assert_usable();
  if (!parts_->install_actuator) {
    throw InstallExecutionError("composition has no physical installation actuator");
  }
  const detail::InstallActuators actuators{*parts_->engine, parts_->install_actuator.get(),
                                           parts_->journal_path, catalog_snapshot_digest_};
  return detail::execute_install(actuators, action, selection, captured_binding,
                                 expected_policy_digest);
}

engine::InstallExecutionStatus EngineComposition::install_execution_status(
    const engine::HostAction& action) {
  std::lock_guard lock(mutex_);
  assert_usable();
  return parts_->engine->install_execution_status(action);
}

std::optional<engine::JournalRecord> EngineComposition::journal_record(
    const engine::ScopeRef& scope, engine::Revision revision) {
  std::lock_guard lock(mutex_);
  assert_usable();
  if (revision < 1) return std::nullopt;
  for (auto& record : parts_->journal_port().read(scope.stream_id(), revision - 1)) {
    if (record.revision == revision) return std::move(record);
    if (record.revision > revision) break;
  }
  return std::nullopt;
}

std::optional<engine::Transition> EngineComposition::transition_at(const engine::ScopeRef& scope,
                                                                  engine::Revision revision) {
  std::lock_guard lock(mutex_);
  assert_usable();
  if (last_committed_ && last_committed_->transition.to_revision() == revision &&
      last_committed_->stream == scope.stream_id()) {
    return last_committed_->transition;
  }
  auto record = journal_record(scope, revision);
  if (!record) return std::nullopt;
  return engine::Transition::from_json_text(record->transition_json);
}

PreparedManagedQuery prepare_managed_query(EngineComposition& composition,
                                           const engine::EngineEvent& session_started,
                                           const engine::EngineEvent& intent_observed) {
  return composition.prepare_managed_query(session_started, intent_observed);
}

ManagedAdvanceResult advance_managed_query(EngineComposition& composition,
                                           const engine::EngineEvent& session_started,
                                           const engine::EngineEvent& planning_observed) {
  return composition.advance_managed_query(session_started, planning_observed);
}

PreparedManagedQuery reopen_managed_query(EngineComposition& composition,
                                          const engine::ScopeRef& scope,
                                          const std::optional<std::string>& expected_plan_id) {
  return composition.reopen_managed_query(scope, expected_plan_id);
}

std::unique_ptr<EngineComposition> open_engine_composition(EngineCompositionOptions options) {
  if (options.graph_artifact_path.empty()) {
    throw InvalidArgument("graph_artifact_path must be a path");
  }
  if (options.journal_path.empty()) throw InvalidArgument("journal_path must be a path");
  if (options.benefit_audit_path.empty()) {
    throw InvalidArgument("benefit_audit_path must be a path");
  }
  if (!options.observation_normalizer) {
    throw InvalidArgument("observation_normalizer must be callable");
  }
  if (!options.benefit_facts_port) {
    throw InvalidArgument("benefit_facts_port must implement the authenticated facts contract");
  }
  require_digest(options.graph_artifact_sha256, "graph_artifact_sha256");
  require_digest(options.catalog_namespace_digest, "catalog_namespace_digest");
  if (!engine::is_opaque_token(options.planner_version)) {
    throw InvalidArgument("planner_version must be an opaque token");
  }
  auto parts = detail::CompositionParts::open(std::move(options));
  return std::unique_ptr<EngineComposition>(new EngineComposition(std::move(parts)));
}

}  // namespace ctx::runtime
