// Skills over the old manifest-as-material limit, end to end through the real ctx binary and the
// real skill-installer plugin (ConsentDecisionTest's state: ctx init, a trusted Ed25519 key), on a
// copy of the example catalog whose pdf-export skill is either a 200-file tree or one SKILL.md of
// 12,000 bytes. Both import, are planned with an install bundle, and a signed grant installs them
// content-addressed under the tree root's digest (plugin_abi.h "Tree material"), activates them
// and records the root's MaterialIdentity as the durable install outcome.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/skill_tree.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "host/cli/consent_key.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/identities.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::read_file;

// Every regular file below `dir`, by '/'-separated relative path.
std::map<std::string, std::string> files_below(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      out[entry.path().lexically_relative(dir).generic_string()] = read_file(entry.path());
    }
  }
  return out;
}

// The tree root text of `files` (plugin_abi.h "Tree material") and its manifest's length.
struct Root {
  std::string text;
  std::size_t manifest_bytes = 0;
};
Root root_of(const std::map<std::string, std::string>& files) {
  std::vector<sdk::TreeFile> tree;
  for (const auto& [path, bytes] : files)
    tree.push_back({path, bytes.size(), core::sha256_hex(bytes)});
  const std::string manifest = sdk::tree_manifest_text(tree);
  return {sdk::tree_root_text(tree, core::sha256_hex(manifest)), manifest.size()};
}

class TreeInstallTest : public ctx::testing::TrustedStateTest {
 protected:
  // Re-imports a copy of the example catalog whose pdf-export folder `edit` changed.
  template <typename Edit>
  void import_edited_catalog(Edit edit) {
    const fs::path catalog = dir_ / "catalog";
    fs::copy(fs::path(CTX_SOURCE_DIR) / "examples/catalog", catalog, fs::copy_options::recursive);
    skill_dir_ = catalog / "skills" / "pdf-export";
    edit(skill_dir_);
    const CtxRun imported =
        ctx_run(with_state({"catalog", "import", catalog.string(), "--json"}));
    ASSERT_EQ(imported.code, 0) << imported.err;
  }

  // Plans the example work, chooses pdf-export, approves the challenge and checks the install
  // and activation of exactly the skill folder's files under their tree root.
  void approve_and_check_installed() {
    const std::map<std::string, std::string> files = files_below(skill_dir_);
    const Root root = root_of(files);
    ASSERT_LE(root.text.size(), 6000u);
    const std::string tree_digest = core::sha256_hex(root.text);

    const CtxRun prepared = ctx_run(with_state(
        {"query", "prepare", "--work",
         std::string(CTX_SOURCE_DIR) + "/examples/work/pdf-export.json", "--json"}));
    ASSERT_EQ(prepared.code, 0) << prepared.err;
    const Json plan = Json::parse(prepared.out);
    const CtxRun desired = ctx_run(with_state(
        {"desired", "set", plan.at("query_ref").get<std::string>(), "skill:pdf-export", "--json"}));
    ASSERT_EQ(desired.code, 0) << desired.err;
    const Json chosen = Json::parse(desired.out);
    ASSERT_EQ(chosen.at("status"), "consent-required") << desired.out;
    const std::string challenge = chosen.at("challenge").at("challenge_digest");

    const CtxRun approved = ctx_run(
        with_state({"consent", "approve", challenge, "--key", key_.string(), "--json"}));
    ASSERT_EQ(approved.code, 0) << approved.err;
    const Json result = Json::parse(approved.out);
    EXPECT_EQ(result["resolution"]["outcome"], "installed-inactive") << approved.out;
    EXPECT_EQ(result["activation"]["outcome"], "applied") << approved.out;

    const fs::path object = state_ / "skills" / "objects" / tree_digest;
    ASSERT_TRUE(fs::is_directory(object));
    EXPECT_EQ(files_below(object), files);
    EXPECT_EQ(files_below(state_ / "skills" / "active" / "pdf-export"), files);
    EXPECT_EQ(std::distance(fs::directory_iterator(state_ / "skills" / "objects"),
                            fs::directory_iterator()),
              1);

    const std::string expected =
        engine::MaterialIdentity::create("skill:pdf-export", engine::CapabilityKind::kSkill,
                                         tree_digest, static_cast<std::int64_t>(root.text.size()))
            .identity_digest();
    expect_one_applied_install_outcome(expected);
  }

  fs::path skill_dir_;
};

// 200 files (SKILL.md, scripts/export.py and 198 references): a manifest of about 20 KB, whose
// fixed-size root is the material.
TEST_F(TreeInstallTest, ATwoHundredFileSkillImportsAndInstallsEndToEnd) {
  import_edited_catalog([](const fs::path& skill) {
    fs::create_directory(skill / "references");
    for (int i = 0; i < 198; ++i) {
      std::ofstream(skill / "references" / ("page-" + std::to_string(i) + ".md"), std::ios::binary)
          << "# page " << i << "\n" << std::string(static_cast<std::size_t>(i) * 7, 'p') << "\n";
    }
  });
  ASSERT_EQ(files_below(skill_dir_).size(), 200u);
  ASSERT_GT(root_of(files_below(skill_dir_)).manifest_bytes, 6000u);
  approve_and_check_installed();
}

// One SKILL.md of 12,000 bytes and nothing else: a one-file tree.
TEST_F(TreeInstallTest, ATwelveThousandByteSkillMdInstallsEndToEnd) {
  import_edited_catalog([](const fs::path& skill) {
    fs::remove_all(skill / "scripts");
    std::string body = read_file(skill / "SKILL.md");
    body += "\n## Notes\n\n";
    while (body.size() < 12000) body += "Keep headings short; one idea per paragraph.\n";
    body.resize(12000);
    std::ofstream(skill / "SKILL.md", std::ios::binary | std::ios::trunc) << body;
  });
  ASSERT_EQ(files_below(skill_dir_).size(), 1u);
  ASSERT_EQ(read_file(skill_dir_ / "SKILL.md").size(), 12000u);
  approve_and_check_installed();
}

}  // namespace
}  // namespace ctx::cli
