// InstallPolicyStore and routing (runtime spec §6.1) on real files in a private directory.
#include "host/runtime/consent/install_policy_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "host/runtime/consent/private_file.hpp"
#include "tests/host/runtime/consent/consent_fixture.hpp"

namespace ctx::runtime {
namespace {

using testing::read_file;
using testing::throws_exactly;
using testing::write_file;

class InstallPolicyStoreTest : public ::testing::Test {
 protected:
  std::filesystem::path root() const { return dir_.path() / "private" / "install-policy"; }
  testing::TempDir dir_;
};

TEST(InstallConsentPolicyTest, SafeDefaultAsksForEveryKindAndHasTheSpecDigest) {
  const InstallConsentPolicy policy = InstallConsentPolicy::safe_default();
  EXPECT_EQ(policy.policy_digest(),
            core::sha256_hex("{\"agent_mode\":\"ask-each-time\",\"mcp_server_mode\":\"ask-each-"
                             "time\",\"schema\":\"ctx.install-consent-policy-v1\",\"skill_mode\":"
                             "\"ask-each-time\"}"));
  for (const char* kind : {"skill", "agent", "mcp-server"}) {
    EXPECT_EQ(route_install_authorization(policy, kind, false, false),
              (InstallRoute{true, "per-install-consent-required"}));
  }
  EXPECT_TRUE(throws_exactly<InvalidArgument>([&] { (void)policy.mode_for("harness"); }));
}

TEST(InstallConsentPolicyTest, EachOfTheEightPoliciesHasTheDigestOfItsOwnModes) {
  // policy_digest() answers from a table computed once: every policy must find its own entry.
  std::set<std::string> seen;
  for (const InstallMode skill : {InstallMode::kAskEachTime, InstallMode::kPreapprovedAuto}) {
    for (const InstallMode agent : {InstallMode::kAskEachTime, InstallMode::kPreapprovedAuto}) {
      for (const InstallMode mcp : {InstallMode::kAskEachTime, InstallMode::kPreapprovedAuto}) {
        const InstallConsentPolicy policy{skill, agent, mcp};
        EXPECT_EQ(policy.policy_digest(),
                  core::sha256_hex(core::canonical_json(policy.digest_json())));
        seen.insert(policy.policy_digest());
      }
    }
  }
  EXPECT_EQ(seen.size(), 8u);
}

TEST(InstallConsentPolicyTest, SensitiveRiskForcesAskEvenWhenPreapproved) {
  InstallConsentPolicy policy;
  policy.skill_mode = InstallMode::kPreapprovedAuto;
  EXPECT_EQ(route_install_authorization(policy, "skill", false, false),
            (InstallRoute{false, "matching-preapproved-policy"}));
  EXPECT_EQ(route_install_authorization(policy, "skill", true, false),
            (InstallRoute{true, "permission-expansion-requires-consent"}));
  EXPECT_EQ(route_install_authorization(policy, "skill", false, true),
            (InstallRoute{true, "credentials-require-consent"}));
  EXPECT_EQ(route_install_authorization(policy, "skill", true, true),
            (InstallRoute{true, "permission-expansion-requires-consent"}));
  EXPECT_EQ(route_install_authorization(policy, "agent", false, false),
            (InstallRoute{true, "per-install-consent-required"}));
  EXPECT_NE(policy.policy_digest(), InstallConsentPolicy::safe_default().policy_digest());
}

TEST_F(InstallPolicyStoreTest, MissingRootLoadsTheSafeDefaultAndPersistRoundTrips) {
  const InstallPolicyStore store(root());
  EXPECT_EQ(store.load(), InstallConsentPolicy::safe_default());
  EXPECT_FALSE(store.has_persisted());
  InstallConsentPolicy policy;
  policy.skill_mode = InstallMode::kPreapprovedAuto;
  store.persist(policy);
  EXPECT_TRUE(store.has_persisted());
  EXPECT_EQ(store.load(), policy);
  const std::string current = read_file(root() / "current.json");
  EXPECT_EQ(current, core::canonical_json(policy.to_json()) + "\n");
  EXPECT_EQ(read_file(root() / "snapshots" / (policy.policy_digest() + ".json")), current);
  struct stat st {};
  ASSERT_EQ(::stat((root() / "current.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  store.persist(InstallConsentPolicy::safe_default());
  EXPECT_EQ(store.load(), InstallConsentPolicy::safe_default());
}

TEST_F(InstallPolicyStoreTest, CurrentThatDiffersFromItsSnapshotIsCorruption) {
  const InstallPolicyStore store(root());
  store.persist(InstallConsentPolicy::safe_default());
  InstallConsentPolicy other;
  other.agent_mode = InstallMode::kPreapprovedAuto;
  // A current file naming a digest whose snapshot is absent.
  write_file(root() / "current.json", core::canonical_json(other.to_json()) + "\n");
  ::chmod((root() / "current.json").c_str(), 0600);
  EXPECT_TRUE(throws_exactly<InstallPolicyCorruption>([&] { (void)store.load(); }));
  // A current file whose digest does not match its modes.
  core::Json forged = other.to_json();
  forged["policy_digest"] = InstallConsentPolicy::safe_default().policy_digest();
  write_file(root() / "current.json", core::canonical_json(forged) + "\n");
  EXPECT_TRUE(throws_exactly<InstallPolicyCorruption>([&] { (void)store.load(); }));
}

TEST_F(InstallPolicyStoreTest, UnsafeFilesAreRefused) {
  const InstallPolicyStore store(root());
  store.persist(InstallConsentPolicy::safe_default());
  ::chmod((root() / "current.json").c_str(), 0644);
  EXPECT_TRUE(throws_exactly<UnsafeStateFile>([&] { (void)store.load(); }));
  ::chmod((root() / "current.json").c_str(), 0600);
  std::filesystem::rename(root() / "current.json", root() / "real.json");
  std::filesystem::create_symlink(root() / "real.json", root() / "current.json");
  EXPECT_TRUE(throws_exactly<UnsafeStateFile>([&] { (void)store.load(); }));
  std::filesystem::remove(root() / "current.json");
  std::filesystem::rename(root() / "real.json", root() / "current.json");
  EXPECT_EQ(store.load(), InstallConsentPolicy::safe_default());
  ::chmod(root().c_str(), 0755);
  EXPECT_TRUE(throws_exactly<UnsafeStateFile>([&] { (void)store.load(); }));
  ::chmod(root().c_str(), 0700);
  EXPECT_TRUE(throws_exactly<InvalidArgument>([] { InstallPolicyStore relative("policy"); }));
}

TEST_F(InstallPolicyStoreTest, HoldRequiresThePersistedDigestAndAssertsItStaysCurrent) {
  const InstallPolicyStore store(root());
  const std::string safe = InstallConsentPolicy::safe_default().policy_digest();
  EXPECT_TRUE(throws_exactly<InstallPolicyMissing>([&] { (void)store.hold(safe); }));
  store.persist(InstallConsentPolicy::safe_default());
  InstallConsentPolicy auto_skill;
  auto_skill.skill_mode = InstallMode::kPreapprovedAuto;
  EXPECT_TRUE(throws_exactly<InstallPolicyChanged>(
      [&] { (void)store.hold(auto_skill.policy_digest()); }));
  {
    const InstallPolicyStore::Hold held = store.hold(safe);
    EXPECT_EQ(held.policy(), InstallConsentPolicy::safe_default());
    held.assert_current();
    // Another writer changes current.json behind the lock's back (not through persist):
    write_file(root() / "current.json", core::canonical_json(auto_skill.to_json()) + "\n");
    EXPECT_TRUE(throws_exactly<InstallPolicyCorruption>([&] { held.assert_current(); }));
  }
  store.persist(auto_skill);
  const InstallPolicyStore::Hold held = store.hold(auto_skill.policy_digest());
  held.assert_current();
}

}  // namespace
}  // namespace ctx::runtime
