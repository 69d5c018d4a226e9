#include "host/engine/protocol.hpp"

#include <cmath>
#include <set>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/protocol_checks.hpp"

namespace ctx::engine {
namespace {

using namespace protocol_checks;  // NOLINT(google-build-using-namespace): this file's own checks

}  // namespace

bool is_planning_kind(EventKind kind) noexcept {
  return kind == EventKind::kIntentObserved || kind == EventKind::kDevelopmentObserved;
}
bool is_receipt_kind(EventKind kind) noexcept {
  return kind == EventKind::kActionApplied || kind == EventKind::kActionFailed ||
         kind == EventKind::kActionExpired;
}

std::string normalize_rfc3339(std::string_view text, std::string_view field) {
  try {
    return core::format_rfc3339(core::parse_rfc3339(text));
  } catch (const InvalidArgument&) {
    fail(std::string(field) + " must use strict RFC 3339 date-time syntax");
  }
}

// ---- ScopeRef -------------------------------------------------------------------------------

ScopeRef ScopeRef::create(std::string tenant_id, std::string workspace_id,
                          std::string repository_id, std::string session_id,
                          std::string exposure_id, std::string host_context_id,
                          std::optional<std::string> parent_exposure_id) {
  ScopeRef out;
  out.tenant_id_ = std::move(tenant_id);
  out.workspace_id_ = std::move(workspace_id);
  out.repository_id_ = std::move(repository_id);
  out.session_id_ = std::move(session_id);
  out.exposure_id_ = std::move(exposure_id);
  out.host_context_id_ = std::move(host_context_id);
  out.parent_ = std::move(parent_exposure_id);
  require_trimmed(out.tenant_id_, "tenant_id");
  require_trimmed(out.workspace_id_, "workspace_id");
  require_trimmed(out.repository_id_, "repository_id");
  require_trimmed(out.session_id_, "session_id");
  require_trimmed(out.exposure_id_, "exposure_id");
  require_trimmed(out.host_context_id_, "host_context_id");
  require_optional_trimmed(out.parent_, "parent_exposure_id");
  return out;
}

ScopeRef ScopeRef::from_json(const Json& value) {
  const Reader r(value, "scope", kRaise);
  r.expect({"tenant_id", "workspace_id", "repository_id", "session_id", "exposure_id",
            "host_context_id"},
           {"parent_exposure_id"});
  return create(r.string("tenant_id", kTrimmed), r.string("workspace_id", kTrimmed),
                r.string("repository_id", kTrimmed), r.string("session_id", kTrimmed),
                r.string("exposure_id", kTrimmed), r.string("host_context_id", kTrimmed),
                r.optional_string("parent_exposure_id", kTrimmed));
}

Json ScopeRef::to_json() const {
  return {{"exposure_id", exposure_id_},     {"host_context_id", host_context_id_},
          {"parent_exposure_id", opt(parent_)}, {"repository_id", repository_id_},
          {"session_id", session_id_},       {"tenant_id", tenant_id_},
          {"workspace_id", workspace_id_}};
}

std::string ScopeRef::to_json_text() const {
  return CanonicalObject()
      .string("exposure_id", exposure_id_)
      .string("host_context_id", host_context_id_)
      .optional_string("parent_exposure_id", parent_)
      .string("repository_id", repository_id_)
      .string("session_id", session_id_)
      .string("tenant_id", tenant_id_)
      .string("workspace_id", workspace_id_)
      .finish();
}

StreamId ScopeRef::stream_id() const {
  return StreamId(tenant_id_, workspace_id_, repository_id_, session_id_);
}

bool ScopeRef::same_session(const ScopeRef& o) const noexcept {
  return tenant_id_ == o.tenant_id_ && workspace_id_ == o.workspace_id_ &&
         repository_id_ == o.repository_id_ && session_id_ == o.session_id_;
}

ScopeRef ScopeRef::with_exposure(std::string exposure_id, std::string host_context_id,
                                 std::optional<std::string> parent_exposure_id) const {
  return create(tenant_id_, workspace_id_, repository_id_, session_id_, std::move(exposure_id),
                std::move(host_context_id), std::move(parent_exposure_id));
}

// ---- PrivacyLabel ---------------------------------------------------------------------------

PrivacyLabel PrivacyLabel::create(std::string_view classification, std::string_view retention) {
  const auto parsed_class = find_enum<PrivacyClass>(classification);
  if (!parsed_class) fail("unknown privacy classification '" + std::string(classification) + "'");
  const auto parsed_retention = find_enum<Retention>(retention);
  if (!parsed_retention) fail("unknown retention class '" + std::string(retention) + "'");
  return PrivacyLabel(*parsed_class, *parsed_retention);
}

PrivacyLabel PrivacyLabel::from_json(const Json& value) {
  const Reader r(value, "privacy label", kRaise);
  r.expect({}, {"classification", "retention"});
  return create(r.has("classification") ? r.string("classification") : "private",
                r.has("retention") ? r.string("retention") : "local");
}

Json PrivacyLabel::to_json() const {
  return {{"classification", classification_}, {"retention", retention_}};
}

std::string PrivacyLabel::to_json_text() const {
  return CanonicalObject()
      .string("classification", to_string(classification_))
      .string("retention", to_string(retention_))
      .finish();
}

// ---- EngineEvent ----------------------------------------------------------------------------

EngineEvent EngineEvent::create(Fields f) {
  if (f.protocol_version != kProtocolVersion) require_version(Json(f.protocol_version));
  require_trimmed(f.event_id, "event_id");
  const auto kind = find_enum<EventKind>(f.kind);
  if (!kind) fail("unknown event kind '" + f.kind + "'");
  if (f.expected_revision < 0) fail("expected_revision must be a non-negative integer");
  require_trimmed(f.occurred_at, "occurred_at");
  f.occurred_at = normalize_rfc3339(f.occurred_at, "occurred_at");
  if (!f.payload.is_object()) fail("payload must be a JSON object");
  if (is_receipt_kind(*kind)) check_receipt_payload(*kind, f.payload);
  if (kind == EventKind::kUserDecision) check_user_decision(f.payload, f.expected_revision);
  if (kind == EventKind::kInstallConsentExpired) check_consent_expired(f.payload);
  require_json_value(f.payload, "payload");
  const std::pair<const char*, const std::optional<std::string>*> optional_fields[] = {
      {"correlation_id", &f.correlation_id},
      {"causation_id", &f.causation_id},
      {"engine_version", &f.engine_version},
      {"planner_version", &f.planner_version},
      {"policy_version", &f.policy_version},
      {"host_descriptor_digest", &f.host_descriptor_digest},
      {"catalog_snapshot_digest", &f.catalog_snapshot_digest},
      {"semantic_model_digest", &f.semantic_model_digest},
      {"semantic_index_digest", &f.semantic_index_digest},
      {"work_signature", &f.work_signature}};
  for (const auto& [name, value] : optional_fields) require_optional_trimmed(*value, name);
  if (!f.random_seed.is_null() && !f.random_seed.is_number_integer() &&
      !f.random_seed.is_string()) {
    fail("random_seed must be an integer, string, or null");
  }
  if (f.random_seed.is_string()) require_json_value(f.random_seed, "random_seed");
  if (is_decision_causing(*kind)) {
    for (const auto& [name, value] : optional_fields) {
      if (std::string_view(name) == "correlation_id" ||
          std::string_view(name) == "causation_id") {
        continue;
      }
      if (!*value) fail(std::string(name) + " is required for decision-causing event " + f.kind);
    }
    if (f.random_seed.is_null()) {
      fail("random_seed is required for decision-causing event " + f.kind);
    }
  }
  EngineEvent out(std::move(f));
  out.kind_ = *kind;
  const Fields& e = out.f_;
  out.text_ = CanonicalObject()
                  .optional_string("catalog_snapshot_digest", e.catalog_snapshot_digest)
                  .optional_string("causation_id", e.causation_id)
                  .optional_string("correlation_id", e.correlation_id)
                  .optional_string("engine_version", e.engine_version)
                  .string("event_id", e.event_id)
                  .integer("expected_revision", e.expected_revision)
                  .optional_string("host_descriptor_digest", e.host_descriptor_digest)
                  .string("kind", e.kind)
                  .string("occurred_at", e.occurred_at)
                  .json("payload", e.payload)
                  .optional_string("planner_version", e.planner_version)
                  .optional_string("policy_version", e.policy_version)
                  .text("privacy", e.privacy.to_json_text())
                  .integer("protocol_version", e.protocol_version)
                  .json("random_seed", e.random_seed)
                  .text("scope", e.scope.to_json_text())
                  .optional_string("semantic_index_digest", e.semantic_index_digest)
                  .optional_string("semantic_model_digest", e.semantic_model_digest)
                  .optional_string("work_signature", e.work_signature)
                  .finish();
  out.content_digest_ = core::sha256_hex(out.text_);
  return out;
}

EngineEvent EngineEvent::from_json(const Json& value) {
  const Reader r(value, "event", kRaise);
  r.expect({}, {"catalog_snapshot_digest", "causation_id", "correlation_id", "engine_version",
                "event_id", "expected_revision", "host_descriptor_digest", "kind", "occurred_at",
                "payload", "planner_version", "policy_version", "privacy", "protocol_version",
                "random_seed", "scope", "semantic_index_digest", "semantic_model_digest",
                "work_signature"});
  require_version(r.has("protocol_version") ? r.at("protocol_version") : Json());
  r.expect({"event_id", "kind", "scope", "expected_revision", "occurred_at", "privacy"},
           {"catalog_snapshot_digest", "causation_id", "correlation_id", "engine_version",
            "host_descriptor_digest", "payload", "planner_version", "policy_version",
            "protocol_version", "random_seed", "semantic_index_digest", "semantic_model_digest",
            "work_signature"});
  require_nonnegative(r.at("expected_revision"), "expected_revision");
  Fields f{.event_id = r.string("event_id", kTrimmed),
           .kind = r.string("kind", kTrimmed),
           .scope = ScopeRef::from_json(r.at("scope")),
           .expected_revision = r.at("expected_revision").get<std::int64_t>(),
           .occurred_at = r.string("occurred_at", kTrimmed),
           .payload = r.has("payload") ? r.at("payload") : Json::object(),
           .privacy = PrivacyLabel::from_json(r.at("privacy"))};
  f.correlation_id = r.optional_string("correlation_id", kTrimmed);
  f.causation_id = r.optional_string("causation_id", kTrimmed);
  f.engine_version = r.optional_string("engine_version", kTrimmed);
  f.planner_version = r.optional_string("planner_version", kTrimmed);
  f.policy_version = r.optional_string("policy_version", kTrimmed);
  f.host_descriptor_digest = r.optional_string("host_descriptor_digest", kTrimmed);
  f.catalog_snapshot_digest = r.optional_string("catalog_snapshot_digest", kTrimmed);
  f.semantic_model_digest = r.optional_string("semantic_model_digest", kTrimmed);
  f.semantic_index_digest = r.optional_string("semantic_index_digest", kTrimmed);
  f.work_signature = r.optional_string("work_signature", kTrimmed);
  f.random_seed = r.has("random_seed") ? r.at("random_seed") : Json(nullptr);
  return create(std::move(f));
}

EngineEvent EngineEvent::from_json_text(std::string_view text) {
  Json value;
  try {
    value = core::parse_json(text);
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    if (message.find("duplicate") != std::string::npos) fail("duplicate JSON key");
    fail("message is not valid JSON");
  }
  return from_json(value);
}

Json EngineEvent::to_json() const {
  return {{"catalog_snapshot_digest", opt(f_.catalog_snapshot_digest)},
          {"causation_id", opt(f_.causation_id)},
          {"correlation_id", opt(f_.correlation_id)},
          {"engine_version", opt(f_.engine_version)},
          {"event_id", f_.event_id},
          {"expected_revision", f_.expected_revision},
          {"host_descriptor_digest", opt(f_.host_descriptor_digest)},
          {"kind", f_.kind},
          {"occurred_at", f_.occurred_at},
          {"payload", f_.payload},
          {"planner_version", opt(f_.planner_version)},
          {"policy_version", opt(f_.policy_version)},
          {"privacy", f_.privacy.to_json()},
          {"protocol_version", f_.protocol_version},
          {"random_seed", f_.random_seed},
          {"scope", f_.scope.to_json()},
          {"semantic_index_digest", opt(f_.semantic_index_digest)},
          {"semantic_model_digest", opt(f_.semantic_model_digest)},
          {"work_signature", opt(f_.work_signature)}};
}

std::string EngineEvent::identity_digest() const {
  return core::sha256_hex("ctx-engine-event:1:" + f_.event_id);
}

// ---- HostAction -----------------------------------------------------------------------------

HostAction HostAction::create(Fields f) {
  if (f.protocol_version != kProtocolVersion) require_version(Json(f.protocol_version));
  require_trimmed(f.action_id, "action_id");
  const auto kind = find_enum<ActionKind>(f.kind);
  if (!kind) fail("unknown action kind '" + f.kind + "'");
  if (f.precondition_revision < 0) fail("precondition_revision must be a non-negative integer");
  const std::pair<const char*, const std::optional<std::string>*> optional_fields[] = {
      {"entity_id", &f.entity_id},
      {"source_digest", &f.source_digest},
      {"plan_id", &f.plan_id},
      {"catalog_snapshot_id", &f.catalog_snapshot_id},
      {"consent_id", &f.consent_id},
      {"lease_id", &f.lease_id},
      {"required_host_feature", &f.required_host_feature}};
  for (const auto& [name, value] : optional_fields) require_optional_trimmed(*value, name);
  if (f.expires_at) {
    require_trimmed(*f.expires_at, "expires_at");
    f.expires_at = normalize_rfc3339(*f.expires_at, "expires_at");
  }
  for (const auto& [name, value] : {std::pair{"payload", &f.payload},
                                    std::pair{"verification", &f.verification},
                                    std::pair{"rollback", &f.rollback}}) {
    if (!value->is_object()) fail(std::string(name) + " must be a JSON object");
    require_json_value(*value, name);
  }
  HostAction::TypedPayload typed = check_action_contract(f);
  HostAction out(std::move(f));
  out.kind_ = *kind;
  out.typed_ = std::move(typed);
  const Fields& a = out.f_;
  out.text_ = CanonicalObject()
                  .string("action_id", a.action_id)
                  .optional_string("catalog_snapshot_id", a.catalog_snapshot_id)
                  .optional_string("consent_id", a.consent_id)
                  .optional_string("entity_id", a.entity_id)
                  .optional_string("expires_at", a.expires_at)
                  .string("kind", a.kind)
                  .optional_string("lease_id", a.lease_id)
                  .json("payload", a.payload)
                  .optional_string("plan_id", a.plan_id)
                  .integer("precondition_revision", a.precondition_revision)
                  .text("privacy", a.privacy.to_json_text())
                  .integer("protocol_version", a.protocol_version)
                  .optional_string("required_host_feature", a.required_host_feature)
                  .json("rollback", a.rollback)
                  .text("scope", a.scope.to_json_text())
                  .optional_string("source_digest", a.source_digest)
                  .json("verification", a.verification)
                  .finish();
  out.content_digest_ = core::sha256_hex(out.text_);
  return out;
}

HostAction HostAction::from_json(const Json& value) {
  const Reader r(value, "action", kRaise);
  r.expect({}, {"action_id", "catalog_snapshot_id", "consent_id", "entity_id", "expires_at",
                "kind", "lease_id", "payload", "plan_id", "precondition_revision", "privacy",
                "protocol_version", "required_host_feature", "rollback", "scope",
                "source_digest", "verification"});
  require_version(r.has("protocol_version") ? r.at("protocol_version") : Json());
  r.expect({"action_id", "kind", "scope", "precondition_revision", "privacy"},
           {"catalog_snapshot_id", "consent_id", "entity_id", "expires_at", "lease_id", "payload",
            "plan_id", "protocol_version", "required_host_feature", "rollback", "source_digest",
            "verification"});
  require_nonnegative(r.at("precondition_revision"), "precondition_revision");
  auto object_of = [&](const char* key) { return r.has(key) ? r.at(key) : Json::object(); };
  Fields f{.action_id = r.string("action_id", kTrimmed),
           .kind = r.string("kind", kTrimmed),
           .scope = ScopeRef::from_json(r.at("scope")),
           .precondition_revision = r.at("precondition_revision").get<std::int64_t>(),
           .payload = object_of("payload"),
           .privacy = PrivacyLabel::from_json(r.at("privacy"))};
  f.entity_id = r.optional_string("entity_id", kTrimmed);
  f.source_digest = r.optional_string("source_digest", kTrimmed);
  f.plan_id = r.optional_string("plan_id", kTrimmed);
  f.catalog_snapshot_id = r.optional_string("catalog_snapshot_id", kTrimmed);
  f.consent_id = r.optional_string("consent_id", kTrimmed);
  f.lease_id = r.optional_string("lease_id", kTrimmed);
  f.expires_at = r.optional_string("expires_at", kTrimmed);
  f.required_host_feature = r.optional_string("required_host_feature", kTrimmed);
  f.verification = object_of("verification");
  f.rollback = object_of("rollback");
  return create(std::move(f));
}

HostAction HostAction::from_json_text(std::string_view text) {
  Json value;
  try {
    value = core::parse_json(text);
  } catch (const InvalidArgument&) {
    fail("message is not valid JSON");
  }
  return from_json(value);
}

Json HostAction::to_json() const {
  return {{"action_id", f_.action_id},
          {"catalog_snapshot_id", opt(f_.catalog_snapshot_id)},
          {"consent_id", opt(f_.consent_id)},
          {"entity_id", opt(f_.entity_id)},
          {"expires_at", opt(f_.expires_at)},
          {"kind", f_.kind},
          {"lease_id", opt(f_.lease_id)},
          {"payload", f_.payload},
          {"plan_id", opt(f_.plan_id)},
          {"precondition_revision", f_.precondition_revision},
          {"privacy", f_.privacy.to_json()},
          {"protocol_version", f_.protocol_version},
          {"required_host_feature", opt(f_.required_host_feature)},
          {"rollback", f_.rollback},
          {"scope", f_.scope.to_json()},
          {"source_digest", opt(f_.source_digest)},
          {"verification", f_.verification}};
}


std::string HostAction::identity_digest() const {
  return core::sha256_hex("ctx-engine-action:1:" + f_.action_id);
}

// ---- Transition -----------------------------------------------------------------------------

Transition Transition::create(std::string event_id, ScopeRef scope, std::int64_t from_revision,
                              std::int64_t to_revision, std::vector<HostAction> actions,
                              std::vector<Json> diagnostics) {
  require_trimmed(event_id, "event_id");
  if (from_revision < 0) fail("from_revision must be a non-negative integer");
  if (to_revision < 0) fail("to_revision must be a non-negative integer");
  if (to_revision != from_revision + 1) {
    fail("to_revision must advance exactly one revision from from_revision");
  }
  for (const auto& action : actions) {
    if (action.precondition_revision() != to_revision) {
      fail("action precondition_revision must equal committed transition to_revision");
    }
    if (!(action.scope() == scope)) fail("action scope must match transition scope");
  }
  std::size_t index = 0;
  for (const auto& diagnostic : diagnostics) {
    if (!diagnostic.is_object()) fail("diagnostics must contain JSON objects");
    require_json_value(diagnostic, "diagnostics[" + std::to_string(index++) + "]");
  }
  Transition out(std::move(event_id), std::move(scope));
  out.from_revision_ = from_revision;
  out.to_revision_ = to_revision;
  out.actions_ = std::move(actions);
  out.diagnostics_ = std::move(diagnostics);
  return out;
}

Transition Transition::from_json(const Json& value) {
  Reader r(value, "transition", kRaise);
  r.exact({"actions", "diagnostics", "event_id", "from_revision", "protocol_version", "scope",
           "to_revision"});
  require_version(value.at("protocol_version"));
  if (!value.at("actions").is_array()) fail("actions must be a JSON array");
  if (!value.at("diagnostics").is_array()) fail("diagnostics must be a JSON array");
  require_nonnegative(value.at("from_revision"), "from_revision");
  require_nonnegative(value.at("to_revision"), "to_revision");
  std::vector<HostAction> actions;
  for (const auto& item : value.at("actions")) actions.push_back(HostAction::from_json(item));
  std::vector<Json> diagnostics(value.at("diagnostics").begin(), value.at("diagnostics").end());
  return create(r.string("event_id"), ScopeRef::from_json(value.at("scope")),
                value.at("from_revision").get<std::int64_t>(),
                value.at("to_revision").get<std::int64_t>(), std::move(actions),
                std::move(diagnostics));
}

Transition Transition::from_json_text(std::string_view text) {
  Json value;
  try {
    value = core::parse_json(text);
  } catch (const InvalidArgument&) {
    fail("message is not valid JSON");
  }
  return from_json(value);
}

Json Transition::to_json() const {
  Json actions = Json::array();
  for (const auto& action : actions_) actions.push_back(action.to_json());
  return {{"actions", actions},
          {"diagnostics", Json(diagnostics_)},
          {"event_id", event_id_},
          {"from_revision", from_revision_},
          {"protocol_version", kProtocolVersion},
          {"scope", scope_.to_json()},
          {"to_revision", to_revision_}};
}

std::string Transition::to_json_text() const {
  std::vector<std::string_view> actions;
  actions.reserve(actions_.size());
  for (const auto& action : actions_) actions.push_back(action.to_json_text());
  return CanonicalObject()
      .text("actions", canonical_array(actions))
      .text("diagnostics", diagnostics_.empty() ? std::string("[]")
                                                : core::canonical_json(Json(diagnostics_)))
      .string("event_id", event_id_)
      .integer("from_revision", from_revision_)
      .integer("protocol_version", kProtocolVersion)
      .text("scope", scope_.to_json_text())
      .integer("to_revision", to_revision_)
      .finish();
}

}  // namespace ctx::engine
