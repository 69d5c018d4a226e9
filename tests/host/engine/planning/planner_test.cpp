// Planner-level versions of the seed-000 planning scenarios, over in-memory ports shaped like the
// seed's fakes (_Facts, _MaterialAuthority, _InstallAuthority). The SQLite graph/audit variants
// live in tests/host/store/graph_store_test.cpp.
#include "host/engine/planning/planner.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/planning/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::engine::planning {
namespace {

std::string digest_of(const std::string& text) { return core::sha256_hex(text); }
const std::string kNamespace = digest_of("managed-query-catalog");

// Every node tagged "python", equally scored, in the order given.
class MemoryGraph final : public GraphRetrievalPort {
 public:
  explicit MemoryGraph(std::vector<std::string> ids) : ids_(std::move(ids)) {}
  std::vector<RetrievedNode> retrieve(const std::vector<std::string>& tags,
                                      std::int64_t top_n) const override {
    ++calls;
    if (unavailable) {
      throw CandidateSourceUnavailable("indexed graph candidate source is unavailable");
    }
    std::vector<RetrievedNode> rows;
    if (std::find(tags.begin(), tags.end(), "python") == tags.end()) return rows;
    for (const auto& id : ids_) {
      if (static_cast<std::int64_t>(rows.size()) >= top_n) break;
      if (drop_from_call > 0 && calls >= drop_from_call && rows.size() + 1 == ids_.size()) break;
      const auto colon = id.find(':');
      rows.push_back(RetrievedNode{parse_enum<CapabilityKind>(id.substr(0, colon)),
                                   id.substr(colon + 1), {"python"}, 1'000'000});
    }
    return rows;
  }
  const std::string& artifact_sha256() const noexcept override { return sha_; }
  const std::string& graph_schema_version() const noexcept override { return version_; }
  bool unavailable = false;
  int drop_from_call = 0;  // from this call on, the last node is no longer returned
  mutable int calls = 0;

 private:
  std::vector<std::string> ids_;
  std::string sha_ = digest_of("graph-artifact");
  std::string version_ = "1";
};

class SeedFacts final : public BenefitFactsPort {
 public:
  std::string benefit_facts_snapshot_digest() const override { return snapshot; }
  std::optional<BenefitCandidate> benefit_candidate(const CapabilityCandidate& p,
                                                    const WorkObservation&) override {
    calls.push_back(p.capability_id);
    BenefitCandidate c;
    c.capability_id = p.capability_id;
    c.source_digest = p.source_digest;
    c.resource_profile_digest = digest_of("profile:" + p.capability_id);
    c.availability = p.actionability == CandidateActionability::kManual
                         ? Availability::kAdvisory
                         : Availability::kExecutable;
    c.expected_task_benefit_ppm = 800'000;
    const auto own = relevance_of.find(p.capability_id);
    c.relevance_ppm = own == relevance_of.end() ? relevance_ppm : own->second;
    c.trust_ppm = 1'000'000;
    c.costs = ResourceCosts{};
    c.evidence.capability_id = p.capability_id;
    c.evidence.kind = p.kind;
    c.evidence.source_digest = p.source_digest;
    c.evidence.evidence_window_digest = digest_of("window:" + p.capability_id);
    c.source_trusted = c.security_approved = c.permissions_allowed = c.credentials_available = true;
    if (drift_after >= 0 && static_cast<int>(calls.size()) > drift_after) c.relevance_ppm -= 1;
    return c;
  }
  std::int64_t relevance_share_of_best_ppm() const override { return share_of_best_ppm; }
  std::string snapshot = digest_of("managed-benefit-facts");
  std::int64_t relevance_ppm = 900'000;
  std::map<std::string, std::int64_t> relevance_of;  // overrides relevance_ppm per id
  std::int64_t share_of_best_ppm = 0;
  int drift_after = -1;
  std::vector<std::string> calls;
};

class SeedMaterial final : public MaterialPort {
 public:
  explicit SeedMaterial(std::set<std::string> ids) : ids_(std::move(ids)) {}
  std::string material_snapshot_digest() const override { return snapshot_; }
  MaterialDescriptor describe(const std::string& id, CapabilityKind kind) override {
    if (!ids_.count(id)) {
      return MaterialDescriptor::create(id, kind, Actionability::kManual, std::nullopt, 0, 0,
                                        snapshot_, std::nullopt);
    }
    const auto identity = MaterialIdentity::create(id, kind, digest_of("content:" + id), 64);
    return MaterialDescriptor::create(id, kind, Actionability::kLoad, identity.content_sha256(), 64,
                                      16, snapshot_, identity.identity_digest());
  }

 private:
  std::set<std::string> ids_;
  std::string snapshot_ = digest_of("material-snapshot");
};

InstallPlanningBundle install_bundle(const std::string& id, const std::string& snapshot) {
  const auto kind = parse_enum<CapabilityKind>(id.substr(0, id.find(':')));
  const auto material = MaterialIdentity::create(id, kind, digest_of("installed:" + id), 64);
  InstallPlanDescriptor::Fields f;
  f.capability_id = id;
  f.kind = kind;
  f.installer_id = "ctx-" + std::string(to_string(kind)) + "-installer-v1";
  f.plan_digest = digest_of("install-plan:" + id);
  f.provenance_digest = snapshot;
  f.result_material_identity_digest = material.identity_digest();
  return InstallPlanningBundle(InstallPlanDescriptor::create(f), material);
}

class SeedInstall final : public InstallBundlePort {
 public:
  SeedInstall(std::string snapshot, std::map<std::string, std::optional<InstallPlanningBundle>> b)
      : snapshot_(std::move(snapshot)), bundles_(std::move(b)) {}
  std::string installation_snapshot_digest() const override { return snapshot_; }
  std::optional<InstallPlanningBundle> describe_bundle(const std::string& id,
                                                       CapabilityKind) override {
    const auto it = bundles_.find(id);
    return it == bundles_.end() ? std::nullopt : it->second;
  }

 private:
  std::string snapshot_;
  std::map<std::string, std::optional<InstallPlanningBundle>> bundles_;
};

class MemoryAudit final : public BenefitAuditStore {
 public:
  std::string store(const BenefitSelectionResult& result) override {
    if (unavailable) throw BenefitAuditStoreUnavailable("benefit audit store is unavailable");
    rows.emplace(result.result_digest(), result.to_json());
    return result.result_digest();
  }
  bool unavailable = false;
  std::map<std::string, std::string> rows;
};

NetBenefitPolicy seed_policy() {
  NetBenefitPolicyConfig c;
  c.calibration_digest = digest_of("calibration");
  c.minimum_relevance_ppm = 1;
  return NetBenefitPolicy(c);
}

CapabilityPlannerConfig config(std::string ns = kNamespace) {
  return CapabilityPlannerConfig{"ctx-managed-query-planner-v3", std::move(ns), 50};
}

WorkObservation python_work(std::int64_t limit = 5) {
  WorkObservation w;
  w.signals = {"python"};
  w.languages = {"python"};
  w.requested_limit = limit;
  return w;
}

const std::vector<std::string> kSix = {"agent:reviewer", "harness:python-runner", "mcp-server:docs",
                                       "skill:lint",     "skill:test",            "skill:types"};

// The facts port's share of the best relevance: the bar is set by the best relevance in the pool
// (a candidate without relevance, however it scored, sets none), and a candidate under it is not
// relevant. A port without a share (0) keeps every relevant candidate.
TEST(CapabilityPlanner, ARelevanceUnderThePortsShareOfThePoolsBestIsNone) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  facts.relevance_ppm = 0;
  facts.relevance_of = {
      {"skill:test", 600'000}, {"skill:types", 420'000}, {"agent:reviewer", 419'999}};
  facts.share_of_best_ppm = 700'000;
  const auto selected = [&] {
    MemoryAudit audit;
    CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
    const auto plan = planner.plan(python_work());
    std::set<std::string> ids;
    for (const auto& row : plan.capabilities()) {
      ids.insert(row.presentation.capability_id);
    }
    return ids;
  };
  EXPECT_EQ(selected(), (std::set<std::string>{"skill:test", "skill:types"}));
  facts.share_of_best_ppm = 0;
  EXPECT_EQ(selected(), (std::set<std::string>{"agent:reviewer", "skill:test", "skill:types"}));
  facts.share_of_best_ppm = 1'000'001;
  CTX_EXPECT_THROW(selected(), PlannerValidationError, "relevance share");
}

TEST(CapabilityPlanner, OneCommittedPlanGloballyBoundsFourCompetingTypes) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const auto plan = planner.plan(python_work());
  EXPECT_EQ(plan.status(), PlanStatus::kReady);
  EXPECT_FALSE(plan.abstention_code());
  ASSERT_EQ(plan.capabilities().size(), 5u);
  std::set<std::string> kinds;
  for (const auto& row : plan.capabilities()) {
    kinds.emplace(to_string(row.presentation.kind));
    EXPECT_FALSE(row.presentation.name.empty());
    EXPECT_EQ(row.presentation.actionability, CandidateActionability::kManual);
    EXPECT_EQ(row.tier, BenefitTier::kAdvisory);
    EXPECT_NE(std::find(row.presentation.matching_signals.begin(),
                        row.presentation.matching_signals.end(), "python"),
              row.presentation.matching_signals.end());
    EXPECT_NE(std::find(row.presentation.reason_codes.begin(), row.presentation.reason_codes.end(),
                        "graph-match"),
              row.presentation.reason_codes.end());
    EXPECT_GT(row.marginal_net_benefit_u, 0);
    const auto json = row.to_json();
    EXPECT_EQ(json.size(), 13u);
    EXPECT_EQ(json["authority"], (core::Json{{"type", "manual"}}));
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"agent", "harness", "mcp-server", "skill"}));
  ASSERT_TRUE(plan.benefit_audit());
  EXPECT_EQ(plan.benefit_audit()->requested_limit, 5);
  EXPECT_EQ(plan.benefit_audit()->candidate_pool_count, 6);
  EXPECT_GT(plan.benefit_audit()->search_evaluation_count, 0);
  EXPECT_EQ(audit.rows.count(plan.benefit_audit()->result_digest), 1u);
  const auto value = plan.decision_value();
  EXPECT_EQ(value.size(), 4u);
  EXPECT_EQ(plan.decision_digest(), core::canonical_digest(value, core::Encoding::kUtf8));
}

TEST(CapabilityPlanner, ZeroLimitIsOneAuditedAbstention) {
  MemoryGraph graph({"skill:test"});
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const auto plan = planner.plan(python_work(0));
  EXPECT_EQ(plan.status(), PlanStatus::kAbstained);
  EXPECT_EQ(plan.abstention_code(), AbstentionCode::kLimitZero);
  EXPECT_TRUE(plan.capabilities().empty());
  ASSERT_TRUE(plan.benefit_audit());
  EXPECT_EQ(plan.benefit_audit()->search_evaluation_count, 0);
  EXPECT_EQ(plan.benefit_audit()->requested_limit, 0);
  EXPECT_EQ(audit.rows.size(), 1u);
}

TEST(CapabilityPlanner, MixedProjectionUsesExistingTypedAuthorityWithoutReranking) {
  const std::string installation = digest_of("mixed-installation");
  MemoryGraph graph({"skill:loaded", "agent:installer", "mcp-server:manual-docs",
                     "harness:manual-runner"});
  SeedFacts facts;
  SeedMaterial material({"skill:loaded"});
  SeedInstall install(installation,
                      {{"agent:installer", install_bundle("agent:installer", installation)}});
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, &material, &install, audit);
  const auto plan = planner.plan(python_work());
  std::vector<std::tuple<std::string, std::string, std::string>> rows;
  for (const auto& row : plan.capabilities()) {
    rows.emplace_back(row.presentation.capability_id, std::string(to_string(row.presentation.kind)),
                      std::string(to_string(row.presentation.actionability)));
  }
  const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
      {"agent:installer", "agent", "install"},
      {"skill:loaded", "skill", "load"},
      {"harness:manual-runner", "harness", "manual"},
      {"mcp-server:manual-docs", "mcp-server", "manual"}};
  EXPECT_EQ(rows, expected);
  const auto install_row = plan.capabilities()[0].to_json();
  EXPECT_EQ(install_row["authority"]["type"], "install");
  EXPECT_EQ(install_row["benefit"]["tier"], "executable");
  EXPECT_EQ(install_row["install_descriptor_digest"],
            install_bundle("agent:installer", installation).descriptor().descriptor_digest());
  EXPECT_EQ(install_row["authority"]["result_material"],
            install_bundle("agent:installer", installation).result_material().to_json());
  const auto load_row = plan.capabilities()[1].to_json();
  EXPECT_EQ(load_row["authority"]["type"], "load");
  EXPECT_EQ(load_row["authority"]["material"]["origin"], "catalog");
  EXPECT_EQ(load_row["install_descriptor_digest"], nullptr);
  EXPECT_EQ(plan.capabilities()[2].to_json()["benefit"]["tier"], "advisory");
}

TEST(CapabilityPlanner, GraphUninstalledRowRequiresExactInstallAuthority) {
  const std::string installation = digest_of("graph-installation");
  MemoryGraph graph({"agent:reviewer", "mcp-server:docs"});
  SeedFacts facts;
  SeedInstall install(installation,
                      {{"agent:reviewer", install_bundle("agent:reviewer", installation)},
                       {"mcp-server:docs", std::nullopt}});
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, &install, audit);
  std::map<std::string, std::string> projected;
  const auto plan = planner.plan(python_work());
  for (const auto& row : plan.capabilities()) {
    projected[row.presentation.capability_id] = to_string(row.presentation.actionability);
  }
  EXPECT_EQ(projected, (std::map<std::string, std::string>{{"agent:reviewer", "install"},
                                                           {"mcp-server:docs", "manual"}}));
}

TEST(CapabilityPlanner, InstallBundleFromAnotherSnapshotDropsTheRowInsteadOfDowngrading) {
  const std::string installation = digest_of("graph-installation");
  MemoryGraph graph({"agent:reviewer", "mcp-server:docs"});
  SeedFacts facts;
  SeedInstall install(installation,
                      {{"agent:reviewer", install_bundle("agent:reviewer", digest_of("other"))}});
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, &install, audit);
  const auto plan = planner.plan(python_work());
  ASSERT_EQ(plan.capabilities().size(), 1u);
  EXPECT_EQ(plan.capabilities()[0].presentation.capability_id, "mcp-server:docs");
}

TEST(CapabilityPlanner, DecisionDigestIsDeterministicAndBindsTheCatalogNamespace) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner first(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  CapabilityPlanner second(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  CapabilityPlanner other(config(digest_of("other-namespace")), seed_policy(), graph, facts,
                          nullptr, nullptr, audit);
  const auto a = first.plan(python_work());
  const auto b = second.plan(python_work());
  EXPECT_EQ(a.decision_digest(), b.decision_digest());
  EXPECT_EQ(core::canonical_json(a.decision_value()), core::canonical_json(b.decision_value()));
  EXPECT_EQ(first.planning_environment_digest(), second.planning_environment_digest());
  EXPECT_NE(other.plan(python_work()).decision_digest(), a.decision_digest());
  EXPECT_NE(other.planning_environment_digest(), first.planning_environment_digest());
  EXPECT_EQ(a.benefit_audit()->result_digest, b.benefit_audit()->result_digest);
}

TEST(CapabilityPlanner, BaselineAndRejectedCapabilitiesAreNotCandidates) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  auto work = python_work(3);
  work.baseline_capability_ids = {"agent:reviewer"};
  work.rejected_capability_ids = {"harness:python-runner"};
  const auto plan = planner.plan(work);
  ASSERT_EQ(plan.capabilities().size(), 3u);
  EXPECT_EQ(plan.benefit_audit()->candidate_pool_count, 4);
  for (const auto& row : plan.capabilities()) {
    EXPECT_NE(row.presentation.capability_id, "agent:reviewer");
    EXPECT_NE(row.presentation.capability_id, "harness:python-runner");
  }
}

TEST(CapabilityPlanner, UnavailableCatalogOrAuditDegradesWithoutAudit) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  graph.unavailable = true;
  const auto catalog = planner.plan(python_work());
  EXPECT_EQ(catalog.status(), PlanStatus::kDegraded);
  EXPECT_EQ(catalog.abstention_code(), AbstentionCode::kCatalogUnavailable);
  EXPECT_FALSE(catalog.benefit_audit());
  EXPECT_EQ(catalog.decision_value()["benefit_audit"], nullptr);
  graph.unavailable = false;
  audit.unavailable = true;
  const auto failed = planner.plan(python_work());
  EXPECT_EQ(failed.status(), PlanStatus::kDegraded);
  EXPECT_EQ(failed.abstention_code(), AbstentionCode::kPlannerFailed);
  EXPECT_TRUE(failed.capabilities().empty());
}

TEST(CapabilityPlanner, NoRelevanceAbstainsAsNoFeasibleCapability) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  facts.relevance_ppm = 0;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const auto plan = planner.plan(python_work());
  EXPECT_EQ(plan.status(), PlanStatus::kAbstained);
  EXPECT_EQ(plan.abstention_code(), AbstentionCode::kNoFeasibleCapability);
}

TEST(CapabilityPlanner, DriftingInputsFailTheDecision) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  graph.drop_from_call = 2;  // the end-of-plan revalidation retrieves another pool
  CTX_EXPECT_THROW(planner.plan(python_work()), PlannerValidationError,
                   "planning inputs drifted during end validation");
  graph.drop_from_call = 0;
  facts.drift_after = 6;  // same snapshot digest, other answers for the same presentation
  CTX_EXPECT_THROW(planner.plan(python_work()), PlannerValidationError,
                   "benefit facts output drifted without a snapshot digest change");
  facts.drift_after = -1;
  facts.snapshot = digest_of("moved-facts");
  CTX_EXPECT_THROW(planner.plan(python_work()), PlannerValidationError,
                   "benefit facts snapshot drifted");
}

TEST(CapabilityPlanner, DriftMemoIsBoundedAndEvictsTheOldestAnswers) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlannerConfig bounded = config();
  bounded.memo_capacity = 8;  // fewer entries than one plan's six answers times the plans below
  CapabilityPlanner planner(bounded, seed_policy(), graph, facts, nullptr, nullptr, audit);
  const auto work_of = [](int i) {
    WorkObservation w = python_work();
    w.signals = {"python", "topic-" + std::to_string(100 + i)};
    return w;
  };
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(planner.plan(work_of(i)).status(), PlanStatus::kReady) << "plan " << i;
  }
  facts.drift_after = static_cast<int>(facts.calls.size());  // every later answer differs
  // The latest observation's answers are still remembered: the drift is detected.
  CTX_EXPECT_THROW(planner.plan(work_of(19)), PlannerValidationError,
                   "benefit facts output drifted without a snapshot digest change");
  // The oldest observation's answers were evicted: its new answers are remembered afresh.
  EXPECT_EQ(planner.plan(work_of(0)).status(), PlanStatus::kReady);
}

TEST(CapabilityPlanner, SelectionsAreReusedOnlyForTheSameLimitAndFacts) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const auto five = planner.plan(python_work(5));
  const auto two = planner.plan(python_work(2));
  const auto again = planner.plan(python_work(5));
  ASSERT_TRUE(five.benefit_audit() && two.benefit_audit() && again.benefit_audit());
  EXPECT_EQ(two.capabilities().size(), 2u);
  EXPECT_NE(two.benefit_audit()->result_digest, five.benefit_audit()->result_digest);
  EXPECT_EQ(again.benefit_audit()->result_digest, five.benefit_audit()->result_digest);
  EXPECT_EQ(again.decision_digest(), five.decision_digest());
  ASSERT_EQ(audit.rows.size(), 2u);
  for (const auto& [digest, text] : audit.rows) {
    EXPECT_EQ(BenefitSelectionResult::from_json(text).result_digest(), digest);
  }
}

TEST(CapabilityPlanner, DecideChecksTheObservationAndThePlanningContext) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const core::Json observation = {
      {"schema_id", "ctx.observation.current-work"},
      {"schema_version", 1},
      {"value",
       {{"signals", {"python"}},
        {"languages", {"python"}},
        {"baseline_capability_ids", core::Json::array()},
        {"active_capability_ids", core::Json::array()},
        {"rejected_capability_ids", core::Json::array()},
        {"requested_limit", 5}}}};
  const auto decision = planner.decide(observation, std::nullopt, "ctx-managed-query-planner-v3",
                                       planner.planning_environment_digest());
  EXPECT_EQ(decision["schema_id"], "ctx.decision.capability-plan");
  EXPECT_EQ(decision["schema_version"], 3);
  EXPECT_EQ(decision["value"]["status"], "ready");
  EXPECT_EQ(decision["value"]["capabilities"].size(), 5u);
  CTX_EXPECT_THROW(planner.decide(observation, std::nullopt, "foreign-planner",
                                  planner.planning_environment_digest()),
                   PlannerValidationError, "planner version mismatch");
  CTX_EXPECT_THROW(planner.decide(observation, std::nullopt, "ctx-managed-query-planner-v3",
                                  digest_of("foreign-catalog")),
                   PlannerValidationError, "planning environment");
  auto extra = observation;
  extra["value"]["prompt"] = "write me a poem";
  CTX_EXPECT_THROW(planner.decide(extra, std::nullopt, "ctx-managed-query-planner-v3",
                                  planner.planning_environment_digest()),
                   PlannerValidationError, "missing or unknown fields");
  auto unsorted = observation;
  unsorted["value"]["signals"] = {"zeta", "alpha"};
  CTX_EXPECT_THROW(planner.decide(unsorted, std::nullopt, "ctx-managed-query-planner-v3",
                                  planner.planning_environment_digest()),
                   PlannerValidationError, "signals");
}

TEST(CapabilityPlanner, NormalizedPoolDropsConflictingDuplicatesAndKeepsIdenticalOnes) {
  CapabilityCandidate a;
  a.capability_id = "skill:a";
  a.kind = CapabilityKind::kSkill;
  a.name = "a";
  a.source_digest = digest_of("a");
  a.normalized_score_ppm = 1;
  a.reason_codes = {"graph-match"};
  a.actionability = CandidateActionability::kManual;
  auto b = a;
  b.capability_id = "skill:b";
  b.name = "b";
  auto b2 = b;
  b2.source_digest = digest_of("b2");
  auto blocked = a;
  blocked.capability_id = "skill:c";
  blocked.name = "c";
  blocked.actionability = CandidateActionability::kBlocked;
  const auto pool = normalize_candidate_pool({b, a, a, b2, blocked}, python_work());
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool[0].capability_id, "skill:a");
}

}  // namespace
}  // namespace ctx::engine::planning

namespace ctx::engine::planning {
namespace {

// The reducer commits exactly what the planner decides: every decision value parses into a
// CommittedPlanV3 whose rows and digest are the planner's own.
TEST(CapabilityPlanner, DecisionValuesCommitAsCommittedPlanV3) {
  const std::string installation = digest_of("mixed-installation");
  MemoryGraph graph({"skill:loaded", "agent:installer", "mcp-server:manual-docs",
                     "harness:manual-runner"});
  SeedFacts facts;
  SeedMaterial material({"skill:loaded"});
  SeedInstall install(installation,
                      {{"agent:installer", install_bundle("agent:installer", installation)}});
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, &material, &install, audit);
  std::vector<CapabilityPlanV3> plans = {
      planner.plan(python_work(5)), planner.plan(python_work(0)),
      CapabilityPlanV3::degraded(AbstentionCode::kCatalogUnavailable)};
  for (const auto& plan : plans) {
    const auto committed = CommittedPlanV3::from_decision(
        "plan-mixed", planner.planning_environment_digest(), plan.decision_value());
    EXPECT_EQ(committed.decision_digest(), plan.decision_digest());
    EXPECT_EQ(committed.status(), plan.status());
    EXPECT_EQ(committed.decision_value(), plan.decision_value());
    ASSERT_EQ(committed.capabilities().size(), plan.capabilities().size());
    for (std::size_t i = 0; i < plan.capabilities().size(); ++i) {
      EXPECT_EQ(committed.capabilities()[i].to_json(), plan.capabilities()[i].to_json());
    }
  }
}

}  // namespace
}  // namespace ctx::engine::planning

namespace ctx::engine::planning {
namespace {

TEST(CapabilityPlanner, ConcurrentPlansOnOnePlannerAgree) {
  MemoryGraph graph(kSix);
  SeedFacts facts;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, nullptr, nullptr, audit);
  const std::string expected = planner.plan(python_work()).decision_digest();
  std::vector<std::string> digests(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < digests.size(); ++i) {
    threads.emplace_back([&, i] { digests[i] = planner.plan(python_work()).decision_digest(); });
  }
  for (auto& t : threads) t.join();
  for (const auto& d : digests) EXPECT_EQ(d, expected);
}

}  // namespace
}  // namespace ctx::engine::planning

namespace ctx::engine::planning {
namespace {

// Answers "load" for its ids until `flip_after` describe calls, then "manual" for them.
class FlippingMaterial final : public MaterialPort {
 public:
  std::string material_snapshot_digest() const override { return digest_of("material-snapshot"); }
  MaterialDescriptor describe(const std::string& id, CapabilityKind kind) override {
    ++calls;
    if (calls > flip_after) return inner_manual_.describe(id, kind);
    return inner_load_.describe(id, kind);
  }
  int flip_after = 1'000;
  int calls = 0;

 private:
  SeedMaterial inner_load_{{"skill:loaded"}};
  SeedMaterial inner_manual_{{}};
};

class CountingInstall final : public InstallBundlePort {
 public:
  std::string installation_snapshot_digest() const override { return digest_of("installation"); }
  std::optional<InstallPlanningBundle> describe_bundle(const std::string& id,
                                                       CapabilityKind) override {
    asked.push_back(id);
    return std::nullopt;
  }
  std::vector<std::string> asked;
};

TEST(CapabilityPlanner, MaterialThatChangesWithinOneSnapshotMakesTheCatalogUnavailable) {
  MemoryGraph graph({"skill:loaded", "harness:runner"});
  SeedFacts facts;
  FlippingMaterial material;
  CountingInstall install;
  MemoryAudit audit;
  CapabilityPlanner planner(config(), seed_policy(), graph, facts, &material, &install, audit);
  const auto plan = planner.plan(python_work());
  ASSERT_EQ(plan.capabilities().size(), 2u);
  EXPECT_EQ(plan.capabilities()[0].presentation.actionability, CandidateActionability::kLoad);
  // A harness is never installable: the install port is not even asked about it.
  EXPECT_TRUE(install.asked.empty());
  material.flip_after = material.calls;
  const auto degraded = planner.plan(python_work());
  EXPECT_EQ(degraded.status(), PlanStatus::kDegraded);
  EXPECT_EQ(degraded.abstention_code(), AbstentionCode::kCatalogUnavailable);
}

}  // namespace
}  // namespace ctx::engine::planning
