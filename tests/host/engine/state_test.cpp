// EngineState v3 / CommittedPlanV3 (§1.9): canonical persisted form, exact keys, plan status
// rules, and cross-reference invariants refused with StateValidationError.
#include "host/engine/state.hpp"

#include <gtest/gtest.h>

#include "host/engine/errors.hpp"
#include "host/engine/reducer.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;

EngineState started() {
  return EngineState::create(EngineState::Fields{.revision = 1,
                                                 .scope = scope(),
                                                 .host_level = HostLevel::kManaging,
                                                 .host_descriptor_digest = host_digest()});
}

EngineState planned(std::vector<Json> rows) {
  const auto s = started();
  return reduce_v3(&s, ReducerEvent{event("IntentObserved", 1, "event-intent"),
                                    ready_decision(std::move(rows))})
      .state;
}

TEST(State, PersistedFormIsCanonicalWithEighteenKeys) {
  const auto state = planned({plan_row("skill:a", "load"), plan_row("harness:h", "manual")});
  const auto json = state.to_json();
  EXPECT_EQ(json.size(), 18u);
  EXPECT_EQ(json["state_schema"], "ctx.engine-state-v3");
  const auto text = state.to_json_text();
  EXPECT_EQ(EngineState::from_json_text(text), state);
  CTX_EXPECT_THROW(EngineState::from_json_text(json.dump(2)), StateValidationError,
                   "state JSON must use canonical encoding");
  auto unknown = json;
  unknown["extra"] = 1;
  CTX_EXPECT_THROW(EngineState::from_json(unknown), StateValidationError,
                   "unknown field(s): extra");
  auto schema = json;
  schema["state_schema"] = "ctx.engine-state-v2";
  CTX_EXPECT_THROW(EngineState::from_json(schema), StateValidationError,
                   "discriminator is unsupported");
}

TEST(State, DecodedEnumeratedFieldsMustBeKnownSpellings) {
  const auto state = planned({plan_row("skill:a", "load")});
  const auto json = state.to_json();
  EXPECT_EQ(json["host_level"], "managing");
  EXPECT_EQ(json["session_status"], "active");
  EXPECT_EQ(json["capabilities"][0]["installation"], "installed");
  EXPECT_EQ(json["capabilities"][0]["activation"], "inactive");
  const std::pair<core::Json::json_pointer, const char*> cases[] = {
      {core::Json::json_pointer("/host_level"), "unknown host_level"},
      {core::Json::json_pointer("/session_status"), "unknown session_status"},
      {core::Json::json_pointer("/capabilities/0/installation"), "unknown installation"},
      {core::Json::json_pointer("/capabilities/0/activation"), "unknown activation"},
      {core::Json::json_pointer("/committed_plan/status"), "status is unsupported"},
      {core::Json::json_pointer("/committed_plan/capabilities/0/actionability"),
       "actionability is not presentable"}};
  for (const auto& [pointer, keyword] : cases) {
    SCOPED_TRACE(pointer.to_string());
    auto bad = json;
    bad[pointer] = "Installed";
    CTX_EXPECT_THROW(EngineState::from_json(bad), StateValidationError, keyword);
    CTX_EXPECT_THROW(EngineState::from_json_text(core::canonical_json(bad)), StateValidationError,
                     keyword);
    bad[pointer] = 3;
    CTX_EXPECT_THROW(EngineState::from_json(bad), StateValidationError, "must be a string");
  }
}

TEST(State, EqualityIsMemberwise) {
  const auto a = planned({plan_row("skill:a", "load")});
  const auto b = EngineState::from_json_text(a.to_json_text());
  EXPECT_EQ(a, b);
  auto f = a.fields();
  f.capabilities[0].rollback_held = true;
  EXPECT_NE(f.capabilities[0], a.fields().capabilities[0]);
  EXPECT_FALSE(f == a.fields());
  f = a.fields();
  f.session_status = SessionStatus::kEnded;
  EXPECT_FALSE(f == a.fields());
}

TEST(State, CrossReferenceInvariants) {
  const auto state = planned({plan_row("skill:a", "load"), plan_row("skill:b", "load")});
  auto f = state.fields();
  f.last_manual_bundle = {"skill:a"};
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "last_manual_bundle");
  f = state.fields();
  std::swap(f.capabilities[0], f.capabilities[1]);
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "sorted by capability_id");
  f = state.fields();
  f.capabilities[0].plan_id = "plan-other";
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "plan identity does not match");
  f = state.fields();
  f.blocked_capability_ids = {"skill:zzz"};
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "unknown capability");
  f = state.fields();
  f.capabilities[0].activation = Activation::kActive;
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "activation_lease_id");
  f = state.fields();
  f.committed_plan.reset();
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "require a committed plan");
  f = state.fields();
  f.host_descriptor_digest = "host";
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError, "host_descriptor_digest");
  auto level = state.to_json();
  level["host_level"] = "root";
  CTX_EXPECT_THROW(EngineState::from_json(level), StateValidationError, "unknown host_level");
}

TEST(State, UnleasedActiveCapabilityNeedsCleanupState) {
  const auto state = planned({plan_row("skill:a", "load")});
  auto f = state.fields();
  f.capabilities[0].activation = Activation::kActive;
  f.capabilities[0].activation_lease_id = "lease-a";
  CTX_EXPECT_THROW(EngineState::create(f), StateValidationError,
                   "unleased active capability requires cleanup or rollback state");
  f.capabilities[0].leases = {LeaseRef{"lease-a", "owner", "exposure-one"}};
  EXPECT_NO_THROW(EngineState::create(f));
}

TEST(CommittedPlan, StatusAndAuditRules) {
  const auto digest = sha("catalog");
  EXPECT_NO_THROW(CommittedPlanV3::from_decision("plan", digest, abstained_limit_zero()));
  auto bad_audit = abstained_limit_zero();
  bad_audit["benefit_audit"]["requested_limit"] = 3;
  CTX_EXPECT_THROW(CommittedPlanV3::from_decision("plan", digest, bad_audit), StateValidationError,
                   "limit-zero benefit audit");
  auto ready_empty = ready_decision({});
  CTX_EXPECT_THROW(CommittedPlanV3::from_decision("plan", digest, ready_empty),
                   StateValidationError, "ready schema-v3 plan requires rows");
  auto degraded_with_audit = degraded();
  degraded_with_audit["benefit_audit"] = audit(1, 1, 1);
  CTX_EXPECT_THROW(CommittedPlanV3::from_decision("plan", digest, degraded_with_audit),
                   StateValidationError, "degraded schema-v3 plan");
  // An undeclared spelling is refused where it is parsed; a declared abstention code of the
  // wrong status by the status rule.
  auto bad_code = degraded("exploded");
  CTX_EXPECT_THROW(CommittedPlanV3::from_decision("plan", digest, bad_code), StateValidationError,
                   "abstention_code; must be one of limit-zero");
  auto abstention_as_degradation = degraded("limit-zero");
  CTX_EXPECT_THROW(CommittedPlanV3::from_decision("plan", digest, abstention_as_degradation),
                   StateValidationError, "degraded schema-v3 plan requires no rows");
  const auto plan =
      CommittedPlanV3::from_decision("plan", digest, ready_decision({plan_row("skill:a", "load")}));
  EXPECT_EQ(plan.decision_digest(),
            sha(core::canonical_json(ready_decision({plan_row("skill:a", "load")}))));
  EXPECT_EQ(CommittedPlanV3::from_json(plan.to_json()), plan);
  EXPECT_EQ(plan.to_json().size(), 7u);
}

TEST(PlanRow, RowRulesNameTheProblem) {
  auto row = plan_row("skill:a", "load");
  row["benefit"]["marginal_net_benefit_u"] = 0;
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError,
                   "marginal_net_benefit_u");
  row = plan_row("skill:a", "load");
  row["benefit"]["tier"] = "advisory";
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "tier");
  row = plan_row("skill:a", "manual");
  row["install_plan_digest"] = sha("p");
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "install digests");
  row = plan_row("skill:a", "load");
  row["matching_signals"] = Json::array({"z", "a"});
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "sorted and unique");
  row = plan_row("skill:a", "load");
  row["name"] = "b";
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "kind:name");
  row = plan_row("agent:x", "install");
  row["install_descriptor_digest"] = sha("other");
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "install authority");
  row = plan_row("skill:a", "load");
  row["authority"]["type"] = "manual";
  CTX_EXPECT_THROW(PlanCapabilityV3::from_json(row), StateValidationError, "authority type");
}

}  // namespace
}  // namespace ctx::engine
