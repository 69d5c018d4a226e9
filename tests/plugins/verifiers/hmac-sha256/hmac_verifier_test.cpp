#include "plugins/verifiers/hmac-sha256/core/hmac_verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::hmac_sha256 {
namespace {

// The seeds' consent test key ("managed-query-consent-test-key", 30 bytes) in hex.
constexpr char kKey[] = "managed-query-consent-test-key";
constexpr char kKeyHex[] = "6d616e616765642d71756572792d636f6e73656e742d746573742d6b6579";
constexpr char kConfig[] =
    R"({"key_hex":"6d616e616765642d71756572792d636f6e73656e742d746573742d6b6579"})";

std::string assertion(const std::string& mac_hex, const std::string& scheme = "hmac-sha256") {
  return R"({"decision":"granted","proof":{"mac_hex":")" + mac_hex + R"(","scheme":")" + scheme +
         R"("}})";
}

TEST(HmacVerifier, AcceptsExactlyTheMacOfTheSigningBytes) {
  const HmacVerifier verifier(kConfig);
  const std::string mac = HmacVerifier::sign_hex(kKey, "signing bytes");
  EXPECT_TRUE(verifier.verify(assertion(mac), "signing bytes"));
  EXPECT_FALSE(verifier.verify(assertion(mac), "signing bytes!"));
  EXPECT_FALSE(verifier.verify(assertion(HmacVerifier::sign_hex("other-key-other-key", "x")), "x"));
}

TEST(HmacVerifier, AcceptsUpperCaseHexOfTheSameMac) {
  const HmacVerifier verifier(kConfig);
  std::string mac = HmacVerifier::sign_hex(kKey, "m");
  for (char& c : mac) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(verifier.verify(assertion(mac), "m"));
}

TEST(HmacVerifier, RejectsEveryFlippedBit) {
  const HmacVerifier verifier(kConfig);
  const std::string mac = HmacVerifier::sign_hex(kKey, "m");
  for (std::size_t i = 0; i < mac.size(); ++i) {
    std::string flipped = mac;
    flipped[i] = flipped[i] == '0' ? '1' : '0';
    EXPECT_FALSE(verifier.verify(assertion(flipped), "m")) << "position " << i;
  }
}

TEST(HmacVerifier, MatchesRfc4231TestCase2) {
  // Key "Jefe" is too short for a configuration, but the signing primitive is the standard one.
  EXPECT_EQ(HmacVerifier::sign_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacVerifier, RejectsMalformedAssertionsWithoutEchoingThem) {
  const HmacVerifier verifier(kConfig);
  const std::string mac = HmacVerifier::sign_hex(kKey, "m");
  CTX_EXPECT_THROW(verifier.verify("", "m"), InvalidArgument, "assertion is not valid json");
  CTX_EXPECT_THROW(verifier.verify("{}", "m"), InvalidArgument, "needs an object \"proof\"");
  CTX_EXPECT_THROW(verifier.verify(assertion(mac, "ed25519"), "m"), InvalidArgument,
                   "scheme is not hmac-sha256");
  CTX_EXPECT_THROW(verifier.verify(assertion(mac.substr(2)), "m"), InvalidArgument,
                   "not 64 hex digits");
  CTX_EXPECT_THROW(verifier.verify(assertion("zz" + mac.substr(2)), "m"), InvalidArgument,
                   "mac_hex is not hex");
  CTX_EXPECT_THROW(verifier.verify(R"({"proof":{"scheme":"hmac-sha256","mac_hex":1}})", "m"),
                   InvalidArgument, "mac_hex");
  try {
    verifier.verify(assertion(mac.substr(1) + "x"), "m");
    FAIL() << "expected a malformed-proof error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr(mac.substr(1, 20))));
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr(kKeyHex)));
  }
}

TEST(HmacVerifier, RejectsDuplicateProofMembers) {
  const HmacVerifier verifier(kConfig);
  const std::string mac = HmacVerifier::sign_hex(kKey, "m");
  const std::string doubled =
      R"({"proof":{"scheme":"hmac-sha256","mac_hex":")" + mac + R"(","mac_hex":")" + mac + R"("}})";
  CTX_EXPECT_THROW(verifier.verify(doubled, "m"), InvalidArgument, "duplicate key");
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
    EXPECT_THAT(e.what(), ::testing::HasSubstr("key_hex is not hex"));
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("secretsecret")));
  }
  EXPECT_NO_THROW(HmacVerifier(R"({"key_hex":"00112233445566778899aabbccddeeff"})"));
}

}  // namespace
}  // namespace ctx::hmac_sha256
