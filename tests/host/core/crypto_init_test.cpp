// What `ctx` and the conformance kit run on after init_crypto_without_config (no configuration
// file, no legacy name tables): this binary's main initialises OpenSSL that way before any test,
// and each test does one kind of cryptography ctx or a bundled plugin does — digests and MACs,
// Ed25519 keys (the demo's and the user's, passphrase-protected PKCS#8 too), and the RSA and
// ECDSA signatures the sshsig verifier checks.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstring>
#include <memory>
#include <string>

#include "host/core/crypto.hpp"

namespace ctx::core {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Signs `message` with `key` (digest `md`, or none for Ed25519) and verifies it with the same key.
bool signs_and_verifies(EVP_PKEY* key, const EVP_MD* md, const std::string& message) {
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> sign(EVP_MD_CTX_new());
  std::size_t size = 0;
  if (EVP_DigestSignInit(sign.get(), nullptr, md, nullptr, key) != 1 ||
      EVP_DigestSign(sign.get(), nullptr, &size, data, message.size()) != 1) {
    return false;
  }
  std::string signature(size, '\0');
  auto* out = reinterpret_cast<unsigned char*>(signature.data());
  if (EVP_DigestSign(sign.get(), out, &size, data, message.size()) != 1) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> verify(EVP_MD_CTX_new());
  if (EVP_DigestVerifyInit(verify.get(), nullptr, md, nullptr, key) != 1) return false;
  const bool good = EVP_DigestVerify(verify.get(), out, size, data, message.size()) == 1;
  out[0] ^= 1;
  const bool forged = EVP_DigestVerify(verify.get(), out, size, data, message.size()) == 1;
  return good && !forged;
}

TEST(CryptoWithoutLegacyNames, TheLegacyNameTablesAreEmpty) {
  // What makes the other tests meaningful: these lookups go through the tables ctx leaves out.
  EXPECT_EQ(EVP_get_digestbyname("sha256"), nullptr);
  EXPECT_EQ(EVP_get_cipherbyname("aes-256-cbc"), nullptr);
}

TEST(CryptoWithoutLegacyNames, DigestsAndMacsGiveTheirKnownAnswers) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// `openssl genpkey -algorithm ed25519 -aes-256-cbc -pass pass:"correct horse"` (PBES2).
constexpr const char* kEncryptedKey =
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
    "MIGbMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAi48zywWuttvwICCAAw\n"
    "DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEMverdbgBCUR5u+foagiT6wEQGkG\n"
    "ENdLDn7dRsA2GbQHjG/vxJH/4RQ6JjXRW/p8CuLe1qVxwE94jazcXDU6+ghdCJYE\n"
    "ay836ZZ5mqO0o6xbW6g=\n"
    "-----END ENCRYPTED PRIVATE KEY-----\n";

TEST(CryptoWithoutLegacyNames, Ed25519KeysSignAndAPassphraseProtectedKeyReads) {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(signs_and_verifies(key.get(), nullptr, "ctx decision"));
  // `ctx consent approve --key` reads PKCS#8 PEM, passphrase-protected ones too.
  std::unique_ptr<BIO, BioFree> pem(BIO_new_mem_buf(kEncryptedKey, -1));
  char passphrase[] = "correct horse";
  Pkey read(PEM_read_bio_PrivateKey(pem.get(), nullptr, nullptr, passphrase));
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(EVP_PKEY_get_id(read.get()), EVP_PKEY_ED25519);
  EXPECT_TRUE(signs_and_verifies(read.get(), nullptr, "ctx decision"));
}

TEST(CryptoWithoutLegacyNames, RsaAndEcdsaSignaturesVerify) {
  Pkey rsa(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}));
  ASSERT_NE(rsa, nullptr);
  EXPECT_TRUE(signs_and_verifies(rsa.get(), EVP_sha512(), "ssh signature"));
  EXPECT_TRUE(signs_and_verifies(rsa.get(), EVP_sha256(), "ssh signature"));
  Pkey ec(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  ASSERT_NE(ec, nullptr);
  EXPECT_TRUE(signs_and_verifies(ec.get(), EVP_sha256(), "ssh signature"));
}

}  // namespace
}  // namespace ctx::core

int main(int argc, char** argv) {
  ctx::core::init_crypto_without_config();  // first, as in ctx's main
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
