// Test-only seams into an EngineComposition (the seeds' `composition._engine` and their
// monkeypatching of activation_execution_status). Production code never includes this header;
// EngineComposition befriends the class so the seams stay off its public surface.
#ifndef CTX_TESTS_SUPPORT_ENGINE_COMPOSITION_PEER_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_COMPOSITION_PEER_HPP_

#include <functional>
#include <utility>

#include "host/runtime/composition.hpp"
#include "host/runtime/detail/composition_parts.hpp"

namespace ctx::testing {

class EngineCompositionPeer {
 public:
  // The composition's engine coordinator (valid until the composition closes).
  static engine::Engine& engine(runtime::EngineComposition& composition) {
    return *composition.parts_->engine;
  }

  // Replaces the activation status read execute_activation uses (race injection).
  static void override_activation_status(
      runtime::EngineComposition& composition,
      std::function<engine::ActivationExecutionStatus(const engine::HostAction&)> status) {
    std::lock_guard lock(composition.mutex_);
    composition.activation_status_override_ = std::move(status);
  }
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_COMPOSITION_PEER_HPP_
