// The replay boundary (spec §4): ingress events are preflighted (privacy, tokens, digests,
// payload bounds) and sanitised into the reducer event that is journaled; observation
// references are resolved to surrogates by the host's normaliser, planning kinds get the
// planner's decision surrogate; ReplayInput is the canon-U record of all of it.
// Thread-safe (pure functions and immutable values).
#ifndef CTX_HOST_ENGINE_REPLAY_HPP_
#define CTX_HOST_ENGINE_REPLAY_HPP_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/state.hpp"

namespace ctx::engine {

using core::Json;

inline constexpr std::string_view kReplayInputSchema = "ctx.engine.replay-input";
inline constexpr std::string_view kNormalizerVersion = "ctx-normalizer-structured-v1";
inline constexpr std::string_view kDecisionPlanSchema = "ctx.decision.capability-plan";

// {schema_id, schema_version, value, value_digest}: value_digest = sha(canon-U(value)); every
// string and key inside value is an opaque token, depth ≤ 8, ≤ 100 items per collection.
class StructuredSurrogate {
 public:
  // Errors: ReplayPrivacyError ("must be an opaque safe token"), ReplayValidationError.
  static StructuredSurrogate create(std::string schema_id, std::int64_t schema_version, Json value);
  // Errors: ReplayBindingError "value_digest does not match" and the create() errors.
  static StructuredSurrogate from_json(const Json& value);
  Json to_json() const;
  // canon-U of to_json(), composed from the value's kept text.
  std::string to_json_text() const;
  const std::string& schema_id() const noexcept { return schema_id_; }
  std::int64_t schema_version() const noexcept { return schema_version_; }
  const Json& value() const noexcept { return value_; }
  const std::string& value_digest() const noexcept { return value_digest_; }
  friend bool operator==(const StructuredSurrogate&, const StructuredSurrogate&) = default;

 private:
  StructuredSurrogate() = default;
  std::string schema_id_;
  std::int64_t schema_version_ = 1;
  Json value_;
  std::string value_text_;  // canon-U of value_
  std::string value_digest_;
};

// The opaque reference an observation event carries instead of content.
struct ObservationReference {
  std::string provider_id;
  std::string opaque_id;
  std::string content_digest;
};

// What the decision planner is told about the planning event.
struct PlanningContext {
  std::string planner_version;
  std::string catalog_snapshot_digest;
};

// Host port: resolves a reference into an approved observation surrogate
// (ctx.observation.current-work v1 or ctx.observation.opaque-ref v1). `state` is the stream's
// current state (null before SessionStarted).
using ObservationNormalizer =
    std::function<StructuredSurrogate(const ObservationReference&, const EngineState*)>;

// Planner port: returns the decision surrogate (ctx.decision.capability-plan v3) whose value is
// {status, abstention_code, benefit_audit, capabilities}.
using DecisionPlanner = std::function<StructuredSurrogate(
    const StructuredSurrogate& observation, const PlanningContext&, const EngineState*)>;

// A preflighted ingress event: the sanitised reducer event plus what prepare() must resolve.
struct PreflightedEvent {
  EngineEvent ingress;
  EngineEvent reducer_event;
  std::string source_event_content_digest;  // sha(canon-U(ingress))
  std::optional<ObservationReference> observation_reference{};
};

// Pure preflight (§4): bounds, retention, opaque tokens, metadata digests and payload
// sanitisation. Errors: ReplayPrivacyError, ReplayValidationError, UnsupportedReplayEvent.
PreflightedEvent preflight_event(const EngineEvent& ingress);

// The journaled replay input of one event.
struct ReplayInput {
  EngineEvent reducer_event;
  std::string reducer_version;
  std::string source_event_content_digest;
  std::optional<StructuredSurrogate> observation_surrogate{};
  std::optional<StructuredSurrogate> decision_surrogate{};
  std::string normalizer_version = std::string(kNormalizerVersion);

  Json to_json() const;
  // canon-U of to_json(), composed from the event's and surrogates' kept texts; at most 64 KiB
  // (ReplayValidationError otherwise).
  std::string to_json_text() const;
  // Errors: ReplayValidationError / ReplayBindingError; demands canonical text.
  static ReplayInput from_json_text(std::string_view text);
};

// Resolves the observation (normaliser) and, for planning kinds, the decision (planner).
// Errors: a busy store (StoreBusy, retryable) thrown by a port passes through unchanged; any
// other port failure is ReplayValidationError "typed observation
// normalization failed" / "typed decision planning failed", UnsupportedReplayEvent "event requires
// a typed observation normalizer", ReplayPrivacyError for unapproved surrogates.
ReplayInput prepare_replay_input(const PreflightedEvent& preflighted, const EngineState* state,
                                 const ObservationNormalizer* normalizer,
                                 const DecisionPlanner* planner);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_REPLAY_HPP_
