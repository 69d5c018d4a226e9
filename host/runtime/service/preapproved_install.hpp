// The managed service's automatic (preapproved) installation loop (runtime spec §3.10) and the
// install-policy reads set_desired needs (§3.9.2, §3.9 step 11). Internal to the service: after
// a desired set is committed, each pending consent whose kind the current persisted policy
// preapproves (no permission expansion, no credential requirement) is granted with a
// "ctx-auto-install:" UserDecision that commits to the captured execution binding, and the
// install executes through EngineComposition::execute_install; a pending install left by a
// crash is verified against its committed grant ("captured actuator") and finished, or retired
// with ActionExpired when its approval expired before any claim.
#ifndef CTX_HOST_RUNTIME_SERVICE_PREAPPROVED_INSTALL_HPP_
#define CTX_HOST_RUNTIME_SERVICE_PREAPPROVED_INSTALL_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/core/time.hpp"
#include "host/runtime/composition.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/service/query_store.hpp"

namespace ctx::runtime::detail {

// The current install policy under `root`: the persisted one, else the safe default (also when
// no root is configured). Errors: InstallPolicyCorruption, UnsafeStateFile.
InstallConsentPolicy current_install_policy(const std::optional<std::filesystem::path>& root);

// True when a pending consent of `state` was requested under `policy_digest` (is current).
bool consent_pending_under(const engine::EngineState& state, const std::string& policy_digest);

// True when the head has pending consents and every one was requested under another policy than
// `current_policy_digest` (so it is deferred rather than offered or granted).
bool install_policy_drifted(const EngineSnapshot& head, const std::string& current_policy_digest);

// What one committed desired set needs for the automatic installs.
struct DesiredInstallContext {
  const ManagedQueryRecord& parent;
  const ManagedDesiredSetRecord& desired;  // committed
  const std::optional<std::filesystem::path>& policy_store_root;
  const InstallApprovals* approvals;  // may be null
  const core::Clock& clock;
};

// The head after the automatic installs of one set_desired call.
struct DesiredProgress {
  EngineSnapshot head;
  std::vector<engine::HostAction> head_actions;   // the head transition's actions
  std::vector<std::string> indeterminate_ids;     // this call's install ended indeterminate
  bool policy_drift = false;                      // a pending consent names another policy
};

// §3.9 steps 11–12: checks the parent plan, detects policy drift and, without drift, runs the
// automatic install loop (§3.10) on `composition`. Errors: ManagedDesiredSetSupersededError,
// ManagedQueryServiceError ("interactive install decision", "captured actuator", "globally
// serialized", "explicitly persisted policy"), ManagedQueryHeadDriftError,
// InstallExecutionError ("no physical installation actuator", "root changed"), the engine's
// policy refusal ("policy") and claim errors.
DesiredProgress progress_desired_installs(EngineComposition& composition,
                                          const DesiredInstallContext& context);

}  // namespace ctx::runtime::detail

#endif  // CTX_HOST_RUNTIME_SERVICE_PREAPPROVED_INSTALL_HPP_
