// The host's install staging (<journal dir>/install-staging/) is scratch, written without fsync: a
// process killed (SIGKILL) inside the installer's install call, with its staging copy of a tree on
// disk, publishes nothing; recovery never reads that copy (the claim exists, so the installer's
// reconcile decides: absent, failed once, never re-applied), so losing it in a crash — modelled
// by deleting it, as a power loss may — changes nothing; and the next install sweeps a dead
// process's leftover copy. The child opens its own store, broker, registry instance and service on
// the parent's files; its installer port is the real skill-installer plugin wrapped so that the
// process dies in the driver call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "tests/support/runtime/forwarding_installer.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

// When the wrapped real installer's install() kills the process: before it runs (the host's
// staging copy exists, nothing is published) or once it returned (the tree is installed and
// synced, the host has not recorded the outcome).
enum class Death { kBeforeInstall, kAfterInstall };

// The real installer; install() kills the process at `death`.
class DyingInstaller final : public ::ctx::testing::ForwardingInstaller {
 public:
  DyingInstaller(std::shared_ptr<engine::InstallerPort> inner, Death death)
      : ForwardingInstaller(std::move(inner)), death_(death) {}
  core::Json install(const core::Json& request) override {
    if (death_ == Death::kAfterInstall) ForwardingInstaller::install(request);
    ::raise(SIGKILL);
    return {};
  }

 private:
  Death death_;
};

// A service of this (forked) process on `setup`'s files whose installer dies in install().
std::shared_ptr<ManagedQueryService> open_dying_service(const ServiceSetup& setup, Death death) {
  const ConsentSetup& consent = *setup.consent;
  auto registry = open_managed_artifact_registry(setup.tmp / "registry");
  auto artifact = registry->reopen(setup.artifact->manifest_digest(),
                                   setup.artifact->planning_environment_digest());
  auto [started, intent] = seed_events(*artifact);
  auto inputs = std::make_shared<InputAuthority>();
  inputs->set("work-one", ManagedQueryInput::create(artifact, started, intent));
  auto clock = std::make_shared<FixedClock>(kNow);
  ManagedQueryServiceOptions options = setup.service_options();
  options.registry = registry;
  options.query_store = open_managed_query_store(setup.store_path, store_key());
  options.input_authority = inputs;
  options.trusted_clock = clock;
  options.consent_broker = std::make_shared<ConsentBroker>(
      consent.consent_store_path, store_key(), std::string(kConsentAudience), *clock);
  auto real = std::make_shared<plugins::AbiInstaller>(
      consent.plugins->get(plugins::PluginKind::kInstaller, "skill-installer"),
      core::Json{{"root", consent.skill_root.string()}}.dump());
  options.install_actuators = std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", std::make_shared<DyingInstaller>(std::move(real), death)}},
      consent.host_identity_digest);
  return open_managed_query_service(std::move(options));
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path());
  return out;
}

std::vector<runtime::InstallBodyFile> three_file_tree() {
  return {{"SKILL.md", std::string(kInstallableSkillBody)},
          {"references/notes.md", "# notes\n" + std::string(3000, 'n')},
          {"scripts/run.sh", "#!/bin/sh\necho run\n"}};
}

// Runs the dying install in a child; returns the child's pid after checking it was killed.
pid_t kill_an_install(const ServiceSetup& setup, const ManagedDesiredSetRequest& request,
                      Death death = Death::kBeforeInstall) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      open_dying_service(setup, death)->set_desired(request);
    } catch (...) {
    }
    ::_exit(3);  // not killed: the install never reached the driver
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
  return pid;
}

void run_case(bool lose_staging) {
  TempDir tmp;
  SetupArgs args;
  args.requested_limit = 2;
  args.installable = true;
  args.installable_count = 2;
  args.tree = three_file_tree();
  auto setup = make_setup(tmp.path(), args);
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  setup.persist_policy(preapproved);
  const fs::path skill_root = setup.consent->skill_root;
  const fs::path staging = setup.journal_path.parent_path() / "install-staging";
  const auto prepared = setup.service->prepare(
      ManagedQueryRequest::create(digest("staging-crash-query"), "work-one"));
  const auto request = ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest("staging-crash-choice"),
      {"skill:installable", "skill:installable-2"});

  const pid_t dead = kill_an_install(setup, request);
  // The claim is durable, nothing is published, and the dead process's staging copy is there.
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_TRUE(entries(skill_root / "objects").empty());
  const auto left = entries(staging);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.front().filename().string().rfind("tree-" + std::to_string(dead) + "-", 0), 0u);
  EXPECT_TRUE(fs::is_regular_file(left.front() / "scripts" / "run.sh"));
  if (lose_staging) fs::remove_all(left.front());

  // Recovery reads no staging copy: the installer's reconcile says absent, so the claimed
  // install is failed once (never re-applied), and the next capability installs, staging its
  // own copy (which sweeps the dead process's) and removing it.
  const auto loads_before = setup.consent->body_source->load_calls();
  const auto recovered = setup.service->set_desired(request);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(recovered.failed_capability_ids(), std::vector<std::string>{"skill:installable"});
  EXPECT_EQ(setup.consent->body_source->load_calls(), loads_before + 1);  // the second only
  const auto repeated = setup.service->set_desired(request);  // an exact retry changes nothing
  EXPECT_EQ(repeated.journal_revision(), recovered.journal_revision());
  EXPECT_EQ(repeated.journal_record_digest(), recovered.journal_record_digest());
  EXPECT_EQ(setup.consent->body_source->load_calls(), loads_before + 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 2);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 2);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claim_settlements"), 2);
  const auto objects = entries(skill_root / "objects");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_TRUE(fs::is_regular_file(objects.front() / "scripts" / "run.sh"));
  EXPECT_TRUE(entries(staging).empty()) << "the dead process's staging copy was swept";
}

TEST(InstallStagingCrash, AKilledInstallPublishesNothingAndRecoveryNeedsNoStagingCopy) {
  run_case(false);
}

TEST(InstallStagingCrash, LosingTheUnsyncedStagingCopyInACrashChangesNothing) {
  run_case(true);
}

// The journal's install-outcome commit is not fsynced (SqliteJournalStore); a power loss before
// the receipt commit syncs it loses just that row. The state left is the one a process killed
// after the driver installed and before the outcome commit leaves: a durable claim, no outcome,
// the tree installed. Recovery settles it from the installer's reconcile (applied) exactly once,
// never loading the body or calling the driver's install again, and the next choice installs.
TEST(InstallOutcomeCrash, KillingTheProcessAfterTheDriverInstalledSettlesOnceWithoutReapplying) {
  TempDir tmp;
  SetupArgs args;
  args.requested_limit = 2;
  args.installable = true;
  args.installable_count = 2;
  args.tree = three_file_tree();
  auto setup = make_setup(tmp.path(), args);
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  setup.persist_policy(preapproved);
  const fs::path skill_root = setup.consent->skill_root;
  const auto prepared = setup.service->prepare(
      ManagedQueryRequest::create(digest("outcome-crash-query"), "work-one"));
  const auto request = ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest("outcome-crash-choice"),
      {"skill:installable", "skill:installable-2"});

  kill_an_install(setup, request, Death::kAfterInstall);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claim_settlements"), 0);
  ASSERT_EQ(entries(skill_root / "objects").size(), 1u) << "the driver installed the first tree";

  const auto loads_before = setup.consent->body_source->load_calls();
  const auto recovered = setup.service->set_desired(request);
  EXPECT_TRUE(recovered.failed_capability_ids().empty());
  // Only the second capability's body is loaded: the first is never re-applied.
  EXPECT_EQ(setup.consent->body_source->load_calls(), loads_before + 1);
  const auto repeated = setup.service->set_desired(request);
  EXPECT_EQ(repeated.journal_revision(), recovered.journal_revision());
  EXPECT_EQ(repeated.journal_record_digest(), recovered.journal_record_digest());
  EXPECT_EQ(setup.consent->body_source->load_calls(), loads_before + 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 2);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 2);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claim_settlements"), 2);
  EXPECT_EQ(sqlite_scalar(setup.journal_path,
                          "SELECT COUNT(*) FROM engine_install_outcomes WHERE outcome = 'applied'"),
            "2");
  // Both capabilities carry the same tree: one content-addressed object, installed once.
  EXPECT_EQ(entries(skill_root / "objects").size(), 1u);
}

}  // namespace
}  // namespace ctx::runtime
