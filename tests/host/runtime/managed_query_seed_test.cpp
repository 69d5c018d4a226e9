// Seed 000 (test_managed_query.py): the 23 acceptance tests of the engine composition and the
// managed-query projections, under their exact seed names. Block structure follows
// seeds/CLARIFICATIONS.md: `with composition:` is a ScopedClose block; assertions the
// clarifications place after the block run after the composition has closed.
#include <barrier>
#include <chrono>
#include <exception>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/runtime/composition.hpp"
#include "host/runtime/managed_query.hpp"
#include "host/runtime/crash_point.hpp"
#include "tests/support/engine/fake_activation.hpp"
#include "tests/support/engine/faulty_claim_store.hpp"
#include "tests/support/engine/managed_query_seed_support.hpp"
#include "tests/support/engine/pending_activation.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::CompositionArgs;
using ::ctx::testing::digest;
using ::ctx::testing::Facts;
using ::ctx::testing::FakeActivation;
using ::ctx::testing::FaultyClaimStore;
using ::ctx::testing::ActivationOptions;
using ::ctx::testing::activation_observation;
using ::ctx::testing::drive_to_pending_activation;
using ::ctx::testing::host_digest;
using ::ctx::testing::JournalOwner;
using ::ctx::testing::PendingActivation;
using ::ctx::testing::pending_activation_composition;
using ::ctx::testing::InstallAuthority;
using ::ctx::testing::MaterialAuthority;
using ::ctx::testing::ScopedClose;
using ::ctx::testing::TempDir;
using ::ctx::testing::candidate;
using ::ctx::testing::development_event;
using ::ctx::testing::explanatory_fields;
using ::ctx::testing::install_bundle;
using ::ctx::testing::managed_events;
using ::ctx::testing::normalizer;
using ::ctx::testing::open_composition;
using ::ctx::testing::projection_fields;
using ::ctx::testing::replace_event;
using ::ctx::testing::seed_prepare;
using ::ctx::testing::seed_scope;
using ::ctx::testing::snapshot_at_revision;

template <typename T>
std::string printed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// --- sealing, checked at compile time (the seeds' TypeError/AttributeError cases) -------------

template <typename T>
constexpr bool kSealed = !std::is_default_constructible_v<T> && !std::is_copy_constructible_v<T> &&
                         !std::is_copy_assignable_v<T> && !std::is_move_assignable_v<T> &&
                         std::is_final_v<T> && !std::is_constructible_v<core::Json, const T&>;

template <typename T>
concept HasToDict = requires(const T& value) { value.to_dict(); };

template <typename T>
concept HasEngineAccessor = requires(T& value) { value.engine(); } ||
                            requires(T& value) { value.engine_; } ||
                            requires(T& value) { value.parts_; };

template <typename T>
concept PreparedStatusAssignable = requires(T& value) { value.status() = std::string("x"); };

template <typename T>
concept RevisionAssignable = requires(T& value) { value.journal_revision() = 8; };

template <typename T>
concept PreparedReplaceable = requires(T& value, const T& other) {
  value.prepared() = other.prepared();
};

template <typename Arg>
concept ProjectableWith = requires(const Arg& arg) {
  project_prepared_managed_query_snapshot(arg);
};

template <typename Plan>
concept ProjectableWithPlanId = requires(const EngineSnapshot& snapshot, const Plan& plan) {
  project_prepared_managed_query_snapshot(snapshot, plan);
};

std::vector<std::string> manual_ids() {
  return {"agent:reviewer", "harness:python-runner", "mcp-server:docs",
          "skill:lint",     "skill:test",            "skill:types"};
}

// ================================================================================================

TEST(ManagedQuerySeed, one_committed_plan_globally_bounds_four_competing_types) {
  TempDir tmp;
  CompositionArgs args;
  for (const auto& id : manual_ids()) args.candidates.push_back(candidate(id, "manual"));
  args.suffix = "bounded";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  std::optional<EngineSnapshot> snapshot;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "bounded"));
    snapshot = composition->snapshot(seed_scope("bounded"));
  }
  EXPECT_EQ(prepared->status(), engine::PlanStatus::kReady);
  ASSERT_EQ(prepared->selections().size(), 5u);
  std::set<engine::CapabilityKind> kinds;
  for (const auto& item : prepared->selections()) kinds.insert(item.kind());
  EXPECT_EQ(kinds, (std::set<engine::CapabilityKind>{
                       engine::CapabilityKind::kSkill, engine::CapabilityKind::kAgent,
                       engine::CapabilityKind::kMcpServer, engine::CapabilityKind::kHarness}));
  EXPECT_TRUE(prepared->benefit_result_digest().has_value());
  for (const auto& item : prepared->selections()) {
    EXPECT_FALSE(item.name().empty());
    EXPECT_THAT(item.matching_signals(), ::testing::Contains("python"));
    EXPECT_THAT(item.reason_codes(), ::testing::Contains("graph-match"));
    EXPECT_GT(item.marginal_net_benefit_u(), 0);
  }
  ASSERT_TRUE(snapshot->state.has_value());
  const auto& committed = snapshot->state->committed_plan();
  ASSERT_TRUE(committed.has_value());
  EXPECT_EQ(prepared->plan_id(), committed->plan_id());
  EXPECT_EQ(prepared->planning_environment_digest(), committed->catalog_snapshot_id());
  EXPECT_EQ(prepared->decision_digest(), committed->decision_digest());
  EXPECT_EQ(prepared->benefit_result_digest(),
            committed->benefit_audit() ? std::optional<std::string>(
                                             committed->benefit_audit()->result_digest)
                                       : std::nullopt);
  EXPECT_EQ(prepared->journal_revision(), snapshot->revision);
  EXPECT_EQ(std::optional<std::string>(prepared->journal_record_digest()), snapshot->record_digest);
  ASSERT_EQ(prepared->selections().size(), committed->capabilities().size());
  for (std::size_t i = 0; i < committed->capabilities().size(); ++i) {
    const auto& item = prepared->selections()[i];
    const auto& row = committed->capabilities()[i];
    EXPECT_EQ(item.capability_id(), row.capability_id());
    EXPECT_EQ(item.name(), row.name());
    EXPECT_EQ(item.matching_signals(), row.matching_signals());
    EXPECT_EQ(item.reason_codes(), row.reason_codes());
    EXPECT_EQ(item.benefit_tier(), row.tier());
    EXPECT_EQ(item.individual_net_benefit_u(), row.individual_net_benefit_u());
    EXPECT_EQ(item.marginal_net_benefit_u(), row.marginal_net_benefit_u());
  }
}

TEST(ManagedQuerySeed, zero_limit_is_one_audited_abstention) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.requested_limit = 0;
  args.suffix = "zero";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "zero"));
  }
  EXPECT_EQ(prepared->status(), engine::PlanStatus::kAbstained);
  EXPECT_EQ(prepared->abstention_code(), std::optional(engine::AbstentionCode::kLimitZero));
  EXPECT_TRUE(prepared->selections().empty());
  EXPECT_TRUE(prepared->benefit_result_digest().has_value());
}

TEST(ManagedQuerySeed, mixed_projection_uses_existing_typed_authority_without_reranking) {
  TempDir tmp;
  const std::string installation_snapshot = digest("mixed-installation");
  CompositionArgs args;
  args.candidates = {candidate("skill:loaded", "load"),
                     candidate("agent:installer", "install", installation_snapshot),
                     candidate("mcp-server:manual-docs", "manual"),
                     candidate("harness:manual-runner", "manual")};
  auto bundle = install_bundle("agent:installer", installation_snapshot);
  args.material_authority =
      std::make_shared<MaterialAuthority>(std::set<std::string>{"skill:loaded"});
  args.install_authority = std::make_shared<InstallAuthority>(
      installation_snapshot, std::map<std::string, std::optional<engine::InstallPlanningBundle>>{
                                 {bundle.descriptor().capability_id(), bundle}});
  args.suffix = "mixed";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "mixed"));
  }
  using engine::Actionability;
  using engine::CapabilityKind;
  using Row = std::tuple<std::string, CapabilityKind, Actionability>;
  std::vector<Row> rows;
  for (const auto& item : prepared->selections()) {
    rows.emplace_back(item.capability_id(), item.kind(), item.actionability());
  }
  EXPECT_EQ(rows, (std::vector<Row>{
                      {"agent:installer", CapabilityKind::kAgent, Actionability::kInstall},
                      {"skill:loaded", CapabilityKind::kSkill, Actionability::kLoad},
                      {"harness:manual-runner", CapabilityKind::kHarness, Actionability::kManual},
                      {"mcp-server:manual-docs", CapabilityKind::kMcpServer,
                       Actionability::kManual}}));
}

TEST(ManagedQuerySeed, graph_uninstalled_row_requires_exact_install_authority) {
  TempDir tmp;
  const std::string installation_snapshot = digest("graph-installation");
  auto agent_bundle = install_bundle("agent:reviewer", installation_snapshot);
  CompositionArgs args;
  args.install_authority = std::make_shared<InstallAuthority>(
      installation_snapshot,
      std::map<std::string, std::optional<engine::InstallPlanningBundle>>{
          {"agent:reviewer", agent_bundle}, {"mcp-server:docs", std::nullopt}});
  args.candidates = {candidate("agent:reviewer", "install", installation_snapshot),
                     candidate("mcp-server:docs", "manual")};
  args.suffix = "graph";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "graph"));
  }
  std::map<std::string, engine::Actionability> projected;
  for (const auto& item : prepared->selections()) {
    projected[item.capability_id()] = item.actionability();
  }
  EXPECT_EQ(projected, (std::map<std::string, engine::Actionability>{
                           {"agent:reviewer", engine::Actionability::kInstall},
                           {"mcp-server:docs", engine::Actionability::kManual}}));
}

TEST(ManagedQuerySeed, prepared_projection_is_factory_issued_immutable_and_nonserializable) {
  // EngineComposition() -> "trusted production composition": no public constructor at all.
  static_assert(!std::is_default_constructible_v<EngineComposition>);
  static_assert(!std::is_constructible_v<EngineComposition, EngineCompositionOptions>);
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "sealed";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "sealed"));
    // composition._engine = ... -> "immutable"; copy.copy / pickle -> "copied" / "serialized".
    static_assert(!HasEngineAccessor<EngineComposition>);
    static_assert(!std::is_copy_constructible_v<EngineComposition>);
    static_assert(!std::is_move_constructible_v<EngineComposition>);
    static_assert(!std::is_copy_assignable_v<EngineComposition>);
    static_assert(!std::is_constructible_v<core::Json, const EngineComposition&>);
    EXPECT_FALSE(composition->closed());
  }
  // PreparedManagedQuery() -> "factory"; frozen; not copyable; not serializable.
  static_assert(kSealed<PreparedManagedQuery>);
  static_assert(!PreparedStatusAssignable<PreparedManagedQuery>);
  static_assert(!HasToDict<PreparedManagedQuery>);
  static_assert(kSealed<ManagedCapabilitySelection>);
  const std::string representation = printed(*prepared);
  EXPECT_THAT(representation, ::testing::HasSubstr(prepared->decision_digest()));
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr("prompt")));
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr(tmp.path().string())));
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr("credential")));
}

TEST(ManagedQuerySeed,
     snapshot_projection_reopens_revision_two_and_later_heads_without_live_authority) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "snapshot";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  std::optional<EngineSnapshot> committed_snapshot;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "snapshot"));
    committed_snapshot = composition->snapshot(seed_scope("snapshot"));
  }
  auto reopened =
      project_prepared_managed_query_snapshot(*committed_snapshot, prepared->plan_id());
  EXPECT_EQ(projection_fields(reopened), projection_fields(*prepared));
  auto later_snapshot = snapshot_at_revision(*committed_snapshot, 7);
  auto later = project_prepared_managed_query_snapshot(later_snapshot, prepared->plan_id());
  core::Json expected = projection_fields(*prepared);
  expected[5] = 7;
  expected[6] = digest("record:7");
  EXPECT_EQ(projection_fields(later), expected);
  static_assert(!RevisionAssignable<PreparedManagedQuery>);
  static_assert(!std::is_copy_constructible_v<PreparedManagedQuery>);
  static_assert(!std::is_constructible_v<core::Json, const PreparedManagedQuery&>);
}

TEST(ManagedQuerySeed, snapshot_projection_preserves_exact_degraded_plan_without_authority) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "degraded";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<EngineSnapshot> committed_snapshot;
  std::string catalog_snapshot_digest;
  {
    ScopedClose scope(*composition);
    seed_prepare(*composition, "degraded");
    committed_snapshot = composition->snapshot(seed_scope("degraded"));
    catalog_snapshot_digest = composition->catalog_snapshot_digest();
  }
  ASSERT_TRUE(committed_snapshot->state.has_value());
  auto degraded = engine::CommittedPlanV3::create(
      "plan-degraded-reopen", catalog_snapshot_digest, digest("degraded-decision"), "degraded",
      engine::AbstentionCode::kPlannerFailed, std::nullopt, {});
  auto degraded_state = ::ctx::testing::edit_state(
      *committed_snapshot->state, [&](engine::EngineState::Fields& f) {
        f.revision = 4;
        f.committed_plan = degraded;
        f.last_manual_bundle.clear();
      });
  EngineSnapshot degraded_snapshot{committed_snapshot->stream_id, 4, degraded_state,
                                   digest("record:4")};
  auto projected = project_prepared_managed_query_snapshot(degraded_snapshot, degraded.plan_id());
  EXPECT_EQ(projected.status(), engine::PlanStatus::kDegraded);
  EXPECT_EQ(projected.abstention_code(), std::optional(engine::AbstentionCode::kPlannerFailed));
  EXPECT_EQ(projected.plan_id(), degraded.plan_id());
  EXPECT_EQ(projected.journal_revision(), 4);
  EXPECT_TRUE(projected.selections().empty());
  EXPECT_FALSE(projected.benefit_result_digest().has_value());
  EXPECT_FALSE(projected.requested_limit().has_value());
  EXPECT_FALSE(projected.candidate_pool_count().has_value());
  EXPECT_FALSE(projected.search_evaluation_count().has_value());
}

TEST(ManagedQuerySeed, snapshot_projection_rejects_invalid_expected_plan_identity) {
  // Parametrized over "", "contains whitespace" and 7; the integer is a compile-time refusal.
  static_assert(!ProjectableWithPlanId<int>);
  static_assert(ProjectableWithPlanId<std::string>);
  for (const char* expected_plan_id : {"", "contains whitespace"}) {
    SCOPED_TRACE(expected_plan_id);
    TempDir tmp;
    CompositionArgs args;
    args.candidates = {candidate("skill:test", "manual")};
    args.suffix = "plan-identity";
    auto composition = open_composition(tmp.path(), std::move(args));
    std::optional<EngineSnapshot> snapshot;
    {
      ScopedClose scope(*composition);
      seed_prepare(*composition, "plan-identity");
      snapshot = composition->snapshot(seed_scope("plan-identity"));
    }
    CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(*snapshot, expected_plan_id),
                     ManagedQueryError, "expected_plan_id");
  }
}

TEST(ManagedQuerySeed, snapshot_projection_rejects_plan_substitution) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "plan-match";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<PreparedManagedQuery> prepared;
  std::optional<EngineSnapshot> snapshot;
  {
    ScopedClose scope(*composition);
    prepared.emplace(seed_prepare(*composition, "plan-match"));
    snapshot = composition->snapshot(seed_scope("plan-match"));
  }
  CTX_EXPECT_THROW(
      project_prepared_managed_query_snapshot(*snapshot, prepared->plan_id() + "-substituted"),
      ManagedQueryError, "plan identity");
}

TEST(ManagedQuerySeed, snapshot_projection_rejects_absent_or_invalid_authoritative_state) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "invalid-head";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<EngineSnapshot> snapshot;
  {
    ScopedClose scope(*composition);
    seed_prepare(*composition, "invalid-head");
    snapshot = composition->snapshot(seed_scope("invalid-head"));
  }
  ASSERT_TRUE(snapshot->state.has_value());
  EngineSnapshot empty{snapshot->stream_id, 0, std::nullopt, std::nullopt};
  EngineSnapshot no_plan{snapshot->stream_id, 2,
                         engine::EngineState::create(engine::EngineState::Fields{
                             .revision = 2,
                             .scope = snapshot->state->scope(),
                             .host_level = snapshot->state->host_level(),
                             .host_descriptor_digest = snapshot->state->host_descriptor_digest()}),
                         digest("no-plan")};
  EngineSnapshot invalid_digest{snapshot->stream_id, 2, snapshot->state, "not-a-digest"};
  // The seed forges a state of the wrong type; the typed equivalent is a state that is not the
  // snapshot's exact head (a different revision).
  EngineSnapshot invalid_state{snapshot->stream_id, 2,
                               ::ctx::testing::edit_state(*snapshot->state,
                                                          [](engine::EngineState::Fields& f) {
                                                            f.revision = 5;
                                                          }),
                               digest("invalid-state")};
  EngineSnapshot wrong_stream{seed_scope("substituted-stream").stream_id(),
                              snapshot->revision, snapshot->state, snapshot->record_digest};
  const std::vector<std::pair<const EngineSnapshot*, std::string>> cases = {
      {&empty, "revision"},
      {&no_plan, "committed"},
      {&invalid_digest, "journal_record_digest"},
      {&invalid_state, "state"},
      {&wrong_stream, "stream"}};
  for (const auto& item : cases) {
    const EngineSnapshot* candidate_snapshot = item.first;
    const std::string& message = item.second;
    SCOPED_TRACE(message);
    CTX_EXPECT_THROW(project_prepared_managed_query_snapshot(*candidate_snapshot),
                     ManagedQueryError, message);
  }
  // snapshot=object() -> TypeError "EngineSnapshot": only an exact EngineSnapshot is accepted.
  static_assert(!ProjectableWith<int>);
  static_assert(!ProjectableWith<engine::EngineState>);
  static_assert(ProjectableWith<EngineSnapshot>);
}

TEST(ManagedQuerySeed, managed_advance_commits_revision_zero_and_resumes_revision_one) {
  TempDir tmp;
  const auto candidates =
      std::vector<engine::planning::CapabilityCandidate>{candidate("skill:test", "manual")};
  {
    CompositionArgs args;
    args.candidates = candidates;
    args.suffix = "advance-zero";
    auto composition = open_composition(tmp.path(), std::move(args));
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "advance-zero");
    auto session_started = events.first;
    auto intent_observed = events.second;
    auto advanced = advance_managed_query(*composition, session_started, intent_observed);
    const auto& prepared = advanced.prepared();
    EXPECT_EQ(advanced.transition().event_id(), intent_observed.event_id());
    EXPECT_EQ(prepared.journal_revision(), 2);
    EXPECT_EQ(std::optional<std::string>(prepared.plan_id()), intent_observed.correlation_id());
  }
  {
    CompositionArgs args;
    args.candidates = candidates;
    args.suffix = "advance-one";
    auto composition = open_composition(tmp.path(), std::move(args));
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "advance-one");
    auto session_started = events.first;
    auto intent_observed = events.second;
    auto started = composition->process(session_started);
    EXPECT_EQ(started.to_revision(), 1);
    auto advanced = composition->advance_managed_query(session_started, intent_observed);
    const auto& prepared = advanced.prepared();
    EXPECT_EQ(advanced.transition().from_revision(), 1);
    EXPECT_EQ(prepared.journal_revision(), 2);
    EXPECT_EQ(std::optional<std::string>(prepared.plan_id()), intent_observed.correlation_id());
  }
}

TEST(ManagedQuerySeed, managed_reopen_and_exact_advance_retry_are_planner_free) {
  TempDir tmp;
  auto facts = std::make_shared<Facts>();
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.facts = facts;
  args.suffix = "reopen";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<ManagedAdvanceResult> advanced;
  std::optional<PreparedManagedQuery> reopened;
  std::optional<ManagedAdvanceResult> retry;
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "reopen");
    auto session_started = events.first;
    auto intent_observed = events.second;
    advanced.emplace(composition->advance_managed_query(session_started, intent_observed));
    facts->clear_calls();
    reopened.emplace(reopen_managed_query(*composition, intent_observed.scope(),
                                          advanced->prepared().plan_id()));
    retry.emplace(composition->advance_managed_query(session_started, intent_observed));
  }
  EXPECT_TRUE(facts->calls().empty());
  EXPECT_EQ(retry->transition(), advanced->transition());
  EXPECT_EQ(projection_fields(*reopened), projection_fields(advanced->prepared()));
  EXPECT_EQ(projection_fields(retry->prepared()), projection_fields(advanced->prepared()));
}

TEST(ManagedQuerySeed, managed_development_commits_latest_plan_across_later_stream_heads) {
  TempDir tmp;
  auto facts = std::make_shared<Facts>();
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.facts = facts;
  args.suffix = "development";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<ManagedAdvanceResult> advanced;
  std::optional<PreparedManagedQuery> reopened;
  std::optional<ManagedAdvanceResult> retried;
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "development");
    auto session_started = events.first;
    auto intent_observed = events.second;
    composition->advance_managed_query(session_started, intent_observed);
    auto child_scope = intent_observed.scope().with_exposure(
        "exposure-development-child", "child-agent", intent_observed.scope().exposure_id());
    auto development = development_event(intent_observed, 2, "development-later", child_scope);
    advanced.emplace(composition->advance_managed_query(session_started, development));
    EXPECT_EQ(std::optional<std::string>(advanced->prepared().plan_id()),
              development.correlation_id());
    EXPECT_EQ(advanced->prepared().journal_revision(), 3);
    EXPECT_EQ(advanced->transition().from_revision(), 2);
    EXPECT_EQ(advanced->transition().to_revision(), 3);
    composition->process(replace_event(development, [](engine::EngineEvent::Fields& f) {
      f.event_id = "event-turnended-development-later";
      f.kind = "TurnEnded";
      f.expected_revision = 3;
      f.payload = core::Json::object();
    }));
    facts->clear_calls();
    reopened.emplace(composition->reopen_managed_query(child_scope, development.correlation_id()));
    retried.emplace(composition->advance_managed_query(session_started, development));
  }
  EXPECT_TRUE(facts->calls().empty());
  EXPECT_EQ(retried->transition(), advanced->transition());
  EXPECT_EQ(reopened->journal_revision(), retried->prepared().journal_revision());
  EXPECT_EQ(retried->prepared().journal_revision(), 4);
  EXPECT_EQ(explanatory_fields(*reopened), explanatory_fields(advanced->prepared()));
  EXPECT_EQ(explanatory_fields(retried->prepared()), explanatory_fields(advanced->prepared()));
}

TEST(ManagedQuerySeed, managed_advance_result_is_factory_issued_immutable_and_nonserializable) {
  // ManagedAdvanceResult() -> "factory".
  static_assert(!std::is_default_constructible_v<ManagedAdvanceResult>);
  static_assert(!std::is_constructible_v<ManagedAdvanceResult, PreparedManagedQuery,
                                         engine::Transition>);
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "advance-sealed";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<ManagedAdvanceResult> result;
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "advance-sealed");
    auto session_started = events.first;
    auto intent_observed = events.second;
    result.emplace(composition->advance_managed_query(session_started, intent_observed));
  }
  // result.prepared = ... -> "immutable"; copy / deepcopy -> "copied"; pickle -> "serialized".
  static_assert(!PreparedReplaceable<ManagedAdvanceResult>);
  static_assert(kSealed<ManagedAdvanceResult>);
  const std::string representation = printed(*result);
  EXPECT_THAT(representation, ::testing::HasSubstr(result->prepared().plan_id()));
  EXPECT_THAT(representation, ::testing::HasSubstr(result->transition().event_id()));
  EXPECT_THAT(representation, ::testing::Not(::testing::HasSubstr(tmp.path().string())));
}

TEST(ManagedQuerySeed, managed_advance_rejects_changed_retry_and_stale_head_without_planning) {
  TempDir tmp;
  auto facts = std::make_shared<Facts>();
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.facts = facts;
  args.suffix = "stale";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<EngineSnapshot> before_stale;
  std::optional<std::pair<std::int64_t, std::int64_t>> captured;
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "stale");
    auto session_started = events.first;
    auto intent_observed = events.second;
    composition->advance_managed_query(session_started, intent_observed);
    facts->clear_calls();
    const auto before_collision = composition->snapshot(intent_observed.scope());
    EXPECT_THROW(composition->advance_managed_query(
                     replace_event(session_started,
                                   [](engine::EngineEvent::Fields& f) {
                                     f.payload = {{"host_level", "activating"}};
                                   }),
                     intent_observed),
                 engine::EventIdCollision);
    auto changed_retry = replace_event(intent_observed, [](engine::EngineEvent::Fields& f) {
      f.payload = ::ctx::testing::observation_payload("stale-substituted");
    });
    EXPECT_THROW(composition->advance_managed_query(session_started, changed_retry),
                 engine::EventIdCollision);
    EXPECT_EQ(composition->snapshot(intent_observed.scope()), before_collision);
    EXPECT_TRUE(facts->calls().empty());
    composition->process(replace_event(intent_observed, [](engine::EngineEvent::Fields& f) {
      f.event_id = "event-turnended-stale";
      f.kind = "TurnEnded";
      f.expected_revision = 2;
      f.payload = core::Json::object();
    }));
    auto stale_development = development_event(intent_observed, 2, "stale-development");
    before_stale = composition->snapshot(intent_observed.scope());
    try {
      composition->advance_managed_query(session_started, stale_development);
      ADD_FAILURE() << "stale development was not refused";
    } catch (const engine::RevisionConflict& conflict) {
      captured.emplace(conflict.expected(), conflict.actual());
    }
    EXPECT_EQ(composition->snapshot(intent_observed.scope()), *before_stale);
    EXPECT_FALSE(composition->closed());  // a RevisionConflict leaves the composition usable
  }
  ASSERT_TRUE(captured.has_value());
  EXPECT_EQ(captured->first, 2);
  EXPECT_EQ(captured->second, 3);
  EXPECT_TRUE(facts->calls().empty());
  EXPECT_TRUE(composition->closed());
  EXPECT_EQ(before_stale->revision, 3);
}

TEST(ManagedQuerySeed, managed_advance_rejects_substituted_event_identity_before_start) {
  const std::vector<std::pair<std::string, std::string>> bindings = {
      {"kind", "IntentObserved"},
      {"stream", "stable stream"},
      {"catalog", "planning environment"},
      {"planner", "planner"},
      {"host", "host_descriptor_digest"},
      {"semantic-model", "semantic_model_digest"},
      {"semantic-index", "semantic_index_digest"},
      {"plan", "plan and work identity"},
      {"work", "plan and work identity"}};
  TempDir tmp;
  for (const auto& item : bindings) {
    const std::string& binding = item.first;
    const std::string& message = item.second;
    SCOPED_TRACE(binding);
    auto facts = std::make_shared<Facts>();
    CompositionArgs args;
    args.candidates = {candidate("skill:test", "manual")};
    args.facts = facts;
    args.suffix = "identity-" + binding;
    auto composition = open_composition(tmp.path(), std::move(args));
    {
      ScopedClose scope(*composition);
      auto events = managed_events(*composition, "identity-" + binding);
      auto session_started = events.first;
      auto intent_observed = events.second;
      intent_observed = replace_event(intent_observed, [&](engine::EngineEvent::Fields& f) {
        if (binding == "kind") {
          f.kind = "DevelopmentObserved";
        } else if (binding == "stream") {
          f.scope = seed_scope("foreign-stream");
        } else if (binding == "catalog") {
          f.catalog_snapshot_digest = digest("foreign-catalog");
        } else if (binding == "planner") {
          f.planner_version = "foreign-planner";
        } else if (binding == "host") {
          f.host_descriptor_digest = digest("foreign-host");
        } else if (binding == "semantic-model") {
          f.semantic_model_digest = digest("foreign-semantic-model");
        } else if (binding == "semantic-index") {
          f.semantic_index_digest = digest("foreign-semantic-index");
        } else if (binding == "plan") {
          f.correlation_id = "plan-foreign";
        } else {
          f.work_signature = digest("foreign-work");
        }
      });
      const auto before = composition->snapshot(session_started.scope());
      CTX_EXPECT_THROW(composition->advance_managed_query(session_started, intent_observed),
                       ManagedQueryError, message);
      EXPECT_EQ(composition->snapshot(session_started.scope()), before);
    }
    EXPECT_TRUE(facts->calls().empty());
  }
}

TEST(ManagedQuerySeed, managed_advance_rejects_pending_consent_and_effect_before_planning) {
  TempDir tmp;
  const std::string capability_id = "skill:pending";
  const std::string installation_snapshot = digest("pending-installation");
  auto bundle = install_bundle(capability_id, installation_snapshot);
  auto facts = std::make_shared<Facts>();
  CompositionArgs args;
  args.candidates = {candidate(capability_id, "install", installation_snapshot)};
  args.install_authority = std::make_shared<InstallAuthority>(
      installation_snapshot,
      std::map<std::string, std::optional<engine::InstallPlanningBundle>>{{capability_id, bundle}});
  args.facts = facts;
  args.interactive_install_decision_guard = true;
  args.trusted_clock = true;
  args.suffix = "pending";
  auto composition = open_composition(tmp.path(), std::move(args));
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "pending");
    auto session_started = events.first;
    auto intent_observed = events.second;
    composition->advance_managed_query(session_started, intent_observed);
    auto snapshot = composition->snapshot(intent_observed.scope());
    ASSERT_TRUE(snapshot.state.has_value());
    const auto& committed = snapshot.state->committed_plan();
    ASSERT_TRUE(committed.has_value());
    const auto& capability = committed->capabilities().at(0);
    const std::string policy_digest = engine::InstallConsentPolicy::safe_default().policy_digest();
    auto desired = composition->process(
        ::ctx::testing::desire_event(intent_observed, capability, policy_digest, "pending"));

    const auto request = desired.actions().at(0);
    EXPECT_EQ(request.action_kind(), engine::ActionKind::kRequestConsent);
    facts->clear_calls();
    const auto pending_consent = composition->snapshot(intent_observed.scope());
    CTX_EXPECT_THROW(composition->advance_managed_query(
                         session_started, development_event(intent_observed, 3, "pending-consent")),
                     ManagedQueryError, "settle pending authority");
    EXPECT_EQ(composition->snapshot(intent_observed.scope()), pending_consent);
    EXPECT_TRUE(facts->calls().empty());
    auto granted = composition->process(::ctx::testing::interactive_grant(
        {session_started, intent_observed, capability, request, policy_digest}, "pending"));

    EXPECT_EQ(granted.actions().at(0).action_kind(), engine::ActionKind::kInstallCapability);
    const auto pending_effect = composition->snapshot(intent_observed.scope());
    CTX_EXPECT_THROW(composition->advance_managed_query(
                         session_started, development_event(intent_observed, 4, "pending-effect")),
                     ManagedQueryError, "settle pending authority");
    EXPECT_EQ(composition->snapshot(intent_observed.scope()), pending_effect);
  }
  EXPECT_TRUE(facts->calls().empty());
}

TEST(ManagedQuerySeed, managed_advance_rejects_ended_session_but_reopen_remains_available) {
  TempDir tmp;
  auto facts = std::make_shared<Facts>();
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.facts = facts;
  args.suffix = "ended";
  auto composition = open_composition(tmp.path(), std::move(args));
  std::optional<ManagedAdvanceResult> initial;
  std::optional<PreparedManagedQuery> reopened;
  {
    ScopedClose scope(*composition);
    auto events = managed_events(*composition, "ended");
    auto session_started = events.first;
    auto intent_observed = events.second;
    initial.emplace(composition->advance_managed_query(session_started, intent_observed));
    composition->process(replace_event(intent_observed, [](engine::EngineEvent::Fields& f) {
      f.event_id = "event-sessionended-ended";
      f.kind = "SessionEnded";
      f.expected_revision = 2;
      f.payload = core::Json::object();
    }));
    facts->clear_calls();
    reopened.emplace(
        composition->reopen_managed_query(intent_observed.scope(), initial->prepared().plan_id()));
    const auto ended = composition->snapshot(intent_observed.scope());
    CTX_EXPECT_THROW(composition->advance_managed_query(
                         session_started, development_event(intent_observed, 3, "ended-later")),
                     ManagedQueryError, "session has ended");
    EXPECT_EQ(composition->snapshot(intent_observed.scope()), ended);
  }
  EXPECT_EQ(reopened->journal_revision(), 3);
  EXPECT_EQ(explanatory_fields(*reopened), explanatory_fields(initial->prepared()));
  EXPECT_TRUE(facts->calls().empty());
}

TEST(ManagedQuerySeed, concurrent_managed_development_attempts_commit_exactly_one_winner) {
  TempDir tmp;
  std::barrier barrier(2);
  auto base_normalizer = normalizer(5);
  ObservationNormalizer racing_normalizer =
      [&barrier, base_normalizer](const ObservationReference& reference,
                                  const engine::EngineState* state) {
        if (reference.opaque_id == "observation-race-first" ||
            reference.opaque_id == "observation-race-second") {
          barrier.arrive_and_wait();
        }
        return base_normalizer(reference, state);
      };
  auto make_args = [&] {
    CompositionArgs args;
    args.candidates = {candidate("skill:test", "manual")};
    args.observation_normalizer = racing_normalizer;
    args.suffix = "race";
    return args;
  };
  auto first = open_composition(tmp.path(), make_args());
  auto second = open_composition(tmp.path(), make_args());
  std::optional<std::string> winner_plan;
  std::optional<PreparedManagedQuery> latest;
  std::optional<EngineSnapshot> snapshot;
  {
    ScopedClose close_first(*first);
    ScopedClose close_second(*second);
    auto events = managed_events(*first, "race");
    auto session_started = events.first;
    auto intent_observed = events.second;
    first->advance_managed_query(session_started, intent_observed);
    const std::array<engine::EngineEvent, 2> attempts = {
        development_event(intent_observed, 2, "race-first"),
        development_event(intent_observed, 2, "race-second")};
    std::array<EngineComposition*, 2> compositions = {first.get(), second.get()};
    std::vector<std::future<ManagedAdvanceResult>> futures;
    for (std::size_t i = 0; i < 2; ++i) {
      futures.push_back(std::async(std::launch::async, [&, i] {
        return compositions[i]->advance_managed_query(session_started, attempts[i]);
      }));
    }
    std::vector<ManagedAdvanceResult> results;
    std::vector<std::exception_ptr> errors;
    for (auto& future : futures) {
      ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
      try {
        results.push_back(future.get());
      } catch (...) {
        errors.push_back(std::current_exception());
      }
    }
    ASSERT_EQ(results.size(), 1u);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THROW(std::rethrow_exception(errors[0]), engine::RevisionConflict);
    winner_plan = results[0].prepared().plan_id();
    latest.emplace(first->reopen_managed_query(intent_observed.scope(), *winner_plan));
    snapshot = first->snapshot(intent_observed.scope());
  }
  EXPECT_EQ(latest->plan_id(), *winner_plan);
  EXPECT_EQ(snapshot->revision, 3);
}

TEST(ManagedQuerySeed, managed_development_preserves_exact_lifecycle_transition_on_retry) {
  TempDir tmp;
  const std::string capability_id = "skill:installed";
  const std::string installation_snapshot = digest("lifecycle-installation");
  auto bundle = install_bundle(capability_id, installation_snapshot);
  auto facts = std::make_shared<Facts>();
  auto initial_normalizer = normalizer(5);
  auto abstaining_normalizer = normalizer(0);
  ObservationNormalizer phase_normalizer = [=](const ObservationReference& reference,
                                               const engine::EngineState* state) {
    return reference.opaque_id == "observation-lifecycle-later"
               ? abstaining_normalizer(reference, state)
               : initial_normalizer(reference, state);
  };
  CompositionArgs args;
  args.candidates = {candidate(capability_id, "install", installation_snapshot)};
  args.install_authority = std::make_shared<InstallAuthority>(
      installation_snapshot,
      std::map<std::string, std::optional<engine::InstallPlanningBundle>>{{capability_id, bundle}});
  args.facts = facts;
  args.observation_normalizer = phase_normalizer;
  args.interactive_install_decision_guard = true;
  args.trusted_clock = true;
  args.suffix = "lifecycle";
  args.activation_port = std::make_shared<FakeActivation>();
  auto composition = open_composition(tmp.path(), std::move(args));
  auto owner = ::ctx::testing::open_journal_owner(tmp.path(), "lifecycle");
  std::optional<ManagedAdvanceResult> advanced;
  std::optional<ManagedAdvanceResult> retried;
  {
    ScopedClose scope(*composition);
    auto pending = drive_to_pending_activation(*composition, owner->engine, "lifecycle", bundle);
    const auto scope_ref = pending.intent_observed.scope();
    auto applied = composition->execute_activation(pending.activation, pending.binding,
                                                   host_digest(pending.session_started),
                                                   activation_observation());
    EXPECT_EQ(applied.outcome, engine::Outcome::kApplied);
    EXPECT_TRUE(applied.settled);
    EXPECT_TRUE(applied.claim_was_new);
    // Re-entry after a settled activation is idempotent: no new claim, no journal advance, and
    // no fresh receipt transition.
    const auto head_after_activation = composition->snapshot(scope_ref).revision;
    auto replayed = composition->execute_activation(pending.activation, pending.binding,
                                                    host_digest(pending.session_started),
                                                    activation_observation());
    EXPECT_EQ(replayed.outcome, engine::Outcome::kApplied);
    EXPECT_TRUE(replayed.settled);
    EXPECT_FALSE(replayed.claim_was_new);
    EXPECT_FALSE(replayed.transition.has_value());
    EXPECT_EQ(composition->snapshot(scope_ref).revision, head_after_activation);
    auto development = development_event(pending.intent_observed, 6, "lifecycle-later");
    advanced.emplace(composition->advance_managed_query(pending.session_started, development));
    facts->clear_calls();
    retried.emplace(composition->advance_managed_query(pending.session_started, development));
  }
  EXPECT_EQ(advanced->prepared().status(), engine::PlanStatus::kAbstained);
  std::vector<std::string> kinds;
  for (const auto& action : advanced->transition().actions()) {
    kinds.emplace_back(engine::to_string(action.action_kind()));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"DeactivateCapability"}));
  EXPECT_EQ(retried->transition(), advanced->transition());
  EXPECT_TRUE(facts->calls().empty());
}

TEST(ManagedQuerySeed, execute_activation_recovers_a_recorded_but_unsettled_outcome) {
  TempDir tmp;
  auto fixture = pending_activation_composition(tmp.path(), "rec-outcome");
  ASSERT_TRUE(fixture.pending.has_value());
  const PendingActivation& pending = *fixture.pending;
  auto& composition = fixture.composition;
  ScopedClose scope(*composition);
  auto& engine = fixture.owner->engine;
  // Simulate a crash after the durable outcome but before the receipt.
  ASSERT_TRUE(::ctx::testing::crash_execute_activation(*composition, pending,
                                                       crash_points::kAfterActivationOutcome));
  auto status = engine.activation_execution_status(pending.activation);
  EXPECT_TRUE(status.outcome_recorded);
  EXPECT_FALSE(status.settled);
  const auto head_before = composition->snapshot(pending.intent_observed.scope()).revision;
  auto report = composition->execute_activation(pending.activation, pending.binding,
                                                host_digest(pending.session_started),
                                                activation_observation());
  EXPECT_EQ(report.outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(report.settled);
  EXPECT_FALSE(report.claim_was_new);
  EXPECT_TRUE(report.transition.has_value());
  EXPECT_EQ(composition->snapshot(pending.intent_observed.scope()).revision, head_before + 1);
  EXPECT_TRUE(engine.activation_execution_status(pending.activation).settled);
}

TEST(ManagedQuerySeed, execute_activation_recovers_after_a_claim_without_outcome) {
  TempDir tmp;
  auto fixture = pending_activation_composition(tmp.path(), "rec-claim");
  ASSERT_TRUE(fixture.pending.has_value());
  const PendingActivation& pending = *fixture.pending;
  auto& composition = fixture.composition;
  ScopedClose scope(*composition);
  auto& engine = fixture.owner->engine;
  // Simulate a crash after the durable claim but before the outcome.
  ASSERT_TRUE(::ctx::testing::crash_execute_activation(*composition, pending,
                                                       crash_points::kAfterActivationClaim));
  auto status = engine.activation_execution_status(pending.activation);
  EXPECT_TRUE(status.claimed);
  EXPECT_FALSE(status.outcome_recorded);
  const auto head_before = composition->snapshot(pending.intent_observed.scope()).revision;
  auto report = composition->execute_activation(pending.activation, pending.binding,
                                                host_digest(pending.session_started),
                                                activation_observation());
  EXPECT_EQ(report.outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(report.settled);
  EXPECT_FALSE(report.claim_was_new);
  EXPECT_EQ(composition->snapshot(pending.intent_observed.scope()).revision, head_before + 1);
}

TEST(ManagedQuerySeed, execute_activation_tolerates_a_lost_claim_race) {
  TempDir tmp;
  ActivationOptions options;
  options.faulty_claims = true;  // the composition's claim port is a FaultyClaimStore
  auto fixture = pending_activation_composition(tmp.path(), "race-claim", std::move(options));
  ASSERT_TRUE(fixture.pending.has_value());
  const PendingActivation& pending = *fixture.pending;
  auto& composition = fixture.composition;
  ScopedClose scope(*composition);
  auto& engine = fixture.owner->engine;
  // A competing owner has already burned the exact one-use claim.
  engine.authorize_activation(pending.activation, pending.binding,
                              host_digest(pending.session_started));
  // Force execute_activation into the authorize branch even though the claim already exists, so
  // the ActivationActionAlreadyClaimed catch and re-read path are exercised deterministically:
  // the composition's claim port reads the first status as unclaimed.
  fixture.claims->report_activation_unclaimed(1);
  auto report = composition->execute_activation(pending.activation, pending.binding,
                                                host_digest(pending.session_started),
                                                activation_observation());
  EXPECT_EQ(report.outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(report.settled);
  EXPECT_FALSE(report.claim_was_new);
  EXPECT_GE(fixture.claims->calls(FaultyClaimStore::Op::kActivationStatus), 2);
}

}  // namespace
}  // namespace ctx::runtime
