// The three verifier .so files, pinned and loaded in process by the host's own PluginLoader
// (Boost.DLL) and called through the engine's VerifierPort, on wire payloads and signing bytes
// from the host's assertion codec, signed by the real openssl / ssh-keygen (sk: OpenSSL).
#include <gtest/gtest.h>

#include <ctx/loader/plugin_loader.hpp>
#include <nlohmann/json.hpp>

#include "host/plugins/abi_adapters.hpp"
#include "plugins/common/bytes.hpp"
#include "tests/plugins/verifiers/sshsig/ssh_test_keys.hpp"
#include "tests/plugins/verifiers/support/wire_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::plugins {
namespace {

using engine::Verdict;
using testing::must_run;
using testing::payload_with;
using testing::read_file;
using testing::sample_claims;
using testing::signing_bytes_of;
using testing::write_file;

class VerifierModulesTest : public ::testing::Test {
 protected:
  std::unique_ptr<AbiVerifier> open(const char* module, const nlohmann::json& config) {
    return std::make_unique<AbiVerifier>(loader_.load(loader_.inspect_for_pin(module)),
                                         config.dump());
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  testing::TempDir state_;
  testing::TempDir dir_;
  PluginLoader loader_{state_.path()};
  const std::string bytes_ = signing_bytes_of(sample_claims());
};

std::string altered(std::string bytes) {
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
  return bytes;
}

TEST_F(VerifierModulesTest, HmacModule) {
  const std::string key = "managed-query-consent-test-key";
  const auto verifier = open(CTX_VERIFIER_MODULE_HMAC, {{"key_hex", plugin_common::to_hex(key)}});
  const auto other = open(CTX_VERIFIER_MODULE_HMAC, {{"key_hex", std::string(64, 'a')}});
  const std::string payload =
      payload_with(sample_claims(), plugin_common::hmac_sha256(key, bytes_));
  EXPECT_EQ(verifier->verify(payload, bytes_), Verdict::kAccepted);
  EXPECT_EQ(verifier->verify(payload, altered(bytes_)), Verdict::kRejected);
  EXPECT_EQ(other->verify(payload, bytes_), Verdict::kRejected);
  EXPECT_EQ(verifier->id(), "hmac-sha256");
}

TEST_F(VerifierModulesTest, Ed25519Module) {
  for (const char* name : {"a", "b"}) {
    must_run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", path(name)});
    must_run({"openssl", "pkey", "-in", path(name), "-pubout", "-out", path(name) + ".pub"});
  }
  write_file(path("message"), bytes_);
  must_run({"openssl", "pkeyutl", "-sign", "-rawin", "-inkey", path("a"), "-in", path("message"),
            "-out", path("signature")});
  const std::string payload = payload_with(sample_claims(), read_file(path("signature")));
  const auto verifier =
      open(CTX_VERIFIER_MODULE_ED25519, {{"public_key_pem", read_file(path("a.pub"))}});
  const auto other =
      open(CTX_VERIFIER_MODULE_ED25519, {{"public_key_pem", read_file(path("b.pub"))}});
  EXPECT_EQ(verifier->verify(payload, bytes_), Verdict::kAccepted);
  EXPECT_EQ(verifier->verify(payload, altered(bytes_)), Verdict::kRejected);
  EXPECT_EQ(other->verify(payload, bytes_), Verdict::kRejected);
  EXPECT_EQ(verifier->id(), "ed25519");
}

TEST_F(VerifierModulesTest, SshsigModule) {
  for (const char* name : {"a", "b"}) {
    must_run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path(name)});
  }
  const auto line = [&](const char* name) {
    const std::string text = read_file(path(name) + ".pub");
    return text.substr(0, text.find('\n'));
  };
  write_file(path("message"), bytes_);
  const auto sign = [&](const std::string& ns) {
    std::filesystem::remove(path("message.sig"));
    must_run({"ssh-keygen", "-Y", "sign", "-f", path("a"), "-n", ns, path("message")});
    return payload_with(sample_claims(), read_file(path("message.sig")));
  };
  const auto verifier = open(CTX_VERIFIER_MODULE_SSHSIG, {{"public_key", line("a")}});
  const auto other = open(CTX_VERIFIER_MODULE_SSHSIG, {{"public_key", line("b")}});
  const std::string payload = sign("ctx-consent");
  EXPECT_EQ(verifier->verify(payload, bytes_), Verdict::kAccepted);
  EXPECT_EQ(verifier->verify(payload, altered(bytes_)), Verdict::kRejected);
  EXPECT_EQ(other->verify(payload, bytes_), Verdict::kRejected);
  EXPECT_EQ(verifier->verify(sign("file"), bytes_), Verdict::kRejected);
  EXPECT_EQ(verifier->id(), "sshsig");
}

TEST_F(VerifierModulesTest, SshsigModuleRequiresUserPresenceForSecurityKeys) {
  namespace tk = sshsig::testkeys;
  const tk::Pkey key = tk::generate_p256();
  const sshsig::KeyType type = sshsig::KeyType::kSkEcdsaP256;
  const auto verifier =
      open(CTX_VERIFIER_MODULE_SSHSIG,
           {{"public_key", tk::authorized_line(tk::public_blob(key.get(), type), type)}});
  tk::SigningOptions touched;
  tk::SigningOptions untouched;
  untouched.flags = 0x00;
  EXPECT_EQ(verifier->verify(payload_with(sample_claims(), tk::armor(tk::sshsig_blob(
                                                               key.get(), type, bytes_, touched))),
                             bytes_),
            Verdict::kAccepted);
  EXPECT_EQ(
      verifier->verify(payload_with(sample_claims(),
                                    tk::armor(tk::sshsig_blob(key.get(), type, bytes_, untouched))),
                       bytes_),
      Verdict::kRejected);
}

}  // namespace
}  // namespace ctx::plugins
