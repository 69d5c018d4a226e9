// Install execution verifies a tree body once, before the installer sees it: the root the files
// imply (their manifest's digest, their totals) must be the authorised root text. A preapproved
// install of a 200-file tree through the real skill-installer plugin installs under the root's
// MaterialIdentity; a body whose files are not the ones the authorised root names (one altered
// resource byte, a file the manifest does not list, a missing file) never reaches the installer:
// the claimed install is indeterminate with nothing published or staged, and the next pass
// reconciles it failed once.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/runtime/install_execution.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

std::size_t entries(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  std::size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

std::vector<InstallBodyFile> two_hundred_file_tree() {
  std::vector<InstallBodyFile> files = {{"SKILL.md", std::string(kInstallableSkillBody)}};
  for (int i = 1; i < 200; ++i) {
    files.push_back({"references/page-" + std::to_string(i) + ".md",
                     "# page " + std::to_string(i) + "\n" + std::string(i, 'p') + "\n"});
  }
  return files;
}

struct Preapproved {
  TempDir tmp;
  ServiceSetup setup;
  std::optional<ManagedDesiredSetRequest> request;
};

std::unique_ptr<Preapproved> preapproved_tree_install(std::vector<InstallBodyFile> tree) {
  auto out = std::make_unique<Preapproved>();
  SetupArgs args;
  args.requested_limit = 1;
  args.installable = true;
  args.tree = std::move(tree);
  out->setup = make_setup(out->tmp.path(), args);
  InstallConsentPolicy policy;
  policy.skill_mode = InstallMode::kPreapprovedAuto;
  out->setup.persist_policy(policy);
  const auto prepared = out->setup.service->prepare(
      ManagedQueryRequest::create(digest("tree-body-query"), "work-one"));
  out->request.emplace(ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest("tree-body-choice"), {"skill:installable"}));
  return out;
}

TEST(TreeBodyVerification, ATwoHundredFileTreeInstallsUnderItsRootMaterialIdentity) {
  const auto tree = two_hundred_file_tree();
  const TreeMaterialText text = tree_material_of(tree);
  ASSERT_GT(text.manifest.size(), 6000u);  // the old material (the manifest) could not be bound
  ASSERT_LE(text.root.size(), 6000u);
  auto run = preapproved_tree_install(tree);
  const auto result = run->setup.service->set_desired(*run->request);
  EXPECT_EQ(result.status(), ManagedDesiredStatus::kEffectPending)
      << result.reason_code().value_or("(none)");
  EXPECT_TRUE(result.failed_capability_ids().empty());
  const fs::path object = run->setup.consent->skill_root / "objects" / core::sha256_hex(text.root);
  ASSERT_TRUE(fs::is_directory(object));
  EXPECT_EQ(entries(object / "references"), 199u);
  EXPECT_EQ(sqlite_count(run->setup.journal_path, "engine_install_outcomes"), 1);
  const std::string expected =
      engine::MaterialIdentity::create("skill:installable", engine::CapabilityKind::kSkill,
                                       core::sha256_hex(text.root),
                                       static_cast<std::int64_t>(text.root.size()))
          .identity_digest();
  EXPECT_EQ(sqlite_scalar(run->setup.journal_path,
                          "SELECT observed_material_identity_digest FROM engine_install_outcomes"),
            expected);
}

TEST(TreeBodyVerification, FilesThatAreNotTheAuthorisedRootsNeverReachTheInstaller) {
  const auto tree = two_hundred_file_tree();
  auto altered = tree;
  altered[57].bytes[3] ^= 0x01;  // one resource byte, same size
  auto extra = tree;
  extra.push_back({"references/extra.md", "not listed\n"});
  auto missing = tree;
  missing.pop_back();
  for (const auto& [what, served] :
       {std::pair{"one altered resource byte", altered}, std::pair{"an unlisted file", extra},
        std::pair{"a missing file", missing}}) {
    SCOPED_TRACE(what);
    auto run = preapproved_tree_install(tree);
    run->setup.consent->body_source->serve_files(served);
    const fs::path skill_root = run->setup.consent->skill_root;
    const fs::path staging = run->setup.journal_path.parent_path() / "install-staging";
    const auto first = run->setup.service->set_desired(*run->request);
    EXPECT_EQ(first.reason_code(), "automatic-install-indeterminate");
    EXPECT_EQ(sqlite_count(run->setup.journal_path, "engine_install_claims"), 1);
    EXPECT_EQ(sqlite_count(run->setup.journal_path, "engine_install_outcomes"), 0);
    EXPECT_EQ(entries(skill_root / "objects"), 0u);
    EXPECT_EQ(entries(skill_root / "tmp"), 0u);
    EXPECT_EQ(entries(staging), 0u);
    const auto settled = run->setup.service->set_desired(*run->request);
    EXPECT_EQ(settled.reason_code(), "automatic-install-failed");
    EXPECT_EQ(settled.failed_capability_ids(), std::vector<std::string>{"skill:installable"});
    EXPECT_EQ(entries(skill_root / "objects"), 0u);
    EXPECT_EQ(sqlite_count(run->setup.journal_path, "engine_install_claim_settlements"), 1);
  }
}

}  // namespace
}  // namespace ctx::runtime
