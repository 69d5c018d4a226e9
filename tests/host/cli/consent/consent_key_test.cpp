// The user's decision key against the real verifier plugins: an Ed25519 PEM key (OpenSSL EVP)
// and an OpenSSH key (ssh-keygen -Y sign, private file or public file + ssh-agent) sign a
// decision that the pinned ed25519 / sshsig verifier, resolved through the trusted registry,
// accepts; a changed claim, another key or another audience does not pass.
#include "host/cli/consent_key.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/app/installation.hpp"
#include "host/cli/cli.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using runtime::SignedAssertion;
using runtime::TrustedVerifierRegistry;
using runtime::VerifierKey;

constexpr char kAudience[] = "ctx-local";
const std::string kChallenge(64, 'e');

void write_file(const fs::path& path, const std::string& bytes, fs::perms mode) {
  std::ofstream(path, std::ios::binary) << bytes;
  fs::permissions(path, mode);
}

// A fresh Ed25519 private key in PEM (PKCS#8), as `openssl genpkey -algorithm ed25519` writes.
std::string new_ed25519_pem() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  EVP_PKEY_free(key);
  return pem;
}

int run_quiet(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str());
}

core::Timestamp now() {
  return core::Timestamp{std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count()};
}

class ConsentKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "state";
    fs::create_directory(state_);
    fs::permissions(state_, fs::perms::owner_all);
    std::ostringstream out;
    std::ostringstream err;
    const fs::path lock = state_ / "plugins.lock.json";
    ASSERT_EQ(run({"plugin", "pin", "--lock", lock.string(), "--state", state_.string(),
                   CTX_ED25519_VERIFIER_SO, CTX_SSHSIG_VERIFIER_SO},
                  out, err, Environment{}),
              kExitOk)
        << err.str();
    const plugins::PluginLoader loader(state_);
    const plugins::LockFile pinned = plugins::LockFile::load(lock);
    for (const plugins::LockEntry& entry : pinned.entries()) {
      plugins_.add(loader.load(entry));
    }
    registry_ = std::make_unique<TrustedVerifierRegistry>(state_, plugins_);
  }

  // Trusts `key` for kAudience under authenticator `authenticator`.
  void trust(const UserDecisionKey& key, const std::string& authenticator) {
    registry_->add(VerifierKey{kAudience, authenticator, key.default_principal_digest()},
                   key.verifier_id(), key.verifier_config());
  }

  // True when the registered verifier accepts `assertion` on the wire.
  bool verifies(const SignedAssertion& assertion) {
    const std::string wire = runtime::encode_signed_assertion(assertion);
    const auto verifier = registry_->resolve(runtime::verifier_key_of(assertion));
    return verifier->verify(assertion, wire, assertion.signing_bytes());
  }

  // The same claims with `decision` swapped and the original proof.
  static SignedAssertion with_decision(const SignedAssertion& assertion,
                                       engine::Decision decision) {
    runtime::SignedAssertionClaims claims = assertion.claims();
    claims.decision = decision;
    return SignedAssertion::create(claims);
  }

  void expect_round_trip(const UserDecisionKey& key, const std::string& authenticator) {
    trust(key, authenticator);
    const auto registration = registration_for(registry_->registrations(), kAudience, key);
    EXPECT_EQ(registration.key.authenticator_id, authenticator);
    const core::Timestamp t = now();
    const core::Timestamp expires{t.micros + 3'600'000'000LL};
    const SignedAssertion granted =
        sign_decision(key, registration, kChallenge, engine::Decision::kGranted, t, expires);
    EXPECT_EQ(granted.challenge_digest(), kChallenge);
    EXPECT_EQ(granted.audience(), kAudience);
    EXPECT_EQ(granted.principal_digest(), key.default_principal_digest());
    EXPECT_LE(granted.issued_at_time(), t);
    EXPECT_LE(granted.expires_at_time(), expires);
    EXPECT_EQ(granted.nonce().size(), 64u);
    EXPECT_TRUE(verifies(granted));
    // The proof covers the decision: flipping it breaks the signature.
    EXPECT_FALSE(verifies(with_decision(granted, engine::Decision::kDenied)));
    const SignedAssertion denied =
        sign_decision(key, registration, kChallenge, engine::Decision::kDenied, t, expires);
    EXPECT_TRUE(verifies(denied));
    EXPECT_NE(denied.nonce(), granted.nonce()) << "every assertion has a fresh nonce";
    // Never outlives the challenge; an expired challenge is not signed.
    const core::Timestamp soon{t.micros + 5'000'000};
    EXPECT_EQ(sign_decision(key, registration, kChallenge, engine::Decision::kGranted, t, soon)
                  .expires_at_time(),
              soon);
    CTX_EXPECT_THROW(sign_decision(key, registration, kChallenge, engine::Decision::kGranted, t, t),
                     FailedPrecondition, "expired");
  }

  ctx::testing::TempDir dir_;
  fs::path state_;
  ::ctx::app::LoadedPlugins plugins_;
  std::unique_ptr<TrustedVerifierRegistry> registry_;
};

TEST_F(ConsentKeyTest, Ed25519PemKeySignsWhatTheEd25519VerifierAccepts) {
  const fs::path file = dir_ / "decision.pem";
  write_file(file, new_ed25519_pem(), fs::perms::owner_read | fs::perms::owner_write);
  const UserDecisionKey key = UserDecisionKey::load(file);
  EXPECT_EQ(key.type(), UserDecisionKey::Type::kEd25519Pem);
  EXPECT_EQ(key.verifier_id(), "ed25519");
  EXPECT_THAT(key.verifier_config().at("public_key_pem").get<std::string>(),
              ::testing::StartsWith("-----BEGIN PUBLIC KEY-----"));
  expect_round_trip(key, "user-pem");
}

TEST_F(ConsentKeyTest, OpenSshPrivateKeySignsThroughSshKeygenWhatSshsigAccepts) {
  const fs::path file = dir_ / "id_ed25519";
  ASSERT_EQ(run_quiet("ssh-keygen -q -t ed25519 -N '' -C demo -f " + file.string()), 0);
  const UserDecisionKey key = UserDecisionKey::load(file);
  EXPECT_EQ(key.type(), UserDecisionKey::Type::kOpenSsh);
  EXPECT_EQ(key.verifier_id(), "sshsig");
  EXPECT_THAT(key.verifier_config().at("public_key").get<std::string>(),
              ::testing::StartsWith("ssh-ed25519 "));
  expect_round_trip(key, "user-ssh");
}

// The private half only in ssh-agent: FILE is the public key line.
TEST_F(ConsentKeyTest, OpenSshPublicKeyFileSignsThroughSshAgent) {
  const fs::path file = dir_ / "agent_key";
  ASSERT_EQ(run_quiet("ssh-keygen -q -t ed25519 -N '' -f " + file.string()), 0);
  const fs::path socket = dir_ / "agent.sock";
  const pid_t agent = ::fork();
  if (agent == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execlp("ssh-agent", "ssh-agent", "-D", "-a", socket.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // The agent is stopped however this test ends.
  const std::unique_ptr<void, std::function<void(void*)>> stop_agent(reinterpret_cast<void*>(1),
                                                                     [agent](void*) {
                                                                       ::unsetenv("SSH_AUTH_SOCK");
                                                                       ::kill(agent, SIGTERM);
                                                                       ::waitpid(agent, nullptr, 0);
                                                                     });
  for (int i = 0; i < 200 && !fs::exists(socket); ++i) ::usleep(10'000);
  ASSERT_TRUE(fs::exists(socket));
  ::setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  // The socket can exist a moment before the agent accepts on it (exit 2: no agent yet).
  int added = -1;
  for (int i = 0; i < 100 && added != 0; ++i) {
    added = run_quiet("ssh-add " + file.string());
    if (added != 0) ::usleep(20'000);
  }
  EXPECT_EQ(added, 0);
  fs::remove(file);  // only the agent holds the private key now
  const UserDecisionKey key = UserDecisionKey::load(file.string() + ".pub");
  EXPECT_EQ(key.type(), UserDecisionKey::Type::kOpenSsh);
  expect_round_trip(key, "user-agent");
}

TEST_F(ConsentKeyTest, AKeyIsFoundOnlyForTheAudienceItIsTrustedForAndOnlyItsOwnRegistration) {
  const fs::path mine = dir_ / "mine.pem";
  const fs::path other = dir_ / "other.pem";
  write_file(mine, new_ed25519_pem(), fs::perms::owner_read | fs::perms::owner_write);
  write_file(other, new_ed25519_pem(), fs::perms::owner_read | fs::perms::owner_write);
  const UserDecisionKey key = UserDecisionKey::load(mine);
  const UserDecisionKey stranger = UserDecisionKey::load(other);
  trust(key, "mine");
  EXPECT_EQ(registration_for(registry_->registrations(), kAudience, key).key.authenticator_id,
            "mine");
  CTX_EXPECT_THROW(registration_for(registry_->registrations(), kAudience, stranger), NotFound,
                   "ctx consent trust");
  CTX_EXPECT_THROW(registration_for(registry_->registrations(), "elsewhere", key), NotFound,
                   "not trusted for audience elsewhere");
  EXPECT_NE(key.default_principal_digest(), stranger.default_principal_digest());
  EXPECT_TRUE(core::is_sha256_hex(key.default_principal_digest()));
}

TEST_F(ConsentKeyTest, UnusableKeyFilesAreTypedErrorsThatNeverQuoteTheFile) {
  const fs::path junk = dir_ / "junk";
  write_file(junk, "not a key Zqxsecret\n", fs::perms::owner_read | fs::perms::owner_write);
  try {
    UserDecisionKey::load(junk);
    FAIL() << "loaded a junk key";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("Zqxsecret")));
  }
  CTX_EXPECT_THROW(UserDecisionKey::load(dir_ / "missing"), NotFound, "not a readable file");
  // An RSA PEM key is not an Ed25519 key.
  EVP_PKEY* rsa = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, rsa, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  write_file(dir_ / "rsa.pem", std::string(data, static_cast<std::size_t>(size)),
             fs::perms::owner_read | fs::perms::owner_write);
  BIO_free(bio);
  EVP_PKEY_free(rsa);
  CTX_EXPECT_THROW(UserDecisionKey::load(dir_ / "rsa.pem"), InvalidArgument, "not an Ed25519 key");
}

}  // namespace
}  // namespace ctx::cli
