#include "plugins/skill-installer/core/skill_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::skill_installer {
namespace {

namespace fs = std::filesystem;
using plugin_common::material_identity_digest;

constexpr char kBody[] = "---\nname: pdf\ndescription: pdf fixture\n---\nUse pdf.\n";
const std::string kBodySha = plugin_common::sha256_hex(kBody);

class SkillStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ctx-skill-store-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    root_ = base_ / "root";
  }
  void TearDown() override { fs::remove_all(base_); }

  std::string config() const { return Json{{"root", root_.string()}}.dump(); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  fs::path base_;
  fs::path root_;
};

TEST_F(SkillStoreTest, CreatesTheRootPrivatelyAndReportsItsIdentity) {
  SkillStore store(config());
  struct stat st {};
  ASSERT_EQ(::lstat(root_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const Json identity = store.target_identity();
  EXPECT_EQ(identity.at("device"), static_cast<std::uint64_t>(st.st_dev));
  EXPECT_EQ(identity.at("inode"), static_cast<std::uint64_t>(st.st_ino));
  EXPECT_EQ(identity.at("owner"), static_cast<std::uint64_t>(::getuid()));
  EXPECT_EQ(identity.at("mode"), static_cast<std::uint64_t>(st.st_mode));
  EXPECT_EQ(identity.at("path"), root_.string());
}

TEST_F(SkillStoreTest, RejectsBadConfigs) {
  CTX_EXPECT_THROW(SkillStore(""), InvalidArgument, "config is not valid json");
  CTX_EXPECT_THROW(SkillStore("{}"), InvalidArgument, "needs a string \"root\"");
  CTX_EXPECT_THROW(SkillStore(R"({"root":"relative/dir"})"), InvalidArgument, "absolute");
  fs::create_directories(base_ / "real");
  fs::create_directory_symlink(base_ / "real", base_ / "link");
  CTX_EXPECT_THROW(SkillStore(Json{{"root", (base_ / "link").string()}}.dump()), InvalidArgument,
                   "symlinks are refused");
  std::ofstream(base_ / "file") << "x";
  CTX_EXPECT_THROW(SkillStore(Json{{"root", (base_ / "file").string()}}.dump()), InvalidArgument,
                   "not a directory");
}

// The MaterialIdentity digest of plugin_abi.h, against a vector computed outside ctx (Python's
// json.dumps(sort_keys=True, separators=(",", ":")) and hashlib.sha256).
TEST(MaterialIdentityDigest, MatchesTheSdkSchema) {
  EXPECT_EQ(material_identity_digest("skill:pdf", plugin_common::sha256_hex("hello"), 5),
            "aafb0c19bbca8d6ac359e5eda66f942753ad195d7969411e859580df8bb0283c");
}

TEST_F(SkillStoreTest, InstallWritesTheContentAddressedObject) {
  SkillStore store(config());
  const std::string& sha = kBodySha;
  const Json reply = store.install(
      Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", sha}}.dump());
  EXPECT_EQ(reply.at("outcome"), "applied");
  EXPECT_EQ(reply.at("capability_id"), "skill:pdf");
  EXPECT_EQ(reply.at("observed_material_identity_digest"),
            material_identity_digest("skill:pdf", sha, std::strlen(kBody)));
  EXPECT_EQ(reply.at("verification_digest").get<std::string>().size(), 64u);
  const fs::path object = root_ / "sha256" / sha;
  EXPECT_EQ(read(object), kBody);
  EXPECT_EQ(fs::status(object).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  // Idempotent: the same install again yields the same digests.
  EXPECT_EQ(
      store.install(
          Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", sha}}.dump()),
      reply);
}

TEST_F(SkillStoreTest, InstallAcceptsBase64Content) {
  SkillStore store(config());
  const std::string sha =
      "252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111";  // "f"
  const Json reply = store.install(Json{
      {"capability_id", "skill:f"},
      {"content_base64", "Zg=="},
      {"content_sha256", sha}}.dump());
  EXPECT_EQ(reply.at("outcome"), "applied");
  EXPECT_EQ(read(root_ / "sha256" / sha), "f");
}

TEST_F(SkillStoreTest, DigestMismatchFailsWithoutWriting) {
  SkillStore store(config());
  const Json reply = store.install(Json{
      {"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", std::string(64, 'a')}}
                                       .dump());
  EXPECT_EQ(reply.at("outcome"), "failed");
  EXPECT_EQ(reply.at("reason"), "content digest mismatch");
  EXPECT_FALSE(reply.contains("verification_digest"));
  EXPECT_TRUE(fs::is_empty(root_ / "sha256"));
}

TEST_F(SkillStoreTest, RepairsACorruptedObject) {
  SkillStore store(config());
  const std::string& sha = kBodySha;
  const std::string request =
      Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", sha}}.dump();
  store.install(request);
  const fs::path object = root_ / "sha256" / sha;
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object) << "tampered";
  EXPECT_EQ(store.install(request).at("outcome"), "applied");
  EXPECT_EQ(read(object), kBody);
}

TEST_F(SkillStoreTest, ActivateDeactivateAndReconcileRoundTrip) {
  SkillStore store(config());
  const std::string& sha = kBodySha;
  const Json entry = {{"capability_id", "skill:pdf"}, {"content_sha256", sha}};
  const std::string reconcile = Json{{"capabilities", Json::array({entry})}}.dump();

  Json state = store.reconcile(reconcile).at("capabilities").at(0);
  EXPECT_FALSE(state.at("installed"));
  EXPECT_FALSE(state.at("active"));
  EXPECT_TRUE(state.at("active_sha256").is_null());

  EXPECT_EQ(store.activate(entry.dump()).at("outcome"), "failed");  // not installed yet
  store.install(
      Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", sha}}.dump());
  state = store.reconcile(reconcile).at("capabilities").at(0);
  EXPECT_TRUE(state.at("installed"));
  EXPECT_FALSE(state.at("active"));

  const std::string material = material_identity_digest("skill:pdf", sha, std::strlen(kBody));
  const Json activated = store.activate(entry.dump());
  EXPECT_EQ(activated.at("outcome"), "applied");
  EXPECT_EQ(activated.at("active_sha256"), sha);
  EXPECT_EQ(activated.at("observed_material_identity_digest"), material);
  EXPECT_EQ(activated.at("verification_digest").get<std::string>().size(), 64u);
  const fs::path skill = root_ / "active" / "pdf" / "SKILL.md";
  EXPECT_TRUE(fs::is_symlink(skill));
  EXPECT_EQ(read(skill), kBody);
  state = store.reconcile(reconcile).at("capabilities").at(0);
  EXPECT_TRUE(state.at("active"));
  EXPECT_EQ(state.at("active_sha256"), sha);
  EXPECT_EQ(state.at("active_material_identity_digest"), material);
  EXPECT_EQ(state.at("verification_digest"), activated.at("verification_digest"));

  EXPECT_EQ(store.deactivate(entry.dump()).at("was_active"), true);
  EXPECT_FALSE(fs::exists(root_ / "active" / "pdf"));
  EXPECT_EQ(store.deactivate(entry.dump()).at("was_active"), false);
  state = store.reconcile(reconcile).at("capabilities").at(0);
  EXPECT_TRUE(state.at("installed"));
  EXPECT_FALSE(state.at("active"));
}

TEST_F(SkillStoreTest, ReconcileReportsDriftedActiveContent) {
  SkillStore store(config());
  const std::string& sha = kBodySha;
  const Json entry = {{"capability_id", "skill:pdf"}, {"content_sha256", sha}};
  store.install(
      Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", sha}}.dump());
  store.activate(entry.dump());
  const fs::path skill = root_ / "active" / "pdf" / "SKILL.md";
  fs::remove(skill);
  std::ofstream(skill) << "edited by hand";
  const Json state =
      store.reconcile(Json{{"capabilities", Json::array({entry})}}.dump()).at("capabilities").at(0);
  EXPECT_FALSE(state.at("active"));
  EXPECT_NE(state.at("active_sha256"), sha);
  EXPECT_NE(state.at("active_material_identity_digest"),
            material_identity_digest("skill:pdf", sha, std::strlen(kBody)));
  EXPECT_TRUE(state.at("verification_digest").is_null());
}

TEST_F(SkillStoreTest, FailsClosedWhenTheRootIsReplaced) {
  SkillStore store(config());
  fs::rename(root_, base_ / "moved");
  fs::create_directory(root_);
  CTX_EXPECT_THROW(
      store.install(
          Json{{"capability_id", "skill:pdf"}, {"content", kBody}, {"content_sha256", kBodySha}}
              .dump()),
      Error, "root changed");
}

TEST(SkillName, AcceptsOnlySafeNames) {
  EXPECT_EQ(skill_name("skill:pdf"), "pdf");
  EXPECT_EQ(skill_name("skill:a.b_c@d-e"), "a.b_c@d-e");
  EXPECT_EQ(skill_name("skill:" + std::string(128, 'a')), std::string(128, 'a'));
  for (const std::string& bad : std::vector<std::string>{
           "pdf", "agent:pdf", "skill:", "skill:..", "skill:.hidden", "skill:a/b", "skill:../x",
           "skill:Pdf", "skill:-x", "skill:a b", "skill:" + std::string(129, 'a')}) {
    CTX_EXPECT_THROW(skill_name(bad), InvalidArgument, "capability_id");
  }
}

TEST_F(SkillStoreTest, RejectsMalformedRequestsWithoutEchoingContent) {
  SkillStore store(config());
  CTX_EXPECT_THROW(store.install("{}"), InvalidArgument, "capability_id");
  CTX_EXPECT_THROW(store.install(R"({"capability_id":"skill:../etc","content":"x",)"
                                 R"("content_sha256":"00"})"),
                   InvalidArgument, "invalid skill name");
  CTX_EXPECT_THROW(
      store.install(R"({"capability_id":"skill:a","content":"x","content_sha256":"00"})"),
      InvalidArgument, "content_sha256");
  const std::string zero(64, '0');
  CTX_EXPECT_THROW(
      store.install(Json{{"capability_id", "skill:a"}, {"content_sha256", zero}}.dump()),
      InvalidArgument, "exactly one of content");
  CTX_EXPECT_THROW(store.install(Json{
                       {"capability_id", "skill:a"},
                       {"content", "secret-body"},
                       {"content_base64", "Zg=="},
                       {"content_sha256",
                        zero}}.dump()),
                   InvalidArgument, "exactly one of content");
  CTX_EXPECT_THROW(store.reconcile("{}"), InvalidArgument, "capabilities");
  CTX_EXPECT_THROW(store.reconcile(R"({"capabilities":[1]})"), InvalidArgument, "objects");
  try {
    store.install(Json{
        {"capability_id", "skill:a"}, {"content_base64", "secret-body!"}, {"content_sha256", zero}}
                      .dump());
    FAIL() << "expected a base64 error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("secret-body")));
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr(root_.string())));
  }
}

}  // namespace
}  // namespace ctx::skill_installer
