// Lexical classes of spec §1.1.
#include "host/engine/lexical.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ctx::engine {
namespace {

TEST(Lexical, TrimmedStringFollowsPythonStrip) {
  EXPECT_TRUE(is_trimmed_string("a b"));
  EXPECT_TRUE(is_trimmed_string("caf\xc3\xa9"));
  EXPECT_FALSE(is_trimmed_string(""));
  EXPECT_FALSE(is_trimmed_string(" a"));
  EXPECT_FALSE(is_trimmed_string("a\n"));
  EXPECT_FALSE(is_trimmed_string("a\xc2\xa0"));          // U+00A0
  EXPECT_FALSE(is_trimmed_string("\xe3\x80\x80" "a"));   // U+3000
  EXPECT_FALSE(is_trimmed_string("a\xed\xa0\x80"));      // encoded surrogate
  EXPECT_FALSE(is_trimmed_string("\xff"));               // not UTF-8
}

TEST(Lexical, Tokens) {
  EXPECT_TRUE(is_opaque_token("Event-1:x@y.z_w"));
  EXPECT_FALSE(is_opaque_token("-lead"));
  EXPECT_FALSE(is_opaque_token("has space"));
  EXPECT_FALSE(is_opaque_token(std::string(129, 'a')));
  EXPECT_TRUE(is_opaque_token(std::string(128, 'a')));
  EXPECT_TRUE(is_canonical_token("graph-match"));
  EXPECT_FALSE(is_canonical_token("Graph"));
  EXPECT_TRUE(is_capability_name("python-runner"));
  EXPECT_FALSE(is_capability_name("a:b"));
}

TEST(Lexical, CapabilityIdentity) {
  EXPECT_TRUE(is_capability_identity("mcp-server:docs", "mcp-server"));
  EXPECT_FALSE(is_capability_identity("mcp:docs", "mcp"));
  EXPECT_FALSE(is_capability_identity("skill:docs", "agent"));
  EXPECT_FALSE(is_capability_identity("skill:a:b", "skill"));
  EXPECT_FALSE(is_capability_identity("skill:" + std::string(123, 'a'), "skill"));
  EXPECT_TRUE(is_capability_identity("skill:" + std::string(122, 'a'), "skill"));
  EXPECT_EQ(capability_kind_of("harness:x"), "harness");
  EXPECT_EQ(capability_kind_of("bogus:x"), "");
  EXPECT_TRUE(is_installable_kind("agent"));
  EXPECT_FALSE(is_installable_kind("harness"));
}

TEST(Lexical, DigestAndSchemaId) {
  EXPECT_TRUE(is_digest(std::string(64, 'a')));
  EXPECT_FALSE(is_digest(std::string(64, 'A')));
  EXPECT_FALSE(is_digest(std::string(63, 'a')));
  EXPECT_TRUE(is_schema_id("ctx.benefit-selection-result-v1"));
  EXPECT_FALSE(is_schema_id("ctx.Bad"));
  EXPECT_FALSE(is_schema_id("other.x"));
}

}  // namespace
}  // namespace ctx::engine
