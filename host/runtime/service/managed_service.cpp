#include "host/runtime/service/managed_service.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <set>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/state.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/runtime/service/interactive_guard_slot.hpp"
#include "host/runtime/service/preapproved_install.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

constexpr std::chrono::milliseconds kLifecycleLockTimeout{30'000};
const core::SystemClock kSystemClock;

// Identity of a path for aliasing checks: (device, inode) when it exists, else its resolved form.
struct PathIdentity {
  std::filesystem::path resolved;
  std::optional<std::pair<dev_t, ino_t>> inode;
};

PathIdentity identity_of(const std::filesystem::path& path) {
  PathIdentity id;
  std::error_code ignored;
  id.resolved = std::filesystem::weakly_canonical(path, ignored);
  if (id.resolved.empty()) id.resolved = path.lexically_normal();
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) id.inode = std::make_pair(info.st_dev, info.st_ino);
  return id;
}

bool aliases(const PathIdentity& a, const PathIdentity& b) {
  if (a.resolved == b.resolved) return true;
  return a.inode && b.inode && *a.inode == *b.inode;
}

// An existing directory that holds service outputs must be ours and closed to others.
void require_private_parent(const std::filesystem::path& path, const char* field) {
  const auto parent = path.parent_path();
  struct stat info {};
  if (::stat(parent.c_str(), &info) != 0) return;  // created privately on first use
  if (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
    throw InvalidArgument(std::string(field) +
                          " must be inside a private directory owned by this user");
  }
}

// The port snapshots a managed composition pins must be the handle's. Errors: InvalidArgument.
void require_ports_match(const ManagedArtifactHandle& artifact,
                         const BenefitFactsPort& facts,
                         const NetBenefitPolicy& policy,
                         const MaterialPort* material,
                         const InstallBundlePort* install) {
  if (facts.benefit_facts_snapshot_digest() != artifact.benefit_facts_snapshot_digest()) {
    throw InvalidArgument("managed benefit facts snapshot does not match the handle");
  }
  if (policy.policy_digest() != artifact.benefit_policy_snapshot_digest()) {
    throw InvalidArgument("managed benefit policy snapshot does not match the handle");
  }
  if (material && material->material_snapshot_digest() != artifact.material_snapshot_digest()) {
    throw InvalidArgument("managed material snapshot does not match the handle");
  }
  if (install &&
      install->installation_snapshot_digest() != artifact.installation_snapshot_digest()) {
    throw InvalidArgument("managed installation snapshot does not match the handle");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Value types

std::shared_ptr<const ManagedQueryInput> ManagedQueryInput::create(
    std::shared_ptr<const ManagedArtifactHandle> artifact, engine::EngineEvent session_started,
    engine::EngineEvent decision_event) {
  if (!artifact) throw InvalidArgument("managed query input requires an artifact handle");
  return std::shared_ptr<const ManagedQueryInput>(new ManagedQueryInput(
      std::move(artifact), std::move(session_started), std::move(decision_event)));
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryInput& value) {
  return out << "ManagedQueryInput(manifest_digest='" << value.artifact().manifest_digest() << "')";
}

ManagedQueryRequest ManagedQueryRequest::create(std::string logical_query_id,
                                                std::string current_work_ref) {
  if (!core::is_sha256_hex(logical_query_id)) {
    throw InvalidArgument("logical_query_id must be a lowercase SHA-256 digest");
  }
  if (!engine::is_opaque_token(current_work_ref)) {
    throw InvalidArgument("current_work_ref must be an opaque token");
  }
  return ManagedQueryRequest(std::move(logical_query_id), std::move(current_work_ref));
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryRequest& value) {
  return out << "ManagedQueryRequest(logical_query_id='" << value.logical_query_id_ << "')";
}

ManagedDesiredSetRequest ManagedDesiredSetRequest::create(
    std::string query_ref, std::string logical_choice_id, std::vector<std::string> capability_ids,
    std::optional<std::string> expected_previous_desired_set_ref) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  if (!core::is_sha256_hex(logical_choice_id)) {
    throw InvalidArgument("logical_choice_id must be a lowercase SHA-256 digest");
  }
  if (capability_ids.size() > kMaxDesiredCapabilities) {
    throw InvalidArgument("desired capability_ids must not contain more than five entries");
  }
  for (const auto& id : capability_ids) {
    if (!engine::is_canonical_token(id)) {
      throw InvalidArgument("desired capability ids must be lowercase capability tokens");
    }
  }
  if (std::set<std::string>(capability_ids.begin(), capability_ids.end()).size() !=
      capability_ids.size()) {
    throw InvalidArgument("desired capability ids must be unique");
  }
  if (expected_previous_desired_set_ref &&
      !is_desired_set_ref(*expected_previous_desired_set_ref)) {
    throw InvalidArgument(
        "expected_previous_desired_set_ref must be an opaque managed desired-set reference");
  }
  ManagedDesiredSetRequest request;
  request.query_ref_ = std::move(query_ref);
  request.logical_choice_id_ = std::move(logical_choice_id);
  request.capability_ids_ = std::move(capability_ids);
  request.expected_previous_ = std::move(expected_previous_desired_set_ref);
  return request;
}

std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRequest& value) {
  return out << "ManagedDesiredSetRequest(query_ref='" << value.query_ref_
             << "', logical_choice_id='" << value.logical_choice_id_ << "')";
}

ManagedActionSummary ManagedActionSummary::of(const engine::HostAction& action) {
  ManagedActionSummary summary;
  summary.action_id_ = action.action_id();
  summary.kind_ = action.action_kind();
  summary.entity_id_ = action.entity_id();
  return summary;
}

std::vector<ManagedActionSummary> ManagedActionSummary::of_all(
    const std::vector<engine::HostAction>& actions) {
  if (actions.size() > kMaxManagedActionSummaries) {
    throw ManagedQueryServiceError("managed transition carries too many actions");
  }
  std::vector<ManagedActionSummary> out;
  out.reserve(actions.size());
  for (const auto& action : actions) out.push_back(of(action));
  return out;
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryServiceResult& value) {
  return out << "ManagedQueryServiceResult(query_ref='" << value.query_ref_
             << "', decision_digest='" << value.prepared_.decision_digest() << "')";
}

std::ostream& operator<<(std::ostream& out, ManagedDesiredStatus status) {
  return out << to_string(status);
}

std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetResult& value) {
  return out << "ManagedDesiredSetResult(desired_set_ref='" << value.desired_set_ref_
             << "', status='" << to_string(value.status_) << "')";
}

namespace {

// `subset` must be `ordered` filtered to a set, in its order, without duplicates.
bool canonical_subset(const std::vector<std::string>& subset,
                      const std::vector<std::string>& ordered) {
  std::size_t at = 0;
  for (const auto& id : subset) {
    while (at < ordered.size() && ordered[at] != id) ++at;
    if (at == ordered.size()) return false;
    ++at;
  }
  return true;
}

}  // namespace

ManagedDesiredSetResult ManagedDesiredSetResult::create(
    const ManagedDesiredSetRecord& record, std::vector<std::string> deferred,
    std::vector<std::string> failed, ManagedDesiredStatus status,
    std::optional<std::string> reason_code, std::vector<ManagedActionSummary> actions,
    std::optional<ManagedConsentChallengeProjection> challenge) {
  if (!record.committed() || !record.journal_record_digest() ||
      !is_desired_set_ref(record.desired_set_ref())) {
    throw ManagedQueryServiceError(
        "managed desired result requires a committed desired-set record");
  }
  const bool deferred_status = status == ManagedDesiredStatus::kManualDeferred ||
                               status == ManagedDesiredStatus::kLifecycleDeferred;
  if (reason_code.has_value() != deferred_status ||
      (reason_code && !engine::is_opaque_token(*reason_code))) {
    throw ManagedQueryServiceError(
        "managed desired result reason code must be present exactly for deferred statuses");
  }
  if (challenge.has_value() != (status == ManagedDesiredStatus::kConsentRequired)) {
    throw ManagedQueryServiceError(
        "managed desired result carries a challenge exactly when consent is required");
  }
  if (!canonical_subset(deferred, record.capability_ids()) || deferred.empty() == deferred_status) {
    throw ManagedQueryServiceError(
        "managed desired result deferred subset must be a non-empty canonical subset exactly "
        "for deferred statuses");
  }
  if (!canonical_subset(failed, record.capability_ids()) ||
      failed.size() > kMaxDesiredCapabilities ||
      (status == ManagedDesiredStatus::kReconciled && !failed.empty())) {
    throw ManagedQueryServiceError(
        "managed desired result failed subset must be a canonical subset, empty when "
        "reconciled");
  }
  if (actions.size() > kMaxManagedActionSummaries) {
    throw ManagedQueryServiceError("managed desired result carries too many action summaries");
  }
  if (challenge) {
    const auto matching = std::count_if(actions.begin(), actions.end(), [&](const auto& a) {
      return a.kind() == engine::ActionKind::kRequestConsent &&
             a.entity_id() == std::optional<std::string>(challenge->capability_id());
    });
    if (matching != 1) {
      throw ManagedQueryServiceError(
          "managed desired result challenge needs exactly one RequestConsent action summary");
    }
  }
  ManagedDesiredSetResult result;
  result.query_ref_ = record.query_ref();
  result.desired_set_ref_ = record.desired_set_ref();
  result.logical_choice_id_ = record.logical_choice_id();
  result.capability_ids_ = record.capability_ids();
  result.deferred_ = std::move(deferred);
  result.failed_ = std::move(failed);
  result.status_ = status;
  result.reason_code_ = std::move(reason_code);
  result.plan_id_ = record.plan_id();
  result.decision_digest_ = record.decision_digest();
  result.journal_revision_ = *record.journal_revision();
  result.journal_record_digest_ = *record.journal_record_digest();
  result.actions_ = std::move(actions);
  if (challenge) result.challenge_.emplace(std::move(*challenge));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Managed composition

std::unique_ptr<EngineComposition> open_managed_engine_composition(
    const ManagedArtifactRegistry& registry, std::shared_ptr<const ManagedArtifactHandle> artifact,
    ManagedCompositionOptions options) {
  if (!artifact) throw InvalidArgument("managed composition requires an artifact handle");
  if (!options.benefit_facts_port || !options.net_benefit_policy) {
    throw InvalidArgument("managed composition requires benefit facts and a net-benefit policy");
  }
  const auto graph_path = registry.graph_artifact_path(*artifact);  // "not issued"
  require_ports_match(*artifact, *options.benefit_facts_port, *options.net_benefit_policy,
                      options.material_port.get(), options.install_bundle_port.get());
  EngineCompositionOptions composition;
  composition.graph_artifact_path = graph_path;
  composition.graph_artifact_sha256 = artifact->graph_artifact_digest();
  composition.journal_path = options.journal_path;
  composition.shared_journal = std::move(options.journal);
  composition.observation_normalizer = [artifact](const engine::ObservationReference& reference,
                                                  const engine::EngineState*) {
    return artifact->normalize(reference);
  };
  composition.benefit_facts_port = std::move(options.benefit_facts_port);
  composition.net_benefit_policy = std::move(options.net_benefit_policy);
  composition.catalog_namespace_digest = artifact->catalog_namespace_digest();
  composition.benefit_audit_path = options.benefit_audit_path;
  composition.material_port = std::move(options.material_port);
  composition.install_bundle_port = std::move(options.install_bundle_port);
  composition.planner_version = artifact->planning_schema_version();
  composition.interactive_install_decision_guard =
      std::move(options.interactive_install_decision_guard);
  composition.trusted_clock = std::move(options.trusted_clock);
  composition.install_actuator = std::move(options.install_actuator);
  composition.policy_store_root = std::move(options.policy_store_root);
  composition.install_approvals = std::move(options.install_approvals);
  composition.activation_port = std::move(options.activation_port);
  auto opened = open_engine_composition(std::move(composition));
  if (opened->catalog_snapshot_digest() != artifact->planning_environment_digest()) {
    opened->close();
    throw InvalidArgument("managed planning environment does not match the handle");
  }
  return opened;
}

ManagedCompositionOptions detail::composition_options(const ManagedQueryServiceOptions& options,
                                                      InteractiveInstallDecisionGuard guard,
                                                      bool with_install_actuator) {
  ManagedCompositionOptions composition = options;  // the composition part, as filled
  composition.interactive_install_decision_guard = std::move(guard);
  composition.install_actuator = nullptr;
  if (with_install_actuator && options.install_actuators) {
    auto actuator = std::make_shared<InstallActuator>();
    actuator->installers = options.install_actuators;
    actuator->bodies = options.install_body_source;
    actuator->host_identity_digest = options.install_actuators->host_identity_digest();
    composition.install_actuator = std::move(actuator);
  }
  return composition;
}

// ---------------------------------------------------------------------------------------------
// Service

std::shared_ptr<ManagedQueryService> open_managed_query_service(
    ManagedQueryServiceOptions options) {
  if (!options.registry) throw InvalidArgument("managed query service requires a registry");
  if (!options.query_store) throw InvalidArgument("managed query service requires a query store");
  if (!options.benefit_facts_port ||
      !core::is_sha256_hex(options.benefit_facts_port->benefit_facts_snapshot_digest())) {
    throw InvalidArgument("benefit_facts_port must implement the benefit facts contract");
  }
  if (!options.net_benefit_policy) throw InvalidArgument("net_benefit_policy is required");
  if (!options.material_port ||
      !core::is_sha256_hex(options.material_port->material_snapshot_digest())) {
    throw InvalidArgument("material_port must implement the capability material contract");
  }
  if (!options.install_bundle_port ||
      !core::is_sha256_hex(options.install_bundle_port->installation_snapshot_digest())) {
    throw InvalidArgument("install_bundle_port must implement the install bundle contract");
  }
  if (!options.input_authority) throw InvalidArgument("input_authority is required");
  if (!options.journal_path.is_absolute()) {
    throw InvalidArgument("journal_path must be an absolute Path");
  }
  if (!options.benefit_audit_path.is_absolute()) {
    throw InvalidArgument("benefit_audit_path must be an absolute Path");
  }
  if (options.policy_store_root && !options.policy_store_root->is_absolute()) {
    throw InvalidArgument("policy_store_root must be an absolute Path");
  }
  const PathIdentity journal = identity_of(options.journal_path);
  const PathIdentity audit = identity_of(options.benefit_audit_path);
  const PathIdentity store = identity_of(options.query_store->path());
  if (aliases(journal, audit) || aliases(journal, store) || aliases(audit, store)) {
    throw InvalidArgument(
        "managed query service journal, audit and query store paths must be distinct");
  }
  require_private_parent(options.journal_path, "journal_path");
  require_private_parent(options.benefit_audit_path, "benefit_audit_path");
  if (!options.journal) {
    options.journal = std::make_shared<SharedJournal>(options.journal_path, options.trusted_clock);
  } else {
    options.journal->require_path(options.journal_path);
  }
  if (options.consent_broker) {
    const PathIdentity consent = identity_of(options.consent_broker->path());
    if (aliases(consent, journal) || aliases(consent, audit) || aliases(consent, store)) {
      throw InvalidArgument(
          "managed query service and consent broker persistence paths must be distinct");
    }
    if (!core::is_sha256_hex(options.consent_workspace_identity_digest) ||
        !core::is_sha256_hex(options.consent_release_root_digest)) {
      throw InvalidArgument(
          "consent broker workspace and release root identities must be sha256 digests");
    }
  }
  return std::shared_ptr<ManagedQueryService>(new ManagedQueryService(std::move(options)));
}

ManagedQueryService::ManagedQueryService(ManagedQueryServiceOptions options)
    : options_(std::move(options)), owner_pid_(::getpid()) {
  if (options_.consent_broker) {
    interactive_guard_ = std::make_shared<detail::InteractiveGuardSlot>(
        options_.interactive_install_decision_guard);
  }
  const auto& store_path = options_.query_store->path();
  lifecycle_lock_path_ =
      store_path.parent_path() / ("." + store_path.filename().string() + ".managed-lifecycle");
}

ManagedQueryService::~ManagedQueryService() {
  if (::getpid() != owner_pid_) {
    // A forked child must not finalize the parent's SQLite connections (see EngineComposition).
    static_cast<void>(new std::shared_ptr<store::SqliteJournalStore>(std::move(journal_reader_)));
    static_cast<void>(composition_.release());
  }
}

ManagedQueryService::Operation::Operation(ManagedQueryService& service)
    : service_(service), lock_(service.mutex_) {
  service_.assert_usable();
}

ManagedQueryService::Operation::~Operation() {
  if (exceptions_at_composition_ >= 0 && std::uncaught_exceptions() > exceptions_at_composition_) {
    service_.drop_composition();
  }
}

void ManagedQueryService::Operation::lifecycle() {
  if (!lifecycle_) lifecycle_.emplace(service_.lifecycle_lock_path_, kLifecycleLockTimeout);
}

EngineComposition& ManagedQueryService::Operation::composition(
    const std::shared_ptr<const ManagedArtifactHandle>& artifact) {
  if (exceptions_at_composition_ < 0) exceptions_at_composition_ = std::uncaught_exceptions();
  return service_.composition_for(artifact);
}

const core::Clock& ManagedQueryService::clock() const {
  return options_.trusted_clock ? *options_.trusted_clock : kSystemClock;
}

store::SqliteJournalStore& ManagedQueryService::journal_reader() {
  if (!journal_reader_) journal_reader_ = options_.journal->get();  // the compositions' one
  return *journal_reader_;
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryService& value) {
  return out << "ManagedQueryService(closed=" << (value.closed_ ? "true" : "false") << ")";
}

void ManagedQueryService::assert_usable() const {
  if (::getpid() != owner_pid_) {
    throw ManagedQueryServiceError("managed query service cannot be used from a forked process");
  }
  if (closed_) throw ManagedQueryServiceError("managed query service is closed");
}

void ManagedQueryService::close() {
  if (::getpid() != owner_pid_) {
    throw ManagedQueryServiceError("managed query service cannot be used from a forked process");
  }
  std::lock_guard lock(mutex_);
  closed_ = true;
  drop_composition();
  journal_reader_.reset();
}

bool ManagedQueryService::closed() const {
  if (::getpid() != owner_pid_) {
    throw ManagedQueryServiceError("managed query service cannot be used from a forked process");
  }
  std::lock_guard lock(mutex_);
  return closed_;
}

std::unique_ptr<EngineComposition> ManagedQueryService::open_composition(
    const std::shared_ptr<const ManagedArtifactHandle>& artifact) const {
  return open_managed_engine_composition(
      *options_.registry, artifact,
      detail::composition_options(options_,
                                  interactive_guard_
                                      ? detail::InteractiveGuardSlot::port(interactive_guard_)
                                      : options_.interactive_install_decision_guard,
                                  true));
}

EngineComposition& ManagedQueryService::composition_for(
    const std::shared_ptr<const ManagedArtifactHandle>& artifact) {
  if (!artifact) throw InvalidArgument("managed composition requires an artifact handle");
  const std::string key =
      artifact->manifest_digest() + "|" + artifact->planning_environment_digest();
  if (composition_ && composition_key_ == key) {
    try {
      static_cast<void>(options_.registry->graph_artifact_path(*artifact));  // still issued
      require_ports_match(*artifact, *options_.benefit_facts_port, *options_.net_benefit_policy,
                          options_.material_port.get(), options_.install_bundle_port.get());
    } catch (...) {
      drop_composition();
      throw;
    }
    return *composition_;
  }
  drop_composition();
  composition_ = open_composition(artifact);
  composition_key_ = key;
  return *composition_;
}

void ManagedQueryService::drop_composition() noexcept {
  if (!composition_) return;
  try {
    if (::getpid() == owner_pid_) composition_->close();
  } catch (...) {
  }
  composition_.reset();
  composition_key_.clear();
}

// §3.12 input validation; nothing is created on failure.
void ManagedQueryService::validate_input(const ManagedQueryInput& input) const {
  const auto& artifact = input.artifact();
  try {
    options_.registry->require_issued(artifact);
  } catch (const ManagedArtifactRegistryError& error) {
    throw ManagedQueryServiceError(std::string("managed query input artifact: ") + error.what());
  }
  if (options_.benefit_facts_port->benefit_facts_snapshot_digest() !=
          artifact.benefit_facts_snapshot_digest() ||
      options_.net_benefit_policy->policy_digest() != artifact.benefit_policy_snapshot_digest() ||
      options_.material_port->material_snapshot_digest() != artifact.material_snapshot_digest() ||
      options_.install_bundle_port->installation_snapshot_digest() !=
          artifact.installation_snapshot_digest()) {
    throw InvalidArgument("managed query port snapshot does not match the artifact");
  }
  const auto& started = input.session_started();
  const auto& decision = input.decision_event();
  if (started.event_kind() != engine::EventKind::kSessionStarted ||
      started.expected_revision() != 0) {
    throw InvalidArgument("managed query input must start with SessionStarted at revision zero");
  }
  const auto revision = decision.expected_revision();
  if (revision < 1 ||
      decision.event_kind() != (revision == 1 ? engine::EventKind::kIntentObserved
                                         : engine::EventKind::kDevelopmentObserved)) {
    throw InvalidArgument(
        "managed query decision must be IntentObserved at revision one, else DevelopmentObserved");
  }
  for (const auto* event : {&started, &decision}) {
    if (event->catalog_snapshot_digest() !=
            std::optional<std::string>(artifact.planning_environment_digest()) ||
        event->planner_version() !=
            std::optional<std::string>(artifact.planning_schema_version())) {
      throw InvalidArgument("managed query events do not match the artifact planning environment");
    }
  }
  const auto& reference = artifact.observation_reference();
  const Json expected = {{"observation_ref",
                          {{"content_digest", reference.content_digest},
                           {"opaque_id", reference.opaque_id},
                           {"provider_id", reference.provider_id}}}};
  if (decision.payload() != expected) {
    throw InvalidArgument("managed query decision must reference exactly its artifact observation");
  }
  if (!decision.correlation_id() || !engine::is_opaque_token(*decision.correlation_id())) {
    throw ManagedQueryServiceError("managed query decision has no plan identity");
  }
}

std::shared_ptr<const ManagedQueryInput> ManagedQueryService::input_of(
    const ManagedQueryRecord& record) const {
  auto artifact = options_.registry->reopen(record.artifact_manifest_digest(),
                                            record.planning_environment_digest());
  auto input = ManagedQueryInput::create(std::move(artifact), record.session_started(),
                                         record.decision_event());
  validate_input(*input);
  return input;
}

ManagedQueryServiceResult ManagedQueryService::prepare(const ManagedQueryRequest& request) {
  Operation op(*this);
  // Pure work first, outside the cross-process lifecycle lock: resolving and validating the
  // input read and write nothing the lock orders (the store rows and the journal head are read
  // under it below). The composition is opened under the lock, after the store checks, since a
  // first open creates the journal and audit files a rejected request must not leave behind.
  const auto input = options_.input_authority->resolve(request.current_work_ref());
  if (!input) {
    throw InvalidArgument("input authority must return an exact ManagedQueryInput");
  }
  validate_input(*input);
  op.lifecycle();
  const auto& decision = input->decision_event();
  if (options_.query_store->find_pending_desired_set(decision.scope())) {
    throw ManagedDesiredSetBusyError(
        "a pending desired choice must be recovered before managed planning");
  }
  const std::string& plan_id = *decision.correlation_id();
  if (auto owner = options_.query_store->find_planned_by_scope_and_plan(decision.scope(), plan_id);
      owner && owner->logical_query_id() != request.logical_query_id()) {
    throw ManagedQueryStoreConflict(
        "managed query scope and plan belong to another logical identity");
  }
  // At capacity the store retires its oldest planned registrations whose session needs them no
  // more: no effect to settle in the journal, and no consent that can still be given (each
  // pending consent's install authority has expired).
  ManagedQueryStore::RetirementCheck settled;
  if (options_.journal) {
    settled = [this, &clock = clock()](const ManagedQueryRecord& old) {
      const auto latest = journal_reader().latest(old.decision_event().scope().stream_id());
      if (!latest) return true;
      const auto state = engine::EngineState::from_json_text(latest->state.text());
      if (!state.pending_effects().empty()) return false;
      const auto now = clock.now();
      for (const auto& consent : state.pending_consents()) {
        const auto& expires = consent.install_action.expires_at();
        if (!expires || !(core::parse_rfc3339(*expires) < now)) return false;
      }
      return true;
    };
  }
  auto record = options_.query_store->register_query(
      request.logical_query_id(), input->session_started(), decision,
      input->artifact().manifest_digest(), input->artifact().planning_environment_digest(),
      settled);
  if (!(record.session_started() == input->session_started()) ||
      !(record.decision_event() == decision) ||
      record.artifact_manifest_digest() != input->artifact().manifest_digest() ||
      record.planning_environment_digest() != input->artifact().planning_environment_digest()) {
    throw ManagedQueryStoreConflict("managed query record does not match its input");
  }
  crash_point(service_crash_points::kAfterRegistration);
  return advance_record(op, std::move(record), *input);
}

ManagedQueryServiceResult ManagedQueryService::reopen(const std::string& query_ref) {
  Operation op(*this);
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  op.lifecycle();
  auto record = options_.query_store->load(query_ref);
  const auto input = input_of(record);
  return advance_record(op, std::move(record), *input);
}

// §3.8: commit or exactly replay the plan, mark the row, project the head.
ManagedQueryServiceResult ManagedQueryService::advance_record(Operation& op,
                                                              ManagedQueryRecord record,
                                                              const ManagedQueryInput& input) {
  const auto& decision = input.decision_event();
  std::optional<ManagedAdvanceResult> advanced;
  std::optional<PreparedManagedQuery> projection;
  std::optional<ManagedConsentChallengeProjection> challenge;
  {
    EngineComposition* const composition = &op.composition(input.artifact_handle());
    if (record.planned()) {
      const auto head = composition->snapshot(decision.scope());
      if (!head.state || !head.state->committed_plan() ||
          std::optional<std::string>(head.state->committed_plan()->plan_id()) != record.plan_id()) {
        throw ManagedQuerySupersededError("managed query was superseded by a later committed plan");
      }
    }
    advanced.emplace(composition->advance_managed_query(input.session_started(), decision));
    // The advance's projection is sealed inside it; re-project the same head to own one.
    projection.emplace(
        composition->reopen_managed_query(decision.scope(), decision.correlation_id()));
    if (auto published =
            publish_current_consent(*composition, decision.scope(), *decision.correlation_id())) {
      challenge.emplace(std::move(*published));
    }
  }
  if (projection->journal_revision() != advanced->prepared().journal_revision() ||
      projection->decision_digest() != advanced->prepared().decision_digest()) {
    throw ManagedQueryHeadDriftError("managed stream head moved during planning");
  }
  const auto& transition = advanced->transition();
  const auto& prepared = advanced->prepared();
  if (transition.event_id() != decision.event_id() || !(transition.scope() == decision.scope()) ||
      transition.from_revision() != decision.expected_revision() ||
      transition.to_revision() != decision.expected_revision() + 1 ||
      std::optional<std::string>(prepared.plan_id()) != decision.correlation_id() ||
      prepared.planning_environment_digest() != input.artifact().planning_environment_digest()) {
    throw ManagedQueryServiceError("managed planning transition does not match its decision");
  }
  for (const auto& action : transition.actions()) {
    if (!(action.scope() == decision.scope()) ||
        action.precondition_revision() != transition.to_revision()) {
      throw ManagedQueryServiceError("managed planning action does not belong to its transition");
    }
  }
  auto actions = ManagedActionSummary::of_all(transition.actions());
  if (record.planned()) {
    if (record.plan_id() != std::optional<std::string>(prepared.plan_id()) ||
        record.decision_digest() != std::optional<std::string>(prepared.decision_digest())) {
      throw ManagedQueryServiceError("managed plan does not match its stored completion");
    }
  } else {
    crash_point(service_crash_points::kAfterPlanCommit);
    if (prepared.journal_revision() != transition.to_revision()) {
      throw ManagedQueryHeadDriftError("managed planning head is not the committed decision");
    }
    const auto marked = options_.query_store->mark_planned(
        record.query_ref(), prepared.plan_id(), prepared.decision_digest(),
        prepared.journal_revision(), prepared.journal_record_digest());
    if (!marked.planned() ||
        marked.decision_digest() != std::optional<std::string>(prepared.decision_digest())) {
      throw ManagedQueryServiceError("managed query completion was not recorded exactly");
    }
  }
  crash_point(service_crash_points::kAfterPlanMark);
  return ManagedQueryServiceResult(record.query_ref(), std::move(*projection), std::move(actions),
                                   std::move(challenge));
}

}  // namespace ctx::runtime
