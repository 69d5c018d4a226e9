#include "host/engine/managed_query_store.hpp"

#include <algorithm>
#include <ostream>
#include <set>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

constexpr std::string_view kObservationProvider = "ctx-managed-artifact-observation-v1";

std::string tagged(std::string_view tag, std::string_view bytes) {
  std::string message(tag);
  message.push_back('\0');
  message.append(bytes);
  return message;
}

bool same_envelope(const EngineEvent& a, const EngineEvent& b) {
  return a.engine_version() == b.engine_version() && a.planner_version() == b.planner_version() &&
         a.policy_version() == b.policy_version() &&
         a.host_descriptor_digest() == b.host_descriptor_digest() &&
         a.catalog_snapshot_digest() == b.catalog_snapshot_digest() &&
         a.semantic_model_digest() == b.semantic_model_digest() &&
         a.semantic_index_digest() == b.semantic_index_digest() &&
         a.work_signature() == b.work_signature() && a.random_seed() == b.random_seed() &&
         a.privacy() == b.privacy();
}

void require_token(const std::optional<std::string>& value, const char* field) {
  if (!value || !is_opaque_token(*value)) {
    throw InvalidArgument(std::string("managed query ") + field + " must be an opaque token");
  }
}

void require_event_digest(const std::optional<std::string>& value, const char* field) {
  if (!value || !core::is_sha256_hex(*value)) {
    throw InvalidArgument(std::string("managed query ") + field +
                          " must be a lowercase SHA-256 digest");
  }
}

void validate_envelope_fields(const EngineEvent& event) {
  require_token(event.correlation_id(), "correlation_id");
  require_token(event.causation_id(), "causation_id");
  require_token(event.engine_version(), "engine_version");
  require_token(event.planner_version(), "planner_version");
  require_token(event.policy_version(), "policy_version");
  require_event_digest(event.host_descriptor_digest(), "host_descriptor_digest");
  require_event_digest(event.catalog_snapshot_digest(), "catalog_snapshot_digest");
  require_event_digest(event.semantic_model_digest(), "semantic_model_digest");
  require_event_digest(event.semantic_index_digest(), "semantic_index_digest");
  require_event_digest(event.work_signature(), "work_signature");
  if (!event.random_seed().is_number_integer()) {
    throw InvalidArgument("managed query random_seed must be an integer");
  }
}

// One row of a desired event's desired_capabilities against capability id `id`.
void require_desired_row(const Json& row, const std::string& id) {
  static const std::set<std::string> row_keys = {
      "actionability", "capability_id", "install_descriptor_digest", "install_plan_digest", "kind",
      "lease_id",      "source_digest"};
  if (!row.is_object() || row.size() != row_keys.size()) {
    throw ManagedQueryStoreConflict("managed desired row is not exact");
  }
  for (const auto& name : row_keys) {
    if (!row.contains(name)) throw ManagedQueryStoreConflict("managed desired row is not exact");
  }
  const Json& spelled = row["actionability"];
  const auto actionability =
      spelled.is_string() ? find_enum<Actionability>(spelled.get<std::string>()) : std::nullopt;
  const bool install = actionability == Actionability::kInstall;
  if (row["capability_id"] != id || !actionability ||
      row["install_descriptor_digest"].is_null() == install ||
      row["install_plan_digest"].is_null() == install) {
    throw ManagedQueryStoreConflict("managed desired row does not match its capability");
  }
}

}  // namespace

bool is_query_ref(std::string_view text) noexcept {
  return text.size() == 68 && text.starts_with("mqr_") && core::is_sha256_hex(text.substr(4));
}
bool is_desired_set_ref(std::string_view text) noexcept {
  return text.size() == 68 && text.starts_with("mds_") && core::is_sha256_hex(text.substr(4));
}

std::string desired_stream_identity_digest(const ScopeRef& scope) {
  return core::sha256_hex(
      tagged("ctx.managed-desired-set-stream-v1", scope.stream_id().stream_key()));
}

std::ostream& operator<<(std::ostream& out, const ManagedQueryRecord& value) {
  return out << "ManagedQueryRecord(query_ref='" << value.query_ref() << "', "
             << (value.planned() ? "planned" : "registered") << ")";
}
std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRecord& value) {
  return out << "ManagedDesiredSetRecord(desired_set_ref='" << value.desired_set_ref() << "', "
             << (value.committed() ? "committed" : "reserved") << ")";
}
std::ostream& operator<<(std::ostream& out, const ManagedQueryStore&) {
  return out << "ManagedQueryStore(schema='" << kManagedQueryStoreSchema << "')";
}

ManagedDesiredSetRecord ManagedQueryStore::load_latest_desired_set(const std::string& query_ref) {
  auto found = find_latest_desired_set(query_ref);
  if (!found) throw ManagedQueryStoreNotFound("managed desired set is unavailable");
  return std::move(*found);
}

ManagedDesiredSetRecord ManagedQueryStore::load_pending_desired_set(const ScopeRef& scope) {
  auto found = find_pending_desired_set(scope);
  if (!found) throw ManagedQueryStoreNotFound("managed desired stream has no pending reservation");
  return std::move(*found);
}

namespace managed_store {

std::string canonical_text(const Json& value) {
  return core::canonical_json(value, core::Encoding::kAscii);
}

void require_query_ref(const std::string& query_ref) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
}

void require_desired_set_ref(const std::string& desired_set_ref) {
  if (!is_desired_set_ref(desired_set_ref)) {
    throw InvalidArgument("desired_set_ref must be an opaque managed desired-set reference");
  }
}

void require_sha(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

void require_input_plan_id(const std::string& plan_id) {
  if (plan_id.empty() || plan_id.size() > 128 || !is_opaque_token(plan_id)) {
    throw InvalidArgument("managed input plan_id must be an opaque token");
  }
}

void validate_registration(const std::string& logical_query_id, const EngineEvent& started,
                           const EngineEvent& decision, const std::string& manifest,
                           const std::string& environment) {
  require_sha(logical_query_id, "logical_query_id");
  require_sha(manifest, "artifact_manifest_digest");
  require_sha(environment, "planning_environment_digest");
  validate_envelope_fields(started);
  validate_envelope_fields(decision);
  if (started.event_kind() != EventKind::kSessionStarted || started.expected_revision() != 0 ||
      started.payload() != Json{{"host_level", "managing"}}) {
    throw InvalidArgument("managed query registration requires a managing SessionStarted at 0");
  }
  const bool intent =
      decision.event_kind() == EventKind::kIntentObserved && decision.expected_revision() == 1;
  const bool development =
      decision.event_kind() == EventKind::kDevelopmentObserved && decision.expected_revision() >= 2;
  if (!intent && !development) {
    throw InvalidArgument(
        "managed query decision must be IntentObserved at 1 or DevelopmentObserved after");
  }
  const Json& payload = decision.payload();
  if (!payload.is_object() || payload.size() != 1 || !payload.contains("observation_ref") ||
      !payload["observation_ref"].is_object() ||
      payload["observation_ref"].value("provider_id", "") != kObservationProvider ||
      payload["observation_ref"].value("opaque_id", "") != "manifest-" + manifest) {
    throw InvalidArgument("managed query decision must reference its managed artifact");
  }
  if (started.event_id() == decision.event_id()) {
    throw InvalidArgument("managed query events must have distinct event ids");
  }
  if (started.planner_version() != decision.planner_version() ||
      started.host_descriptor_digest() != decision.host_descriptor_digest() ||
      started.catalog_snapshot_digest() != decision.catalog_snapshot_digest() ||
      started.semantic_model_digest() != decision.semantic_model_digest() ||
      started.semantic_index_digest() != decision.semantic_index_digest()) {
    throw InvalidArgument("managed query events disagree on their planning envelope");
  }
  if (intent && (!(started.scope() == decision.scope()) ||
                 started.correlation_id() != decision.correlation_id() ||
                 decision.causation_id() != std::optional<std::string>(started.event_id()) ||
                 started.engine_version() != decision.engine_version() ||
                 started.policy_version() != decision.policy_version() ||
                 started.work_signature() != decision.work_signature() ||
                 started.random_seed() != decision.random_seed())) {
    throw InvalidArgument("managed query IntentObserved must continue its exact session start");
  }
  if (!(started.scope().stream_id() == decision.scope().stream_id())) {
    throw InvalidArgument("managed query events must share one stable stream");
  }
  if (started.catalog_snapshot_digest() != std::optional<std::string>(environment)) {
    throw InvalidArgument("managed query events must carry the planning environment digest");
  }
}

Json registration_json(const std::string& logical_query_id, const EngineEvent& started,
                       const EngineEvent& decision, const std::string& manifest,
                       const std::string& environment) {
  return {
      {"artifact_manifest_digest", manifest},          {"decision_event", decision.to_json()},
      {"logical_query_id", logical_query_id},          {"planning_environment_digest", environment},
      {"schema", "ctx.managed-query-registration-v1"}, {"session_started", started.to_json()}};
}

bool planned_already(const ManagedQueryRecord& record, const std::string& plan_id,
                     const std::string& decision_digest, std::int64_t journal_revision,
                     const std::string& journal_record_digest) {
  if (record.decision_event().correlation_id() != std::optional<std::string>(plan_id) ||
      journal_revision != record.decision_event().expected_revision() + 1) {
    throw ManagedQueryStoreConflict("managed query completion does not match its decision");
  }
  if (!record.planned()) return false;
  if (record.plan_id() == std::optional<std::string>(plan_id) &&
      record.decision_digest() == std::optional<std::string>(decision_digest) &&
      record.journal_revision() == std::optional<std::int64_t>(journal_revision) &&
      record.journal_record_digest() == std::optional<std::string>(journal_record_digest)) {
    return true;
  }
  throw ManagedQueryStoreConflict("managed query completion is already bound differently");
}

bool committed_already(const ManagedDesiredSetRecord& record, std::int64_t journal_revision,
                       const std::string& journal_record_digest,
                       const std::string& transition_digest) {
  if (journal_revision != record.event().expected_revision() + 1) {
    throw ManagedQueryStoreConflict("managed desired-set commit revision does not match");
  }
  if (!record.committed()) return false;
  if (record.journal_revision() == std::optional<std::int64_t>(journal_revision) &&
      record.journal_record_digest() == std::optional<std::string>(journal_record_digest) &&
      record.transition_digest() == std::optional<std::string>(transition_digest)) {
    return true;
  }
  throw ManagedQueryStoreConflict("managed desired-set completion is already bound differently");
}

void validate_desired_set(const ManagedQueryRecord& parent,
                          const std::vector<std::string>& capability_ids,
                          const EngineEvent& event) {
  if (!parent.planned()) {
    throw ManagedQueryStoreConflict("managed desired set requires a planned parent query");
  }
  const auto& decision = parent.decision_event();
  if (event.event_kind() != EventKind::kReassessmentRequested ||
      *parent.journal_revision() > event.expected_revision() ||
      !(event.scope() == decision.scope()) || event.correlation_id() != parent.plan_id() ||
      !same_envelope(event, decision)) {
    throw ManagedQueryStoreConflict("managed desired event does not continue its parent plan");
  }
  const Json& payload = event.payload();
  if (!payload.is_object() || payload.size() != 3 || !payload.contains("desired_capabilities") ||
      !payload.contains("owner_id") || !payload.contains("policy_snapshot_digest") ||
      !payload["desired_capabilities"].is_array()) {
    throw ManagedQueryStoreConflict("managed desired event payload is not exact");
  }
  const Json& rows = payload["desired_capabilities"];
  if (rows.size() != capability_ids.size()) {
    throw ManagedQueryStoreConflict("managed desired rows do not match the capability ids");
  }
  for (std::size_t i = 0; i < rows.size(); ++i) require_desired_row(rows[i], capability_ids[i]);
}

Json desired_registration(const std::string& query_ref, const std::string& logical_choice_id,
                          const std::string& plan_id, const std::string& decision_digest,
                          const std::string& stream_digest,
                          const std::vector<std::string>& capability_ids,
                          const EngineEvent& event) {
  return {{"capability_ids", capability_ids},
          {"decision_digest", decision_digest},
          {"event_content_digest", event.content_digest()},
          {"logical_choice_id", logical_choice_id},
          {"plan_id", plan_id},
          {"query_ref", query_ref},
          {"schema", "ctx.managed-desired-set-registration-v1"},
          {"stream_identity_digest", stream_digest}};
}

void require_same_choice(const ManagedDesiredSetRecord& existing, const std::string& ref,
                         const std::vector<std::string>& capability_ids, const EngineEvent& event) {
  if (existing.desired_set_ref() == ref && existing.capability_ids() == capability_ids &&
      existing.event() == event) {
    return;
  }
  throw ManagedQueryStoreConflict("logical desired choice is already bound to different content");
}

void require_stream_continues(const std::vector<ManagedDesiredSetRecord>& on_stream,
                              const std::string& query_ref, const EngineEvent& decision,
                              const EngineEvent& event) {
  std::optional<std::string> newest_same_query_event;
  std::int64_t newest_revision = -1;
  std::int64_t latest_committed = 0;
  for (const auto& other : on_stream) {
    if (other.event().expected_revision() == event.expected_revision()) {
      throw ManagedQueryStoreConflict("managed desired stream revision is already reserved");
    }
    if (!other.committed()) {
      throw ManagedQueryStoreConflict("managed desired stream has a pending reservation");
    }
    latest_committed = std::max(latest_committed, *other.journal_revision());
    if (other.query_ref() == query_ref && other.event().expected_revision() > newest_revision) {
      newest_revision = other.event().expected_revision();
      newest_same_query_event = other.event().event_id();
    }
  }
  const std::string expected_causation = newest_same_query_event.value_or(decision.event_id());
  if (event.causation_id() != std::optional<std::string>(expected_causation)) {
    throw ManagedQueryStoreConflict("managed desired event does not follow its predecessor");
  }
  if (event.expected_revision() < latest_committed) {
    throw ManagedQueryStoreConflict("managed desired event precedes a committed desired set");
  }
}

}  // namespace managed_store

}  // namespace ctx::engine
