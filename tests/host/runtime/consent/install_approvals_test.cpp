// InstallApprovals: the standing approvals file records, lists and revokes exactly, and fails
// closed on altered bytes or a foreign key; approves() matches capability, kind, material and
// policy exactly.
#include "host/runtime/consent/install_approvals.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;

InstallApproval pdf_approval() {
  return InstallApproval{"skill:pdf-export",
                         engine::CapabilityKind::kSkill,
                         core::sha256_hex("material"),
                         core::sha256_hex("content"),
                         120,
                         core::sha256_hex("policy"),
                         "2026-12-07T10:00:00Z"};
}

class InstallApprovalsTest : public ::testing::Test {
 protected:
  void SetUp() override { ensure_private_dir(dir_.path() / "service", "service directory"); }
  fs::path file() const { return dir_.path() / "service" / "install-approvals.json"; }
  std::string bytes() const {
    std::ifstream in(file(), std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  void write_bytes(const std::string& text) const {
    write_private_file(file(), text, "install approvals");
  }

  ctx::testing::TempDir dir_;
  std::string key_ = std::string(32, 'k');
};

TEST_F(InstallApprovalsTest, RecordListRevoke) {
  const InstallApprovals approvals(file(), key_);
  EXPECT_TRUE(approvals.load().empty());
  approvals.record(pdf_approval());
  const std::string once = bytes();
  approvals.record(pdf_approval());  // idempotent: same bytes
  EXPECT_EQ(bytes(), once);
  const auto loaded = approvals.load();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded.at("skill:pdf-export"), pdf_approval());
  EXPECT_FALSE(approvals.revoke("skill:other"));
  EXPECT_EQ(bytes(), once);
  EXPECT_TRUE(approvals.revoke("skill:pdf-export"));
  EXPECT_TRUE(approvals.load().empty());
}

TEST_F(InstallApprovalsTest, ApprovesOnlyTheExactMaterialUnderTheExactPolicy) {
  InstallApprovalMap map{{"skill:pdf-export", pdf_approval()}};
  const auto& a = pdf_approval();
  EXPECT_TRUE(approves(map, a.capability_id, a.kind, a.material_identity_digest, a.policy_digest));
  EXPECT_FALSE(
      approves(map, a.capability_id, a.kind, core::sha256_hex("new material"), a.policy_digest));
  EXPECT_FALSE(approves(map, a.capability_id, a.kind, a.material_identity_digest,
                        core::sha256_hex("another policy")));
  EXPECT_FALSE(approves(map, "agent:pdf-export", engine::CapabilityKind::kAgent,
                        a.material_identity_digest, a.policy_digest));
}

TEST_F(InstallApprovalsTest, AlteredBytesOrAnotherKeyFailClosed) {
  InstallApprovals(file(), key_).record(pdf_approval());
  const std::string good = bytes();
  // Another installation's key: the MAC does not verify.
  EXPECT_THROW(InstallApprovals(file(), std::string(32, 'x')).load(), DataLoss);
  // One approval's policy swapped for another digest, the MAC left as it was.
  std::string altered = good;
  const std::string policy = core::sha256_hex("policy");
  altered.replace(altered.find(policy), policy.size(), core::sha256_hex("attacker policy"));
  write_bytes(altered);
  EXPECT_THROW(InstallApprovals(file(), key_).load(), DataLoss);
  // Not JSON, and not canonical.
  write_bytes("{not json\n");
  EXPECT_THROW(InstallApprovals(file(), key_).load(), DataLoss);
  // A revoke or a record on an altered file changes nothing.
  write_bytes(altered);
  EXPECT_THROW(InstallApprovals(file(), key_).revoke("skill:pdf-export"), DataLoss);
  EXPECT_EQ(bytes(), altered);
}

TEST_F(InstallApprovalsTest, MalformedApprovalsAreRefusedAndNothingIsWritten) {
  const InstallApprovals approvals(file(), key_);
  InstallApproval bad = pdf_approval();
  bad.capability_id = "agent:pdf-export";  // names another kind than its kind
  EXPECT_THROW(approvals.record(bad), InvalidArgument);
  bad = pdf_approval();
  bad.policy_digest = "not-a-digest";
  EXPECT_THROW(approvals.record(bad), InvalidArgument);
  bad = pdf_approval();
  bad.content_bytes = 0;
  EXPECT_THROW(approvals.record(bad), InvalidArgument);
  EXPECT_FALSE(fs::exists(file()));
  EXPECT_THROW(InstallApprovals("relative/file", key_), InvalidArgument);
}

}  // namespace
}  // namespace ctx::runtime
