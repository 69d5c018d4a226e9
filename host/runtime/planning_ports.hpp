// The ports a composition is wired to, named in ctx::runtime: the planner's benefit-facts,
// material and install-bundle ports and net-benefit policy, and the engine's observation
// normaliser and interactive install decision guard.
#ifndef CTX_HOST_RUNTIME_PLANNING_PORTS_HPP_
#define CTX_HOST_RUNTIME_PLANNING_PORTS_HPP_

#include "host/engine/engine.hpp"
#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/ports.hpp"
#include "host/engine/replay.hpp"

namespace ctx::runtime {

namespace planning = ::ctx::engine::planning;

using planning::BenefitFactsPort;
using planning::InstallBundlePort;
using planning::MaterialPort;
using planning::NetBenefitPolicy;
using engine::InteractiveInstallDecisionGuard;
using engine::ObservationNormalizer;
using engine::ObservationReference;
using engine::StructuredSurrogate;

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_PLANNING_PORTS_HPP_
