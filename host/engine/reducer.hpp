// The pure v3 reducer (spec §3): (state or none, sanitised event [+ decision]) → (state',
// transition). Deterministic: every id is derived from the event's content digest (§2.3) and
// time only from event.occurred_at. Thread-safe (no shared state).
#ifndef CTX_HOST_ENGINE_REDUCER_HPP_
#define CTX_HOST_ENGINE_REDUCER_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/state.hpp"

namespace ctx::engine {

inline constexpr std::string_view kReducerV3 = "ctx-reducer-v3";

// A sanitised reducer event and, for planning kinds, the decision surrogate value
// {status, abstention_code, benefit_audit, capabilities} of schema ctx.decision.capability-plan v3.
struct ReducerEvent {
  EngineEvent event;
  std::optional<Json> decision{};
};

struct Reduction {
  EngineState state;
  Transition transition;
};

// Reduces one event. `state` may be null only for SessionStarted.
// Errors: InvalidEventError (every semantic refusal of §3), RevisionConflictError ("expected
// revision R, received N"), StateValidationError (a decision that does not validate).
// A broken internal invariant (six active capabilities, degraded plan mutating runtime) aborts.
Reduction reduce_v3(const EngineState* state, const ReducerEvent& event);

// §2.3 identifiers; `event_content_digest` is the sanitised reducer event's content digest.
std::string reducer_action_id(std::string_view event_content_digest, std::string_view kind,
                              std::string_view capability_id, std::int64_t ordinal);
std::string reducer_consent_id(std::string_view event_content_digest,
                               std::string_view capability_id);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_REDUCER_HPP_
