#include "host/runtime/detail/composition_parts.hpp"

#include "host/runtime/crash_point.hpp"

#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace ctx::runtime::detail {
namespace {

const core::SystemClock kSystemClock;

// The engine's decision-planner port over the composition's CapabilityPlanner.
engine::DecisionPlanner decision_planner(const planning::CapabilityPlanner& planner) {
  return [&planner](const engine::StructuredSurrogate& observation,
                    const engine::PlanningContext& context, const engine::EngineState* state) {
    std::optional<std::vector<std::string>> active;
    if (state != nullptr) active = state->active_capability_ids();
    const core::Json surrogate = {{"schema_id", observation.schema_id()},
                                  {"schema_version", observation.schema_version()},
                                  {"value", observation.value()}};
    const core::Json decision = planner.decide(surrogate, active, context.planner_version,
                                               context.catalog_snapshot_digest);
    return engine::StructuredSurrogate::create(decision.at("schema_id").get<std::string>(),
                                               decision.at("schema_version").get<std::int64_t>(),
                                               decision.at("value"));
  };
}

// The host's interactive decision guard with the settlement crash point between the engine's
// commit and the host's settlement.
engine::InteractiveInstallDecisionGuard with_settlement_crash_point(
    engine::InteractiveInstallDecisionGuard host_guard) {
  if (!host_guard) return host_guard;
  return [host = std::move(host_guard)](
             const engine::InteractiveInstallDecisionReservation& reservation) {
    std::function<void()> settle = host(reservation);
    return std::function<void()>([settle = std::move(settle)] {
      crash_point(crash_points::kBeforeDecisionSettlement);
      if (settle) settle();
    });
  };
}

engine::InstallConsentPolicy engine_policy(const InstallConsentPolicy& policy) {
  return engine::InstallConsentPolicy::create(policy.skill_mode, policy.agent_mode,
                                              policy.mcp_server_mode);
}

// The engine's preapproved-grant guard over the install policy store: hold() locks the store and
// answers the current policy when it is the expected digest; assert_current() re-reads it just
// before the commit. The hold lasts until the transition ends (release_held_policy).
engine::PreapprovedInstallPolicyGuard policy_guard(CompositionParts& parts) {
  if (!parts.policy_store) return {};
  return engine::PreapprovedInstallPolicyGuard{
      [&parts](const std::string& digest) -> std::optional<engine::InstallConsentPolicy> {
        std::lock_guard lock(parts.held_policy_mutex);
        parts.held_policy.reset();
        try {
          parts.held_policy.emplace(parts.policy_store->hold(digest));
        } catch (const InstallPolicyChanged&) {
          return std::nullopt;
        } catch (const InstallPolicyMissing&) {
          return std::nullopt;
        }
        return engine_policy(parts.held_policy->policy());
      },
      [&parts] {
        std::lock_guard lock(parts.held_policy_mutex);
        if (!parts.held_policy) throw InstallPolicyChanged("install policy is not held");
        parts.held_policy->assert_current();
      },
      [&parts](const engine::InstallPlanDescriptor& descriptor, const std::string& digest) {
        return approves_install(parts.approvals.get(), descriptor, digest);
      }};
}

}  // namespace

void CompositionParts::release_held_policy() noexcept {
  std::lock_guard lock(held_policy_mutex);
  held_policy.reset();
}

engine::JournalStore& CompositionParts::journal_port() const {
  if (injected_journal) return *injected_journal;
  return *journal;
}

engine::ClaimStore* CompositionParts::claim_port() const {
  if (injected_claims) return injected_claims.get();
  return journal.get();
}

std::unique_ptr<CompositionParts> CompositionParts::open(EngineCompositionOptions options) {
  if (!options.net_benefit_policy) throw InvalidArgument("net_benefit_policy is required");
  if (static_cast<bool>(options.journal_store) != static_cast<bool>(options.claim_store)) {
    throw InvalidArgument("journal_store and claim_store must be given together");
  }
  auto parts = std::make_unique<CompositionParts>();
  parts->journal_path = options.journal_path;
  parts->facts = std::move(options.benefit_facts_port);
  parts->material = std::move(options.material_port);
  parts->install = std::move(options.install_bundle_port);
  parts->activation = std::move(options.activation_port);
  parts->install_actuator = std::move(options.install_actuator);
  if (options.policy_store_root) parts->policy_store.emplace(*options.policy_store_root);
  parts->approvals = std::move(options.install_approvals);
  // No trusted clock given: the system's (a non-owning pointer to the static one).
  parts->clock = options.trusted_clock
                     ? std::move(options.trusted_clock)
                     : std::shared_ptr<const core::Clock>(std::shared_ptr<void>(), &kSystemClock);
  const core::Clock& clock = *parts->clock;
  // The pinned graph artifact and the audit store come first: a graph that fails its pin (or
  // an unusable planner) must not leave a journal behind.
  parts->graph = store::GraphStore::open(options.graph_artifact_path,
                                         options.graph_artifact_sha256);
  parts->audit = store::SqliteBenefitAuditStore::open(options.benefit_audit_path);
  parts->planner = std::make_unique<planning::CapabilityPlanner>(
      planning::CapabilityPlannerConfig{options.planner_version,
                                        options.catalog_namespace_digest},
      *options.net_benefit_policy, *parts->graph, *parts->facts, parts->material.get(),
      parts->install.get(), *parts->audit);
  if (options.journal_store) {
    parts->injected_journal = std::move(options.journal_store);
    parts->injected_claims = std::move(options.claim_store);
  } else if (options.shared_journal) {
    options.shared_journal->require_path(options.journal_path);
    parts->journal = options.shared_journal->get();
  } else {
    parts->journal = std::make_unique<store::SqliteJournalStore>(options.journal_path, clock);
  }
  parts->engine = std::make_unique<engine::Engine>(
      parts->journal_port(), parts->claim_port(), clock,
      engine::EnginePorts{
          std::move(options.observation_normalizer), decision_planner(*parts->planner),
          with_settlement_crash_point(std::move(options.interactive_install_decision_guard)),
          policy_guard(*parts)});
  return parts;
}

void CompositionParts::release() noexcept {
  engine.reset();
  release_held_policy();
  journal.reset();
  injected_claims.reset();
  injected_journal.reset();
  activation.reset();
  install_actuator.reset();
  planner.reset();
  audit.reset();
  graph.reset();
}

}  // namespace ctx::runtime::detail
