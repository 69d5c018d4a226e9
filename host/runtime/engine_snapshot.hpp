// EngineSnapshot: one authoritative stream head as the engine materialised it — the stream, its
// revision, the state at that revision (absent for an empty stream) and the head record digest.
// A plain value; equality compares every field. Thread-safe (immutable once built).
#ifndef CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
#define CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_

#include <optional>
#include <string>

#include "host/engine/state.hpp"
#include "host/engine/stream_id.hpp"

namespace ctx::runtime {

struct EngineSnapshot {
  engine::StreamId stream_id;
  engine::Revision revision = 0;
  std::optional<engine::EngineState> state;
  std::optional<std::string> record_digest;
  // True when materialising the head had to repair the stream's projection row.
  bool projection_repaired = false;

  friend bool operator==(const EngineSnapshot&, const EngineSnapshot&) = default;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
