// Seed 001 (test_managed_query_service.py): the preapproved (automatic) install seeds — a desired
// install whose kind the persisted policy preapproves is granted with a "ctx-auto-install:"
// decision bound to the captured installer identity and executed through
// EngineComposition::execute_install exactly once, here through the real skill-installer plugin
// (objects under <skill root>/sha256/). One GoogleTest case per seed test (names from
// seed-tests.tsv). The seeds' monkeypatched crashes are the runtime's named crash points
// (SimulatedCrash), their policy race is a fault injected through the installer port, their
// thread race runs behind a std::barrier, and one test SIGKILLs a forked child at each install
// crash point and recovers in the parent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <csignal>
#include <set>
#include <sstream>
#include <thread>

#include "host/app/installation.hpp"
#include "host/app/wire.hpp"
#include "host/engine/replay.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/exact_fields.hpp"
#include "tests/support/runtime/forwarding_installer.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

ManagedQueryRequest query_request(const std::string& label) {
  return ManagedQueryRequest::create(digest(label), "work-one");
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

void persist_policy(const ServiceSetup& setup, InstallMode skill_mode) {
  InstallConsentPolicy policy;
  policy.skill_mode = skill_mode;
  setup.persist_policy(policy);
}

void persist_preapproved(const ServiceSetup& setup) {
  persist_policy(setup, InstallMode::kPreapprovedAuto);
}

void persist_safe_default(const ServiceSetup& setup) {
  persist_policy(setup, InstallMode::kAskEachTime);
}

SetupArgs installable(int count = 1) {
  SetupArgs args;
  args.requested_limit = count;
  args.installable = true;
  args.installable_count = count;
  return args;
}

BodySource& bodies(const ServiceSetup& setup) { return *setup.consent->body_source; }
const fs::path& skill_root(const ServiceSetup& setup) { return setup.consent->skill_root; }

long count(const ServiceSetup& setup, const std::string& table) {
  return sqlite_count(setup.journal_path, table);
}

// (event_id, reducer event kind) of every journal row, oldest first.
std::vector<std::pair<std::string, std::string>> journal_rows(const fs::path& journal) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(journal.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(
      sqlite3_prepare_v2(db, "SELECT event_id, replay_json FROM engine_journal ORDER BY revision",
                         -1, &statement, nullptr),
      SQLITE_OK);
  std::vector<std::pair<std::string, std::string>> rows;
  while (sqlite3_step(statement) == SQLITE_ROW) {
    const std::string id = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    const std::string replay(static_cast<const char*>(sqlite3_column_blob(statement, 1)),
                             static_cast<std::size_t>(sqlite3_column_bytes(statement, 1)));
    rows.emplace_back(id, engine::ReplayInput::from_json_text(replay).reducer_event.kind());
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return rows;
}

std::vector<std::string> journal_kinds(const fs::path& journal) {
  std::vector<std::string> kinds;
  for (const auto& row : journal_rows(journal)) kinds.push_back(row.second);
  return kinds;
}

// The skill objects the skill-installer plugin holds under `root` (its objects/ directory).
std::vector<fs::path> installed_objects(const fs::path& root) {
  std::vector<fs::path> out;
  if (!fs::exists(root / "objects")) return out;
  for (const auto& entry : fs::directory_iterator(root / "objects")) out.push_back(entry.path());
  return out;
}

// The stored SKILL.md of a file-form install: objects/<content sha256>/SKILL.md.
fs::path installed_file(const ServiceSetup& setup, const std::string& capability_id) {
  return skill_root(setup) / "objects" /
         setup.installs->bundles.at(capability_id).result_material().content_sha256() /
         "SKILL.md";
}

// The seeds' SkillCasRuntimeConfig for `root`: the setup's skill-installer plugin configured at
// `root` (its target captured now) for ctx-skill-installer-v1.
std::shared_ptr<const ManagedInstallActuators> skill_actuators(
    const ServiceSetup& setup, const fs::path& root,
    std::shared_ptr<engine::InstallerPort> driver = nullptr) {
  if (!driver) {
    driver = std::make_shared<plugins::AbiInstaller>(
        setup.consent->plugins->registry().get(plugins::PluginKind::kInstaller, "skill-installer"),
        core::Json{{"root", root.string()}}.dump());
  }
  return std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", std::move(driver)}},
      setup.consent->host_identity_digest);
}

// A service on `setup`'s files with other actuators and body source (the seeds' reopened
// services with another SkillCasRuntimeConfig).
std::shared_ptr<ManagedQueryService> service_with_actuators(
    const ServiceSetup& setup, std::shared_ptr<const ManagedInstallActuators> actuators,
    std::shared_ptr<BodySource> body_source) {
  auto options = setup.service_options();
  options.trusted_clock = std::make_shared<FixedClock>(kNow);
  options.install_actuators = std::move(actuators);
  options.install_body_source = std::move(body_source);
  return open_managed_query_service(std::move(options));
}

// The installer port with a fault injected: `hook` runs once, at the next target_identity call
// (which is what install binding resolution reads), then every call goes to `inner`.
class HookedInstaller final : public ::ctx::testing::ForwardingInstaller {
 public:
  using ForwardingInstaller::ForwardingInstaller;
  void on_next_target_identity(std::function<void()> hook) { hook_ = std::move(hook); }
  engine::TargetIdentity target_identity() override {
    if (auto hook = std::exchange(hook_, nullptr)) hook();
    return ForwardingInstaller::target_identity();
  }

 private:
  std::function<void()> hook_;
};

// ---------------------------------------------------------------------------------------------

TEST(ManagedServiceSeed, preapproved_desired_install_executes_once_and_retries_from_receipt) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-query"));
  const auto request =
      desired_request(prepared.query_ref(), "desired-auto-choice", {"skill:installable"});
  const auto first = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(first.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(repeated.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(first.reason_code(), std::nullopt);
  EXPECT_EQ(repeated.reason_code(), std::nullopt);
  EXPECT_TRUE(first.deferred_capability_ids().empty());
  EXPECT_TRUE(repeated.deferred_capability_ids().empty());
  EXPECT_TRUE(first.failed_capability_ids().empty());
  EXPECT_TRUE(repeated.failed_capability_ids().empty());
  EXPECT_FALSE(first.challenge().has_value());
  EXPECT_FALSE(repeated.challenge().has_value());
  EXPECT_EQ(first.desired_set_ref(), repeated.desired_set_ref());
  EXPECT_EQ(action_kinds(first.actions()), std::vector<std::string>{"ActivateCapability"});
  EXPECT_EQ(repeated.actions(), first.actions());
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(file_bytes(installed_file(setup, "skill:installable")), kInstallableSkillBody);
  EXPECT_EQ(sqlite_count(setup.consent->consent_store_path, "consent_challenges"), 0);
  const auto rows = journal_rows(setup.journal_path);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].first.rfind("ctx-auto-install:", 0), 0u);
  EXPECT_EQ(rows[3].second, "UserDecision");
  EXPECT_EQ(rows[4].second, "ActionApplied");
  // The claim journals the binding with the captured plugin identity digest.
  const auto binding = engine::InstallExecutionBinding::from_json_text(sqlite_scalar(
      setup.journal_path, "SELECT execution_binding_json FROM engine_install_claims"));
  EXPECT_EQ(binding.driver_id(), "ctx-skill-installer-v1");
  EXPECT_EQ(binding.driver_digest(), setup.consent->skill_installer->identity_digest());
  EXPECT_EQ(binding.driver_digest(), setup.consent->plugins->registry()
                                         .get(plugins::PluginKind::kInstaller, "skill-installer")
                                         ->identity()
                                         .digest());
  EXPECT_EQ(binding.target_identity_digest(),
            setup.consent->skill_installer->target_identity().digest());
}

TEST(ManagedServiceSeed, two_services_converge_on_one_preapproved_install_and_receipt) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-concurrent-query"));
  auto peer = setup.open_peer_service();
  const auto request = desired_request(prepared.query_ref(), "desired-auto-concurrent-choice",
                                       {"skill:installable"});
  std::barrier barrier(2);
  std::optional<ManagedDesiredSetResult> results[2];
  std::thread left([&] {
    barrier.arrive_and_wait();
    results[0].emplace(setup.service->set_desired(request));
  });
  std::thread right([&] {
    barrier.arrive_and_wait();
    results[1].emplace(peer->set_desired(request));
  });
  left.join();
  right.join();
  ASSERT_TRUE(results[0] && results[1]);
  EXPECT_EQ(results[0]->desired_set_ref(), results[1]->desired_set_ref());
  EXPECT_EQ(results[0]->status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(results[1]->status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(results[0]->actions(), results[1]->actions());
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_journal"), 5);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 1);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_TRUE(recovered.failed_capability_ids().empty());
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_journal"), 5);
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 1);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 1);
}

TEST(ManagedServiceSeed, preapproved_install_requires_captured_actuator_before_grant) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-no-actuator-query"));
  auto options = setup.service_options();
  options.trusted_clock = nullptr;
  options.install_actuators = nullptr;
  options.install_body_source = nullptr;
  auto without_actuator = open_managed_query_service(std::move(options));
  CTX_EXPECT_THROW(without_actuator->set_desired(desired_request(
                       prepared.query_ref(), "desired-auto-no-actuator-choice",
                       {"skill:installable"})),
                   Error, "no physical installation actuator");
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(
      journal_kinds(setup.journal_path),
      (std::vector<std::string>{"SessionStarted", "IntentObserved", "ReassessmentRequested"}));
}

TEST(ManagedServiceSeed, preapproved_policy_race_fails_before_grant_and_execution) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-policy-race-query"));
  // The policy changes while the install binding is resolved (the driver's target_identity is
  // what binding resolution reads), before the grant commits.
  auto hooked = std::make_shared<HookedInstaller>(setup.consent->skill_installer);
  auto racing = service_with_actuators(setup, skill_actuators(setup, skill_root(setup), hooked),
                                       setup.consent->body_source);
  hooked->on_next_target_identity([&] { persist_safe_default(setup); });
  const auto request = desired_request(prepared.query_ref(), "desired-auto-policy-race-choice",
                                       {"skill:installable"});
  CTX_EXPECT_THROW(racing->set_desired(request), Error, "policy");
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(count(setup, "engine_journal"), 3);
}

TEST(ManagedServiceSeed, indeterminate_preapproved_install_is_explicit_then_settles_failed_once) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  bodies(setup).fail_next_loads(1);
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-indeterminate-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-auto-indeterminate-choice",
                                       {"skill:installable"});
  const auto indeterminate = setup.service->set_desired(request);
  const auto failed = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  const std::vector<std::string> installable_id = {"skill:installable"};
  EXPECT_EQ(indeterminate.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(indeterminate.reason_code(), "automatic-install-indeterminate");
  EXPECT_EQ(indeterminate.deferred_capability_ids(), installable_id);
  EXPECT_TRUE(indeterminate.failed_capability_ids().empty());
  EXPECT_EQ(failed.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(repeated.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(failed.reason_code(), "automatic-install-failed");
  EXPECT_EQ(repeated.reason_code(), "automatic-install-failed");
  EXPECT_EQ(failed.deferred_capability_ids(), installable_id);
  EXPECT_EQ(repeated.deferred_capability_ids(), installable_id);
  EXPECT_EQ(failed.failed_capability_ids(), installable_id);
  EXPECT_EQ(repeated.failed_capability_ids(), installable_id);
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 1);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 1);
}

TEST(ManagedServiceSeed, failed_auto_install_progresses_to_next_capability_without_losing_failure) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable(2));
  bodies(setup).fail_next_loads(1);
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-mixed-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-auto-mixed-choice",
                                       {"skill:installable", "skill:installable-2"});
  const auto first = setup.service->set_desired(request);
  const auto progressed = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(first.reason_code(), "automatic-install-indeterminate");
  EXPECT_EQ(progressed.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(repeated.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_TRUE(progressed.deferred_capability_ids().empty());
  EXPECT_TRUE(repeated.deferred_capability_ids().empty());
  EXPECT_EQ(progressed.failed_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_EQ(repeated.failed_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_EQ(action_kinds(progressed.actions()), std::vector<std::string>{"ActivateCapability"});
  EXPECT_EQ(bodies(setup).load_calls(), 2);
  EXPECT_EQ(count(setup, "engine_install_claims"), 2);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 2);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 2);
}

TEST(ManagedServiceSeed, preapproved_install_recovers_after_crash_following_decision) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared =
      setup.service->prepare(query_request("auto-crash-after-decision-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-crash-after-decision-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallDecision);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
    EXPECT_TRUE(crash.fired());
  }
  EXPECT_EQ(count(setup, "engine_journal"), 4);
  EXPECT_EQ(count(setup, "engine_install_claims"), 0);
  // The exact grant is already journaled. A later policy change cannot revoke its pending
  // physical action or force a second consent decision.
  persist_safe_default(setup);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_TRUE(recovered.failed_capability_ids().empty());
  EXPECT_EQ(bodies(setup).load_calls(), 1);
}

TEST(ManagedServiceSeed, preapproved_install_rejects_changed_target_after_committed_decision) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("auto-changed-target-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-changed-target-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallDecision);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  const auto changed_root = tmp.path() / "private" / "changed-skills";
  fs::create_directory(changed_root);
  fs::permissions(changed_root, fs::perms::owner_all, fs::perm_options::replace);
  auto changed_source = std::make_shared<BodySource>();
  auto reopened =
      service_with_actuators(setup, skill_actuators(setup, changed_root), changed_source);
  CTX_EXPECT_THROW(reopened->set_desired(request), ManagedQueryServiceError, "captured actuator");
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(changed_source->load_calls(), 0);
  EXPECT_TRUE(installed_objects(skill_root(setup)).empty());
  EXPECT_TRUE(installed_objects(changed_root).empty());
  EXPECT_EQ(count(setup, "engine_install_claims"), 0);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 0);
}

TEST(ManagedServiceSeed, preapproved_install_never_reapplies_after_crash_following_claim) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("auto-crash-after-claim-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-crash-after-claim-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallClaim);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 0);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(recovered.reason_code(), "automatic-install-failed");
  EXPECT_EQ(recovered.failed_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_TRUE(installed_objects(skill_root(setup)).empty());
}

TEST(ManagedServiceSeed,
     preapproved_install_expired_before_claim_retires_once_and_next_choice_progresses) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared =
      setup.service->prepare(query_request("auto-expired-before-claim-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-expired-before-claim-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallDecision);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  setup.clock->set("2026-08-03T14:00:00Z");
  const auto retired = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(retired.journal_revision(), repeated.journal_revision());
  EXPECT_EQ(retired.journal_record_digest(), repeated.journal_record_digest());
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(count(setup, "engine_install_claims"), 0);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 0);
  const auto kinds = journal_kinds(setup.journal_path);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "ActionExpired"), 1);
  const auto progressed = setup.service->set_desired(
      desired_request(prepared.query_ref(), "auto-expired-before-claim-next-choice",
                      {"skill:installable"}, retired.desired_set_ref()));
  EXPECT_NE(progressed.reason_code(), std::optional<std::string>("automatic-install-failed"));
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
}

TEST(ManagedServiceSeed, preapproved_install_recovers_after_crash_following_outcome) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("auto-crash-after-outcome-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-crash-after-outcome-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallOutcome);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 1);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 0);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_TRUE(recovered.failed_capability_ids().empty());
  EXPECT_EQ(bodies(setup).load_calls(), 1);
}

TEST(ManagedServiceSeed, preapproved_install_recovers_after_crash_following_receipt) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("auto-crash-after-receipt-query"));
  const auto request = desired_request(prepared.query_ref(), "auto-crash-after-receipt-choice",
                                       {"skill:installable"});
  {
    CrashPointArmed crash(crash_points::kAfterInstallReceipt);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_journal"), 5);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(bodies(setup).load_calls(), 1);
  EXPECT_EQ(count(setup, "engine_journal"), 5);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 1);
}

TEST(ManagedServiceSeed, committed_desired_recovery_marks_before_deferring_policy_drift) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_safe_default(setup);
  const auto prepared = setup.service->prepare(query_request("desired-policy-drift-query"));
  const auto request = desired_request(prepared.query_ref(), "desired-policy-drift-choice",
                                       {"skill:installable"});
  {
    // The desired event commits; the process dies before the store marks it.
    CrashPointArmed crash(service_crash_points::kAfterDesiredCommit);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  persist_preapproved(setup);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(recovered.reason_code(), "install-policy-changed-after-desired-commit");
  EXPECT_EQ(recovered.deferred_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_FALSE(recovered.challenge().has_value());
  EXPECT_TRUE(setup.store->load_latest_desired_set(prepared.query_ref()).committed());
  EXPECT_EQ(sqlite_count(setup.consent->consent_store_path, "consent_challenges"), 0);
}

TEST(ManagedServiceSeed, reserved_desired_policy_drift_commits_and_allows_exact_reassessment) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared =
      setup.service->prepare(query_request("desired-reserved-policy-drift-query"));
  const auto request = desired_request(
      prepared.query_ref(), "desired-reserved-policy-drift-choice", {"skill:installable"});
  {
    // Reserved under the preapproved policy; the process dies before the event commits.
    CrashPointArmed crash(service_crash_points::kAfterDesiredReservation);
    EXPECT_THROW(setup.service->set_desired(request), SimulatedCrash);
  }
  const auto pending = setup.store->load_pending_desired_set(seed_scope());
  persist_safe_default(setup);
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), pending.desired_set_ref());
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kLifecycleDeferred);
  EXPECT_EQ(recovered.reason_code(), "install-policy-changed-after-desired-commit");
  EXPECT_EQ(recovered.deferred_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_TRUE(setup.store->load_latest_desired_set(prepared.query_ref()).committed());
  const auto reassessed = setup.service->set_desired(
      desired_request(prepared.query_ref(), "desired-current-policy-choice", {"skill:installable"},
                      recovered.desired_set_ref()));
  EXPECT_EQ(reassessed.status(), ManagedDesiredStatus::kConsentRequired);
  EXPECT_TRUE(reassessed.challenge().has_value());
  EXPECT_EQ(reassessed.journal_revision(), recovered.journal_revision() + 1);
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(sqlite_count(setup.store_path,
                         "managed_desired_sets WHERE journal_revision IS NOT NULL"),
            2);
  EXPECT_EQ(count(setup, "engine_journal"), 4);
}

TEST(ManagedServiceSeed, desired_install_uses_fresh_trusted_time_and_full_digest_identities) {
  TempDir tmp;
  auto args = installable();
  args.trusted_now = "2026-08-03T15:30:00Z";
  auto setup = make_setup(tmp.path(), args);
  persist_safe_default(setup);
  const auto prepared = setup.service->prepare(query_request("desired-fresh-time-query"));
  const auto result = setup.service->set_desired(
      desired_request(prepared.query_ref(), "desired-fresh-time-choice", {"skill:installable"}));
  const auto stored = setup.store->load_latest_desired_set(prepared.query_ref());
  const auto& event = stored.event();
  const auto& row = event.payload().at("desired_capabilities").at(0);
  EXPECT_EQ(event.occurred_at(), "2026-08-03T15:30:00Z");
  EXPECT_NE(event.occurred_at(), setup.managed_input->decision_event().occurred_at());
  ASSERT_EQ(event.event_id().rfind("ctx-desired:", 0), 0u);
  EXPECT_EQ(event.event_id().size() - std::string("ctx-desired:").size(), 64u);
  const std::string owner_id = event.payload().at("owner_id");
  ASSERT_EQ(owner_id.rfind("ctx-desired:", 0), 0u);
  EXPECT_EQ(owner_id.size() - std::string("ctx-desired:").size(), 64u);
  const std::string lease = row.at("lease_id");
  ASSERT_EQ(lease.rfind("ctx-lease:", 0), 0u);
  EXPECT_EQ(lease.size() - std::string("ctx-lease:").size(), 64u);
  const core::Json lease_mapping = {{"capability_id", row.at("capability_id")},
                                    {"kind", row.at("kind")},
                                    {"owner_id", owner_id},
                                    {"schema", "ctx.managed-desired-lease.v1"},
                                    {"source_digest", row.at("source_digest")}};
  // json.dumps(..., ensure_ascii=True, separators=(",", ":"), sort_keys=True), sha256.
  const std::string expected_lease = core::sha256_hex(lease_mapping.dump(-1, ' ', true));
  core::Json changed = lease_mapping;
  changed["source_digest"] = digest("changed-catalog-source");
  const std::string changed_source_lease = core::sha256_hex(changed.dump(-1, ' ', true));
  EXPECT_EQ(lease, "ctx-lease:" + expected_lease);
  EXPECT_NE(changed_source_lease, expected_lease);
  ASSERT_TRUE(result.challenge().has_value());
  EXPECT_EQ(result.challenge()->expires_at(), "2026-08-03T16:30:00Z");
}

class SensitiveRisk : public ::testing::TestWithParam<std::string> {};

// The seed's parametrize("risk", ["permission", "credential"]).
TEST_P(SensitiveRisk, preapproved_install_still_requires_consent_for_sensitive_risk) {
  const std::string risk = GetParam();
  TempDir tmp;
  auto args = installable();
  args.permission_expansion = risk == "permission";
  args.credential_requirement = risk == "credential";
  auto setup = make_setup(tmp.path(), args);
  persist_preapproved(setup);
  const auto prepared =
      setup.service->prepare(query_request("desired-sensitive-" + risk + "-query"));
  const auto result = setup.service->set_desired(desired_request(
      prepared.query_ref(), "desired-sensitive-" + risk + "-choice", {"skill:installable"}));
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kConsentRequired);
  EXPECT_EQ(result.reason_code(), std::nullopt);
  EXPECT_TRUE(result.deferred_capability_ids().empty());
  EXPECT_TRUE(result.challenge().has_value());
  EXPECT_EQ(bodies(setup).load_calls(), 0);
  EXPECT_EQ(count(setup, "engine_install_claims"), 0);
}

INSTANTIATE_TEST_SUITE_P(ManagedServiceSeed, SensitiveRisk,
                         ::testing::Values("permission", "credential"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The sealed-result concepts: the seeds' "has no attribute X".
template <typename T>
concept HasArtifact = requires(const T& r) { r.artifact(); };
template <typename T>
concept HasBody = requires(const T& r) { r.body(); };
template <typename T>
concept HasCommand = requires(const T& r) { r.command(); };
template <typename T>
concept HasDriver = requires(const T& r) { r.driver(); };
template <typename T>
concept HasExecutionBinding = requires(const T& r) { r.execution_binding(); };
template <typename T>
concept HasInstallAction = requires(const T& r) { r.install_action(); };
template <typename T>
concept HasPath = requires(const T& r) { r.path(); };
template <typename T>
concept HasReceipt = requires(const T& r) { r.receipt(); };
template <typename T>
concept HasSelection = requires(const T& r) { r.selection(); };
template <typename T>
concept HasTransition = requires(const T& r) { r.transition(); };

TEST(ManagedServiceSeed, automatic_desired_result_exposes_no_execution_or_content_authority) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("desired-auto-privacy-query"));
  const auto result = setup.service->set_desired(
      desired_request(prepared.query_ref(), "desired-auto-privacy-choice", {"skill:installable"}));
  // The 14 fields of the seed's __slots__, exactly: accessors, object and wire form.
  static_assert(DesiredSetResultAccessors<ManagedDesiredSetResult> &&
                kHoldsExactly<ManagedDesiredSetResult, DesiredSetResultFields>);
  EXPECT_EQ(
      keys_of(desired_result_json(result)),
      (std::set<std::string>{"actions", "capability_ids", "challenge", "decision_digest",
                             "deferred_capability_ids", "desired_set_ref", "failed_capability_ids",
                             "journal_record_digest", "journal_revision", "logical_choice_id",
                             "plan_id", "query_ref", "reason_code", "status"}));
  EXPECT_EQ(result.query_ref(), prepared.query_ref());
  EXPECT_FALSE(result.desired_set_ref().empty());
  EXPECT_FALSE(result.logical_choice_id().empty());
  EXPECT_EQ(result.capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_TRUE(result.deferred_capability_ids().empty());
  EXPECT_TRUE(result.failed_capability_ids().empty());
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(result.reason_code(), std::nullopt);
  EXPECT_EQ(result.plan_id(), prepared.prepared().plan_id());
  EXPECT_EQ(result.decision_digest(), prepared.prepared().decision_digest());
  EXPECT_EQ(result.journal_revision(), 3);
  EXPECT_EQ(result.journal_record_digest().size(), 64u);
  EXPECT_EQ(result.actions().size(), 1u);
  EXPECT_FALSE(result.challenge().has_value());
  std::ostringstream printed;
  printed << result;
  EXPECT_EQ(printed.str().find(tmp.path().string()), std::string::npos);
  static_assert(!HasArtifact<ManagedDesiredSetResult> && !HasBody<ManagedDesiredSetResult> &&
                !HasCommand<ManagedDesiredSetResult> && !HasDriver<ManagedDesiredSetResult> &&
                !HasExecutionBinding<ManagedDesiredSetResult> &&
                !HasInstallAction<ManagedDesiredSetResult> && !HasPath<ManagedDesiredSetResult> &&
                !HasReceipt<ManagedDesiredSetResult> && !HasSelection<ManagedDesiredSetResult> &&
                !HasTransition<ManagedDesiredSetResult>);
  // copy.copy / copy.deepcopy / pickle.dumps -> TypeError.
  static_assert(!std::is_copy_constructible_v<ManagedDesiredSetResult> &&
                !std::is_copy_assignable_v<ManagedDesiredSetResult> &&
                !std::is_default_constructible_v<ManagedDesiredSetResult> &&
                !std::is_constructible_v<core::Json, const ManagedDesiredSetResult&>);
}

// ---------------------------------------------------------------------------------------------
// Real process deaths: a forked child runs set_desired with one install crash point armed in
// kill mode (SIGKILL: no unwinding, no destructors); the parent recovers with the same request
// and finds exactly one install on disk and one settlement.

class PreapprovedInstallKilled : public ::testing::TestWithParam<std::string_view> {};

// A service of this (forked) process on `setup`'s files: its own registry instance, artifact
// handle, store connection, ports and skill driver (same root).
std::shared_ptr<ManagedQueryService> open_process_service(const ServiceSetup& setup) {
  auto registry = open_managed_artifact_registry(setup.tmp / "registry");
  auto artifact = registry->reopen(setup.artifact->manifest_digest(),
                                   setup.artifact->planning_environment_digest());
  auto [started, intent] = seed_events(*artifact);
  auto inputs = std::make_shared<InputAuthority>();
  inputs->set("work-one", ManagedQueryInput::create(artifact, started, intent));
  ManagedQueryServiceOptions options = setup.service_options();
  options.registry = registry;
  options.query_store = store::open_managed_query_store(setup.store_path, store_key());
  options.input_authority = inputs;
  options.trusted_clock = std::make_shared<FixedClock>(kNow);
  options.install_body_source = std::make_shared<BodySource>();
  return open_managed_query_service(std::move(options));
}

TEST_P(PreapprovedInstallKilled, RecoversToExactlyOneInstallAndSettlement) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), installable());
  persist_preapproved(setup);
  const auto prepared = setup.service->prepare(query_request("auto-killed-query"));
  const auto request =
      desired_request(prepared.query_ref(), "auto-killed-choice", {"skill:installable"});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    {
      auto service = open_process_service(setup);
      CrashPointArmed crash(GetParam(), 0, CrashMode::kKill);
      try {
        service->set_desired(request);
      } catch (...) {
        ::_exit(2);
      }
    }
    ::_exit(3);  // not reached when the point killed us
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  const auto recovered = setup.service->set_desired(request);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(recovered.desired_set_ref(), repeated.desired_set_ref());
  EXPECT_EQ(count(setup, "engine_install_claims"), 1);
  EXPECT_EQ(count(setup, "engine_install_outcomes"), 1);
  EXPECT_EQ(count(setup, "engine_install_claim_settlements"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path,
                         "engine_journal WHERE event_id LIKE 'ctx-install-receipt-%'"),
            1);
  EXPECT_EQ(sqlite_count(setup.journal_path,
                         "engine_journal WHERE event_id LIKE 'ctx-auto-install:%'"),
            1);
  const auto on_disk = installed_objects(skill_root(setup));
  if (GetParam() == crash_points::kAfterInstallClaim) {
    // The claim survived the death before the driver ran: recovery only reconciles (absent),
    // settles failed and never applies.
    EXPECT_TRUE(on_disk.empty());
    EXPECT_EQ(repeated.reason_code(), std::optional<std::string>("automatic-install-failed"));
  } else {
    ASSERT_EQ(on_disk.size(), 1u);
    EXPECT_EQ(on_disk.front() / "SKILL.md", installed_file(setup, "skill:installable"));
    EXPECT_EQ(file_bytes(installed_file(setup, "skill:installable")), kInstallableSkillBody);
    EXPECT_EQ(repeated.status(), ManagedDesiredStatus::kEffectPending);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryInstallPoint, PreapprovedInstallKilled,
                         ::testing::ValuesIn(crash_points::kInstall),
                         [](const ::testing::TestParamInfo<std::string_view>& info) {
                           std::string name;
                           for (char c : info.param) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace ctx::runtime
