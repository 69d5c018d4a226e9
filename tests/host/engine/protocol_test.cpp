// Protocol values (§1.2–§1.6): exact key sets, digests, and every event validation rule
// raising ProtocolValidationError naming the field.
#include "host/engine/protocol.hpp"

#include <gtest/gtest.h>

#include "host/core/crypto.hpp"
#include "host/engine/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

std::string sha(const std::string& text) { return core::sha256_hex(text); }

ScopeRef scope(const std::string& suffix = "one") {
  return ScopeRef::create("tenant-1", "workspace-1", "repository-1", "session-" + suffix,
                          "exposure-" + suffix, "host-neutral");
}

EngineEvent::Fields decision_fields(const std::string& kind, std::int64_t revision) {
  EngineEvent::Fields f{.event_id = "event-" + kind,
                        .kind = kind,
                        .scope = scope(),
                        .expected_revision = revision,
                        .occurred_at = "2026-08-02T14:00:00+02:00"};
  f.correlation_id = "plan-one";
  f.engine_version = "ctx-engine-v1";
  f.planner_version = "planner-v3";
  f.policy_version = "policy-v1";
  f.host_descriptor_digest = sha("host");
  f.catalog_snapshot_digest = sha("catalog");
  f.semantic_model_digest = sha("model");
  f.semantic_index_digest = sha("index");
  f.work_signature = sha("work");
  f.random_seed = 0;
  return f;
}

TEST(Protocol, ScopeSerialisesAllSevenKeys) {
  const auto s = scope();
  const auto json = s.to_json();
  EXPECT_EQ(json.size(), 7u);
  EXPECT_TRUE(json["parent_exposure_id"].is_null());
  EXPECT_EQ(ScopeRef::from_json(json), s);
  auto missing = json;
  missing.erase("session_id");
  CTX_EXPECT_THROW(ScopeRef::from_json(missing), ProtocolValidationError,
                   "scope is missing session_id");
  auto extra = json;
  extra["path"] = "x";
  CTX_EXPECT_THROW(ScopeRef::from_json(extra), ProtocolValidationError, "unknown field(s)");
  CTX_EXPECT_THROW(ScopeRef::create("t", " w", "r", "s", "e", "h"), ProtocolValidationError,
                   "workspace_id must be a non-empty trimmed string");
  const auto child = s.with_exposure("child", "agent", s.exposure_id());
  EXPECT_TRUE(child.same_session(s));
  EXPECT_FALSE(child == s);
  EXPECT_EQ(child.stream_id(), s.stream_id());
}

TEST(Protocol, PrivacyDefaultsAndClasses) {
  EXPECT_EQ(PrivacyLabel().to_json(),
            (Json{{"classification", "private"}, {"retention", "local"}}));
  EXPECT_EQ(PrivacyLabel::from_json(Json::object()), PrivacyLabel());
  CTX_EXPECT_THROW(PrivacyLabel::create("secret", "local"), ProtocolValidationError,
                   "unknown privacy classification");
  CTX_EXPECT_THROW(PrivacyLabel::create("private", "forever"), ProtocolValidationError,
                   "unknown retention class");
}

TEST(Protocol, EventNormalisesTimeAndDigests) {
  const auto event = EngineEvent::create(decision_fields("IntentObserved", 1));
  EXPECT_EQ(event.occurred_at(), "2026-08-02T12:00:00Z");
  EXPECT_EQ(event.to_json().size(), 19u);
  EXPECT_EQ(event.content_digest(), sha(event.to_json_text()));
  EXPECT_EQ(event.identity_digest(), sha("ctx-engine-event:1:event-IntentObserved"));
  EXPECT_EQ(EngineEvent::from_json_text(event.to_json_text()), event);
  auto changed = event.fields();
  changed.random_seed = 1;
  EXPECT_NE(EngineEvent::create(changed).content_digest(), event.content_digest());
}

TEST(Protocol, EventFieldValidation) {
  auto f = decision_fields("IntentObserved", 1);
  f.protocol_version = 2;
  CTX_EXPECT_THROW(EngineEvent::create(f), UnsupportedProtocolVersionError,
                   "unsupported protocol version 2; expected 1");
  f = decision_fields("Bogus", 1);
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError, "unknown event kind");
  f = decision_fields("IntentObserved", -1);
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError, "expected_revision");
  f = decision_fields("IntentObserved", 1);
  f.occurred_at = "2026-08-02 12:00:00";
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError, "strict RFC 3339");
  f = decision_fields("IntentObserved", 1);
  f.event_id = "event ";
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError,
                   "event_id must be a non-empty trimmed string");
  f = decision_fields("IntentObserved", 1);
  f.work_signature.reset();
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError,
                   "work_signature is required for decision-causing event IntentObserved");
  f = decision_fields("IntentObserved", 1);
  f.random_seed = nullptr;
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError,
                   "random_seed is required for decision-causing event");
  f = decision_fields("IntentObserved", 1);
  f.random_seed = 1.5;
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError, "random_seed must be");
  f = decision_fields("IntentObserved", 1);
  f.payload = Json::array();
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError,
                   "payload must be a JSON object");
  f = decision_fields("IntentObserved", 1);
  f.payload = {{"bad", std::string("\xff")}};
  CTX_EXPECT_THROW(EngineEvent::create(f), ProtocolValidationError, "payload.bad");
  // Non decision-causing kinds may omit the replay fields.
  EXPECT_NO_THROW(EngineEvent::create(EngineEvent::Fields{
      .event_id = "e", .kind = "TurnEnded", .scope = scope(), .expected_revision = 3,
      .occurred_at = "2026-08-02T12:00:00Z"}));
}

TEST(Protocol, EventJsonKeySet) {
  auto json = EngineEvent::create(decision_fields("IntentObserved", 1)).to_json();
  json["extra"] = 1;
  CTX_EXPECT_THROW(EngineEvent::from_json(json), ProtocolValidationError,
                   "event has unknown field(s): extra");
  json.erase("extra");
  json.erase("scope");
  CTX_EXPECT_THROW(EngineEvent::from_json(json), ProtocolValidationError, "event is missing scope");
  CTX_EXPECT_THROW(EngineEvent::from_json_text(R"({"a":1,"a":2})"), ProtocolValidationError,
                   "duplicate JSON key");
}

EngineEvent::Fields receipt(const std::string& kind, Json payload) {
  return EngineEvent::Fields{.event_id = "r", .kind = kind, .scope = scope(),
                             .expected_revision = 4, .occurred_at = "2026-08-02T12:00:00Z",
                             .payload = std::move(payload)};
}

Json receipt_identity() {
  return {{"action_id", "action-1"},
          {"action_kind", "ActivateCapability"},
          {"action_content_digest", sha("a")},
          {"action_precondition_revision", 4}};
}

TEST(Protocol, ReceiptPayloadRules) {
  auto applied = receipt_identity();
  applied["verification"] = {{"host_state", "active"}};
  EXPECT_NO_THROW(EngineEvent::create(receipt("ActionApplied", applied)));
  auto missing = receipt_identity();
  missing.erase("action_content_digest");
  missing["reason"] = "expired";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionExpired", missing)), ProtocolValidationError,
                   "ActionExpired payload is missing action_content_digest");
  auto kind = receipt_identity();
  kind["action_kind"] = "Explode";
  kind["reason"] = "expired";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionExpired", kind)), ProtocolValidationError,
                   "action_kind must be a declared action kind");
  auto reason = receipt_identity();
  reason["reason"] = "timeout";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionExpired", reason)), ProtocolValidationError,
                   "reason must be expired");
  auto failed = receipt_identity();
  failed["error"] = {{"code", "bad code"}};
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionFailed", failed)), ProtocolValidationError,
                   "machine token");
  auto unknown = receipt_identity();
  unknown["error"] = {{"code", "x"}};
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionApplied", unknown)),
                   ProtocolValidationError, "ActionApplied payload has unknown field(s): error");
  auto state = receipt_identity();
  state["verification"] = {{"host_state", "exploded"}};
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionApplied", state)), ProtocolValidationError,
                   "host_state is unsupported");
  auto schema = receipt_identity();
  schema["verification"] = {{"schema", "ctx.install-receipt-v3"}};
  CTX_EXPECT_THROW(EngineEvent::create(receipt("ActionApplied", schema)), ProtocolValidationError,
                   "install receipt schema does not match action_kind");
}

Json decision_payload(std::int64_t precondition) {
  return {{"consent_id", "consent-1"},
          {"decision", "granted"},
          {"decision_basis", "interactive"},
          {"policy_snapshot_digest", sha("policy")},
          {"requested_action_id", "action-install"},
          {"requested_action_kind", "InstallCapability"},
          {"requested_action_content_digest", sha("install")},
          {"requested_action_precondition_revision", precondition}};
}

TEST(Protocol, UserDecisionRules) {
  EXPECT_NO_THROW(EngineEvent::create(receipt("UserDecision", decision_payload(5))));
  CTX_EXPECT_THROW(
      EngineEvent::create(receipt("UserDecision", decision_payload(6))), ProtocolValidationError,
      "requested_action_precondition_revision must target the next committed revision");
  auto p = decision_payload(5);
  p["decision"] = "maybe";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("UserDecision", p)), ProtocolValidationError,
                   "decision must be granted or denied");
  p = decision_payload(5);
  p.erase("decision_basis");
  CTX_EXPECT_THROW(EngineEvent::create(receipt("UserDecision", p)), ProtocolValidationError,
                   "is missing decision_basis");
  p = decision_payload(5);
  p["requested_action_kind"] = "ActivateCapability";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("UserDecision", p)), ProtocolValidationError,
                   "requested_action_kind must be InstallCapability or UninstallCapability");
  p = decision_payload(5);
  p["decision_basis"] = "vibes";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("UserDecision", p)), ProtocolValidationError,
                   "decision_basis must be");
}

TEST(Protocol, InstallConsentExpiredRules) {
  Json p = decision_payload(5);
  p.erase("decision");
  p.erase("decision_basis");
  p["install_expires_at"] = "2026-08-02T13:00:00Z";
  EXPECT_NO_THROW(EngineEvent::create(receipt("InstallConsentExpired", p)));
  p["install_expires_at"] = "2026-08-02T15:00:00+02:00";
  CTX_EXPECT_THROW(EngineEvent::create(receipt("InstallConsentExpired", p)),
                   ProtocolValidationError, "canonical UTC RFC 3339");
  p.erase("install_expires_at");
  CTX_EXPECT_THROW(EngineEvent::create(receipt("InstallConsentExpired", p)),
                   ProtocolValidationError, "is missing install_expires_at");
}

TEST(Protocol, ActionGenericContracts) {
  HostAction::Fields present{
      .action_id = "action-p",
      .kind = "PresentBundle",
      .scope = scope(),
      .precondition_revision = 2,
      .payload = {{"capabilities", Json::array()}, {"plan_digest", sha("d")}}};
  const auto action = HostAction::create(present);
  EXPECT_EQ(action.to_json().size(), 17u);
  EXPECT_EQ(action.content_digest(), sha(action.to_json_text()));
  EXPECT_EQ(HostAction::from_json(action.to_json()), action);
  present.payload["capabilities"] = Json::array({1, 2, 3, 4, 5, 6});
  CTX_EXPECT_THROW(HostAction::create(present), ProtocolValidationError,
                   "more than five capabilities");
  HostAction::Fields deactivate{.action_id = "a", .kind = "DeactivateCapability",
                                .scope = scope(), .precondition_revision = 2};
  CTX_EXPECT_THROW(HostAction::create(deactivate), ProtocolValidationError,
                   "entity_id is required for physical action DeactivateCapability");
  HostAction::Fields unknown{.action_id = "a", .kind = "Explode", .scope = scope()};
  CTX_EXPECT_THROW(HostAction::create(unknown), ProtocolValidationError, "unknown action kind");
}

TEST(Protocol, TransitionAdvancesExactlyOneRevision) {
  const auto t = Transition::create("e", scope(), 1, 2, {}, {Json{{"code", "x"}}});
  EXPECT_EQ(Transition::from_json_text(t.to_json_text()), t);
  CTX_EXPECT_THROW(Transition::create("e", scope(), 1, 3, {}, {}), ProtocolValidationError,
                   "to_revision must advance exactly one revision");
  HostAction::Fields present{.action_id = "action-p", .kind = "PresentBundle", .scope = scope(),
                             .precondition_revision = 1,
                             .payload = {{"capabilities", Json::array()}}};
  CTX_EXPECT_THROW(Transition::create("e", scope(), 1, 2, {HostAction::create(present)}, {}),
                   ProtocolValidationError, "precondition_revision must equal");
  CTX_EXPECT_THROW(Transition::create("e", scope(), 1, 2, {}, {Json::array()}),
                   ProtocolValidationError, "diagnostics must contain JSON objects");
}

}  // namespace
}  // namespace ctx::engine
