#include "host/runtime/detail/composition_parts.hpp"

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

}  // namespace

std::unique_ptr<CompositionParts> CompositionParts::open(EngineCompositionOptions options) {
  if (!options.net_benefit_policy) throw InvalidArgument("net_benefit_policy is required");
  auto parts = std::make_unique<CompositionParts>();
  parts->journal_path = options.journal_path;
  parts->facts = std::move(options.benefit_facts_port);
  parts->material = std::move(options.material_port);
  parts->install = std::move(options.install_bundle_port);
  parts->clock = std::move(options.trusted_clock);
  const core::Clock& clock = parts->clock ? *parts->clock : kSystemClock;
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
  parts->journal = std::make_unique<store::SqliteJournalStore>(options.journal_path, clock);
  parts->engine = std::make_unique<engine::Engine>(
      *parts->journal, parts->journal.get(), clock,
      engine::EnginePorts{std::move(options.observation_normalizer),
                          decision_planner(*parts->planner),
                          std::move(options.interactive_install_decision_guard)});
  return parts;
}

void CompositionParts::release() noexcept {
  engine.reset();
  journal.reset();
  planner.reset();
  audit.reset();
  graph.reset();
}

}  // namespace ctx::runtime::detail
