#include "host/core/canonical_json.hpp"

#include <cmath>
#include <limits>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::core {
namespace {

TEST(CanonicalJson, SortsKeysWithoutSpaces) {
  const Json value = Json::parse(R"({"b":1,"a":[true,null,"x"],"c":{"z":2,"y":1}})");
  EXPECT_EQ(canonical_json(value), R"({"a":[true,null,"x"],"b":1,"c":{"y":1,"z":2}})");
}

TEST(CanonicalJson, Utf8KeepsRawAsciiEscapesLowerHexAndSurrogates) {
  const Json value = {{"k", "caf\u00e9 \xF0\x9F\x98\x80 /\x7f"}};
  EXPECT_EQ(canonical_json(value, Encoding::kUtf8), "{\"k\":\"caf\u00e9 \xF0\x9F\x98\x80 /\x7f\"}");
  // Python: json.dumps({"k": "café 😀 /\x7f"}, sort_keys=True, separators=(",",":"))
  EXPECT_EQ(canonical_json(value, Encoding::kAscii),
            R"({"k":"caf\u00e9 \ud83d\ude00 /\u007f"})");
}

TEST(CanonicalJson, EscapesControlCharactersLikePython) {
  const Json value = std::string("\b\f\n\r\t\x01\"\\");
  EXPECT_EQ(canonical_json(value), R"("\b\f\n\r\t\u0001\"\\")");
}

TEST(CanonicalJson, DigestMatchesPythonHashlib) {
  // hashlib.sha256(json.dumps({"a":1,"b":"x"}, sort_keys=True, separators=(",",":")).encode())
  EXPECT_EQ(canonical_digest(Json{{"b", "x"}, {"a", 1}}), sha256_hex(R"({"a":1,"b":"x"})"));
  EXPECT_EQ(sha256_hex("managed-query-catalog").size(), 64u);
}

TEST(CanonicalJson, RejectsNanAndInfinity) {
  CTX_EXPECT_THROW(canonical_json(Json{std::nan("")}), InvalidArgument, "nan");
  CTX_EXPECT_THROW(canonical_json(Json{{"x", std::numeric_limits<double>::infinity()}}),
                   InvalidArgument, "infinity");
}

TEST(CanonicalJson, RejectsInvalidUtf8) {
  CTX_EXPECT_THROW(canonical_json(Json(std::string("\xff"))), InvalidArgument, "canonical json");
}

TEST(CanonicalJson, ParseRejectsDuplicateKeysAndGarbage) {
  CTX_EXPECT_THROW(parse_json(R"({"a":1,"a":2})"), InvalidArgument, "duplicate key");
  CTX_EXPECT_THROW(parse_json(R"({"a":{"b":1,"b":1}})"), InvalidArgument, "duplicate key");
  CTX_EXPECT_THROW(parse_json(R"({"a":)"), InvalidArgument, "malformed");
  EXPECT_EQ(parse_json(R"({"a":{"b":1},"b":{"b":2}})")["b"]["b"], 2);
}

TEST(CanonicalJson, ParseCanonicalRequiresByteIdentity) {
  EXPECT_EQ(parse_canonical_json(R"({"a":1,"b":2})")["b"], 2);
  CTX_EXPECT_THROW(parse_canonical_json(R"({"b":2,"a":1})"), InvalidArgument, "not canonical");
  CTX_EXPECT_THROW(parse_canonical_json(R"({"a": 1})"), InvalidArgument, "not canonical");
}

}  // namespace
}  // namespace ctx::core
