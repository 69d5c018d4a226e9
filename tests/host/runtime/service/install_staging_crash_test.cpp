// kill -9 inside the driver's install call, for both ways a tree body reaches the installer:
//  * install_from_source (ABI minor 1, the in-tree skill-installer): the host hands the verified
//    bytes over from memory and stages nothing. A process killed before the driver ran, or while
//    the installer streams the second file into its own staging, publishes nothing; recovery
//    (the claim exists, so the installer's reconcile decides: absent) fails it once and never
//    re-applies; the dead writer's partial staging is swept by the next installer instance.
//  * a minor-0 installer (no install_from_source): the host stages the tree in
//    <journal dir>/install-staging/, scratch written without fsync. Killed inside install(), the
//    copy is left behind, recovery never reads it — so losing it in a crash, modelled by deleting
//    it as a power loss may, changes nothing — and the next install sweeps it.
// And killed after the driver installed (before the outcome commit): recovery settles it from
// reconcile exactly once, never loading the body or calling install again.
// The child opens its own store, broker, registry instance and service on the parent's files;
// its installer port is the real skill-installer plugin wrapped so that the process dies there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/app/installation.hpp"
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

// Where the wrapped real installer kills the process: when the driver is entered (nothing
// written), at its second body read (install_from_source only: SKILL.md is staged, the next file
// is open and empty), or once the install returned (installed and synced, no outcome recorded).
enum class Death { kBeforeInstall, kMidStream, kAfterInstall };
// How the tree reaches the installer: install_from_source, or as a minor-0 installer would have it
// (install_from_source absent, so the host stages a directory and calls install).
enum class Driver { kBodySource, kStagedDirectory };

// The real installer; its install call kills the process at `death`.
class DyingInstaller final : public ::ctx::testing::ForwardingInstaller {
 public:
  DyingInstaller(std::shared_ptr<engine::InstallerPort> inner, Death death, Driver driver)
      : ForwardingInstaller(std::move(inner)), death_(death), driver_(driver) {}
  std::optional<core::Json> install_from_source(const core::Json& request,
                                                const engine::InstallBodyLookup& bodies) override {
    if (driver_ == Driver::kStagedDirectory) return std::nullopt;
    if (death_ == Death::kBeforeInstall) ::raise(SIGKILL);
    int reads = 0;
    const auto reply = ForwardingInstaller::install_from_source(
        request, [&](std::string_view path) {
          if (death_ == Death::kMidStream && ++reads == 2) ::raise(SIGKILL);
          return bodies(path);
        });
    if (!reply) return reply;  // not the in-tree installer: the child exits 3, the test fails
    ::raise(SIGKILL);
    return std::nullopt;
  }
  core::Json install(const core::Json& request) override {
    if (death_ == Death::kAfterInstall) ForwardingInstaller::install(request);
    ::raise(SIGKILL);
    return {};
  }

 private:
  Death death_;
  Driver driver_;
};

// A service of this (forked) process on `setup`'s files whose installer dies in install().
std::shared_ptr<ManagedQueryService> open_dying_service(const ServiceSetup& setup, Death death,
                                                        Driver driver) {
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
  options.query_store = store::open_managed_query_store(setup.store_path, store_key());
  options.input_authority = inputs;
  options.trusted_clock = clock;
  options.consent_broker = std::make_shared<ConsentBroker>(
      consent.consent_store_path, store_key(), std::string(kConsentAudience), *clock);
  auto real = std::make_shared<plugins::AbiInstaller>(
      consent.plugins->registry().get(plugins::PluginKind::kInstaller, "skill-installer"),
      core::Json{{"root", consent.skill_root.string()}}.dump());
  options.install_actuators = std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", std::make_shared<DyingInstaller>(std::move(real), death, driver)}},
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
                      Death death, Driver driver) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      open_dying_service(setup, death, driver)->set_desired(request);
    } catch (...) {
    }
    ::_exit(3);  // not killed: the install never reached the driver
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
  return pid;
}

// Seed 001's installable setup with two capabilities that carry the same three-file tree, under a
// preapproved (automatic) skill policy.
ServiceSetup preapproved_tree_setup(const fs::path& dir) {
  SetupArgs args;
  args.requested_limit = 2;
  args.installable = true;
  args.installable_count = 2;
  args.tree = three_file_tree();
  auto setup = make_setup(dir, args);
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  setup.persist_policy(preapproved);
  return setup;
}

ManagedDesiredSetRequest desire_both(const ServiceSetup& setup, const std::string& name) {
  const auto prepared =
      setup.service->prepare(ManagedQueryRequest::create(digest(name + "-query"), "work-one"));
  return ManagedDesiredSetRequest::create(prepared.query_ref(), digest(name + "-choice"),
                                          {"skill:installable", "skill:installable-2"});
}

// After a kill before any install was recorded: the dead claim fails once from reconcile (never
// re-applied, its body never loaded again), the second capability installs, and an exact retry
// changes nothing.
void expect_recovery_fails_the_dead_claim_once(const ServiceSetup& setup,
                                               const ManagedDesiredSetRequest& request) {
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
  const auto objects = entries(setup.consent->skill_root / "objects");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_TRUE(fs::is_regular_file(objects.front() / "scripts" / "run.sh"));
}

void run_staged_directory_case(bool lose_staging) {
  TempDir tmp;
  auto setup = preapproved_tree_setup(tmp.path());
  const fs::path skill_root = setup.consent->skill_root;
  const fs::path staging = setup.journal_path.parent_path() / "install-staging";
  const auto request = desire_both(setup, "staging-crash");

  const pid_t dead = kill_an_install(setup, request, Death::kBeforeInstall,
                                     Driver::kStagedDirectory);
  // The claim is durable, nothing is published, and the dead process's staging copy is there.
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_TRUE(entries(skill_root / "objects").empty());
  const auto left = entries(staging);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.front().filename().string().rfind("tree-" + std::to_string(dead) + "-", 0), 0u);
  EXPECT_TRUE(fs::is_regular_file(left.front() / "scripts" / "run.sh"));
  if (lose_staging) fs::remove_all(left.front());

  // Recovery reads no staging copy; the next capability's install (the parent's installer
  // streams it: install_from_source) sweeps the dead process's copy first.
  expect_recovery_fails_the_dead_claim_once(setup, request);
  EXPECT_TRUE(entries(staging).empty()) << "the dead process's staging copy was not swept";
}

TEST(InstallStagingCrash, AMinorZeroInstallerKilledInInstallPublishesNothingAndNeedsNoCopy) {
  run_staged_directory_case(false);
}

TEST(InstallStagingCrash, LosingAMinorZeroInstallersUnsyncedStagingCopyChangesNothing) {
  run_staged_directory_case(true);
}

// The in-tree installer (install_from_source): a process killed as the driver is entered
// publishes nothing and leaves no host staging at all.
TEST(InstallBodySourceCrash, AKilledInstallFromSourcePublishesNothingAndStagesNoHostCopy) {
  TempDir tmp;
  auto setup = preapproved_tree_setup(tmp.path());
  const fs::path skill_root = setup.consent->skill_root;
  const auto request = desire_both(setup, "source-crash");

  kill_an_install(setup, request, Death::kBeforeInstall, Driver::kBodySource);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_TRUE(entries(skill_root / "objects").empty());
  EXPECT_TRUE(entries(skill_root / "tmp").empty());
  EXPECT_FALSE(fs::exists(setup.journal_path.parent_path() / "install-staging"))
      << "the host staged a copy although the installer streams from the body source";

  expect_recovery_fails_the_dead_claim_once(setup, request);
  EXPECT_FALSE(fs::exists(setup.journal_path.parent_path() / "install-staging"));
}

// Killed while the installer streams the second file into its own staging: its partial tree is
// in tmp/ (unpublished), recovery fails the claim once, and the next installer instance sweeps
// the dead writer's staging.
TEST(InstallBodySourceCrash, KillingTheInstallerMidStreamPublishesNothingAndItsStagingIsSwept) {
  TempDir tmp;
  auto setup = preapproved_tree_setup(tmp.path());
  const fs::path skill_root = setup.consent->skill_root;
  const auto request = desire_both(setup, "stream-crash");

  kill_an_install(setup, request, Death::kMidStream, Driver::kBodySource);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_TRUE(entries(skill_root / "objects").empty());
  const auto staged = entries(skill_root / "tmp");
  ASSERT_EQ(staged.size(), 1u) << "the killed writer's staging";
  EXPECT_TRUE(fs::is_regular_file(staged.front() / "SKILL.md")) << "the first file was streamed";
  EXPECT_FALSE(fs::exists(staged.front() / "scripts")) << "the third file was never reached";

  expect_recovery_fails_the_dead_claim_once(setup, request);
  {  // a new instance (as the next process start makes) sweeps the dead writer's staging
    plugins::AbiInstaller fresh(
        setup.consent->plugins->registry().get(plugins::PluginKind::kInstaller, "skill-installer"),
        core::Json{{"root", skill_root.string()}}.dump());
  }
  EXPECT_TRUE(entries(skill_root / "tmp").empty());
}

// The journal's install-outcome commit is not fsynced (SqliteJournalStore); a power loss before
// the receipt commit syncs it loses just that row. The state left is the one a process killed
// after the driver installed and before the outcome commit leaves: a durable claim, no outcome,
// the tree installed. Recovery settles it from the installer's reconcile (applied) exactly once,
// never loading the body or calling the driver's install again, and the next choice installs.
TEST(InstallOutcomeCrash, KillingTheProcessAfterTheDriverInstalledSettlesOnceWithoutReapplying) {
  TempDir tmp;
  auto setup = preapproved_tree_setup(tmp.path());
  const fs::path skill_root = setup.consent->skill_root;
  const auto request = desire_both(setup, "outcome-crash");

  kill_an_install(setup, request, Death::kAfterInstall, Driver::kBodySource);
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
