// EngineComposition: one schema-v3 engine over one SQLite journal plus one pinned, read-only
// indexed graph artifact, wired to the caller's benefit-facts, material and install-bundle ports
// (runtime spec §1). It owns construction and lifetime only: it does not observe a host, choose
// consent or rank anything itself.
//
// Thread-safety: every public call holds one re-entrant lock, so a composition may be shared
// between threads; two compositions on the same journal file race through the journal's
// optimistic revisions (one wins, the other gets RevisionConflict). Process-bound: a composition
// used from a forked child throws ("forked process"), and one destroyed in a forked child leaves
// the SQLite handles and files it inherited untouched (they belong to the parent).
#ifndef CTX_HOST_RUNTIME_COMPOSITION_HPP_
#define CTX_HOST_RUNTIME_COMPOSITION_HPP_

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/time.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/ports/installer_port.hpp"
#include "host/runtime/activation_execution.hpp"
#include "host/runtime/consent/install_approvals.hpp"
#include "host/runtime/engine_snapshot.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/managed_query.hpp"
#include "host/runtime/planning_ports.hpp"
#include "host/runtime/shared_journal.hpp"

namespace ctx::runtime {

namespace detail {
struct CompositionParts;
}  // namespace detail

// Default planner version of the production composition.
inline constexpr std::string_view kDefaultRuntimePlannerVersion =
    "ctx-authenticated-net-benefit-planner-v3";

// Inputs of open_engine_composition. Ports are shared: the caller may keep its own reference.
struct EngineCompositionOptions {
  std::filesystem::path graph_artifact_path;  // read-only graph store (build_graph_store)
  std::string graph_artifact_sha256;          // pin: sha256 of the artifact's exact bytes
  std::filesystem::path journal_path;         // SQLite journal (created if absent)
  ObservationNormalizer observation_normalizer;            // required
  std::shared_ptr<BenefitFactsPort> benefit_facts_port;    // required
  std::optional<NetBenefitPolicy> net_benefit_policy;     // required
  std::string catalog_namespace_digest;                    // sha256
  std::filesystem::path benefit_audit_path;                // SQLite benefit audit
  std::shared_ptr<MaterialPort> material_port;             // may be null: no load authority
  std::shared_ptr<InstallBundlePort> install_bundle_port;  // may be null: no install authority
  // The activation actuator execute_activation calls: in production the installer plugin
  // (activation_port_from_registry), in tests a double. May be null: no activation authority.
  std::shared_ptr<engine::ActivationPort> activation_port;
  // The physical installation actuator execute_install and resolve_install_execution_binding
  // use: installer drivers resolved through the plugin registry in production
  // (installer_resolver_from_registry), doubles in tests. Null: no install authority
  // ("no physical installation actuator").
  std::shared_ptr<const InstallActuator> install_actuator;
  // Root of the install policy store (consent/install_policy_store.hpp) the engine's preapproved
  // grant guard holds around an automatic grant's commit. Absent: preapproved grants are refused.
  std::optional<std::filesystem::path> policy_store_root;
  // The standing install approvals the preapproved grant guard also accepts (may be null).
  std::shared_ptr<const InstallApprovals> install_approvals;
  std::string planner_version = std::string(kDefaultRuntimePlannerVersion);
  // Host-authenticated one-shot guard for interactive install decisions; may be empty. It must be
  // idempotent for a committed reservation: an identical retry of a committed decision enters
  // it again and settles it (how a crash between commit and settlement is recovered).
  InteractiveInstallDecisionGuard interactive_install_decision_guard;
  // Trusted clock for authority checks; null means the system clock.
  std::shared_ptr<const core::Clock> trusted_clock;
  // Journal and claim ports already open on journal_path (both or neither; typically one
  // store::SqliteJournalStore, or a wrapper around it that injects faults). Null: the
  // composition opens store::SqliteJournalStore on journal_path with trusted_clock itself.
  std::shared_ptr<engine::JournalStore> journal_store;
  std::shared_ptr<engine::ClaimStore> claim_store;
  // Without injected ports: the process's connection to journal_path to use (opened, if it is
  // not yet, only after the graph and audit store); null: the composition opens its own.
  std::shared_ptr<SharedJournal> shared_journal;
};

class EngineComposition final {
 public:
  EngineComposition(const EngineComposition&) = delete;
  EngineComposition& operator=(const EngineComposition&) = delete;
  EngineComposition(EngineComposition&&) = delete;
  EngineComposition& operator=(EngineComposition&&) = delete;
  // Closes the composition if it is still open.
  ~EngineComposition();

  // The planning-environment digest every managed event must carry as catalog_snapshot_digest.
  const std::string& catalog_snapshot_digest() const noexcept { return catalog_snapshot_digest_; }
  const std::string& planner_version() const noexcept { return planner_version_; }

  // Processes one event through the engine (idempotent for an identical committed event).
  // Errors: RevisionConflict, EventIdCollision, the engine's validation errors,
  // FailedPrecondition ("engine composition is closed").
  engine::Transition process(const engine::EngineEvent& event);

  // The authoritative head of the stream of `scope` (revision 0 and no state when empty).
  EngineSnapshot snapshot(const engine::ScopeRef& scope);

  // Legacy fresh-stream planning: SessionStarted at 0, IntentObserved at 1, same scope, plan id
  // and environment; commits both and projects revision 2. Errors: ManagedQueryError.
  PreparedManagedQuery prepare_managed_query(const engine::EngineEvent& session_started,
                                             const engine::EngineEvent& intent_observed);

  // Commits or exactly replays one managed plan on a stable session stream (§1.4): validates
  // both events before any write ("IntentObserved", "stable stream", "planning environment",
  // "planner", "<field>", "plan and work identity"), replays or commits SessionStarted, refuses
  // a new replacement plan on an ended session ("session has ended") or with pending consent or
  // effects ("settle pending authority"), then processes the planning event and projects the
  // current head. Errors: ManagedQueryError, RevisionConflict, EventIdCollision.
  ManagedAdvanceResult advance_managed_query(const engine::EngineEvent& session_started,
                                             const engine::EngineEvent& planning_observed);

  // Projects the latest committed plan of `scope` without planning; the plan must belong to
  // this planning environment. Errors: ManagedQueryError.
  PreparedManagedQuery reopen_managed_query(
      const engine::ScopeRef& scope, const std::optional<std::string>& expected_plan_id = {});

  // Claims one exact pending ActivateCapability, activates it through the activation port, records
  // what the installer observed and settles it with an ActionApplied receipt (runtime spec §6.4,
  // activation_execution.hpp). Idempotent and crash-recovering: re-entry after a crash at any
  // step ends in exactly one outcome; a claim without an outcome asks the port's reconcile.
  // "failed" and "indeterminate" observations are reported and leave the claim open.
  // Errors: ActivationExecutionError ("no activation actuator", "different target", ...), the
  // engine's claim/outcome errors.
  ActivationExecutionReport execute_activation(const engine::HostAction& action,
                                               const engine::InstallExecutionBinding& binding,
                                               std::string_view expected_host_descriptor_digest,
                                               std::string_view verification_digest);
  // Executes one exact pending DeactivateCapability: the activation port deactivates it, then an
  // ActionApplied receipt (ActionFailed when the installer reports it cannot) dated by the
  // trusted clock settles it; the engine does not guard deactivation receipts, so no claim is
  // taken. Idempotent and crash-recovering: a re-run after a crash asks the installer again and
  // commits the one receipt (activation_execution.hpp). Errors: ActivationExecutionError (not a
  // schema-v3 deactivation, no activation actuator, contended), the engine's. With kRelease the
  // installer is not called (another session still uses the capability).
  DeactivationExecutionReport execute_deactivation(
      const engine::HostAction& action, DeactivationMode mode = DeactivationMode::kInstaller);

  // The binding the current installer driver of `selection` would execute `action` under
  // (driver id, plugin identity digest, host identity, install root digest), without installing
  // anything. `action` must be the exact v3 InstallCapability of `selection` (same entity,
  // descriptor and result material). Errors: InstallExecutionError ("no physical installation
  // actuator", "root changed", "does not match its selection").
  engine::InstallExecutionBinding resolve_install_execution_binding(
      const engine::HostAction& action, const engine::PlanCapabilityV3& selection);

  // Claims one exact pending InstallCapability under `captured_binding` (the binding committed
  // with its decision), installs through the installer driver, records what it observed and
  // settles it with a receipt (install_execution.hpp). Before claiming and before calling the
  // driver the installer is re-resolved: another identity → "captured actuator", another root →
  // "root changed", both before any claim or host mutation. Idempotent and crash-recovering: a
  // claim without an outcome only reconciles. Errors: InstallExecutionError, the engine's claim
  // errors (InstallActionClaimExpired, ...).
  InstallExecutionReport execute_install(const engine::HostAction& action,
                                         const engine::PlanCapabilityV3& selection,
                                         const engine::InstallExecutionBinding& captured_binding,
                                         std::string_view expected_policy_digest);

  // Durable progress of one install action (claimed / outcome recorded / settled).
  engine::InstallExecutionStatus install_execution_status(const engine::HostAction& action);

  // The journal record of `scope`'s stream at `revision`, if one exists.
  std::optional<engine::JournalRecord> journal_record(const engine::ScopeRef& scope,
                                                      engine::Revision revision);

  // The transition of the record at `revision` of `scope`'s stream: the one process() last
  // returned when it is that record (a committed revision never changes, so it is not read back
  // and parsed again), else the journal's record, read and verified. nullopt when there is none.
  std::optional<engine::Transition> transition_at(const engine::ScopeRef& scope,
                                                  engine::Revision revision);

  // Releases the pinned graph snapshot; idempotent.
  void close();
  bool closed() const;

 private:
  friend std::unique_ptr<EngineComposition> open_engine_composition(EngineCompositionOptions);

  explicit EngineComposition(std::unique_ptr<detail::CompositionParts> parts);

  void assert_usable() const;
  PreparedManagedQuery project_managed_snapshot(const EngineSnapshot& snapshot,
                                                const std::optional<std::string>& expected);
  void validate_managed_advance_events(const engine::EngineEvent& session_started,
                                       const engine::EngineEvent& planning_observed) const;

  mutable std::recursive_mutex mutex_;
  std::unique_ptr<detail::CompositionParts> parts_;
  std::string catalog_snapshot_digest_;
  std::string planner_version_;
  pid_t owner_pid_;
  bool closed_ = false;
  // What process() last returned, and the stream it is journaled in (transition_at's answer).
  struct Committed {
    engine::StreamId stream;
    engine::Transition transition;
  };
  std::optional<Committed> last_committed_;
};

// Opens one composition (§1.2): checks the inputs, pins the material and install-bundle ports,
// opens the graph artifact (verifying its sha256) before creating the journal, then builds the
// planner, replay boundary and engine. A failure leaves no journal behind.
// Errors: InvalidArgument naming the input, DataLoss for a graph that does not match its pin.
std::unique_ptr<EngineComposition> open_engine_composition(EngineCompositionOptions options);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_COMPOSITION_HPP_
