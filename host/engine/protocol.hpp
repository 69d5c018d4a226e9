// The engine protocol (spec §1.2–§1.6): ScopeRef, PrivacyLabel, EngineEvent, HostAction and
// Transition. Immutable values built by validating factories; to_json() always carries every
// key (nulls kept) and digests are sha256 of canon-U text. Errors: ProtocolValidationError
// (UnsupportedProtocolVersionError for protocol_version ≠ 1) naming the field.
// Thread-safe (immutable values).
#ifndef CTX_HOST_ENGINE_PROTOCOL_HPP_
#define CTX_HOST_ENGINE_PROTOCOL_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/action_payload.hpp"
#include "host/engine/stream_id.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

using core::Json;

inline constexpr int kProtocolVersion = 1;

inline constexpr std::string_view kInstallActionPayloadSchemaV3 =
    "ctx.install-capability-payload-v3";
inline constexpr std::string_view kInstallConsentRequestSchemaV3 =
    "ctx.install-consent-request-v3";
inline constexpr std::string_view kMaterialActionPayloadSchemaV3 =
    "ctx.material-action-payload-v3";
inline constexpr std::string_view kInstallReceiptSchemaV3 = "ctx.install-receipt-v3";
inline constexpr std::string_view kMaterialReceiptSchemaV3 = "ctx.material-receipt-v3";
inline constexpr std::string_view kPromptContextReceiptSchemaV1 = "ctx.prompt-context-receipt-v1";

// Planning kinds carry a decision: IntentObserved, DevelopmentObserved.
bool is_planning_kind(EventKind kind) noexcept;
// ActionApplied, ActionFailed, ActionExpired.
bool is_receipt_kind(EventKind kind) noexcept;

// Normalises strict RFC 3339 text to UTC "YYYY-MM-DDTHH:MM:SS[.f]Z".
// Errors: ProtocolValidationError "<field> must use strict RFC 3339 date-time syntax".
std::string normalize_rfc3339(std::string_view text, std::string_view field);

// Ownership and attribution scope of a fact. parent_exposure_id may be null.
class ScopeRef {
 public:
  static ScopeRef create(std::string tenant_id, std::string workspace_id,
                         std::string repository_id, std::string session_id,
                         std::string exposure_id, std::string host_context_id,
                         std::optional<std::string> parent_exposure_id = std::nullopt);
  // Errors: ProtocolValidationError "scope has unknown field(s)", "scope is missing <k>".
  static ScopeRef from_json(const Json& value);
  // All seven keys.
  Json to_json() const;
  // canon-U of to_json(), composed without building the JSON value.
  std::string to_json_text() const;

  const std::string& tenant_id() const noexcept { return tenant_id_; }
  const std::string& workspace_id() const noexcept { return workspace_id_; }
  const std::string& repository_id() const noexcept { return repository_id_; }
  const std::string& session_id() const noexcept { return session_id_; }
  const std::string& exposure_id() const noexcept { return exposure_id_; }
  const std::string& host_context_id() const noexcept { return host_context_id_; }
  const std::optional<std::string>& parent_exposure_id() const noexcept { return parent_; }
  // The four session fields.
  StreamId stream_id() const;
  bool same_session(const ScopeRef& other) const noexcept;
  // A copy with other exposure / host context / parent (child agents).
  ScopeRef with_exposure(std::string exposure_id, std::string host_context_id,
                         std::optional<std::string> parent_exposure_id) const;
  friend bool operator==(const ScopeRef&, const ScopeRef&) = default;

 private:
  ScopeRef() = default;
  std::string tenant_id_, workspace_id_, repository_id_, session_id_, exposure_id_,
      host_context_id_;
  std::optional<std::string> parent_;
};

// Persistence classification (default private / local).
class PrivacyLabel {
 public:
  PrivacyLabel() = default;
  PrivacyLabel(PrivacyClass classification, Retention retention) noexcept
      : classification_(classification), retention_(retention) {}
  // Parses spellings. Errors: ProtocolValidationError "unknown privacy classification" /
  // "unknown retention class".
  static PrivacyLabel create(std::string_view classification, std::string_view retention);
  static PrivacyLabel from_json(const Json& value);
  Json to_json() const;
  std::string to_json_text() const;  // canon-U of to_json()
  PrivacyClass classification() const noexcept { return classification_; }
  Retention retention() const noexcept { return retention_; }
  friend bool operator==(const PrivacyLabel&, const PrivacyLabel&) = default;

 private:
  PrivacyClass classification_ = PrivacyClass::kPrivate;
  Retention retention_ = Retention::kLocal;
};

// One revision-checked fact submitted to the engine (the ingress or sanitised reducer form).
class EngineEvent {
 public:
  struct Fields {
    std::string event_id;
    std::string kind;
    ScopeRef scope;
    std::int64_t expected_revision = 0;
    std::string occurred_at;
    Json payload = Json::object();
    PrivacyLabel privacy{};
    int protocol_version = kProtocolVersion;
    std::optional<std::string> correlation_id{};
    std::optional<std::string> causation_id{};
    std::optional<std::string> engine_version{};
    std::optional<std::string> planner_version{};
    std::optional<std::string> policy_version{};
    std::optional<std::string> host_descriptor_digest{};
    std::optional<std::string> catalog_snapshot_digest{};
    std::optional<std::string> semantic_model_digest{};
    std::optional<std::string> semantic_index_digest{};
    std::optional<std::string> work_signature{};
    Json random_seed = nullptr;  // null, integer or string
  };

  // Validates every field (§1.3) and the kind-specific payload rules; occurred_at is stored
  // normalised. Errors: ProtocolValidationError / UnsupportedProtocolVersionError.
  static EngineEvent create(Fields fields);
  // Demands the 19-key form (unknown keys refused; optional keys may be absent).
  static EngineEvent from_json(const Json& value);
  static EngineEvent from_json_text(std::string_view text);

  // All 19 keys, nulls included.
  Json to_json() const;
  // canon-U text of to_json(), encoded once when the event was made.
  const std::string& to_json_text() const noexcept { return text_; }
  // sha(canon-U(to_json())).
  const std::string& content_digest() const noexcept { return content_digest_; }
  // sha("ctx-engine-event:1:" + event_id).
  std::string identity_digest() const;

  // A copy of the fields, for building a modified event through create().
  const Fields& fields() const noexcept { return f_; }
  const std::string& event_id() const noexcept { return f_.event_id; }
  // The persisted spelling of event_kind().
  const std::string& kind() const noexcept { return f_.kind; }
  EventKind event_kind() const noexcept { return kind_; }
  const ScopeRef& scope() const noexcept { return f_.scope; }
  std::int64_t expected_revision() const noexcept { return f_.expected_revision; }
  const std::string& occurred_at() const noexcept { return f_.occurred_at; }
  const Json& payload() const noexcept { return f_.payload; }
  const PrivacyLabel& privacy() const noexcept { return f_.privacy; }
  const std::optional<std::string>& correlation_id() const noexcept { return f_.correlation_id; }
  const std::optional<std::string>& causation_id() const noexcept { return f_.causation_id; }
  const std::optional<std::string>& engine_version() const noexcept { return f_.engine_version; }
  const std::optional<std::string>& planner_version() const noexcept {
    return f_.planner_version;
  }
  const std::optional<std::string>& policy_version() const noexcept { return f_.policy_version; }
  const std::optional<std::string>& host_descriptor_digest() const noexcept {
    return f_.host_descriptor_digest;
  }
  const std::optional<std::string>& catalog_snapshot_digest() const noexcept {
    return f_.catalog_snapshot_digest;
  }
  const std::optional<std::string>& semantic_model_digest() const noexcept {
    return f_.semantic_model_digest;
  }
  const std::optional<std::string>& semantic_index_digest() const noexcept {
    return f_.semantic_index_digest;
  }
  const std::optional<std::string>& work_signature() const noexcept { return f_.work_signature; }
  const Json& random_seed() const noexcept { return f_.random_seed; }

  friend bool operator==(const EngineEvent& a, const EngineEvent& b) noexcept {
    return a.content_digest_ == b.content_digest_;
  }

 private:
  explicit EngineEvent(Fields fields) : f_(std::move(fields)) {}
  Fields f_;
  EventKind kind_ = EventKind::kSessionStarted;  // parsed from f_.kind by create()
  std::string text_;                             // canon-U of to_json()
  std::string content_digest_;
};

// A requested host effect; precondition_revision is the revision the journal holds after the
// transition that emits it.
class HostAction {
 public:
  struct Fields {
    std::string action_id;
    std::string kind;
    ScopeRef scope;
    std::int64_t precondition_revision = 0;
    Json payload = Json::object();
    PrivacyLabel privacy{};
    int protocol_version = kProtocolVersion;
    std::optional<std::string> entity_id{};
    std::optional<std::string> source_digest{};
    std::optional<std::string> plan_id{};
    std::optional<std::string> catalog_snapshot_id{};
    std::optional<std::string> consent_id{};
    std::optional<std::string> lease_id{};
    std::optional<std::string> expires_at{};
    std::optional<std::string> required_host_feature{};
    Json verification = Json::object();
    Json rollback = Json::object();
  };

  // Validates the generic and kind-specific contracts (§1.5, strict v3 payloads).
  // Errors: ProtocolValidationError naming the field.
  static HostAction create(Fields fields);
  static HostAction from_json(const Json& value);
  static HostAction from_json_text(std::string_view text);

  // All 17 keys.
  Json to_json() const;
  // canon-U text of to_json(), encoded once when the action was made.
  const std::string& to_json_text() const noexcept { return text_; }
  const std::string& content_digest() const noexcept { return content_digest_; }
  std::string identity_digest() const;

  const Fields& fields() const noexcept { return f_; }
  const std::string& action_id() const noexcept { return f_.action_id; }
  // The kind, parsed from fields().kind by create(); to_string() spells it.
  ActionKind action_kind() const noexcept { return kind_; }
  const ScopeRef& scope() const noexcept { return f_.scope; }
  std::int64_t precondition_revision() const noexcept { return f_.precondition_revision; }
  const Json& payload() const noexcept { return f_.payload; }
  const PrivacyLabel& privacy() const noexcept { return f_.privacy; }
  const std::optional<std::string>& entity_id() const noexcept { return f_.entity_id; }
  const std::optional<std::string>& source_digest() const noexcept { return f_.source_digest; }
  const std::optional<std::string>& plan_id() const noexcept { return f_.plan_id; }
  const std::optional<std::string>& catalog_snapshot_id() const noexcept {
    return f_.catalog_snapshot_id;
  }
  const std::optional<std::string>& consent_id() const noexcept { return f_.consent_id; }
  const std::optional<std::string>& lease_id() const noexcept { return f_.lease_id; }
  const std::optional<std::string>& expires_at() const noexcept { return f_.expires_at; }
  const std::optional<std::string>& required_host_feature() const noexcept {
    return f_.required_host_feature;
  }
  const Json& verification() const noexcept { return f_.verification; }
  const Json& rollback() const noexcept { return f_.rollback; }

  // The typed payload (action_payload.hpp), decoded once by create(); nullptr when the action
  // carries none of that shape: install_payload() for InstallCapability, material_payload() for
  // a material action with a v3 payload, consent_request() for RequestConsent.
  const InstallBinding* install_payload() const noexcept { return typed_.install.get(); }
  const MaterialBinding* material_payload() const noexcept { return typed_.material.get(); }
  const ConsentRequestBinding* consent_request() const noexcept {
    return typed_.consent_request.get();
  }

  // What create()'s payload checks decoded (shared between copies of one action).
  struct TypedPayload {
    std::shared_ptr<const InstallBinding> install;
    std::shared_ptr<const MaterialBinding> material;
    std::shared_ptr<const ConsentRequestBinding> consent_request;
  };

  friend bool operator==(const HostAction& a, const HostAction& b) noexcept {
    return a.content_digest_ == b.content_digest_;
  }

 private:
  explicit HostAction(Fields fields) : f_(std::move(fields)) {}
  Fields f_;
  ActionKind kind_ = ActionKind::kNoChange;  // parsed from f_.kind by create()
  TypedPayload typed_;                       // decoded from f_.payload by create()
  std::string text_;                         // canon-U of to_json()
  std::string content_digest_;
};

// The committed result of one event: from_revision → from_revision + 1 exactly; every action
// targets to_revision and the transition's scope; diagnostics are JSON objects.
class Transition {
 public:
  static Transition create(std::string event_id, ScopeRef scope, std::int64_t from_revision,
                           std::int64_t to_revision, std::vector<HostAction> actions,
                           std::vector<Json> diagnostics);
  static Transition from_json(const Json& value);
  static Transition from_json_text(std::string_view text);
  Json to_json() const;
  // canon-U of to_json(), composed from the actions' kept texts.
  std::string to_json_text() const;

  const std::string& event_id() const noexcept { return event_id_; }
  const ScopeRef& scope() const noexcept { return scope_; }
  std::int64_t from_revision() const noexcept { return from_revision_; }
  std::int64_t to_revision() const noexcept { return to_revision_; }
  const std::vector<HostAction>& actions() const noexcept { return actions_; }
  const std::vector<Json>& diagnostics() const noexcept { return diagnostics_; }
  friend bool operator==(const Transition&, const Transition&) = default;

 private:
  Transition(std::string event_id, ScopeRef scope)
      : event_id_(std::move(event_id)), scope_(std::move(scope)) {}
  std::string event_id_;
  ScopeRef scope_;
  std::int64_t from_revision_ = 0, to_revision_ = 0;
  std::vector<HostAction> actions_;
  std::vector<Json> diagnostics_;
};

// The RequestConsent actions of `transition` that offer exactly `install` (its entity, action id,
// content digest and revision) under `consent_id`, in transition order.
std::vector<const HostAction*> consent_requests_offering(const Transition& transition,
                                                         const std::string& consent_id,
                                                         const HostAction& install);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PROTOCOL_HPP_
