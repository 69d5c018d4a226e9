#include "host/runtime/catalog/catalog_input_authority.hpp"

#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/planning/candidate_source.hpp"
#include "host/engine/planning/planner.hpp"
#include "host/engine/replay.hpp"
#include "host/engine/state.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/runtime/managed_query.hpp"
#include "host/store/benefit_audit_store.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
namespace fs = std::filesystem;

constexpr std::size_t kMaxInputFileBytes = 64u << 10;
const core::SystemClock kSystemClock;

std::string keyed(std::string_view key, std::string_view domain, std::string_view message) {
  std::string input(domain);
  input.push_back('\0');
  input.append(message);
  return core::hmac_sha256_hex(key, input);
}

Json observation_payload(const ManagedArtifactHandle& artifact) {
  const auto& reference = artifact.observation_reference();
  return {{"observation_ref",
           {{"provider_id", reference.provider_id},
            {"opaque_id", reference.opaque_id},
            {"content_digest", reference.content_digest}}}};
}

// The keyed digest of one resolved current work in `scope` (its observation surrogate and ids).
std::string current_work_digest(std::string_view key, const ResolvedCurrentWork& resolved,
                                const engine::ScopeRef& scope) {
  return keyed(key, "ctx.current-work-v1",
               core::canonical_json(Json{{"observation", resolved.surrogate.value_digest()},
                                         {"repository", resolved.repository},
                                         {"session", scope.session_id()},
                                         {"tenant", resolved.tenant},
                                         {"workspace", resolved.workspace}}));
}

// A session stream's head as register_work needs it: its revision (0: empty), the committed
// plan, and why the head refuses a replacement plan (the composition's own check), if it does.
struct StreamHead {
  engine::Revision revision = 0;
  std::optional<std::string> plan;
  std::optional<std::string> replacement_refused;
};
StreamHead stream_head(SharedJournal& journal, const engine::ScopeRef& scope) {
  StreamHead out;
  if (const auto latest = journal.get()->latest(scope.stream_id())) {
    out.revision = latest->revision;
    const auto state = engine::EngineState::from_json_text(latest->state.text());
    if (state.committed_plan()) out.plan = state.committed_plan()->plan_id();
    out.replacement_refused = managed_replacement_refusal(state);
  }
  return out;
}

// The manifest digest a stored decision's observation reference names ("manifest-<digest>").
// Errors: ManagedQueryStoreCorruption when it names none.
std::string referenced_manifest(const Json& decision_payload) {
  const std::string opaque =
      decision_payload.at("observation_ref").at("opaque_id").get<std::string>();
  constexpr std::string_view kPrefix = "manifest-";
  if (opaque.rfind(kPrefix, 0) != 0) {
    throw ManagedQueryStoreCorruption("managed input registration authentication failed");
  }
  return opaque.substr(kPrefix.size());
}

// What register_work asks the artifact registry to ingest for `surrogate`: the catalog's graph
// store and the digests of every planning input.
ManagedArtifactIngest artifact_ingest(const CatalogInputAuthorityOptions& options,
                                      const std::string& environment_digest,
                                      const std::string& retrieval_digest,
                                      const engine::StructuredSurrogate& surrogate) {
  ManagedArtifactIngest ingest;
  ingest.graph_store_path = options.catalog->graph_path();
  ingest.expected_graph_artifact_digest = options.catalog->graph_sha256();
  ingest.planning_environment_digest = environment_digest;
  ingest.catalog_namespace_digest = options.catalog->catalog_digest();
  ingest.catalog_retrieval_digest = retrieval_digest;
  ingest.benefit_facts_snapshot_digest =
      options.benefit_facts_port->benefit_facts_snapshot_digest();
  ingest.benefit_policy_snapshot_digest = options.net_benefit_policy->policy_digest();
  ingest.material_snapshot_digest = options.material_port->material_snapshot_digest();
  ingest.installation_snapshot_digest = options.install_bundle_port->installation_snapshot_digest();
  ingest.observation_surrogate = surrogate;
  ingest.planning_schema_version = options.planner_version;
  return ingest;
}

// The SessionStarted event of a session's first work (`logical`, planned as `plan_id`).
engine::EngineEvent session_started_event(const CatalogInputAuthorityOptions& options,
                                          const std::string& environment_digest,
                                          const engine::ScopeRef& scope, const std::string& logical,
                                          const std::string& plan_id, const std::string& now,
                                          const std::string& work_digest) {
  engine::EngineEvent::Fields fields{.event_id = "start-" + logical.substr(0, 40),
                                     .kind = "SessionStarted",
                                     .scope = scope,
                                     .expected_revision = 0,
                                     .occurred_at = now,
                                     .payload = {{"host_level", "managing"}}};
  fields.correlation_id = plan_id;
  fields.causation_id = "ctx-session-start";
  fields.engine_version = "ctx-engine-v1";
  fields.planner_version = options.planner_version;
  fields.policy_version = options.net_benefit_policy->policy_digest().substr(0, 16);
  fields.host_descriptor_digest = core::sha256_hex("ctx.host-descriptor-v1 managing");
  fields.catalog_snapshot_digest = environment_digest;
  fields.semantic_model_digest = core::sha256_hex("ctx.semantic-model-disabled");
  fields.semantic_index_digest = core::sha256_hex("ctx.semantic-index-disabled");
  fields.work_signature = work_digest;
  fields.random_seed = 0;
  return engine::EngineEvent::create(std::move(fields));
}

// The work's decision event (IntentObserved at revision 1, else DevelopmentObserved) after
// `started`, referencing `artifact`.
engine::EngineEvent work_decision_event(const CatalogInputAuthorityOptions& options,
                                        const std::string& environment_digest,
                                        const engine::EngineEvent& started,
                                        const ManagedArtifactHandle& artifact,
                                        engine::Revision revision, const std::string& logical,
                                        const std::string& plan_id, const std::string& now,
                                        const std::string& work_digest) {
  engine::EngineEvent::Fields decision = started.fields();
  decision.event_id = "work-" + logical.substr(0, 40);
  decision.kind = revision == 1 ? "IntentObserved" : "DevelopmentObserved";
  decision.expected_revision = revision;
  decision.occurred_at = now;
  decision.payload = observation_payload(artifact);
  decision.correlation_id = plan_id;
  decision.causation_id = started.event_id();
  decision.work_signature = revision == 1 ? started.work_signature() : work_digest;
  decision.catalog_snapshot_digest = environment_digest;
  decision.planner_version = options.planner_version;
  return engine::EngineEvent::create(std::move(decision));
}

}  // namespace

std::string CatalogInputAuthority::engine_session(const std::string& session) const {
  const std::string suffix = "@" + environment_digest_.substr(0, 12);
  if (session.size() + suffix.size() <= engine::kMaxTokenChars) return session + suffix;
  return "ses-" + keyed(options_.installation_key, "ctx.engine-session-v1", session).substr(0, 32) +
         suffix;
}

struct CatalogInputAuthority::Stored {
  std::string logical_query_id;
  engine::EngineEvent session_started;
  engine::EngineEvent decision;
};

CatalogInputAuthority::CatalogInputAuthority(CatalogInputAuthorityOptions options)
    : options_(std::move(options)),
      work_authority_(options_.catalog) {
  if (!options_.registry || !options_.query_store || !options_.benefit_facts_port ||
      !options_.material_port || !options_.install_bundle_port || !options_.net_benefit_policy) {
    throw InvalidArgument("catalog input authority needs the registry, store, ports and policy");
  }
  if (options_.installation_key.size() != 32) {
    throw InvalidArgument("catalog input authority needs the 32-byte installation key");
  }
  if (!options_.journal_path.is_absolute() || !options_.benefit_audit_path.is_absolute() ||
      !options_.inputs_dir.is_absolute()) {
    throw InvalidArgument("catalog input authority paths must be absolute");
  }
  if (!options_.journal) {
    options_.journal =
        std::make_shared<SharedJournal>(options_.journal_path, options_.trusted_clock);
  } else {
    options_.journal->require_path(options_.journal_path);
  }
  ensure_private_dir(options_.inputs_dir, "managed input directory");
  // The planning environment the service's compositions will pin, as the planner computes it;
  // remembered (keyed, authenticated) per set of inputs so a later process need not open the
  // graph and audit store for it. A wrong value cannot do harm: every composition recomputes
  // it and refuses a handle that does not match.
  const Json inputs = {
      {"benefit_facts", options_.benefit_facts_port->benefit_facts_snapshot_digest()},
      {"catalog", options_.catalog->catalog_digest()},
      {"graph", options_.catalog->graph_sha256()},
      {"installation", options_.install_bundle_port->installation_snapshot_digest()},
      {"material", options_.material_port->material_snapshot_digest()},
      {"planner_version", options_.planner_version},
      {"policy", options_.net_benefit_policy->policy_digest()},
      {"schema", "ctx.planning-environment-cache-v1"}};
  const fs::path cache =
      options_.inputs_dir / ("environment-" + core::canonical_digest(inputs) + ".json");
  const std::string domain = "ctx.planning-environment-cache-v1";
  if (const auto bytes = read_private_file(cache, 4096, "planning environment cache")) {
    try {
      std::string_view text(*bytes);
      if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      Json value = core::parse_canonical_json(text);
      const std::string mac = value.at("mac").get<std::string>();
      value.erase("mac");
      if (value.at("inputs") == inputs &&
          core::constant_time_equal(
              mac, keyed(options_.installation_key, domain, core::canonical_json(value)))) {
        environment_digest_ = value.at("environment").get<std::string>();
        retrieval_digest_ = value.at("retrieval").get<std::string>();
      }
    } catch (const std::exception&) {
      // Recomputed below and rewritten.
    }
  }
  if (environment_digest_.empty()) {
    const auto graph =
        store::GraphStore::open(options_.catalog->graph_path(), options_.catalog->graph_sha256());
    const auto audit = store::SqliteBenefitAuditStore::open(options_.benefit_audit_path);
    const planning::CapabilityPlanner planner(
        planning::CapabilityPlannerConfig{options_.planner_version,
                                          options_.catalog->catalog_digest()},
        *options_.net_benefit_policy, *graph, *options_.benefit_facts_port,
        options_.material_port.get(), options_.install_bundle_port.get(), *audit);
    environment_digest_ = planner.planning_environment_digest();
    retrieval_digest_ = planner.catalog_retrieval_snapshot_digest();
    Json value = {{"environment", environment_digest_},
                  {"inputs", inputs},
                  {"retrieval", retrieval_digest_}};
    value["mac"] = keyed(options_.installation_key, domain, core::canonical_json(value));
    write_private_file(cache, core::canonical_json(value) + "\n", "planning environment cache");
  }
}

std::optional<CatalogInputAuthority::Stored> CatalogInputAuthority::load(
    const std::string& plan_id) const {
  // The query store's row (authenticated there), or the file an earlier build wrote (its own mac).
  std::optional<std::string> text = options_.query_store->find_input(plan_id);
  const bool legacy = !text;
  if (legacy) {
    text = read_private_file(options_.inputs_dir / (plan_id + ".json"), kMaxInputFileBytes,
                             "managed input registration");
    if (!text) return std::nullopt;
  }
  try {
    std::string_view bytes(*text);
    if (legacy && !bytes.empty() && bytes.back() == '\n') bytes.remove_suffix(1);
    Json value = core::parse_canonical_json(bytes);
    if (legacy) {
      const std::string mac = value.at("mac").get<std::string>();
      value.erase("mac");
      if (!core::constant_time_equal(mac, keyed(options_.installation_key, kManagedInputSchema,
                                                core::canonical_json(value)))) {
        throw ManagedQueryStoreCorruption("managed input registration authentication failed");
      }
    }
    if (value.at("schema") != std::string(kManagedInputSchema)) {
      throw ManagedQueryStoreCorruption("managed input registration authentication failed");
    }
    return Stored{value.at("logical_query_id").get<std::string>(),
                  engine::EngineEvent::from_json(value.at("session_started")),
                  engine::EngineEvent::from_json(value.at("decision"))};
  } catch (const ManagedQueryStoreCorruption&) {
    throw;
  } catch (const std::exception&) {
    throw ManagedQueryStoreCorruption("managed input registration authentication failed");
  }
}

void CatalogInputAuthority::store(const std::string& plan_id, const Stored& stored) const {
  const Json value = {{"decision", stored.decision.to_json()},
                      {"logical_query_id", stored.logical_query_id},
                      {"schema", std::string(kManagedInputSchema)},
                      {"session_started", stored.session_started.to_json()}};
  options_.query_store->put_input(plan_id, core::canonical_json(value));
}

std::optional<engine::EngineEvent> CatalogInputAuthority::journaled_session_start(
    const engine::ScopeRef& scope) const {
  const auto records = options_.journal->get()->read(scope.stream_id(), 0);
  if (records.empty() || records.front().revision != 1) return std::nullopt;
  const auto& first = records.front();
  auto event = engine::ReplayInput::from_json_text(first.replay_json).reducer_event;
  // The ingress event itself (nothing substituted), a managed session start in this scope.
  if (event.event_kind() != engine::EventKind::kSessionStarted ||
      event.content_digest() != first.event_content_digest || !(event.scope() == scope) ||
      event.payload() != Json{{"host_level", "managing"}}) {
    return std::nullopt;
  }
  return event;
}

CurrentWorkRegistration CatalogInputAuthority::register_work(CurrentWork work) {
  const std::string& key = options_.installation_key;
  // Vocabulary filtering first: only catalog terms go on.
  const std::string scratch = "work-unfiltered";
  const ResolvedCurrentWork resolved = [&] {
    std::lock_guard lock(mutex_);
    work_authority_.register_work(scratch, std::move(work));
    return work_authority_.resolve(scratch);
  }();
  const auto scope = engine::ScopeRef::create(
      resolved.tenant, resolved.workspace, resolved.repository, engine_session(resolved.session),
      std::string(kDefaultExposureId), std::string(kDefaultHostContextId));
  const std::string work_digest = current_work_digest(key, resolved, scope);
  const auto logical_at = [&](std::int64_t revision) {
    return keyed(key, "ctx.logical-query-v1", work_digest + '\0' + std::to_string(revision));
  };
  const auto plan_of = [](const std::string& logical) { return "plan-" + logical.substr(0, 40); };

  // One registration at a time across processes: two preparers of the same work must store (and
  // then register) the same events, not each their own.
  const ExclusiveFileLock registration_lock(options_.inputs_dir / ".registration.lock",
                                            std::chrono::seconds(30));
  const core::Clock& clock = options_.trusted_clock ? *options_.trusted_clock : kSystemClock;
  const StreamHead stream = stream_head(*options_.journal, scope);
  const engine::Revision head = stream.revision;
  const std::optional<std::string>& head_plan = stream.plan;

  std::shared_ptr<const ManagedArtifactHandle> artifact;
  const auto finish = [&](const std::string& plan_id, Stored stored, bool reused) {
    if (reused) {  // a stored registration's artifact, by the manifest its decision references
      artifact = options_.registry->reopen(referenced_manifest(stored.decision.payload()),
                                           environment_digest_);
    } else {
      store(plan_id, stored);
    }
    CurrentWorkRegistration out{"work-" + stored.logical_query_id, stored.logical_query_id,
                                plan_id, reused};
    auto input = ManagedQueryInput::create(artifact, std::move(stored.session_started),
                                           std::move(stored.decision));
    std::lock_guard lock(mutex_);
    inputs_[out.current_work_ref] = std::move(input);
    return out;
  };

  // The head's plan is this work: an exact retry.
  std::optional<Stored> head_stored;
  if (head_plan) {
    head_stored = load(*head_plan);
    if (head_stored &&
        head_stored->logical_query_id == logical_at(head_stored->decision.expected_revision())) {
      return finish(*head_plan, std::move(*head_stored), true);
    }
  }
  const engine::Revision revision = head <= 1 ? 1 : head;
  const std::string logical = logical_at(revision);
  const std::string plan_id = plan_of(logical);
  // Registered earlier and not finished (a crash before the plan was committed).
  if (auto earlier = load(plan_id); earlier && earlier->logical_query_id == logical) {
    return finish(plan_id, std::move(*earlier), true);
  }
  // New work on a head that refuses a replacement is refused before anything is stored: a
  // prompt made while a consent is pending must not take a registration it cannot use.
  if (head >= 2 && head_plan && *head_plan != plan_id && stream.replacement_refused) {
    throw ManagedQueryError(*stream.replacement_refused);
  }
  if (head == 1) {
    throw SessionStartPending(
        "the session's first plan is not committed yet (it is being prepared, or was "
        "interrupted: repeat the request that started it)");
  }

  artifact = options_.registry->ingest_graph_store(
      artifact_ingest(options_, environment_digest_, retrieval_digest_, resolved.surrogate));

  const std::string now = core::format_rfc3339(clock.now());
  std::optional<engine::EngineEvent> started;
  if (revision == 1) {
    started = session_started_event(options_, environment_digest_, scope, logical, plan_id, now,
                                    work_digest);
  } else if (head_stored) {
    started = head_stored->session_started;
  } else if (head_plan) {
    if (auto record = options_.query_store->find_planned_by_scope_and_plan(scope, *head_plan)) {
      started = record->session_started();
    }
  }
  if (!started && head_plan) started = journaled_session_start(scope);
  if (!started) {
    throw FailedPrecondition("the session's stream was not started by this installation");
  }
  return finish(plan_id,
                Stored{logical, *started,
                       work_decision_event(options_, environment_digest_, *started, *artifact,
                                           revision, logical, plan_id, now, work_digest)},
                false);
}

engine::ScopeRef CatalogInputAuthority::work_scope(const CurrentWork& work) const {
  return engine::ScopeRef::create(work.tenant, work.workspace, work.repository,
                                  engine_session(work.session), std::string(kDefaultExposureId),
                                  std::string(kDefaultHostContextId));
}

std::optional<engine::EngineState> CatalogInputAuthority::head_state(
    const engine::ScopeRef& scope) const {
  const auto latest = options_.journal->get()->latest(scope.stream_id());
  if (!latest) return std::nullopt;
  const std::string_view text = latest->state.text();
  {
    std::lock_guard lock(mutex_);
    if (decoded_head_ && decoded_head_->text == text) return decoded_head_->state;
  }
  auto state = engine::EngineState::from_json_text(text);
  std::lock_guard lock(mutex_);
  decoded_head_.emplace(DecodedHead{std::string(text), state});
  return state;
}

std::optional<std::string> CatalogInputAuthority::current_query_ref(const CurrentWork& work) const {
  const auto scope = work_scope(work);
  const auto state = head_state(scope);
  if (!state || !state->committed_plan()) return std::nullopt;
  const auto& plan_id = state->committed_plan()->plan_id();
  auto record = options_.query_store->find_planned_by_scope_and_plan(scope, plan_id);
  if (!record) return std::nullopt;
  return record->query_ref();
}

std::vector<std::string> CatalogInputAuthority::active_capability_ids(
    const CurrentWork& work) const {
  const auto state = head_state(work_scope(work));
  return state ? state->active_capability_ids() : std::vector<std::string>{};
}

// The outline of a plan of `status` selecting `rows` (each with a capability_id()).
static PlanOutline outline_of(engine::PlanStatus status, const auto& rows) {
  PlanOutline outline{status, {}};
  outline.capability_ids.reserve(rows.size());
  for (const auto& row : rows) {
    outline.capability_ids.push_back(row.capability_id());
  }
  return outline;
}

std::optional<SessionPlan> CatalogInputAuthority::current_plan(const CurrentWork& work) const {
  const auto state = head_state(work_scope(work));
  if (!state || !state->committed_plan()) return std::nullopt;
  const auto& plan = *state->committed_plan();
  return SessionPlan{state->revision(), outline_of(plan.status(), plan.capabilities())};
}

std::optional<std::string> CatalogInputAuthority::pending_consent_id(
    const CurrentWork& work) const {
  const auto state = head_state(work_scope(work));
  if (!state || state->pending_consents().size() != 1) return std::nullopt;
  return state->pending_consents().front().consent_id;
}

std::shared_ptr<const ManagedQueryInput> CatalogInputAuthority::resolve(
    const std::string& current_work_ref) {
  std::lock_guard lock(mutex_);
  const auto it = inputs_.find(current_work_ref);
  if (it == inputs_.end()) throw NotFound("current-work reference is unavailable");
  return it->second;
}

}  // namespace ctx::runtime
