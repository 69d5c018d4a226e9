// The authority-free snapshot projection (runtime spec §2.3) over hand-built journal heads:
// field mapping, later heads, degraded plans, every refusal with its keyword, and sealing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "host/core/crypto.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/plan.hpp"
#include "host/engine/state.hpp"
#include "host/runtime/managed_query.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

std::string digest(std::string_view value) { return core::sha256_hex(value); }

engine::ScopeRef scope(std::string_view suffix) {
  return engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1",
                                  "session-" + std::string(suffix),
                                  "exposure-" + std::string(suffix), "host-neutral");
}

Json manual_row(const std::string& capability_id, std::int64_t individual, std::int64_t marginal) {
  const auto colon = capability_id.find(':');
  const auto kind = engine::parse_enum<engine::CapabilityKind>(capability_id.substr(0, colon));
  return {{"actionability", "manual"},
          {"authority", {{"type", "manual"}}},
          {"benefit",
           {{"tier", "advisory"},
            {"individual_net_benefit_u", individual},
            {"marginal_net_benefit_u", marginal}}},
          {"capability_id", capability_id},
          {"catalog_entry_digest", digest("source:" + capability_id)},
          {"catalog_identity",
           engine::CatalogCapabilityIdentity::create(capability_id, kind, digest("namespace"))
               .to_json()},
          {"install_descriptor_digest", nullptr},
          {"install_plan_digest", nullptr},
          {"kind", kind},
          {"matching_signals", {"python"}},
          {"name", capability_id.substr(colon + 1)},
          {"normalized_score_ppm", 900'000},
          {"reason_codes", {"graph-match"}}};
}

engine::BenefitAuditReference audit(std::int64_t pool, std::int64_t search) {
  engine::BenefitAuditReference reference;
  reference.result_schema_id = "ctx.benefit-selection-result-v1";
  reference.result_digest = digest("result");
  reference.policy_schema_id = "ctx.net-benefit-policy-v3";
  reference.policy_digest = digest("policy");
  reference.selection_algorithm_id = "ctx.greedy-bounded-subset-exchange-v1";
  reference.calibration_digest = digest("calibration");
  reference.requested_limit = 5;
  reference.candidate_pool_count = pool;
  reference.search_evaluation_count = search;
  return reference;
}

engine::CommittedPlanV3 ready_plan(const std::string& plan_id) {
  std::vector<engine::PlanCapabilityV3> rows = {
      engine::PlanCapabilityV3::from_json(manual_row("harness:runner", 700'000, 600'000)),
      engine::PlanCapabilityV3::from_json(manual_row("skill:test", 720'000, 720'000))};
  return engine::CommittedPlanV3::create(plan_id, digest("environment"), digest("decision"),
                                         "ready", std::nullopt, audit(2, 3), std::move(rows));
}

engine::EngineState state_at(std::int64_t revision, const engine::ScopeRef& at,
                             std::optional<engine::CommittedPlanV3> plan) {
  engine::EngineState::Fields fields{.revision = revision,
                                     .scope = at,
                                     .host_level = engine::HostLevel::kManaging,
                                     .host_descriptor_digest = digest("host")};
  if (plan) {
    if (plan->status() == engine::PlanStatus::kReady) {
      for (const auto& row : plan->capabilities()) {
        fields.last_manual_bundle.push_back(row.capability_id());
      }
    }
    fields.committed_plan = std::move(plan);
  }
  return engine::EngineState::create(std::move(fields));
}

EngineSnapshot head(std::int64_t revision, std::optional<engine::EngineState> state,
                    std::optional<std::string> record) {
  return EngineSnapshot{scope("one").stream_id(), revision, std::move(state), std::move(record)};
}

EngineSnapshot ready_head(std::int64_t revision = 2) {
  return head(revision, state_at(revision, scope("one"), ready_plan("plan-one")),
              digest("record:" + std::to_string(revision)));
}

TEST(ManagedQueryProjection, ProjectsEveryFieldOfTheCommittedPlanAtItsHead) {
  const auto snapshot = ready_head();
  const auto prepared = project_prepared_managed_query_snapshot(snapshot, "plan-one");
  EXPECT_EQ(prepared.status(), engine::PlanStatus::kReady);
  EXPECT_FALSE(prepared.abstention_code().has_value());
  EXPECT_EQ(prepared.plan_id(), "plan-one");
  EXPECT_EQ(prepared.planning_environment_digest(), digest("environment"));
  EXPECT_EQ(prepared.decision_digest(), digest("decision"));
  EXPECT_EQ(prepared.journal_revision(), 2);
  EXPECT_EQ(prepared.journal_record_digest(), digest("record:2"));
  EXPECT_EQ(prepared.benefit_result_digest(), std::optional<std::string>(digest("result")));
  EXPECT_EQ(prepared.requested_limit(), std::optional<std::int64_t>(5));
  EXPECT_EQ(prepared.candidate_pool_count(), std::optional<std::int64_t>(2));
  EXPECT_EQ(prepared.search_evaluation_count(), std::optional<std::int64_t>(3));
  ASSERT_EQ(prepared.selections().size(), 2u);
  const auto& first = prepared.selections()[0];
  EXPECT_EQ(first.capability_id(), "harness:runner");
  EXPECT_EQ(first.kind(), engine::CapabilityKind::kHarness);
  EXPECT_EQ(first.name(), "runner");
  EXPECT_EQ(first.actionability(), engine::Actionability::kManual);
  EXPECT_EQ(first.matching_signals(), std::vector<std::string>{"python"});
  EXPECT_EQ(first.reason_codes(), std::vector<std::string>{"graph-match"});
  EXPECT_EQ(first.benefit_tier(), engine::BenefitTier::kAdvisory);
  EXPECT_EQ(first.individual_net_benefit_u(), 700'000);
  EXPECT_EQ(first.marginal_net_benefit_u(), 600'000);
  EXPECT_EQ(first.source_digest(), digest("source:harness:runner"));
  EXPECT_EQ(first.catalog_identity_digest(),
            engine::CatalogCapabilityIdentity::create(
                "harness:runner", engine::CapabilityKind::kHarness, digest("namespace"))
                .identity_digest());
  EXPECT_FALSE(first.install_descriptor_digest().has_value());
  EXPECT_FALSE(first.install_plan_digest().has_value());
  EXPECT_EQ(prepared.selections()[1].capability_id(), "skill:test");
}

TEST(ManagedQueryProjection, ByRelevanceOrdersTheSelectionsBestFirst) {
  // Committed order is harness:runner (700 000) then skill:test (720 000): a host is shown the
  // higher individual net benefit first.
  const auto prepared = project_prepared_managed_query_snapshot(ready_head(), "plan-one");
  const auto ordered = prepared.by_relevance();
  ASSERT_EQ(ordered.size(), 2u);
  EXPECT_EQ(ordered[0]->capability_id(), "skill:test");
  EXPECT_EQ(ordered[1]->capability_id(), "harness:runner");
  EXPECT_EQ(prepared.selections()[0].capability_id(), "harness:runner");
}

TEST(ManagedQueryProjection, LaterHeadChangesOnlyTheJournalFields) {
  const auto at_two = project_prepared_managed_query_snapshot(ready_head(2));
  const auto at_seven = project_prepared_managed_query_snapshot(ready_head(7), "plan-one");
  EXPECT_EQ(at_seven.journal_revision(), 7);
  EXPECT_EQ(at_seven.journal_record_digest(), digest("record:7"));
  EXPECT_EQ(at_seven.decision_digest(), at_two.decision_digest());
  EXPECT_EQ(at_seven.selections().size(), at_two.selections().size());
}

TEST(ManagedQueryProjection, DegradedPlanHasNoRowsAndNoAuditFields) {
  auto degraded = engine::CommittedPlanV3::create(
      "plan-degraded", digest("environment"), digest("degraded"), "degraded",
      engine::AbstentionCode::kPlannerFailed, std::nullopt, {});
  const auto prepared = project_prepared_managed_query_snapshot(
      head(4, state_at(4, scope("one"), degraded), digest("record:4")), "plan-degraded");
  EXPECT_EQ(prepared.status(), engine::PlanStatus::kDegraded);
  EXPECT_EQ(prepared.abstention_code(), std::optional(engine::AbstentionCode::kPlannerFailed));
  EXPECT_TRUE(prepared.selections().empty());
  EXPECT_FALSE(prepared.benefit_result_digest().has_value());
  EXPECT_FALSE(prepared.requested_limit().has_value());
  EXPECT_FALSE(prepared.candidate_pool_count().has_value());
  EXPECT_FALSE(prepared.search_evaluation_count().has_value());
}

TEST(ManagedQueryProjection, RefusesEachInvalidHeadWithItsKeyword) {
  const auto valid = ready_head();
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(valid, ""), ManagedQueryError,
                   "expected_plan_id");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(valid, "contains whitespace"),
                   ManagedQueryError, "expected_plan_id");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(head(0, std::nullopt, std::nullopt)),
                   ManagedQueryError, "revision");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(head(1, std::nullopt, digest("r"))),
                   ManagedQueryError, "revision");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(head(2, std::nullopt, digest("r"))),
                   ManagedQueryError, "state");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(
                       head(2, state_at(3, scope("one"), ready_plan("plan-one")), digest("r"))),
                   ManagedQueryError, "state");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(
                       head(2, state_at(2, scope("other"), ready_plan("plan-one")), digest("r"))),
                   ManagedQueryError, "stream");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(
                       head(2, state_at(2, scope("one"), std::nullopt), digest("r"))),
                   ManagedQueryError, "committed");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(valid, "plan-other"), ManagedQueryError,
                   "plan identity");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(
                       head(2, state_at(2, scope("one"), ready_plan("plan-one")), "not-a-digest")),
                   ManagedQueryError, "journal_record_digest");
  CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(
                       head(2, state_at(2, scope("one"), ready_plan("plan-one")), std::nullopt)),
                   ManagedQueryError, "journal_record_digest");
}

TEST(ManagedQueryProjection, ChildExposureOfTheSameSessionProjects) {
  const auto child = scope("one").with_exposure("exposure-child", "child-agent", "exposure-one");
  const auto prepared = project_prepared_managed_query_snapshot(
      head(2, state_at(2, child, ready_plan("plan-one")), digest("record:2")));
  EXPECT_EQ(prepared.plan_id(), "plan-one");
}

template <typename T>
constexpr bool kSealed = !std::is_default_constructible_v<T> && !std::is_copy_constructible_v<T> &&
                         !std::is_copy_assignable_v<T> && !std::is_move_assignable_v<T> &&
                         std::is_final_v<T> && !std::is_constructible_v<Json, const T&>;

template <typename T>
concept StatusAssignable = requires(T& value) {
  value.status() = std::string("x");
};

TEST(ManagedQueryProjection, ResultsAreSealedAndPrintOnlyIdentifiers) {
  static_assert(kSealed<PreparedManagedQuery>);
  static_assert(kSealed<ManagedCapabilitySelection>);
  static_assert(kSealed<ManagedAdvanceResult>);
  static_assert(!StatusAssignable<PreparedManagedQuery>);
  static_assert(
      !std::is_constructible_v<ManagedAdvanceResult, PreparedManagedQuery, engine::Transition>);
  const auto prepared = project_prepared_managed_query_snapshot(ready_head());
  std::ostringstream printed;
  printed << prepared;
  EXPECT_EQ(printed.str(), "PreparedManagedQuery(decision_digest=" + digest("decision") + ")");
  std::ostringstream row;
  row << prepared.selections()[0];
  EXPECT_EQ(row.str(),
            "ManagedCapabilitySelection(capability_id=harness:runner, kind=harness, "
            "actionability=manual)");
}

}  // namespace
}  // namespace ctx::runtime
