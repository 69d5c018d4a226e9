// EngineSnapshot: one authoritative stream head (stream, revision, state, record digest) as
// engine::Engine materialises it; the runtime projects it without further authority.
#ifndef CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
#define CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_

#include "host/engine/engine.hpp"

namespace ctx::runtime {

using engine::EngineSnapshot;

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_ENGINE_SNAPSHOT_HPP_
