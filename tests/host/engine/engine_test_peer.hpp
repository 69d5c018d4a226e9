// EngineTestPeer: the test-only seam to engine::Engine's private outcome permits (the seeds'
// engine._issue_install_outcome_permit / _record_install_outcome and their activation twins).
// Production code uses Engine::record_*_outcome, which issues and consumes a permit internally.
#ifndef CTX_TESTS_HOST_ENGINE_ENGINE_TEST_PEER_HPP_
#define CTX_TESTS_HOST_ENGINE_ENGINE_TEST_PEER_HPP_

#include <optional>
#include <string>
#include <utility>

#include "host/engine/engine.hpp"

namespace ctx::engine {

class EngineTestPeer {
 public:
  static OutcomePermit issue_install_outcome_permit(Engine& engine, const HostAction& action,
                                                    const InstallExecutionBinding& binding) {
    return engine.issue_install_outcome_permit(action, binding);
  }
  static OutcomePermit issue_activation_outcome_permit(Engine& engine, const HostAction& action,
                                                       const InstallExecutionBinding& binding) {
    return engine.issue_activation_outcome_permit(action, binding);
  }
  static SettlementGuard record_install_outcome(Engine& engine, const HostAction& action,
                                                const InstallExecutionBinding& binding,
                                                OutcomePermit permit, InstallOutcome outcome,
                                                std::optional<std::string> observed_material,
                                                const std::string& verification_digest) {
    return engine.record_install_outcome_with(action, binding, std::move(permit), outcome,
                                              std::move(observed_material), verification_digest);
  }
  static SettlementGuard record_activation_outcome(Engine& engine, const HostAction& action,
                                                   const InstallExecutionBinding& binding,
                                                   OutcomePermit permit,
                                                   const std::string& observed_material,
                                                   const std::string& verification_digest) {
    return engine.record_activation_outcome_with(action, binding, std::move(permit),
                                                 observed_material, verification_digest);
  }
};

}  // namespace ctx::engine

#endif  // CTX_TESTS_HOST_ENGINE_ENGINE_TEST_PEER_HPP_
