// EngineSnapshot: one authoritative stream head as the engine materialised it (stream, revision,
// state, record digest). A plain value; equality compares every field.
#ifndef CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
#define CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_

#include "host/engine/engine.hpp"

namespace ctx::runtime {

using EngineSnapshot = engine::EngineSnapshot;

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
