// `ctx consent trust` in process on a state dir whose lock pins the real ed25519 verifier: the
// registration lands in consent-verifiers.json naming the pinned identity; a second trust of the
// same key, an unpinned verifier, a config the verifier refuses and a missing option all fail
// without changing the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "host/cli/cli.hpp"
#include "host/core/canonical_json.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::read_file;
using ::testing::HasSubstr;

class ConsentTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "state";
    fs::create_directory(state_);
    fs::permissions(state_, fs::perms::owner_all);
    ASSERT_EQ(ctx({"plugin", "pin", "--lock", (state_ / "plugins.lock.json").string(), "--state",
                   state_.string(), CTX_ED25519_VERIFIER_SO}),
              kExitOk)
        << err_.str();
    std::ofstream(dir_ / "config.json") << R"({"public_key_pem":")" << kPublicPem << R"("})";
    std::ofstream(dir_ / "bad.json") << R"({"public_key_pem":"not a key"})";
  }
  int ctx(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return run(args, out_, err_, Environment{});
  }
  std::vector<std::string> trust(const std::string& verifier, const std::string& config) {
    return {"consent",         "trust",         "--audience",  "ctx-local",
            "--authenticator", "laptop",        "--principal", std::string(64, 'a'),
            "--verifier",      verifier,        "--config",    (dir_ / config).string(),
            "--state",         state_.string(), "--json"};
  }

  // An Ed25519 SPKI public key (RFC 8410 example), JSON-escaped.
  static constexpr const char* kPublicPem =
      "-----BEGIN PUBLIC KEY-----\\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\\n"
      "-----END PUBLIC KEY-----\\n";

  ctx::testing::TempDir dir_;
  fs::path state_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(ConsentTrustTest, RegistersThePinnedVerifierOnceAndRefusesWhatItCannotTrust) {
  ASSERT_EQ(ctx(trust("ed25519", "config.json")), kExitOk) << err_.str();
  const core::Json printed = core::Json::parse(out_.str());
  EXPECT_EQ(printed.at("verifier"), "ed25519");
  EXPECT_EQ(printed.at("audience"), "ctx-local");
  EXPECT_EQ(printed.at("identity_digest").get<std::string>().size(), 64u);
  const fs::path file = state_ / "consent-verifiers.json";
  const std::string registry = read_file(file);
  EXPECT_THAT(registry, HasSubstr(printed.at("identity_digest").get<std::string>()));
  EXPECT_THAT(registry, HasSubstr("laptop"));

  EXPECT_EQ(ctx(trust("ed25519", "config.json")), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("ctx: error: "));
  EXPECT_EQ(ctx(trust("sshsig", "config.json")), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("not pinned"));
  EXPECT_EQ(ctx(trust("ed25519", "bad.json")), kExitFailure);
  EXPECT_EQ(ctx(trust("ed25519", "missing.json")), kExitFailure);
  EXPECT_EQ(read_file(file), registry) << "failed trusts change nothing";

  EXPECT_EQ(ctx({"consent", "trust", "--audience", "ctx-local", "--state", state_.string()}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--authenticator is required"));
  EXPECT_EQ(ctx({"consent", "nonsense"}), kExitUsage);
}

}  // namespace
}  // namespace ctx::cli
