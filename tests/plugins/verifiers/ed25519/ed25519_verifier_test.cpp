#include "plugins/verifiers/ed25519/core/ed25519_verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <barrier>
#include <ctx/sdk/error.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/plugins/verifiers/support/wire_fixture.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::ed25519 {
namespace {

using ::testing::HasSubstr;
using testing::must_run;
using ::testing::Not;
using testing::payload_with;
using testing::read_file;
using testing::sample_claims;
using testing::signing_bytes_of;
using testing::write_file;

std::string config_of(const std::string& pem) {
  return nlohmann::json{{"public_key_pem", pem}}.dump();
}

// Keys made by the real openssl binary; signatures by `openssl pkeyutl -sign -rawin`.
class Ed25519VerifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (const char* name : {"alice", "mallory"}) {
      const std::string key = (*dir_ / (std::string(name) + ".pem")).string();
      must_run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", key});
      must_run({"openssl", "pkey", "-in", key, "-pubout", "-out", key + ".pub"});
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string public_pem(const std::string& name) {
    return read_file(*dir_ / (name + ".pem.pub"));
  }
  static std::string sign(const std::string& name, const std::string& message) {
    write_file(*dir_ / "message", message);
    must_run({"openssl", "pkeyutl", "-sign", "-rawin", "-inkey", (*dir_ / (name + ".pem")).string(),
              "-in", (*dir_ / "message").string(), "-out", (*dir_ / "signature").string()});
    return read_file(*dir_ / "signature");
  }

  static testing::TempDir* dir_;
};

testing::TempDir* Ed25519VerifierTest::dir_ = nullptr;

TEST_F(Ed25519VerifierTest, AcceptsAnOpensslSignatureOverTheSigningBytes) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string signature = sign("alice", bytes);
  ASSERT_EQ(signature.size(), kSignatureBytes);
  EXPECT_TRUE(verifier.verify(payload_with(sample_claims(), signature), bytes));
  // The same verifier, many calls: no state is kept between them.
  EXPECT_TRUE(verifier.verify(payload_with(sample_claims(), signature), bytes));
}

TEST_F(Ed25519VerifierTest, RejectsOneAlteredSigningByte) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string payload = payload_with(sample_claims(), sign("alice", bytes));
  for (std::size_t i = 0; i < bytes.size(); i += 11) {
    std::string altered = bytes;
    altered[i] = static_cast<char>(altered[i] ^ 0x20);
    EXPECT_FALSE(verifier.verify(payload, altered)) << "byte " << i;
  }
}

TEST_F(Ed25519VerifierTest, RejectsAnotherKeysSignature) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  const std::string bytes = signing_bytes_of(sample_claims());
  EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), sign("mallory", bytes)), bytes));
  const Ed25519Verifier mallory(config_of(public_pem("mallory")));
  EXPECT_FALSE(mallory.verify(payload_with(sample_claims(), sign("alice", bytes)), bytes));
}

TEST_F(Ed25519VerifierTest, RejectsASignatureOfOtherClaimsInThisPayload) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  runtime::SignedAssertionClaims denied = sample_claims();
  denied.decision = engine::Decision::kDenied;
  const std::string denied_bytes = signing_bytes_of(denied);
  const std::string signature = sign("alice", denied_bytes);
  EXPECT_TRUE(verifier.verify(payload_with(denied, signature), denied_bytes));
  EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), signature), denied_bytes));
}

TEST_F(Ed25519VerifierTest, RejectsFlippedAndTruncatedSignatures) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string signature = sign("alice", bytes);
  for (std::size_t i = 0; i < signature.size(); ++i) {
    std::string flipped = signature;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x01);
    EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), flipped), bytes)) << "byte " << i;
  }
  CTX_EXPECT_THROW(verifier.verify(payload_with(sample_claims(), signature.substr(0, 63)), bytes),
                   InvalidArgument, "not a 64-byte signature");
  CTX_EXPECT_THROW(verifier.verify(payload_with(sample_claims(), signature + "x"), bytes),
                   InvalidArgument, "not a 64-byte signature");
  CTX_EXPECT_THROW(verifier.verify("{}", bytes), InvalidArgument, "proof_base64");
  CTX_EXPECT_THROW(verifier.verify("[1]", bytes), InvalidArgument, "not a json object");
}

TEST_F(Ed25519VerifierTest, OneInstanceVerifiesFromManyThreadsAtOnce) {
  const Ed25519Verifier verifier(config_of(public_pem("alice")));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string payload = payload_with(sample_claims(), sign("alice", bytes));
  const std::string other = bytes.substr(0, bytes.size() - 2) + "x}";
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::vector<int> right(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 100; ++i) {
        right[t] += verifier.verify(payload, bytes) && !verifier.verify(payload, other) ? 1 : 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(right[t], 100) << t;
}

TEST_F(Ed25519VerifierTest, RefusesConfigsThatAreNotOneEd25519PublicKey) {
  CTX_EXPECT_THROW(Ed25519Verifier("{}"), InvalidArgument, "public_key_pem");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of("")), InvalidArgument, "public key block");
  const std::string pem = public_pem("alice");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(pem.substr(0, pem.size() / 2))), InvalidArgument,
                   "not a pem public key");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(pem + pem)), InvalidArgument, "text after the key");
  // A private key (even one holding the public half) is not a public-key config.
  const std::string private_pem = read_file(*dir_ / "alice.pem");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(private_pem)), InvalidArgument, "public key block");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(private_pem + pem)), InvalidArgument,
                   "public key block");
  // Another algorithm's SubjectPublicKeyInfo.
  const std::string ec = (*dir_ / "p256.pem").string();
  must_run({"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
            ec});
  must_run({"openssl", "pkey", "-in", ec, "-pubout", "-out", ec + ".pub"});
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(read_file(ec + ".pub"))), InvalidArgument,
                   "not an ed25519 key");
  try {
    Ed25519Verifier(config_of(pem.substr(0, 40) + "!!" + pem.substr(42)));
    FAIL() << "expected a malformed-key error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr(pem.substr(27, 20))));
  }
}

// The key is read as exactly the DER of an Ed25519 SubjectPublicKeyInfo: another curve's key of
// the same length, one byte more or less, or an armor header is refused, each typed.
TEST_F(Ed25519VerifierTest, ReadsOnlyTheExactEd25519SubjectPublicKeyInfo) {
  const auto armored = [](const std::string& der, const std::string& header = "") {
    std::string b64(4 * ((der.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                  reinterpret_cast<const unsigned char*>(der.data()),
                                  static_cast<int>(der.size()));
    b64.resize(static_cast<std::size_t>(n));
    return "-----BEGIN PUBLIC KEY-----\n" + header + b64 + "\n-----END PUBLIC KEY-----\n";
  };
  const std::string pub = (*dir_ / "alice.pem.pub").string();
  must_run({"openssl", "pkey", "-pubin", "-in", pub, "-outform", "DER", "-out", pub + ".der"});
  const std::string der = read_file(pub + ".der");
  ASSERT_EQ(der.size(), 44u);
  // The same bytes re-armored are the same key.
  EXPECT_NO_THROW(Ed25519Verifier(config_of(armored(der))));
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(armored(der + std::string(1, '\0')))),
                   InvalidArgument, "not an ed25519 key");
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(armored(der.substr(0, 43)))), InvalidArgument,
                   "not an ed25519 key");
  CTX_EXPECT_THROW(
      Ed25519Verifier(config_of(armored(der, "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                                             "00000000000000000000000000000000\n\n"))),
      InvalidArgument, "not a pem public key");
  // X25519: a 44-byte SubjectPublicKeyInfo of the same shape under another algorithm.
  const std::string x = (*dir_ / "x25519.pem").string();
  must_run({"openssl", "genpkey", "-algorithm", "X25519", "-out", x});
  must_run({"openssl", "pkey", "-in", x, "-pubout", "-out", x + ".pub"});
  CTX_EXPECT_THROW(Ed25519Verifier(config_of(read_file(x + ".pub"))), InvalidArgument,
                   "not an ed25519 key");
}

}  // namespace
}  // namespace ctx::ed25519
