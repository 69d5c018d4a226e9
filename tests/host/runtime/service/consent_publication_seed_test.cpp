// Seed 001 (test_managed_query_service.py): the interactive consent PUBLICATION seeds —
// set_desired and prepare/reopen publishing exactly one safe current challenge through the real
// consent broker, bound to the real skill-installer plugin's identity and target — plus the
// factory and no-challenge seeds of the service piece. One GoogleTest case per seed test (names
// from seed-tests.tsv). Where the seed monkeypatches a method to commit a decision mid-publication,
// the test interposes on the same step through a port (a broker or installer decorator that
// delegates to the real one); crashes go through the crash-point seam; races run real threads
// behind a std::barrier.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <barrier>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "host/app/wire.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/replay.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/plugin_ports.hpp"
#include "host/runtime/service/consent_publication.hpp"
#include "host/runtime/service/consent_resolution_crash_points.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/exact_fields.hpp"
#include "tests/support/runtime/forwarding_installer.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)
using core::Json;

template <typename T>
std::string printed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <typename T>
concept HasChallengeId = requires(const T& r) {
  r.challenge_id();
};
template <typename T>
concept HasExecutionBinding = requires(const T& r) {
  r.execution_binding();
};
template <typename T>
concept HasSelection = requires(const T& r) {
  r.selection();
};
template <typename T>
concept HasScope = requires(const T& r) {
  r.scope();
};

ManagedQueryRequest query_request(const std::string& label, const std::string& work = "work-one") {
  return ManagedQueryRequest::create(digest(label), work);
}

ManagedDesiredSetRequest desired_request(const std::string& query_ref, const std::string& label,
                                         std::vector<std::string> ids,
                                         std::optional<std::string> previous = std::nullopt) {
  return ManagedDesiredSetRequest::create(query_ref, digest(label), std::move(ids),
                                          std::move(previous));
}

std::vector<std::string> action_kinds(const std::vector<ManagedActionSummary>& actions) {
  std::vector<std::string> kinds;
  for (const auto& action : actions) kinds.emplace_back(engine::to_string(action.kind()));
  return kinds;
}

SetupArgs installable(int requested_limit = 1) {
  return {.requested_limit = requested_limit, .installable = true};
}

long consent_rows(const ServiceSetup& setup) {
  return sqlite_count(setup.consent->consent_store_path, "consent_challenges");
}

// The seeds' `body_source.load_calls == 0`, and nothing reached the skill installer's root (no
// stored object, no active skill).
bool skill_root_empty(const ServiceSetup& setup) {
  if (setup.consent->body_source->load_calls() != 0) return false;
  for (const char* part : {"objects", "tmp", "active"}) {
    const auto dir = setup.consent->skill_root / part;
    if (std::filesystem::exists(dir) && !std::filesystem::is_empty(dir)) return false;
  }
  return true;
}

// open_managed_engine_composition with the setup's ports and a no-op interactive guard (the seeds'
// `interactive_install_decision_guard=lambda _reservation: nullcontext()`).
std::unique_ptr<EngineComposition> guarded_composition(const ServiceSetup& setup) {
  ManagedCompositionOptions options;
  options.journal_path = setup.journal_path;
  options.benefit_audit_path = setup.audit_path;
  options.benefit_facts_port = setup.facts;
  options.net_benefit_policy = setup.policy;
  options.material_port = setup.materials;
  options.install_bundle_port = setup.installs;
  options.interactive_install_decision_guard =
      [](const engine::InteractiveInstallDecisionReservation&) {
        return std::function<void()>([] {});
      };
  options.trusted_clock = setup.clock;
  return open_managed_engine_composition(*setup.registry, setup.artifact, std::move(options));
}

std::string safe_policy_digest() { return InstallConsentPolicy::safe_default().policy_digest(); }

// The seeds' _commit_pending_consent: prepare, then commit a desired event for the plan's first
// capability directly through a composition; returns the prepare result and its RequestConsent.
std::pair<ManagedQueryServiceResult, engine::HostAction> commit_pending_consent(
    ServiceSetup& setup, const std::string& logical_query_id = "pending-consent-query") {
  auto initial = setup.service->prepare(query_request(logical_query_id));
  const auto& original = setup.managed_input->decision_event();
  auto composition = setup.open_composition();
  const auto snapshot = composition->snapshot(original.scope());
  EXPECT_TRUE(snapshot.state && snapshot.state->committed_plan());
  const auto& capability = snapshot.state->committed_plan()->capabilities().front();
  const auto desired =
      composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
        f.event_id = "event-managed-consent-desired";
        f.kind = "ReassessmentRequested";
        f.expected_revision = 2;
        f.payload = {
            {"owner_id", "owner-managed-consent"},
            {"policy_snapshot_digest", safe_policy_digest()},
            {"desired_capabilities",
             Json::array({{{"capability_id", capability.capability_id()},
                           {"source_digest", capability.source_digest()},
                           {"kind", capability.kind()},
                           {"actionability", capability.actionability()},
                           {"install_descriptor_digest", *capability.install_descriptor_digest()},
                           {"install_plan_digest", *capability.install_plan_digest()},
                           {"lease_id", "lease-managed-consent"}}})}};
      }));
  composition->close();
  std::vector<engine::HostAction> requests;
  for (const auto& action : desired.actions()) {
    if (action.action_kind() == engine::ActionKind::kRequestConsent) requests.push_back(action);
  }
  EXPECT_EQ(requests.size(), 1u);
  return {std::move(initial), requests.at(0)};
}

// The seeds' _commit_consent_decision: an interactive grant of `request` at revision 3.
void commit_consent_decision(const ServiceSetup& setup, const engine::HostAction& request) {
  const auto& original = setup.managed_input->decision_event();
  auto composition = guarded_composition(setup);
  composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-managed-consent-race-decision";
    f.kind = "UserDecision";
    f.expected_revision = 3;
    f.occurred_at = "2026-08-03T12:01:00Z";
    const auto& p = request.payload();
    f.payload = {
        {"consent_id", *request.consent_id()},
        {"decision", "granted"},
        {"decision_basis", "interactive"},
        {"policy_snapshot_digest", safe_policy_digest()},
        {"requested_action_id", p.at("requested_action_id")},
        {"requested_action_kind", p.at("requested_action_kind")},
        {"requested_action_content_digest", p.at("requested_action_content_digest")},
        {"requested_action_precondition_revision", p.at("requested_action_precondition_revision")}};
  }));
  composition->close();
}

// A broker port that delegates to the real broker and runs a test hook around one operation
// (the seeds' monkeypatched InstallConsentBrokerService.prepare / .status).
class InterposedBroker final : public ConsentBrokerPort {
 public:
  explicit InterposedBroker(std::shared_ptr<ConsentBroker> inner) : inner_(std::move(inner)) {}
  std::function<void()> after_prepare;
  std::function<void()> before_status;
  std::function<void(ConsentRecord&)> edit_status;

  const std::filesystem::path& path() const noexcept override { return inner_->path(); }
  const std::string& audience() const noexcept override { return inner_->audience(); }
  ConsentRecord prepare(const ConsentChallenge& challenge) override {
    auto record = inner_->prepare(challenge);
    if (after_prepare) after_prepare();
    return record;
  }
  ConsentRecord status(std::string_view challenge_id) override {
    if (before_status) before_status();
    auto record = inner_->status(challenge_id);
    if (edit_status) edit_status(record);
    return record;
  }
  ConsentRecord status_by_challenge_digest(std::string_view digest) override {
    return inner_->status_by_challenge_digest(digest);
  }
  VerifiedHumanDecision authenticate(const ConsentChallenge& current, std::string_view payload,
                                     VerifierDirectory& verifiers) override {
    return inner_->authenticate(current, payload, verifiers);
  }
  ConsentDecisionGuard interactive_guard(const VerifiedHumanDecision& decision,
                                         std::string_view binding_digest) override {
    return inner_->interactive_guard(decision, binding_digest);
  }
  ConsentReconciliation reconcile(std::string_view challenge_id,
                                  DecisionEvidencePort& evidence) override {
    return inner_->reconcile(challenge_id, evidence);
  }

 private:
  std::shared_ptr<ConsentBroker> inner_;
};

// An installer port that delegates to the real skill-installer plugin and runs a hook after
// reading the target identity (the seeds' monkeypatched resolve_install_execution_binding).
class InterposedInstaller final : public ::ctx::testing::ForwardingInstaller {
 public:
  using ForwardingInstaller::ForwardingInstaller;
  // Runs once, on the next target read.
  std::function<void()> after_target_identity;

  engine::TargetIdentity target_identity() override {
    auto identity = ForwardingInstaller::target_identity();
    if (auto hook = std::exchange(after_target_identity, nullptr)) hook();
    return identity;
  }
};

// A peer service on the setup's files with `edit` applied to its options.
std::shared_ptr<ManagedQueryService> service_with(
    const ServiceSetup& setup, const std::function<void(ManagedQueryServiceOptions&)>& edit) {
  auto options = setup.service_options();
  edit(options);
  return open_managed_query_service(std::move(options));
}

// ---------------------------------------------------------------------------------------------
// no challenge, factory

TEST(ManagedConsentSeed, service_returns_no_challenge_without_current_pending_consent) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 0, .consent_authorities = true});
  const auto result = setup.service->prepare(query_request("no-consent-query"));
  EXPECT_FALSE(result.challenge().has_value());
  EXPECT_TRUE(skill_root_empty(setup));
  EXPECT_EQ(consent_rows(setup), 0);
}

TEST(ManagedConsentSeed, service_factory_with_consent_recovery_authority_does_not_create_journal) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  EXPECT_FALSE(std::filesystem::exists(setup.journal_path));
  EXPECT_FALSE(std::filesystem::exists(setup.audit_path));
  auto colliding = std::make_shared<ConsentBroker>(setup.journal_path, store_key(),
                                                   std::string(kConsentAudience), *setup.clock);
  CTX_EXPECT_THROW(
      service_with(setup,
                   [&](ManagedQueryServiceOptions& o) {
                     o.consent_broker = colliding;
                     o.consent_workspace_identity_digest = digest("managed-service-workspace");
                     o.consent_release_root_digest = digest("managed-service-release-root");
                   }),
      InvalidArgument, "persistence paths must be distinct");
  CTX_EXPECT_THROW(service_with(setup,
                                [&](ManagedQueryServiceOptions& o) {
                                  o.journal_path = "relative-journal.sqlite3";
                                }),
                   InvalidArgument, "absolute Path");
}

// ---------------------------------------------------------------------------------------------
// set_desired publishes

TEST(ManagedConsentSeed, service_sets_an_install_desired_subset_and_requires_consent) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto prepared = setup.service->prepare(query_request("desired-install-query"));
  const auto calls_before = setup.facts->calls();
  const auto request =
      desired_request(prepared.query_ref(), "desired-install-choice", {"skill:installable"});
  const auto first = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(first.status(), ManagedDesiredStatus::kConsentRequired);
  EXPECT_EQ(repeated.status(), ManagedDesiredStatus::kConsentRequired);
  EXPECT_EQ(first.reason_code(), std::nullopt);
  EXPECT_EQ(repeated.reason_code(), std::nullopt);
  EXPECT_EQ(first.capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_EQ(repeated.capability_ids(), first.capability_ids());
  EXPECT_TRUE(first.deferred_capability_ids().empty());
  EXPECT_TRUE(repeated.deferred_capability_ids().empty());
  EXPECT_EQ(first.desired_set_ref(), repeated.desired_set_ref());
  EXPECT_EQ(first.journal_revision(), 3);
  EXPECT_EQ(repeated.journal_revision(), 3);
  EXPECT_EQ(first.journal_record_digest(), repeated.journal_record_digest());
  EXPECT_EQ(action_kinds(first.actions()), std::vector<std::string>{"RequestConsent"});
  EXPECT_EQ(first.actions(), repeated.actions());
  ASSERT_TRUE(first.challenge().has_value());
  EXPECT_EQ(first.challenge(), repeated.challenge());
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*first.challenge())>,
                               ManagedConsentChallengeProjection>);
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_desired_sets"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
}

TEST(ManagedConsentSeed, desired_result_factory_requires_challenge_action_correspondence) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto prepared = setup.service->prepare(query_request("desired-result-challenge-query"));
  const auto result = setup.service->set_desired(desired_request(
      prepared.query_ref(), "desired-result-challenge-choice", {"skill:installable"}));
  ASSERT_TRUE(result.challenge().has_value());
  const auto record = setup.store->load_latest_desired_set(prepared.query_ref());
  // The same five fields, from the broker's stored challenge (projections are not copyable).
  auto challenge = ManagedConsentChallengeProjection::of(
      setup.consent->broker->status_by_challenge_digest(result.challenge()->challenge_digest())
          .challenge);
  ASSERT_EQ(challenge, *result.challenge());
  CTX_EXPECT_THROW(
      ManagedDesiredSetResult::create(record, {}, {}, ManagedDesiredStatus::kConsentRequired,
                                      std::nullopt, {}, std::move(challenge)),
      ManagedQueryServiceError, "action summary");
}

TEST(ManagedConsentSeed, desired_retry_refuses_interactive_effect_without_signed_execution_path) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto prepared = setup.service->prepare(query_request("desired-pending-effect-query"));
  const auto request =
      desired_request(prepared.query_ref(), "desired-pending-effect-choice", {"skill:installable"});
  const auto desired = setup.service->set_desired(request);
  EXPECT_EQ(desired.status(), ManagedDesiredStatus::kConsentRequired);
  const auto& original = setup.managed_input->decision_event();
  {
    auto composition = guarded_composition(setup);
    const auto snapshot = composition->snapshot(original.scope());
    ASSERT_TRUE(snapshot.state);
    const auto& pending = snapshot.state->pending_consents().at(0);
    // The seed's service._current_consent_request: the RequestConsent of the head transition.
    store::SqliteJournalStore journal(setup.journal_path, *setup.clock);
    const auto head = journal.read(original.scope().stream_id(), snapshot.revision - 1);
    ASSERT_EQ(head.size(), 1u);
    const auto consent_request = consent_request_for(
        engine::Transition::from_json_text(head.front().transition_json), pending);
    ASSERT_TRUE(consent_request.has_value());
    const auto& p = consent_request->payload();
    const auto granted =
        composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
          f.event_id = "event-desired-pending-effect-granted";
          f.kind = "UserDecision";
          f.expected_revision = snapshot.revision;
          f.payload = {{"consent_id", *consent_request->consent_id()},
                       {"decision", "granted"},
                       {"decision_basis", "interactive"},
                       {"policy_snapshot_digest", safe_policy_digest()},
                       {"requested_action_id", p.at("requested_action_id")},
                       {"requested_action_kind", p.at("requested_action_kind")},
                       {"requested_action_content_digest", p.at("requested_action_content_digest")},
                       {"requested_action_precondition_revision",
                        p.at("requested_action_precondition_revision")}};
        }));
    std::vector<std::string> granted_kinds;
    for (const auto& action : granted.actions()) {
      granted_kinds.emplace_back(engine::to_string(action.action_kind()));
    }
    EXPECT_EQ(granted_kinds, std::vector<std::string>{"InstallCapability"});
    const auto observed =
        composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
          f.event_id = "event-desired-pending-effect-observed";
          f.kind = "ProviderSubmissionObserved";
          f.expected_revision = granted.to_revision();
          f.payload = {{"capabilities", Json::array()}};
        }));
    EXPECT_TRUE(observed.actions().empty());
    const auto state = composition->snapshot(original.scope()).state;
    ASSERT_TRUE(state);
    ASSERT_EQ(state->pending_effects().size(), 1u);
    EXPECT_EQ(state->pending_effects().front().effect, engine::Effect::kInstall);
    EXPECT_EQ(state->pending_effects().front().action.action_kind(),
              engine::ActionKind::kInstallCapability);
  }
  CTX_EXPECT_THROW(setup.service->set_desired(request), ManagedQueryServiceError,
                   "interactive install decision");
  EXPECT_TRUE(skill_root_empty(setup));
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 0);
}

TEST(ManagedConsentSeed, actionless_revision_reoffers_consent_and_retry_never_reports_reconciled) {
  for (const std::string event_kind :
       {"ProviderSubmissionObserved", "ToolCallObserved", "TurnStarting"}) {
    SCOPED_TRACE(event_kind);
    TempDir tmp;
    auto setup = make_setup(tmp.path(), installable());
    setup.persist_policy(InstallConsentPolicy::safe_default());
    const auto prepared =
        setup.service->prepare(query_request("stale-consent-" + event_kind + "-query"));
    const auto request = desired_request(
        prepared.query_ref(), "stale-consent-" + event_kind + "-choice", {"skill:installable"});
    const auto initial = setup.service->set_desired(request);
    EXPECT_EQ(initial.status(), ManagedDesiredStatus::kConsentRequired);
    Json payload = Json::object();
    if (event_kind == "ProviderSubmissionObserved") {
      payload = {{"capabilities", Json::array()}};
    } else if (event_kind == "ToolCallObserved") {
      payload = {{"capability_id", "skill:installable"},
                 {"source_digest", prepared.prepared().selections().front().source_digest()},
                 {"outcome", "failed"}};
    }
    {
      auto composition = setup.open_composition();
      const auto consumed = composition->process(
          replace_event(setup.managed_input->decision_event(), [&](engine::EngineEvent::Fields& f) {
            f.event_id = "event-stale-consent-" + event_kind;
            f.kind = event_kind;
            f.expected_revision = 3;
            f.payload = payload;
          }));
      const auto state = composition->snapshot(setup.managed_input->decision_event().scope()).state;
      std::vector<std::string> kinds;
      for (const auto& action : consumed.actions()) {
        kinds.emplace_back(engine::to_string(action.action_kind()));
      }
      EXPECT_EQ(kinds, std::vector<std::string>{"RequestConsent"});
      ASSERT_TRUE(state);
      EXPECT_EQ(state->pending_consents().size(), 1u);
    }
    const auto retried = setup.service->set_desired(request);
    EXPECT_EQ(retried.status(), ManagedDesiredStatus::kConsentRequired);
    EXPECT_EQ(retried.reason_code(), std::nullopt);
    EXPECT_TRUE(retried.deferred_capability_ids().empty());
    EXPECT_TRUE(retried.failed_capability_ids().empty());
    EXPECT_TRUE(retried.challenge().has_value());
    EXPECT_EQ(action_kinds(retried.actions()), std::vector<std::string>{"RequestConsent"});
  }
}

// ---------------------------------------------------------------------------------------------
// reopen publishes

TEST(ManagedConsentSeed, service_publishes_one_safe_current_consent_challenge_without_reranking) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  setup.persist_policy(InstallConsentPolicy::safe_default());
  auto [initial, request] = commit_pending_consent(setup);
  const auto calls_before = setup.facts->calls();
  const auto result = setup.service->reopen(initial.query_ref());
  ASSERT_TRUE(result.challenge().has_value());
  const auto& challenge = *result.challenge();
  EXPECT_EQ(challenge.capability_id(), "skill:installable");
  EXPECT_EQ(challenge.kind(), engine::CapabilityKind::kSkill);
  EXPECT_EQ(challenge.audience(), kConsentAudience);
  EXPECT_EQ(challenge.expires_at(), "2026-08-03T13:00:00Z");
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_TRUE(skill_root_empty(setup));
  // Five fields only: no challenge id, binding, selection or scope; repr shows no path.
  static_assert(ChallengeProjectionAccessors<ManagedConsentChallengeProjection> &&
                kHoldsExactly<ManagedConsentChallengeProjection, ChallengeProjectionFields>);
  EXPECT_EQ(keys_of(challenge_json(result.challenge())),
            (std::set<std::string>{"audience", "capability_id", "challenge_digest", "expires_at",
                                   "kind"}));
  static_assert(!HasChallengeId<ManagedConsentChallengeProjection>);
  static_assert(!HasExecutionBinding<ManagedConsentChallengeProjection>);
  static_assert(!HasSelection<ManagedConsentChallengeProjection>);
  static_assert(!HasScope<ManagedConsentChallengeProjection>);
  EXPECT_EQ(printed(result).find(tmp.path().string()), std::string::npos);
  // The broker holds exactly this challenge, naming the installer plugin the human approves.
  const auto record =
      setup.consent->broker->status_by_challenge_digest(challenge.challenge_digest());
  EXPECT_EQ(record.state, ConsentState::kPending);
  const auto& fields = record.challenge.fields();
  EXPECT_EQ(fields.challenge_id, *request.consent_id());
  EXPECT_EQ(fields.requested_action_id, request.payload().at("requested_action_id"));
  const auto target = setup.consent->skill_installer->target_identity();
  EXPECT_EQ(fields.execution_binding_digest,
            execution_binding_digest("ctx-skill-installer-v1",
                                     setup.consent->skill_installer->identity_digest(),
                                     setup.consent->host_identity_digest, target.digest()));
  EXPECT_EQ(fields.policy_snapshot_digest, safe_policy_digest());
  EXPECT_EQ(consent_rows(setup), 1);
}

TEST(ManagedConsentSeed, service_challenge_retry_reopen_and_host_aliases_are_idempotent) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  setup.inputs->set("codex-turn", setup.managed_input);
  setup.inputs->set("claude-hook", setup.managed_input);
  auto [initial, request] = commit_pending_consent(setup, "host-consent-query");
  const auto calls_before = setup.facts->calls();
  const auto codex = setup.service->prepare(query_request("host-consent-query", "codex-turn"));
  const auto claude = setup.service->prepare(query_request("host-consent-query", "claude-hook"));
  const auto reopened = setup.service->reopen(initial.query_ref());
  ASSERT_TRUE(codex.challenge().has_value());
  EXPECT_EQ(codex.challenge(), claude.challenge());
  EXPECT_EQ(claude.challenge(), reopened.challenge());
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_EQ(consent_rows(setup), 1);
}

TEST(ManagedConsentSeed, service_concurrent_challenge_publication_converges_without_replanning) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  const auto calls_before = setup.facts->calls();
  // ThreadPoolExecutor(max_workers=4).map(reopen, 8 times): four threads, two reopens each,
  // released together.
  constexpr int kThreads = 4;
  std::barrier start(kThreads);
  std::mutex mutex;
  std::set<std::string> digests;
  int reopened = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < 2; ++i) {
        const auto result = setup.service->reopen(query_ref);
        std::lock_guard lock(mutex);
        ++reopened;
        if (result.challenge()) digests.insert(result.challenge()->challenge_digest());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(reopened, 8);
  EXPECT_EQ(digests.size(), 1u);
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_EQ(consent_rows(setup), 1);
}

TEST(ManagedConsentSeed, service_reopen_recovers_after_challenge_publish_before_result) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  {
    CrashPointArmed armed(service_crash_points::kAfterChallengePublication);
    EXPECT_THROW(setup.service->reopen(initial.query_ref()), SimulatedCrash);
    EXPECT_TRUE(armed.fired());
  }
  EXPECT_EQ(consent_rows(setup), 1);
  const auto calls_before = setup.facts->calls();
  const auto recovered = setup.service->reopen(initial.query_ref());
  EXPECT_TRUE(recovered.challenge().has_value());
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_EQ(consent_rows(setup), 1);
}

// ---------------------------------------------------------------------------------------------
// head drift during publication

TEST(ManagedConsentSeed, service_rejects_decision_committed_during_registry_binding) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  auto installer = std::make_shared<InterposedInstaller>(setup.consent->skill_installer);
  auto actuators = std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", installer}},
      setup.consent->host_identity_digest);
  auto service =
      service_with(setup, [&](ManagedQueryServiceOptions& o) { o.install_actuators = actuators; });
  installer->after_target_identity = [&, request = request] {
    commit_consent_decision(setup, request);
  };
  CTX_EXPECT_THROW(service->reopen(query_ref), ManagedQueryHeadDriftError, "changed");
  EXPECT_EQ(consent_rows(setup), 0);
}

// The seed swaps the head snapshot, once the binding is resolved, for one at the same revision
// whose committed plan is "plan-race-b". Here the journal's rows really are replaced at that
// moment by those of a second state directory whose plan B reached the same revision.
// Replaces every journal row of `journal` with those of `other` (one stream each) in one
// transaction, behind the service's back: the seed's snapshot that answers another head.
void swap_journal_history(const std::filesystem::path& journal,
                          const std::filesystem::path& other) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(journal.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);
  const std::string sql = "ATTACH DATABASE '" + other.string() +
                          "' AS other; BEGIN IMMEDIATE; DELETE FROM main.engine_journal; "
                          "DELETE FROM main.engine_streams; INSERT INTO main.engine_journal "
                          "SELECT * FROM other.engine_journal; INSERT INTO main.engine_streams "
                          "SELECT * FROM other.engine_streams; COMMIT; DETACH DATABASE other;";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

TEST(ManagedConsentSeed, service_never_mixes_plan_a_result_with_plan_b_consent) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  // Plan B: the same stream (scope) committed with plan "plan-race-b" and its pending consent,
  // to the same revision, in a second state directory.
  TempDir race_dir;
  auto race = make_setup(race_dir.path(), installable());
  const auto plan_b = [](engine::EngineEvent::Fields& f) { f.correlation_id = "plan-race-b"; };
  race.managed_input = ManagedQueryInput::create(
      race.artifact, replace_event(race.managed_input->session_started(), plan_b),
      replace_event(race.managed_input->decision_event(), plan_b));
  race.inputs->set("work-one", race.managed_input);
  commit_pending_consent(race);
  race.service->close();
  auto composition = setup.open_composition();
  const auto& scope = setup.managed_input->decision_event().scope();
  const auto before = composition->snapshot(scope);
  composition->close();
  // The seed's resolve_then_replan + snapshot_with_plan_drift: once the execution binding is
  // resolved (the installer's target read), the head at the same revision is plan B's.
  auto installer = std::make_shared<InterposedInstaller>(setup.consent->skill_installer);
  auto actuators = std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", installer}},
      setup.consent->host_identity_digest);
  auto service =
      service_with(setup, [&](ManagedQueryServiceOptions& o) { o.install_actuators = actuators; });
  bool drifted = false;
  installer->after_target_identity = [&] {
    swap_journal_history(setup.journal_path, race.journal_path);
    drifted = true;
  };
  CTX_EXPECT_THROW(service->reopen(query_ref), ManagedQueryHeadDriftError, "changed");
  EXPECT_TRUE(drifted);
  composition = setup.open_composition();
  const auto after = composition->snapshot(scope);
  composition->close();
  // A same-revision head swap: the revision is unchanged, the head record and plan are B's.
  EXPECT_EQ(after.revision, before.revision);
  EXPECT_NE(after.record_digest, before.record_digest);
  ASSERT_TRUE(after.state && after.state->committed_plan());
  EXPECT_EQ(after.state->committed_plan()->plan_id(), "plan-race-b");
  EXPECT_EQ(before.state->committed_plan()->plan_id(), "plan-initial");
  EXPECT_EQ(after.state->pending_consents().size(), 1u);
  EXPECT_EQ(consent_rows(setup), 0);
}

TEST(ManagedConsentSeed, service_rejects_decision_committed_during_broker_publication) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  auto broker = std::make_shared<InterposedBroker>(setup.consent->broker);
  broker->after_prepare = [&, request = request] { commit_consent_decision(setup, request); };
  auto service =
      service_with(setup, [&](ManagedQueryServiceOptions& o) { o.consent_broker = broker; });
  CTX_EXPECT_THROW(service->reopen(query_ref), ManagedQueryHeadDriftError, "stale");
  EXPECT_EQ(consent_rows(setup), 1);
}

TEST(ManagedConsentSeed, service_rejects_decision_committed_during_broker_status) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  auto broker = std::make_shared<InterposedBroker>(setup.consent->broker);
  bool decided = false;
  broker->before_status = [&, request = request] {
    if (!decided) {
      decided = true;
      commit_consent_decision(setup, request);
    }
  };
  auto service =
      service_with(setup, [&](ManagedQueryServiceOptions& o) { o.consent_broker = broker; });
  CTX_EXPECT_THROW(service->reopen(query_ref), ManagedQueryHeadDriftError, "stale");
  EXPECT_EQ(consent_rows(setup), 1);
}

TEST(ManagedConsentSeed, service_projects_only_a_pending_broker_record) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  auto broker = std::make_shared<InterposedBroker>(setup.consent->broker);
  broker->edit_status = [](ConsentRecord& record) { record.state = ConsentState::kDecisionReady; };
  auto service =
      service_with(setup, [&](ManagedQueryServiceOptions& o) { o.consent_broker = broker; });
  const auto calls_before = setup.facts->calls();
  const auto result = service->reopen(initial.query_ref());
  EXPECT_FALSE(result.challenge().has_value());
  EXPECT_EQ(setup.facts->calls(), calls_before);
  EXPECT_TRUE(skill_root_empty(setup));
}

// ---------------------------------------------------------------------------------------------
// missing or drifted authorities

TEST(ManagedConsentSeed, service_fails_closed_when_pending_consent_has_no_publication_authority) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  auto without_broker = service_with(setup, [](ManagedQueryServiceOptions& o) {
    o.consent_broker = nullptr;
    o.install_actuators = nullptr;
  });
  CTX_EXPECT_THROW(without_broker->reopen(query_ref), ManagedQueryServiceError,
                   "publication authorities");
  EXPECT_EQ(consent_rows(setup), 0);
}

TEST(ManagedConsentSeed, service_rejects_pending_consent_without_a_physical_actuator) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  auto no_actuator =
      service_with(setup, [](ManagedQueryServiceOptions& o) { o.install_actuators = nullptr; });
  CTX_EXPECT_THROW(no_actuator->reopen(query_ref), Error, "no physical installation actuator");
  EXPECT_EQ(consent_rows(setup), 0);
}

TEST(ManagedConsentSeed, service_rejects_actuator_target_drift_before_broker_publication) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  auto [initial, request] = commit_pending_consent(setup);
  const std::string query_ref = initial.query_ref();
  const auto skill_root = setup.consent->skill_root;
  std::filesystem::rename(skill_root, skill_root.parent_path() / "skills-old");
  std::filesystem::create_directory(skill_root);
  std::filesystem::permissions(skill_root, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  CTX_EXPECT_THROW(setup.service->reopen(query_ref), Error, "root changed");
  EXPECT_EQ(consent_rows(setup), 0);
}

// ---------------------------------------------------------------------------------------------
// expiry of a published challenge (recover_consent, spec §3.20–§3.21)

// The seeds' _prepare_public_consent: a safe-default policy, a prepared plan and a desired choice
// of its first capability that publishes a challenge.
ManagedDesiredSetResult prepare_public_consent(ServiceSetup& setup, const std::string& label) {
  setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto prepared = setup.service->prepare(query_request(label + ":query"));
  auto result = setup.service->set_desired(
      desired_request(prepared.query_ref(), label + ":desired",
                      {prepared.prepared().selections().at(0).capability_id()}));
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kConsentRequired);
  EXPECT_TRUE(result.challenge().has_value());
  return result;
}

std::size_t count_events(const ServiceSetup& setup, const std::string& kind) {
  store::SqliteJournalStore journal(setup.journal_path, *setup.clock);
  std::size_t count = 0;
  for (const auto& record : journal.read(seed_scope().stream_id(), 0)) {
    if (engine::ReplayInput::from_json_text(record.replay_json).reducer_event.kind() == kind) {
      ++count;
    }
  }
  return count;
}

TEST(ManagedConsentSeed,
     terminal_broker_expiry_durably_retires_pending_consent_and_allows_next_choice) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  const auto desired = prepare_public_consent(setup, "terminal-expiry");
  ASSERT_TRUE(desired.challenge().has_value());
  const auto digest_of_challenge = desired.challenge()->challenge_digest();
  setup.clock->set("2026-08-03T14:00:00Z");
  const auto skill_root = setup.consent->skill_root;
  const auto displaced = skill_root.parent_path() / "skills-expiry-displaced";
  std::filesystem::rename(skill_root, displaced);
  std::filesystem::create_directory(skill_root);
  std::filesystem::permissions(skill_root, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  setup.persist_policy(InstallConsentPolicy{.skill_mode = InstallMode::kPreapprovedAuto});
  const auto expired = setup.service->recover_consent(digest_of_challenge);
  const auto repeated = setup.service->recover_consent(digest_of_challenge);
  EXPECT_EQ(expired.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(repeated.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(expired.journal_revision(), desired.journal_revision() + 1);
  EXPECT_EQ(repeated.journal_revision(), desired.journal_revision() + 1);
  EXPECT_EQ(expired.journal_record_digest(), repeated.journal_record_digest());
  {
    auto composition = setup.open_composition();
    const auto state = composition->snapshot(seed_scope()).state;
    ASSERT_TRUE(state);
    EXPECT_TRUE(state->pending_consents().empty());
  }
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  std::filesystem::remove(skill_root);
  std::filesystem::rename(displaced, skill_root);
  setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto next_choice = setup.service->set_desired(ManagedDesiredSetRequest::create(
      desired.query_ref(), digest("terminal-expiry-next-choice"),
      {desired.challenge()->capability_id()}, desired.desired_set_ref()));
  EXPECT_EQ(next_choice.status(), ManagedDesiredStatus::kConsentRequired);
  ASSERT_TRUE(next_choice.challenge().has_value());
  EXPECT_NE(next_choice.challenge()->challenge_digest(), digest_of_challenge);
}

TEST(ManagedConsentSeed, consent_expiry_recovers_after_journal_commit_before_result) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  const auto desired = prepare_public_consent(setup, "expiry-result-crash");
  ASSERT_TRUE(desired.challenge().has_value());
  setup.clock->set("2026-08-03T14:00:00Z");
  {
    CrashPointArmed armed(consent_crash_points::kAfterExpiryCommit);
    EXPECT_THROW(setup.service->recover_consent(desired.challenge()->challenge_digest()),
                 SimulatedCrash);
    EXPECT_TRUE(armed.fired());
  }
  const auto recovered = setup.service->recover_consent(desired.challenge()->challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(recovered.journal_revision(), desired.journal_revision() + 1);
  EXPECT_EQ(count_events(setup, "InstallConsentExpired"), 1u);
}

TEST(ManagedConsentSeed, expired_old_challenge_cannot_cancel_refreshed_current_consent) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  const auto desired = prepare_public_consent(setup, "old-expired-refreshed");
  ASSERT_TRUE(desired.challenge().has_value());
  const auto old_challenge_id =
      setup.consent->broker->status_by_challenge_digest(desired.challenge()->challenge_digest())
          .challenge.challenge_id();
  const auto& original = setup.managed_input->decision_event();
  std::optional<EngineSnapshot> held;
  {
    auto composition = setup.open_composition();
    composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
      f.event_id = "event-refresh-before-old-consent-expiry";
      f.kind = "ProviderSubmissionObserved";
      f.expected_revision = desired.journal_revision();
      f.payload = {{"capabilities", Json::array()}};
    }));
    held.emplace(composition->snapshot(seed_scope()));
  }
  const EngineSnapshot& before = *held;
  ASSERT_TRUE(before.state);
  const auto replacement = before.state->pending_consents();
  ASSERT_EQ(replacement.size(), 1u);
  EXPECT_NE(replacement.front().consent_id, old_challenge_id);
  setup.clock->set("2026-08-03T14:00:00Z");
  const auto recovered = setup.service->recover_consent(desired.challenge()->challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kSuperseded);
  auto composition = setup.open_composition();
  const auto after = composition->snapshot(seed_scope());
  EXPECT_EQ(after.revision, before.revision);
  EXPECT_EQ(after.record_digest, before.record_digest);
  ASSERT_TRUE(after.state);
  EXPECT_EQ(after.state->pending_consents(), replacement);
}

// ---------------------------------------------------------------------------------------------
// task shift

// The seed drives one install and activation below the service (its composition's engine seam).
// Here the same lifecycle runs through a composition with the setup's physical actuators: the
// install through execute_install and the real skill-installer plugin, the activation through
// execute_activation and the same plugin's activation port.
std::unique_ptr<EngineComposition> lifecycle_composition(const ServiceSetup& setup) {
  const auto artifact = setup.artifact;
  EngineCompositionOptions options;
  options.graph_artifact_path = setup.registry->graph_artifact_path(*artifact);
  options.graph_artifact_sha256 = artifact->graph_artifact_digest();
  options.journal_path = setup.journal_path;
  options.observation_normalizer = [artifact](const engine::ObservationReference& reference,
                                              const engine::EngineState*) {
    return artifact->normalize(reference);
  };
  options.benefit_facts_port = setup.facts;
  options.net_benefit_policy = setup.policy;
  options.catalog_namespace_digest = artifact->catalog_namespace_digest();
  options.benefit_audit_path = setup.audit_path;
  options.material_port = setup.materials;
  options.install_bundle_port = setup.installs;
  options.planner_version = artifact->planning_schema_version();
  options.activation_port =
      activation_port_from_registry(*setup.consent->plugins, "skill-installer",
                                    Json{{"root", setup.consent->skill_root.string()}}.dump());
  options.interactive_install_decision_guard =
      [](const engine::InteractiveInstallDecisionReservation&) {
        return std::function<void()>([] {});
      };
  options.trusted_clock = std::make_shared<FixedClock>("2026-08-03T12:01:00Z");
  auto actuator = std::make_shared<InstallActuator>();
  actuator->installers = setup.consent->actuators;
  actuator->bodies = setup.consent->body_source;
  actuator->host_identity_digest = setup.consent->host_identity_digest;
  options.install_actuator = std::move(actuator);
  return open_engine_composition(std::move(options));
}

TEST(ManagedConsentSeed, service_summarizes_task_shift_deactivation_without_exposing_authority) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  const auto initial = setup.service->prepare(query_request("lifecycle-initial"));
  const auto& original = setup.managed_input->decision_event();
  {
    auto composition = lifecycle_composition(setup);
    const auto snapshot = composition->snapshot(original.scope());
    ASSERT_TRUE(snapshot.state && snapshot.state->committed_plan());
    const auto capability = snapshot.state->committed_plan()->capabilities().front();
    const auto desired =
        composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
          f.event_id = "event-lifecycle-desired";
          f.kind = "ReassessmentRequested";
          f.expected_revision = 2;
          f.payload = {
              {"owner_id", "owner-lifecycle"},
              {"policy_snapshot_digest", safe_policy_digest()},
              {"desired_capabilities",
               Json::array({{{"capability_id", capability.capability_id()},
                             {"source_digest", capability.source_digest()},
                             {"kind", capability.kind()},
                             {"actionability", capability.actionability()},
                             {"install_descriptor_digest", *capability.install_descriptor_digest()},
                             {"install_plan_digest", *capability.install_plan_digest()},
                             {"lease_id", "lease-lifecycle"}}})}};
        }));
    const auto request = desired.actions().at(0);
    ASSERT_EQ(request.action_kind(), engine::ActionKind::kRequestConsent);
    const auto& p = request.payload();
    const auto granted =
        composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
          f.event_id = "event-lifecycle-consent-granted";
          f.kind = "UserDecision";
          f.expected_revision = 3;
          f.payload = {{"consent_id", *request.consent_id()},
                       {"decision", "granted"},
                       {"decision_basis", "interactive"},
                       {"policy_snapshot_digest", safe_policy_digest()},
                       {"requested_action_id", p.at("requested_action_id")},
                       {"requested_action_kind", p.at("requested_action_kind")},
                       {"requested_action_content_digest", p.at("requested_action_content_digest")},
                       {"requested_action_precondition_revision",
                        p.at("requested_action_precondition_revision")}};
        }));
    const auto install = granted.actions().at(0);
    ASSERT_EQ(install.action_kind(), engine::ActionKind::kInstallCapability);
    const auto binding = composition->resolve_install_execution_binding(install, capability);
    const auto installed =
        composition->execute_install(install, capability, binding, safe_policy_digest());
    ASSERT_EQ(installed.outcome, engine::Outcome::kApplied);
    ASSERT_TRUE(installed.settled && installed.transition);
    const auto activation = installed.transition->actions().at(0);
    ASSERT_EQ(activation.action_kind(), engine::ActionKind::kActivateCapability);
    const auto activated = composition->execute_activation(
        activation, binding,
        setup.managed_input->session_started().host_descriptor_digest().value_or(""),
        digest("managed-service-activation-observation"));
    ASSERT_EQ(activated.outcome, engine::Outcome::kApplied);
    ASSERT_TRUE(activated.settled);
    composition->close();
  }
  const auto replacement = setup.registry->ingest_graph_store(reingest(setup, surrogate(0)));
  const auto development = replace_event(original, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-lifecycle-development";
    f.kind = "DevelopmentObserved";
    f.expected_revision = 6;
    f.payload = observation_payload(*replacement);
    f.correlation_id = "plan-lifecycle-development";
    f.causation_id = "event-lifecycle-activation-applied";
    f.work_signature = digest("lifecycle-development-work");
  });
  setup.inputs->set(
      "work-lifecycle-development",
      ManagedQueryInput::create(replacement, setup.managed_input->session_started(), development));
  const auto shifted =
      setup.service->prepare(query_request("lifecycle-development", "work-lifecycle-development"));
  const auto calls_after_shift = setup.facts->calls();
  const auto reopened = setup.service->reopen(shifted.query_ref());
  EXPECT_EQ(initial.prepared().status(), engine::PlanStatus::kReady);
  EXPECT_EQ(shifted.prepared().status(), engine::PlanStatus::kAbstained);
  ASSERT_EQ(shifted.actions().size(), 1u);
  EXPECT_EQ(shifted.actions().front().kind(), engine::ActionKind::kDeactivateCapability);
  EXPECT_EQ(shifted.actions().front().entity_id(), std::optional<std::string>("skill:installable"));
  EXPECT_EQ(shifted.actions(), reopened.actions());
  EXPECT_EQ(setup.facts->calls(), calls_after_shift);
  // The summary carries only {action_id, kind, entity_id}: no payload, lease, binding or path.
  EXPECT_EQ(printed(shifted).find(tmp.path().string()), std::string::npos);
  EXPECT_FALSE(shifted.challenge().has_value());
}

}  // namespace
}  // namespace ctx::runtime
