// TrustedVerifierRegistry over the real ed25519 / sshsig verifier .so files, loaded through the
// host's PluginLoader and PluginRegistry; keys and signatures from openssl and ssh-keygen.
#include "host/runtime/consent/verifier_registry.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctx/loader/errors.hpp>

#include "host/app/installation.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "tests/host/runtime/consent/consent_fixture.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"

namespace ctx::runtime {
namespace {

using testing::altered;
using testing::claims_for;
using testing::kAudience;
using testing::kAuthenticator;
using testing::kPrincipal;
using testing::make_challenge;
using testing::read_file;
using testing::signed_payload;
using testing::throws_exactly;
using testing::write_file;

class VerifierRegistryTest : public ::testing::Test {
 protected:
  VerifierRegistryTest() {
    testing::load_verifier(plugins_, loader_, CTX_CONSENT_ED25519_SO);
    testing::load_verifier(plugins_, loader_, CTX_CONSENT_SSHSIG_SO);
    std::filesystem::create_directory(state_.path() / "state");
    ::chmod((state_.path() / "state").c_str(), 0700);
  }
  std::filesystem::path state_dir() const { return state_.path() / "state"; }

  testing::TempDir state_;
  testing::TempDir keys_;
  plugins::PluginLoader loader_{state_.path() / "loader-state"};
  ::ctx::app::LoadedPlugins plugins_;
  testing::Signers signers_{keys_.path()};
  const VerifierKey key_{kAudience, kAuthenticator, kPrincipal};
};

TEST_F(VerifierRegistryTest, Ed25519RegistrationVerifiesThroughThePinnedPlugin) {
  const std::string pem = signers_.ed25519_key("a");
  TrustedVerifierRegistry registry(state_dir(), plugins_);
  registry.add(key_, "ed25519", core::Json{{"public_key_pem", pem}});
  const auto verifier = registry.resolve(key_);
  EXPECT_EQ(
      verifier->identity_digest(),
      plugins_.registry().get(plugins::PluginKind::kVerifier, "ed25519")->identity().digest());
  const auto claims = claims_for(make_challenge());
  const std::string payload =
      signed_payload(claims, [&](const std::string& b) { return signers_.ed25519_sign("a", b); });
  const SignedAssertion assertion = decode_signed_assertion(payload);
  EXPECT_TRUE(verifier->verify(assertion, payload, assertion.signing_bytes()));
  // Not the assertion's own signing bytes → false without a plugin verdict.
  EXPECT_FALSE(verifier->verify(assertion, payload, altered(assertion.signing_bytes())));
  // A signature over one altered signing byte.
  const std::string forged = signed_payload(
      claims, [&](const std::string& b) { return signers_.ed25519_sign("a", altered(b)); });
  EXPECT_FALSE(verifier->verify(decode_signed_assertion(forged), forged,
                                decode_signed_assertion(forged).signing_bytes()));
  // A malformed proof (not 64 bytes): AbiVerifier throws InvalidArgument → a rejection.
  auto short_claims = claims;
  const std::string malformed = testing::payload_with(short_claims, "short");
  EXPECT_FALSE(verifier->verify(decode_signed_assertion(malformed), malformed,
                                decode_signed_assertion(malformed).signing_bytes()));
  // An assertion naming another key is refused by the pinned verifier itself.
  auto other = claims;
  other.authenticator_id = "another-authenticator";
  const std::string other_payload =
      signed_payload(other, [&](const std::string& b) { return signers_.ed25519_sign("a", b); });
  EXPECT_FALSE(verifier->verify(decode_signed_assertion(other_payload), other_payload,
                                decode_signed_assertion(other_payload).signing_bytes()));
}

TEST_F(VerifierRegistryTest, PersistsCanonicalPrivateJsonAndReopens) {
  const std::string pem = signers_.ed25519_key("a");
  const std::string ssh = signers_.ssh_key("s");
  {
    TrustedVerifierRegistry registry(state_dir(), plugins_);
    registry.add(key_, "ed25519", core::Json{{"public_key_pem", pem}});
    registry.add({kAudience, "ssh-authenticator", kPrincipal}, "sshsig",
                 core::Json{{"public_key", ssh}});
    EXPECT_TRUE(throws_exactly<InvalidArgument>(
        [&] { registry.add(key_, "ed25519", core::Json{{"public_key_pem", pem}}); }));
  }
  const std::filesystem::path file = state_dir() / kVerifierRegistryFileName;
  struct stat st {};
  ASSERT_EQ(::lstat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  const std::string bytes = read_file(file);
  EXPECT_EQ(core::canonical_json(core::parse_json(bytes)), bytes);
  TrustedVerifierRegistry reopened(state_dir(), plugins_);
  ASSERT_EQ(reopened.registrations().size(), 2u);
  const auto claims = claims_for(make_challenge());
  auto ssh_claims = claims;
  ssh_claims.authenticator_id = "ssh-authenticator";
  const std::string payload = signed_payload(
      ssh_claims, [&](const std::string& b) { return signers_.ssh_sign("s", b); });
  const SignedAssertion assertion = decode_signed_assertion(payload);
  EXPECT_TRUE(reopened.resolve(verifier_key_of(assertion))
                  ->verify(assertion, payload, assertion.signing_bytes()));
}

TEST_F(VerifierRegistryTest, UnknownKeyAndUnpinnedPluginAreTypedRefusals) {
  TrustedVerifierRegistry registry(state_dir(), plugins_);
  EXPECT_TRUE(throws_exactly<UnknownHumanDecisionVerifier>([&] { (void)registry.resolve(key_); }));
  EXPECT_TRUE(throws_exactly<plugins::PluginNotPinned>(
      [&] { registry.add(key_, "hmac-sha256", core::Json{{"key_hex", std::string(64, 'a')}}); }));
  EXPECT_FALSE(std::filesystem::exists(state_dir() / kVerifierRegistryFileName));
}

TEST_F(VerifierRegistryTest, ChangedPinnedIdentityFailsClosed) {
  const std::string pem = signers_.ed25519_key("a");
  {
    TrustedVerifierRegistry registry(state_dir(), plugins_);
    registry.add(key_, "ed25519", core::Json{{"public_key_pem", pem}});
  }
  // The registry now pins another build of the plugin (a different identity digest).
  const std::filesystem::path file = state_dir() / kVerifierRegistryFileName;
  core::Json json = core::parse_json(read_file(file));
  json["verifiers"][0]["identity_digest"] = testing::digest_of("another ed25519 build");
  write_file(file, core::canonical_json(json));
  TrustedVerifierRegistry repinned(state_dir(), plugins_);
  EXPECT_TRUE(throws_exactly<VerifierPinMismatch>([&] { (void)repinned.resolve(key_); }));
  // And a registry whose plugin is not loaded at all.
  ::ctx::app::LoadedPlugins empty;
  {
    json["verifiers"][0]["identity_digest"] =
        plugins_.registry().get(plugins::PluginKind::kVerifier, "ed25519")->identity().digest();
    write_file(file, core::canonical_json(json));
  }
  TrustedVerifierRegistry unloaded(state_dir(), empty);
  EXPECT_TRUE(throws_exactly<VerifierPinMismatch>([&] { (void)unloaded.resolve(key_); }));
  TrustedVerifierRegistry restored(state_dir(), plugins_);
  EXPECT_NO_THROW((void)restored.resolve(key_));
}

TEST_F(VerifierRegistryTest, TamperedOrUnsafeFilesAreRefused) {
  const std::filesystem::path file = state_dir() / kVerifierRegistryFileName;
  write_file(file, "{\"schema\":\"ctx.consent-verifier-registry-v1\",\"verifiers\":[{}]}");
  ::chmod(file.c_str(), 0600);
  EXPECT_TRUE(throws_exactly<VerifierRegistryCorruption>(
      [&] { TrustedVerifierRegistry registry(state_dir(), plugins_); }));
  write_file(file, "{\"schema\":\"ctx.consent-verifier-registry-v1\",\"verifiers\":[]}");
  ::chmod(file.c_str(), 0644);
  EXPECT_TRUE(throws_exactly<UnsafeStateFile>(
      [&] { TrustedVerifierRegistry registry(state_dir(), plugins_); }));
  ::chmod(file.c_str(), 0600);
  std::filesystem::rename(file, state_dir() / "real.json");
  std::filesystem::create_symlink(state_dir() / "real.json", file);
  EXPECT_TRUE(throws_exactly<UnsafeStateFile>(
      [&] { TrustedVerifierRegistry registry(state_dir(), plugins_); }));
}

// A registration whose file cannot be renamed into place (FaultyStateFs) is a typed error: the
// file on disk is byte-identical, the registry in memory unchanged, no stage left; a failed
// directory fsync after the rename is reported too. The next add goes through.
TEST_F(VerifierRegistryTest, AFailedRenameOrDirectoryFsyncKeepsTheRegistryAsItWas) {
  const std::string pem = signers_.ed25519_key("a");
  const std::string ssh = signers_.ssh_key("s");
  const VerifierKey ssh_key{kAudience, "ssh-authenticator", kPrincipal};
  testing::FaultyStateFs faulty(store::default_state_fs());
  TrustedVerifierRegistry registry(state_dir(), plugins_, faulty);
  registry.add(key_, "ed25519", core::Json{{"public_key_pem", pem}});
  const std::filesystem::path file = state_dir() / kVerifierRegistryFileName;
  const std::string before = read_file(file);
  const auto entries = [&] {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(state_dir())) {
      out.push_back(entry.path().filename().string());
    }
    return out;
  };
  faulty.fail(core::StateFsStep::kRename, EIO);
  try {
    registry.add(ssh_key, "sshsig", core::Json{{"public_key", ssh}});
    ADD_FAILURE() << "the failed rename was not reported";
  } catch (const core::StateFsError& error) {
    EXPECT_EQ(std::string(error.what()),
              "consent verifier registry: rename failed: Input/output error");
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
  }
  EXPECT_EQ(read_file(file), before);
  EXPECT_EQ(registry.registrations().size(), 1u);
  EXPECT_EQ(entries(), std::vector<std::string>{std::string(kVerifierRegistryFileName)});
  EXPECT_EQ(TrustedVerifierRegistry(state_dir(), plugins_).registrations().size(), 1u);

  faulty.fail(core::StateFsStep::kSyncDir, EIO, state_dir().filename().string());
  EXPECT_THROW(registry.add(ssh_key, "sshsig", core::Json{{"public_key", ssh}}),
               core::StateFsError);
  EXPECT_EQ(faulty.pending(), 0u);
  registry.add(ssh_key, "sshsig", core::Json{{"public_key", ssh}});
  EXPECT_EQ(TrustedVerifierRegistry(state_dir(), plugins_).registrations().size(), 2u);
}

}  // namespace
}  // namespace ctx::runtime
