// store::KeyedRows: the keyed-row tag is HMAC-SHA256(key, domain ‖ 0x00 ‖ bytes) in lower-case
// hex, domains separate, and authentic() accepts exactly the tag.
#include "host/store/keyed_rows.hpp"

#include <gtest/gtest.h>

#include <string>

#include "host/core/crypto.hpp"

namespace ctx::store {
namespace {

TEST(KeyedRows, TagIsTheHmacOfDomainNulAndBytes) {
  const std::string key(32, 'k');
  const KeyedRows rows(key);
  const std::string tag = rows.tag("ctx.test-row-v1", "row bytes");
  EXPECT_EQ(tag, core::hmac_sha256_hex(key, std::string("ctx.test-row-v1\0row bytes", 25)));
  EXPECT_TRUE(core::is_sha256_hex(tag));
  // The NUL separates domain and bytes: moving a character across it changes the tag.
  EXPECT_NE(rows.tag("ctx.test-row-v1r", "ow bytes"), tag);
  EXPECT_NE(rows.tag("ctx.other-row-v1", "row bytes"), tag);
  EXPECT_NE(KeyedRows(std::string(32, 'o')).tag("ctx.test-row-v1", "row bytes"), tag);
}

TEST(KeyedRows, AuthenticAcceptsExactlyTheTag) {
  const KeyedRows rows(std::string(32, 'k'));
  const std::string tag = rows.tag("ctx.test-row-v1", "row bytes");
  EXPECT_TRUE(rows.authentic("ctx.test-row-v1", "row bytes", tag));
  EXPECT_FALSE(rows.authentic("ctx.test-row-v1", "row bytes!", tag));
  EXPECT_FALSE(rows.authentic("ctx.other-row-v1", "row bytes", tag));
  EXPECT_FALSE(rows.authentic("ctx.test-row-v1", "row bytes", tag.substr(1)));
  EXPECT_FALSE(rows.authentic("ctx.test-row-v1", "row bytes", ""));
}

}  // namespace
}  // namespace ctx::store
