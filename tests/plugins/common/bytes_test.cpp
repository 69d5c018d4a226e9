#include "plugins/common/bytes.hpp"

#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::plugin_common {
namespace {

TEST(PluginBytes, HexRoundTripsAndRejectsNonHex) {
  const std::string bytes("\x00\x7f\xff\x10", 4);
  EXPECT_EQ(to_hex(bytes), "007fff10");
  EXPECT_EQ(from_hex("007FFF10", "x"), bytes);
  CTX_EXPECT_THROW(from_hex("abc", "key"), InvalidArgument, "key is not hex");
  CTX_EXPECT_THROW(from_hex("zz", "key"), InvalidArgument, "key is not hex");
}

TEST(PluginBytes, Sha256MatchesKnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_sha256_hex(sha256_hex("")));
  EXPECT_FALSE(is_sha256_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  EXPECT_FALSE(is_sha256_hex("abc"));
}

TEST(PluginBytes, HmacMatchesRfc4231Case2) {
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// Each MAC starts from a copy of one keyless context: a second key and a key longer than the
// block (hashed first) give their own RFC 4231 values, the first key's again after them, and the
// empty key (the one-shot path) the known HMAC-SHA256("", "").
TEST(PluginBytes, HmacKeysDoNotCarryOverBetweenCalls) {
  const std::string case6_key(131, '\xaa');
  EXPECT_EQ(to_hex(hmac_sha256(case6_key, "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(to_hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(to_hex(hmac_sha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(PluginBytes, Base64DecodesStrictly) {
  EXPECT_EQ(from_base64("", "c"), "");
  EXPECT_EQ(from_base64("Zg==", "c"), "f");
  EXPECT_EQ(from_base64("Zm8=", "c"), "fo");
  EXPECT_EQ(from_base64("Zm9vYmFy", "c"), "foobar");
  for (const char* bad : {"Zg=", "Zg", "Z===", "Zh==", "Zm9=", "Zm 9v", "Zg==Zg==", "Zm9v!mFy"}) {
    CTX_EXPECT_THROW(from_base64(bad, "content"), InvalidArgument, "content is not base64");
  }
}

TEST(PluginBytes, ConstantTimeEqualNeedsEqualSizeAndBytes) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(PluginBytes, CleanseEmptiesTheSecret) {
  std::string secret = "top secret";
  cleanse(secret);
  EXPECT_TRUE(secret.empty());
}

}  // namespace
}  // namespace ctx::plugin_common
