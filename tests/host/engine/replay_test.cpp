// Replay boundary (§4): surrogates, sanitisation (ingress fields that must not reach the
// journal), ReplayInput canonical round trip.
#include "host/engine/replay.hpp"

#include <gtest/gtest.h>

#include "host/engine/errors.hpp"
#include "host/engine/reducer.hpp"
#include "tests/host/engine/engine_fixtures.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine {
namespace {

using namespace ctx::engine::testing;

TEST(Replay, SurrogateDigestIsCanonUOfTheValue) {
  const Json value = {{"b", 1}, {"a", Json::array({"x", "y"})}};
  const auto s = StructuredSurrogate::create("ctx.observation.opaque-ref", 1, value);
  EXPECT_EQ(s.value_digest(), sha(R"({"a":["x","y"],"b":1})"));
  EXPECT_EQ(StructuredSurrogate::from_json(s.to_json()), s);
  auto tampered = s.to_json();
  tampered["value_digest"] = sha("other");
  CTX_EXPECT_THROW(StructuredSurrogate::from_json(tampered), ReplayBindingError,
                   "value_digest does not match");
  CTX_EXPECT_THROW(StructuredSurrogate::create("ctx.x", 1, {{"k", "has space"}}),
                   ReplayPrivacyError, "opaque safe token");
  CTX_EXPECT_THROW(StructuredSurrogate::create("ctx.x", 1, {{"k", 1.5}}), ReplayValidationError,
                   "floating point");
  Json deep = {{"v", 1}};
  for (int i = 0; i < 9; ++i) deep = Json{{"n", deep}};
  CTX_EXPECT_THROW(StructuredSurrogate::create("ctx.x", 1, deep), ReplayValidationError, "depth");
}

TEST(Replay, ObservationReferenceIsRemovedFromTheReducerEvent) {
  const Json payload = {
      {"observation_ref",
       {{"content_digest", sha("w")}, {"opaque_id", "obs-1"}, {"provider_id", "p"}}}};
  const auto pre = preflight_event(event("IntentObserved", 1, "event-intent", payload));
  EXPECT_EQ(pre.reducer_event.payload(), Json::object());
  ASSERT_TRUE(pre.observation_reference);
  EXPECT_EQ(pre.observation_reference->opaque_id, "obs-1");
  EXPECT_EQ(pre.source_event_content_digest, pre.ingress.content_digest());
  EXPECT_NE(pre.reducer_event.content_digest(), pre.ingress.content_digest());
}

TEST(Replay, FailureCodesAreRedactedSoTheyCannotInfluenceIds) {
  auto payload = Json{{"action_content_digest", sha("a")},
                      {"action_id", "action-1"},
                      {"action_kind", "ActivateCapability"},
                      {"action_precondition_revision", 3},
                      {"error", {{"code", "disk-full"}}}};
  const auto a = preflight_event(event("ActionFailed", 3, "event-failed", payload));
  payload["error"]["code"] = "permission-denied";
  const auto b = preflight_event(event("ActionFailed", 3, "event-failed", payload));
  EXPECT_EQ(a.reducer_event.payload()["error"]["code"], "redacted-host-failure");
  EXPECT_EQ(a.reducer_event.content_digest(), b.reducer_event.content_digest());
  EXPECT_NE(a.source_event_content_digest, b.source_event_content_digest);
}

TEST(Replay, ReplayInputRoundTripsCanonically) {
  const auto pre =
      preflight_event(event("SessionStarted", 0, "event-start", {{"host_level", "managing"}}));
  const auto input = prepare_replay_input(pre, nullptr, nullptr, nullptr);
  EXPECT_EQ(input.reducer_version, kReducerV3);
  const auto text = input.to_json_text();
  const auto parsed = ReplayInput::from_json_text(text);
  EXPECT_EQ(parsed.to_json_text(), text);
  EXPECT_EQ(parsed.reducer_event, input.reducer_event);
  CTX_EXPECT_THROW(ReplayInput::from_json_text(" " + text), ReplayValidationError, "canonical");
  const Json observe = {
      {"observation_ref",
       {{"content_digest", sha("w")}, {"opaque_id", "obs-1"}, {"provider_id", "p"}}}};
  CTX_EXPECT_THROW(prepare_replay_input(preflight_event(event("IntentObserved", 1, "e", observe)),
                                        nullptr, nullptr, nullptr),
                   UnsupportedReplayEvent, "requires a typed observation normalizer");
}

TEST(Replay, PreflightMetadataRules) {
  auto f = event_fields("TurnEnded", 1, "e");
  f.catalog_snapshot_digest = "not-a-digest";
  CTX_EXPECT_THROW(preflight_event(EngineEvent::create(f)), ReplayValidationError,
                   "catalog_snapshot_digest must be a lowercase SHA-256 digest");
  f = event_fields("TurnEnded", 1, "e");
  f.planner_version = "planner v3";
  CTX_EXPECT_THROW(preflight_event(EngineEvent::create(f)), ReplayPrivacyError,
                   "planner_version must be an opaque safe token");
  f = event_fields("SessionStarted", 0, "e");
  f.host_descriptor_digest.reset();
  CTX_EXPECT_THROW(preflight_event(EngineEvent::create(f)), ReplayValidationError,
                   "SessionStarted requires host_descriptor_digest");
}

}  // namespace
}  // namespace ctx::engine
