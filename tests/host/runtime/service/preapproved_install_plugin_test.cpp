// Preapproved installs through real installer plugins (issue 8 acceptance): the install binding
// names the installer by the identity digest of the .so the registry loaded, and re-pinning a
// rebuilt installer of another version between the committed decision and the claim fails
// closed with "captured actuator": nothing claimed, nothing on disk, no body loaded — and the
// decision is not burned: with the captured plugin pinned again the same request installs once.
// execute_install itself refuses another plugin identity ("captured actuator") or a replaced
// install root ("root changed") before claiming.
// Two builds of tests/fixtures/plugins/disk_installer.cpp are loaded through the host's
// PluginLoader into PluginRegistry instances (one per pinned lock state).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/loader/plugin_loader.hpp>

#include "host/app/installation.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/plugin_ports.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

// A registry holding exactly the installer plugin at `so`, pinned as it is now.
std::shared_ptr<::ctx::app::LoadedPlugins> pinned_registry(const plugins::PluginLoader& loader,
                                                           const char* so) {
  auto registry = std::make_shared<::ctx::app::LoadedPlugins>();
  registry->add(loader.load(loader.inspect_for_pin(so)));
  return registry;
}

// The service's actuator: descriptors for ctx-skill-installer-v1 (kind skill) install through
// the registry's "fixture-disk-installer" at `root`.
std::shared_ptr<const InstallActuator> plugin_actuator(
    std::shared_ptr<::ctx::app::LoadedPlugins> registry, const fs::path& root,
    std::shared_ptr<BodySource> bodies) {
  auto actuator = std::make_shared<InstallActuator>();
  actuator->installers = installer_resolver_from_registry(
      std::move(registry),
      {InstallerRegistration{"ctx-skill-installer-v1", engine::CapabilityKind::kSkill,
                             "fixture-disk-installer",
                             core::Json{{"root", root.string()}}.dump()}});
  actuator->bodies = std::move(bodies);
  actuator->host_identity_digest = digest("managed-service-host");
  return actuator;
}

// A service on `setup`'s files whose actuator for ctx-skill-installer-v1 is the registry's
// "fixture-disk-installer" at `root`.
std::shared_ptr<ManagedQueryService> service_with(const ServiceSetup& setup,
                                                  const ::ctx::app::LoadedPlugins& registry,
                                                  const fs::path& root,
                                                  std::shared_ptr<BodySource> bodies) {
  auto driver = std::make_shared<plugins::AbiInstaller>(
      registry.registry().get(plugins::PluginKind::kInstaller, "fixture-disk-installer"),
      core::Json{{"root", root.string()}}.dump());
  auto options = setup.service_options();
  options.install_actuators = std::make_shared<ManagedInstallActuators>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", std::move(driver)}},
      digest("managed-service-host"));
  options.install_body_source = std::move(bodies);
  return open_managed_query_service(std::move(options));
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path());
  return out;
}

TEST(PreapprovedInstallPlugins,
     RepinnedInstallerBetweenDecisionAndClaimFailsClosedAsCapturedActuator) {
  TempDir tmp;
  auto setup = make_setup(tmp.path() / "service", [] {
    SetupArgs args;
    args.requested_limit = 1;
    args.installable = true;
    return args;
  }());
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  setup.persist_policy(preapproved);
  const fs::path root = tmp.path() / "service" / "private" / "disk-installs";
  fs::create_directory(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  const plugins::PluginLoader loader(tmp.path() / "loader-state");
  auto v1 = pinned_registry(loader, CTX_FIXTURE_DISK_INSTALLER_V1);
  auto v2 = pinned_registry(loader, CTX_FIXTURE_DISK_INSTALLER_V2);
  const auto v1_identity =
      v1->registry().get(plugins::PluginKind::kInstaller, "fixture-disk-installer")->identity();
  const auto v2_identity =
      v2->registry().get(plugins::PluginKind::kInstaller, "fixture-disk-installer")->identity();
  ASSERT_EQ(v1_identity.version, "1.0.0");
  ASSERT_EQ(v2_identity.version, "1.1.0");
  ASSERT_NE(v1_identity.sha256, v2_identity.sha256);

  auto bodies = std::make_shared<BodySource>();
  auto decided = service_with(setup, *v1, root, bodies);
  const auto prepared =
      decided->prepare(ManagedQueryRequest::create(digest("repin-query"), "work-one"));
  const auto request = ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest("repin-choice"), {"skill:installable"});
  {
    // The grant (bound to v1's identity digest) commits; the process dies before the claim.
    CrashPointArmed crash(crash_points::kAfterInstallDecision);
    EXPECT_THROW(decided->set_desired(request), SimulatedCrash);
  }
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 4);

  // Re-pinned: the registry now holds the rebuilt installer, version 1.1.0, other bytes.
  auto repinned = service_with(setup, *v2, root, bodies);
  CTX_EXPECT_THROW(repinned->set_desired(request), ManagedQueryServiceError, "captured actuator");
  EXPECT_EQ(bodies->load_calls(), 0);
  EXPECT_TRUE(entries(root).empty());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 4);

  // The decision is not burned: the captured installer pinned again installs exactly once.
  auto restored = service_with(setup, *v1, root, bodies);
  const auto installed = restored->set_desired(request);
  EXPECT_EQ(installed.status(), ManagedDesiredStatus::kEffectPending);
  EXPECT_EQ(bodies->load_calls(), 1);
  const auto sha =
      setup.installs->bundles.at("skill:installable").result_material().content_sha256();
  EXPECT_EQ(entries(root), std::vector<fs::path>{root / sha});
  EXPECT_EQ(file_bytes(root / sha), kInstallableSkillBody);
  const auto binding = engine::InstallExecutionBinding::from_json_text(sqlite_scalar(
      setup.journal_path, "SELECT execution_binding_json FROM engine_install_claims"));
  EXPECT_EQ(binding.driver_digest(), v1_identity.digest());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_install_claim_settlements"), 1);
}

// A registration is keyed by (installer id, CapabilityKind): the same installer id asked for
// another kind, or another id for the registered kind, resolves to no driver.
TEST(PreapprovedInstallPlugins, RegistryResolverMatchesTheInstallerIdAndTypedKind) {
  TempDir tmp;
  const fs::path root = tmp.path() / "disk-installs";
  fs::create_directory(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  const plugins::PluginLoader loader(tmp.path() / "loader-state");
  const auto actuator = plugin_actuator(pinned_registry(loader, CTX_FIXTURE_DISK_INSTALLER_V1),
                                        root, std::make_shared<BodySource>());
  const auto& resolver = *actuator->installers;
  EXPECT_NE(resolver.resolve("ctx-skill-installer-v1", engine::CapabilityKind::kSkill), nullptr);
  EXPECT_EQ(resolver.resolve("ctx-skill-installer-v1", engine::CapabilityKind::kAgent), nullptr);
  EXPECT_EQ(resolver.resolve("ctx-skill-installer-v1", engine::CapabilityKind::kMcpServer),
            nullptr);
  EXPECT_EQ(resolver.resolve("ctx-agent-installer-v1", engine::CapabilityKind::kSkill), nullptr);
}

TEST(PreapprovedInstallPlugins, ExecuteInstallRefusesAnotherPluginIdentityOrRootBeforeClaiming) {
  TempDir tmp;
  auto setup = make_setup(tmp.path() / "service", [] {
    SetupArgs args;
    args.requested_limit = 1;
    args.installable = true;
    return args;
  }());
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  setup.persist_policy(preapproved);
  const fs::path root = tmp.path() / "service" / "private" / "disk-installs";
  fs::create_directory(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  const plugins::PluginLoader loader(tmp.path() / "loader-state");
  auto v1 = pinned_registry(loader, CTX_FIXTURE_DISK_INSTALLER_V1);
  auto v2 = pinned_registry(loader, CTX_FIXTURE_DISK_INSTALLER_V2);
  auto bodies = std::make_shared<BodySource>();
  auto decided = service_with(setup, *v1, root, bodies);
  const auto prepared =
      decided->prepare(ManagedQueryRequest::create(digest("direct-query"), "work-one"));
  {
    CrashPointArmed crash(crash_points::kAfterInstallDecision);
    EXPECT_THROW(decided->set_desired(ManagedDesiredSetRequest::create(
                     prepared.query_ref(), digest("direct-choice"), {"skill:installable"})),
                 SimulatedCrash);
  }
  // Execute the pending install directly, under v1's captured binding, through a composition
  // whose registry holds v2: fail closed before any claim.
  ManagedCompositionOptions options;
  options.journal_path = setup.journal_path;
  options.benefit_audit_path = setup.audit_path;
  options.benefit_facts_port = setup.facts;
  options.net_benefit_policy = setup.policy;
  options.material_port = setup.materials;
  options.install_bundle_port = setup.installs;
  options.trusted_clock = setup.clock;
  options.policy_store_root = setup.policy_root;
  options.install_actuator = plugin_actuator(v1, root, bodies);
  auto captured_composition =
      open_managed_engine_composition(*setup.registry, setup.artifact, options);
  const auto head = captured_composition->snapshot(seed_scope());
  ASSERT_EQ(head.state->pending_effects().size(), 1u);
  const auto install = head.state->pending_effects().front().action;
  const auto* selection = head.state->committed_plan()->find("skill:installable");
  const auto captured =
      captured_composition->resolve_install_execution_binding(install, *selection);
  captured_composition->close();
  options.install_actuator = plugin_actuator(v2, root, bodies);
  auto repinned = open_managed_engine_composition(*setup.registry, setup.artifact, options);
  EXPECT_NE(repinned->resolve_install_execution_binding(install, *selection).driver_digest(),
            captured.driver_digest());
  const auto policy = install.payload().at("policy_snapshot_digest").get<std::string>();
  CTX_EXPECT_THROW(repinned->execute_install(install, *selection, captured, policy),
                   InstallExecutionError, "captured actuator");
  EXPECT_FALSE(repinned->install_execution_status(install).claimed);
  EXPECT_EQ(bodies->load_calls(), 0);
  EXPECT_TRUE(entries(root).empty());
  repinned->close();

  // The captured plugin again, but its install root replaced (rename + recreate: new inode):
  // "root changed", still before any claim or write.
  fs::rename(root, root.parent_path() / "disk-installs-old");
  fs::create_directory(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  options.install_actuator = plugin_actuator(v1, root, bodies);
  auto replaced = open_managed_engine_composition(*setup.registry, setup.artifact, options);
  CTX_EXPECT_THROW(replaced->execute_install(install, *selection, captured, policy),
                   InstallExecutionError, "root changed");
  EXPECT_FALSE(replaced->install_execution_status(install).claimed);
  EXPECT_EQ(bodies->load_calls(), 0);
  EXPECT_TRUE(entries(root).empty());
  replaced->close();
}

}  // namespace
}  // namespace ctx::runtime
