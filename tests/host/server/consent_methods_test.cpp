// consent.show, consent.resolve and consent.recover through a real `ctx serve` process on a real
// state dir (ctx init, the example catalog, an Ed25519 key made and used by the openssl binary,
// ctx consent trust, a plan and its challenge through ctx query prepare / ctx desired set): each
// result is the CLI's --json output; a tampered assertion is an error reply that changes no
// durable byte; the signed grant installs and activates the skill once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "host/core/time.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/server/server.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
using ctx::testing::read_file;
using Json = core::Json;
using testing::call;
using testing::RpcClient;

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class ConsentMethodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "s";
    ASSERT_TRUE(testing::prepare_state_dir(state_));
    key_ = dir_ / "key.pem";
    ASSERT_EQ(shell("openssl genpkey -algorithm ed25519 -out " + key_.string() +
                    " 2>/dev/null && openssl pkey -in " + key_.string() + " -pubout -out " +
                    (dir_ / "key.pub").string()),
              0);
    ::chmod(key_.c_str(), 0600);
    std::ofstream(dir_ / "verifier.json")
        << Json{{"public_key_pem", read_file(dir_ / "key.pub")}}.dump();
    const std::string s = " --state " + state_.string();
    ASSERT_EQ(testing::run_ctx("consent trust --audience ctx-local --authenticator laptop "
                               "--principal " +
                               std::string(64, 'a') + " --verifier ed25519 --config " +
                               (dir_ / "verifier.json").string() + s)
                  .first,
              0);
    const auto [prepared_status, prepared] =
        testing::run_ctx("query prepare --work " + std::string(CTX_SOURCE_DIR) +
                         "/examples/work/pdf-export.json --json" + s);
    ASSERT_EQ(prepared_status, 0);
    const auto [desired_status, desired] = testing::run_ctx(
        "desired set " + Json::parse(prepared).at("query_ref").get<std::string>() +
        " skill:pdf-export --json" + s);
    ASSERT_EQ(desired_status, 0);
    const Json result = Json::parse(desired);
    ASSERT_EQ(result.at("status"), "consent-required") << desired;
    challenge_ = result.at("challenge").at("challenge_digest");
    expires_at_ = result.at("challenge").at("expires_at");
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  void serve() {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(CTX_BINARY, CTX_BINARY, "serve", "--state", state_.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ASSERT_TRUE(testing::wait_for_file(state_ / kSocketFile));
  }
  int stop() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // A grant for the challenge signed by the openssl binary over the exact signing bytes.
  std::string signed_grant(const std::string& nonce) const {
    runtime::SignedAssertionClaims claims;
    claims.challenge_digest = challenge_;
    claims.decision = engine::Decision::kGranted;
    claims.principal_digest = std::string(64, 'a');
    claims.authenticator_id = "laptop";
    claims.audience = "ctx-local";
    claims.nonce = nonce;
    claims.issued_at = core::format_rfc3339(core::SystemClock().now());
    claims.expires_at = expires_at_;
    claims.proof = "unsigned";
    const std::string bytes = runtime::SignedAssertion::create(claims).signing_bytes();
    std::ofstream(dir_ / "message", std::ios::binary) << bytes;
    EXPECT_EQ(shell("openssl pkeyutl -sign -rawin -inkey " + key_.string() + " -in " +
                    (dir_ / "message").string() + " -out " + (dir_ / "proof").string()),
              0);
    claims.proof = read_file(dir_ / "proof");
    return runtime::encode_signed_assertion(runtime::SignedAssertion::create(std::move(claims)));
  }

  std::string durable_bytes() const {
    std::string bytes;
    for (const char* name : {"consent.sqlite3", "consent.sqlite3-wal", "journal.sqlite3",
                             "journal.sqlite3-wal"}) {
      bytes += std::string(name) + "=" + read_file(state_ / "service" / name) + "\n";
    }
    return bytes;
  }

  ctx::testing::TempDir dir_;
  fs::path state_;
  fs::path key_;
  std::string challenge_;
  std::string expires_at_;
  pid_t pid_ = -1;
};

TEST_F(ConsentMethodsTest, ShowResolveAndRecoverThroughARealServerMirrorTheCli) {
  const auto [show_status, show_out] =
      testing::run_ctx("consent show --json --state " + state_.string());
  ASSERT_EQ(show_status, 0);
  serve();
  RpcClient client;
  ASSERT_TRUE(client.connect(state_ / kSocketFile));

  const Json shown = call(client, 1, "consent.show", Json::object());
  ASSERT_TRUE(shown.contains("result")) << shown.dump();
  EXPECT_EQ(shown["result"], Json::parse(show_out));
  ASSERT_EQ(shown["result"]["challenges"].size(), 1u);
  EXPECT_EQ(shown["result"]["challenges"][0]["challenge_digest"], challenge_);

  // A tampered byte of the signed grant: an error reply, nothing durable changed.
  std::string tampered = signed_grant("server-nonce-1");
  const auto at = tampered.find("\"nonce\":\"") + 9;
  tampered[at] = tampered[at] == 's' ? 't' : 's';
  const std::string before = durable_bytes();
  const Json refused = call(client, 2, "consent.resolve", {{"assertion", tampered}});
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_EQ(durable_bytes(), before);
  EXPECT_FALSE(fs::exists(state_ / "skills" / "active" / "pdf-export"));
  const Json bad_params = call(client, 3, "consent.recover", {{"challenge_digest", "nothex"}});
  ASSERT_TRUE(bad_params.contains("error"));
  EXPECT_EQ(bad_params["error"]["code"], -32602);

  // The valid grant installs and activates once.
  const Json granted =
      call(client, 4, "consent.resolve", {{"assertion", signed_grant("server-nonce-2")}});
  ASSERT_TRUE(granted.contains("result")) << granted.dump();
  EXPECT_EQ(granted["result"]["resolution"]["outcome"], "installed-inactive");
  EXPECT_EQ(granted["result"]["activation"]["outcome"], "applied");
  EXPECT_EQ(read_file(state_ / "skills" / "active" / "pdf-export" / "SKILL.md"),
            read_file(fs::path(CTX_SOURCE_DIR) / "examples/catalog/skills/pdf-export/SKILL.md"));

  const Json recovered = call(client, 5, "consent.recover", {{"challenge_digest", challenge_}});
  ASSERT_TRUE(recovered.contains("result")) << recovered.dump();
  EXPECT_EQ(stop(), 0);
  const auto [recover_status, recover_out] =
      testing::run_ctx("consent recover " + challenge_ + " --json --state " + state_.string());
  ASSERT_EQ(recover_status, 0);
  EXPECT_EQ(recovered["result"], Json::parse(recover_out));
  const auto [after_status, after_out] =
      testing::run_ctx("consent show --json --state " + state_.string());
  EXPECT_EQ(Json::parse(after_out)["challenges"].size(), 0u);
}

}  // namespace
}  // namespace ctx::server
