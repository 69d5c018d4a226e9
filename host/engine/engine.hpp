// engine::Engine — the coordinator of spec §5 on the JournalStore and ClaimStore ports:
// process() preflights an ingress event, returns the stored transition for an identical retry
// (no planner call), refuses a reused event id (EventIdCollision) or a stale head
// (RevisionConflict) before any planning, materialises the head by replaying the journal
// (byte-identical, cached per stream), checks the event's authority (consents, trusted clock,
// execution outcomes), plans, reduces and commits. The host-authority entry points claim
// install / activation actions once and record their verified outcomes.
// Thread-safety: one Engine may be used from several threads (an internal mutex serialises
// calls); several Engines may share one journal (the journal orders their commits).
#ifndef CTX_HOST_ENGINE_ENGINE_HPP_
#define CTX_HOST_ENGINE_ENGINE_HPP_

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "host/core/lru_map.hpp"
#include "host/core/time.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/plan.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/replay.hpp"
#include "host/engine/state.hpp"

namespace ctx::engine {

// An immutable EngineState shared by every snapshot of one head: copies share one
// std::shared_ptr<const EngineState> (nothing is deep-copied). Empty for an empty stream.
class SharedState {
 public:
  SharedState() = default;
  SharedState(std::nullopt_t) noexcept {}  // NOLINT(google-explicit-constructor)
  SharedState(std::shared_ptr<const EngineState> state) noexcept  // NOLINT
      : state_(std::move(state)) {}
  SharedState(EngineState state)  // NOLINT(google-explicit-constructor)
      : state_(std::make_shared<const EngineState>(std::move(state))) {}
  SharedState(std::optional<EngineState> state)  // NOLINT(google-explicit-constructor)
      : state_(state ? std::make_shared<const EngineState>(std::move(*state)) : nullptr) {}

  bool has_value() const noexcept { return state_ != nullptr; }
  explicit operator bool() const noexcept { return state_ != nullptr; }
  // REQUIRES: has_value().
  const EngineState& operator*() const noexcept { return *state_; }
  const EngineState* operator->() const noexcept { return state_.get(); }
  const std::shared_ptr<const EngineState>& shared() const noexcept { return state_; }

  // Equal when both are empty or hold equal states (the same shared state compares at once).
  friend bool operator==(const SharedState& a, const SharedState& b) {
    if (a.state_ == b.state_) return true;
    return a.state_ && b.state_ && *a.state_ == *b.state_;
  }

 private:
  std::shared_ptr<const EngineState> state_;
};

// One materialised stream head: revision 0 and no state / record for an empty stream.
struct EngineSnapshot {
  StreamId stream_id;
  Revision revision = 0;
  SharedState state;
  std::optional<std::string> record_digest;
  bool projection_repaired = false;
  friend bool operator==(const EngineSnapshot&, const EngineSnapshot&) = default;
};

// The exact decision an interactive UserDecision asserts, handed to the host's guard.
struct InteractiveInstallDecisionReservation {
  ScopeRef scope;
  std::string event_id;
  std::string event_content_digest;
  std::string consent_id;
  Decision decision = Decision::kDenied;
  std::string policy_snapshot_digest;
  std::string requested_action_id;
  ActionKind requested_action_kind = ActionKind::kInstallCapability;
  std::string requested_action_content_digest;
  std::int64_t requested_action_precondition_revision = 0;
  std::string install_expires_at;
};

// Host port for interactive decisions: called (entered) before the commit with the exact
// reservation; throwing refuses the decision. The returned callable settles the reservation
// once, after a clean commit (it is dropped unsettled when the commit fails). An identical retry
// of a committed decision enters the guard again with the same reservation and settles it, so a
// crash between commit and settlement is recovered by retrying: both steps must be idempotent
// for a reservation whose decision is committed.
using InteractiveInstallDecisionGuard =
    std::function<std::function<void()>(const InteractiveInstallDecisionReservation&)>;

// Host port for preapproved (policy-granted) installs. `hold` returns the current consent policy
// when `policy_snapshot_digest` names it (nullopt otherwise) and keeps it held for the
// transition; `assert_current` re-checks, immediately before the commit, that it still is the
// current policy (throwing when it is not). `approved` (optional) says whether the human already
// approved exactly this install (its capability and result material) under the held policy: a
// standing approval, which authorises a policy-basis grant the policy's mode alone would not.
struct PreapprovedInstallPolicyGuard {
  std::function<std::optional<InstallConsentPolicy>(const std::string& policy_snapshot_digest)>
      hold;
  std::function<void()> assert_current;
  std::function<bool(const InstallPlanDescriptor& descriptor,
                     const std::string& policy_snapshot_digest)>
      approved{};
};

// Replays journal records through the v3 reducer for JournalStore verification (e.g.
// store::SqliteJournalStore::verify): every record must reproduce its stored transition
// byte for byte. Errors from apply: ReplayDivergenceError, UnsupportedReducerVersionError.
class ReducerReplayer final : public StreamReplayer {
 public:
  void reset() override { state_.reset(); }
  std::string apply(const JournalRecord& record) override;

 private:
  std::optional<EngineState> state_;
};

struct EngineOptions {
  // Streams whose head state stays cached (least recently used evicted first; an evicted
  // stream is resumed from its stored state again). At least 1.
  std::size_t stream_cache_capacity = 64;
};

struct EnginePorts {
  ObservationNormalizer observation_normalizer;  // required for observation events
  DecisionPlanner decision_planner;              // required for planning events
  InteractiveInstallDecisionGuard interactive_install_decision_guard{};  // optional
  PreapprovedInstallPolicyGuard preapproved_install_policy_guard{};      // optional
};

class Engine {
 public:
  // `journal`, `claims` (may be null: no execution authority) and `clock` (trusted UTC) must
  // outlive the engine.
  Engine(JournalStore& journal, ClaimStore* claims, const core::Clock& clock, EnginePorts ports,
         EngineOptions options = {});
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Commits `event` and returns its transition (or the stored one for an identical retry).
  // Errors: ProtocolValidationError / Replay*Error (preflight), EventIdCollision,
  // RevisionConflict{expected, actual}, InvalidEventError / RevisionConflictError (reducer),
  // CtxEngineError (authority refusals), InstallExecutionOutcomeRequired /
  // ActivationExecutionOutcomeRequired (a receipt of a claimable action without its guard),
  // ReplayDivergenceError, StoreBusy, JournalCorruption.
  Transition process(const EngineEvent& event);
  // A receipt for a pending v3 InstallCapability, settled with its recorded outcome's guard.
  Transition process_install_receipt(const EngineEvent& receipt, const SettlementGuard& guard);
  // A receipt for a pending v3 ActivateCapability (guard mode applied).
  Transition process_activation_receipt(const EngineEvent& receipt, const SettlementGuard& guard);

  // The verified head of `stream`. Errors: StoreBusy, JournalCorruption (the stored state does
  // not match the head or does not decode).
  EngineSnapshot snapshot(const StreamId& stream);

  // Durably claims the exact pending journal install for `execution_binding`.
  // Errors: CtxEngineError ("install action is not the exact pending journal authority",
  // "legacy selections cannot authorize physical installation"), InvalidArgument (binding does
  // not name the descriptor's installer), and the ClaimStore errors.
  ActionClaim authorize_install(const HostAction& action, const PlanCapabilityV3& selection,
                                const InstallPlanDescriptor& descriptor,
                                const std::string& expected_catalog_snapshot_digest,
                                const std::string& expected_policy_digest,
                                const InstallExecutionBinding& execution_binding);
  // Durably claims the exact pending journal activation.
  // Errors: CtxEngineError ("activation action is not exact pending journal authority"), and
  // the ClaimStore errors (ActivationActionAlreadyClaimed, ...).
  ActionClaim authorize_activation(const HostAction& action,
                                   const InstallExecutionBinding& execution_binding,
                                   const std::string& expected_host_descriptor_digest);

  // Records the verified outcome of a claimed action (for executors) and returns the guard that
  // settles it through process_*_receipt. Errors: the ClaimStore outcome errors.
  SettlementGuard record_install_outcome(
      const HostAction& action, const InstallExecutionBinding& execution_binding,
      InstallOutcome outcome, std::optional<std::string> observed_material_identity_digest,
      const std::string& verification_digest);
  SettlementGuard record_activation_outcome(const HostAction& action,
                                            const InstallExecutionBinding& execution_binding,
                                            const std::string& observed_material_identity_digest,
                                            const std::string& verification_digest);

  InstallExecutionStatus install_execution_status(const HostAction& action) const;
  ActivationExecutionStatus activation_execution_status(const HostAction& action) const;

 private:
  struct Cached {
    std::string stream_key;
    Revision revision = 0;
    std::string record_digest;
    std::shared_ptr<const EngineState> state;
  };

  Transition process_locked(const EngineEvent& event, const std::optional<SettlementGuard>& guard);
  EngineSnapshot snapshot_locked(const StreamId& stream);
  EngineSnapshot snapshot_at(const StreamId& stream, const JournalHead& head);
  void remember(Cached entry);
  ClaimStore& claims() const;
  const PendingEffect& exact_pending(const EngineSnapshot& snapshot, const HostAction& action,
                                     const char* refusal) const;

  // Re-enters and settles the interactive decision guard for an identical retry of a committed
  // interactive UserDecision (`record` is its journal record).
  void settle_committed_decision(const EngineEvent& event, const std::string& source_digest,
                                 const JournalRecord& record);

  JournalStore& journal_;
  ClaimStore* claims_;
  const core::Clock& clock_;
  EnginePorts ports_;
  EngineOptions options_;
  std::recursive_mutex mutex_;
  // The stream cache by stream key: at most options_.stream_cache_capacity entries, least
  // recently used evicted first.
  core::LruMap<std::string, Cached> streams_;  // GUARDED_BY(mutex_)
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_ENGINE_HPP_
