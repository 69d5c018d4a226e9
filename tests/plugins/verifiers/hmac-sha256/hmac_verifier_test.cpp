#include "plugins/verifiers/hmac-sha256/core/hmac_verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "tests/plugins/verifiers/support/wire_fixture.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::hmac_sha256 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::payload_with;
using testing::sample_claims;
using testing::signing_bytes_of;

// The seeds' consent test key ("managed-query-consent-test-key", 30 bytes) in hex.
constexpr char kKey[] = "managed-query-consent-test-key";
constexpr char kKeyHex[] = "6d616e616765642d71756572792d636f6e73656e742d746573742d6b6579";
constexpr char kConfig[] =
    R"({"key_hex":"6d616e616765642d71756572792d636f6e73656e742d746573742d6b6579"})";

struct Signed {
  std::string payload;
  std::string signing_bytes;
};

Signed signed_by(std::string_view key, const runtime::SignedAssertionClaims& claims) {
  const std::string bytes = signing_bytes_of(claims);
  return {payload_with(claims, HmacVerifier::sign(key, bytes)), bytes};
}

TEST(HmacVerifier, AcceptsTheMacOfTheWireSigningBytes) {
  const HmacVerifier verifier(kConfig);
  const Signed s = signed_by(kKey, sample_claims());
  EXPECT_TRUE(verifier.verify(s.payload, s.signing_bytes));
}

TEST(HmacVerifier, RejectsOneAlteredSigningByte) {
  const HmacVerifier verifier(kConfig);
  const Signed s = signed_by(kKey, sample_claims());
  for (std::size_t i = 0; i < s.signing_bytes.size(); i += 7) {
    std::string altered = s.signing_bytes;
    altered[i] = static_cast<char>(altered[i] ^ 0x01);
    EXPECT_FALSE(verifier.verify(s.payload, altered)) << "byte " << i;
  }
}

TEST(HmacVerifier, RejectsSigningBytesOfOtherClaimsEvenWhenTheMacCoversThem) {
  // A MAC over claims B presented inside a payload claiming A is refused.
  const HmacVerifier verifier(kConfig);
  runtime::SignedAssertionClaims denied = sample_claims();
  denied.decision = engine::Decision::kDenied;
  const Signed real = signed_by(kKey, denied);
  const std::string granted_payload =
      payload_with(sample_claims(), HmacVerifier::sign(kKey, real.signing_bytes));
  EXPECT_FALSE(verifier.verify(granted_payload, real.signing_bytes));
}

TEST(HmacVerifier, RejectsAnotherKeyAndEveryFlippedProofBit) {
  const HmacVerifier verifier(kConfig);
  EXPECT_FALSE(verifier.verify(signed_by("another-key-another-key", sample_claims()).payload,
                               signing_bytes_of(sample_claims())));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string mac = HmacVerifier::sign(kKey, bytes);
  for (std::size_t bit = 0; bit < mac.size() * 8; ++bit) {
    std::string flipped = mac;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), flipped), bytes)) << "bit " << bit;
  }
}

TEST(HmacVerifier, MatchesRfc4231TestCase2) {
  // Key "Jefe" is too short for a configuration, but the signing primitive is the standard one.
  EXPECT_EQ(plugin_common::to_hex(HmacVerifier::sign("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacVerifier, RejectsMalformedPayloadsWithoutEchoingThem) {
  const HmacVerifier verifier(kConfig);
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string mac = HmacVerifier::sign(kKey, bytes);
  CTX_EXPECT_THROW(verifier.verify("", bytes), InvalidArgument, "assertion is not valid json");
  CTX_EXPECT_THROW(verifier.verify("{}", bytes), InvalidArgument,
                   "needs a string \"proof_base64\"");
  CTX_EXPECT_THROW(verifier.verify(R"({"proof_base64":"abc"})", bytes), InvalidArgument,
                   "proof_base64 is not base64");
  CTX_EXPECT_THROW(verifier.verify(R"({"proof_base64":""})", bytes), InvalidArgument,
                   "proof must be 1..8192 bytes");
  EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), mac.substr(0, 31)), bytes));
  EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), mac + "x"), bytes));
  EXPECT_FALSE(verifier.verify(payload_with(sample_claims(), "invalid-proof"), bytes));
  CTX_EXPECT_THROW(verifier.verify(R"({"proof_base64":"AAAA","proof_base64":"AAAA"})", bytes),
                   InvalidArgument, "duplicate key");
  try {
    verifier.verify(R"({"proof_base64":"c2VjcmV0LXByb29m!"})", bytes);
    FAIL() << "expected a malformed-proof error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr("c2VjcmV0")));
    EXPECT_THAT(e.what(), Not(HasSubstr(kKeyHex)));
  }
}

TEST(HmacVerifier, RefusesMissingEmptyShortOrNonHexKeysWithoutEchoingThem) {
  CTX_EXPECT_THROW(HmacVerifier(""), InvalidArgument, "config is not valid json");
  CTX_EXPECT_THROW(HmacVerifier("{}"), InvalidArgument, "needs a string \"key_hex\"");
  CTX_EXPECT_THROW(HmacVerifier(R"({"key_hex":""})"), InvalidArgument, "too short");
  CTX_EXPECT_THROW(HmacVerifier(R"({"key_hex":"00112233445566778899aabbccddee"})"), InvalidArgument,
                   "need at least 16 bytes");
  try {
    HmacVerifier(R"({"key_hex":"secretsecretsecretsecretsecretsecretXX"})");
    FAIL() << "expected a non-hex key error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("key_hex is not hex"));
    EXPECT_THAT(e.what(), Not(HasSubstr("secretsecret")));
  }
  EXPECT_NO_THROW(HmacVerifier(R"({"key_hex":"00112233445566778899aabbccddeeff"})"));
}

}  // namespace
}  // namespace ctx::hmac_sha256
