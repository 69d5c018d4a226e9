// Internal: everything one EngineComposition owns, built in the order runtime spec §1.2 fixes
// (graph artifact before journal) and released in reverse. Not part of the public surface.
#ifndef CTX_HOST_RUNTIME_DETAIL_COMPOSITION_PARTS_HPP_
#define CTX_HOST_RUNTIME_DETAIL_COMPOSITION_PARTS_HPP_

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "host/engine/engine.hpp"
#include "host/engine/planning/planner.hpp"
#include "host/runtime/composition.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/store/benefit_audit_store.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/sqlite_journal_store.hpp"

namespace ctx::runtime::detail {

struct CompositionParts {
  // Opens the graph artifact (pin checked), the audit store, the planner, then the journal and
  // the engine. A failure before the journal is opened leaves no journal file behind.
  static std::unique_ptr<CompositionParts> open(EngineCompositionOptions options);

  // Releases the engine, journal, planner, audit store and graph snapshot (idempotent).
  void release() noexcept;

  // The journal and claim ports the engine uses: the injected ones, else `journal`.
  engine::JournalStore& journal_port() const;
  engine::ClaimStore* claim_port() const;

  // Drops the install policy the engine's preapproved guard held for the last transition.
  void release_held_policy() noexcept;

  std::filesystem::path journal_path;
  std::shared_ptr<planning::BenefitFactsPort> facts;
  std::shared_ptr<planning::MaterialPort> material;
  std::shared_ptr<planning::InstallBundlePort> install;
  std::shared_ptr<engine::ActivationPort> activation;
  std::shared_ptr<const InstallActuator> install_actuator;
  std::optional<InstallPolicyStore> policy_store;
  std::shared_ptr<const InstallApprovals> approvals;  // may be null
  std::mutex held_policy_mutex;
  std::optional<InstallPolicyStore::Hold> held_policy;  // GUARDED_BY(held_policy_mutex)
  std::shared_ptr<const core::Clock> clock;  // never null (the system clock by default)
  std::unique_ptr<store::GraphStore> graph;
  std::unique_ptr<store::SqliteBenefitAuditStore> audit;
  std::unique_ptr<planning::CapabilityPlanner> planner;
  std::shared_ptr<store::SqliteJournalStore> journal;  // null when ports were injected
  std::shared_ptr<engine::JournalStore> injected_journal;
  std::shared_ptr<engine::ClaimStore> injected_claims;
  std::unique_ptr<engine::Engine> engine;
};

}  // namespace ctx::runtime::detail

#endif  // CTX_HOST_RUNTIME_DETAIL_COMPOSITION_PARTS_HPP_
