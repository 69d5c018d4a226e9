#include "host/core/json_reader.hpp"

#include <string>

#include "tests/support/expect_throw.hpp"

namespace ctx::core {
namespace {

using Reason = JsonFieldError::Reason;

// Runs `body` and returns the JsonFieldError it throws; fails the test when none is thrown.
template <typename Body>
JsonFieldError caught(Body&& body) {
  try {
    body();
  } catch (const JsonFieldError& e) {
    return e;
  }
  ADD_FAILURE() << "no JsonFieldError";
  return JsonFieldError(Reason::kMalformed, "<none>", "<none>");
}

class ReaderTestError : public InvalidArgument {
 public:
  explicit ReaderTestError(const std::string& message) : InvalidArgument(message) {}
};

enum class Colour { kRed, kGreen };
inline constexpr EnumStrings<Colour, 2> kColourStrings{
    "colour", {Colour::kRed, Colour::kGreen}, {"red", "green"}};

bool is_lower(std::string_view text) noexcept {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < 'a' || c > 'z') return false;
  }
  return true;
}
inline constexpr StringRule kLower{is_lower, "lower-case letters"};

TEST(JsonReader, ParseDetectsDuplicateKeysAtAnyDepth) {
  for (const char* text : {R"({"a":1,"a":2})", R"({"x":{"b":1,"b":1}})", R"({"x":[{"a":1,"a":1}]})",
                           R"([{"k":1},{"k":2,"j":{"k":1,"k":1}}])"}) {
    const auto e = caught([&] { parse_json(text); });
    EXPECT_EQ(e.reason(), Reason::kDuplicateKey) << text;
    EXPECT_THAT(e.what(), ::testing::HasSubstr("duplicate key"));
  }
}

TEST(JsonReader, ParseAcceptsTheSameKeyInSiblingAndNestedObjects) {
  const Json v = parse_json(R"({"a":{"a":1},"b":[{"a":1},{"a":2}],"c":{"d":{"a":3}}})");
  EXPECT_EQ(v["c"]["d"]["a"], 3);
  EXPECT_EQ(v["b"][1]["a"], 2);
}

TEST(JsonReader, ParseRejectsGarbageWithoutQuotingIt) {
  const auto e = caught([] { parse_json(R"({"secret-value":)"); });
  EXPECT_EQ(e.reason(), Reason::kMalformed);
  EXPECT_THAT(e.what(), ::testing::HasSubstr("malformed"));
  EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("secret")));
  EXPECT_EQ(caught([] { parse_json(""); }).reason(), Reason::kMalformed);
  EXPECT_EQ(caught([] { parse_json("{} {}"); }).reason(), Reason::kMalformed);
  // A NUL byte ends nlohmann's input early: what follows it would go unread.
  using namespace std::string_view_literals;
  EXPECT_EQ(caught([] { parse_json("{}\0{\"decision\":\"block\"}"sv); }).reason(),
            Reason::kMalformed);
  EXPECT_EQ(caught([] { parse_json("{\"a\":\"x\0y\"}"sv); }).reason(), Reason::kMalformed);
}

TEST(JsonReader, ParseBoundsNesting) {
  const std::string ok = std::string(4, '[') + std::string(4, ']');
  EXPECT_NO_THROW(parse_json(ok, 4));
  const std::string deep = std::string(5, '[') + std::string(5, ']');
  EXPECT_EQ(caught([&] { parse_json(deep, 4); }).reason(), Reason::kTooDeep);
  const std::string very_deep(100000, '[');
  EXPECT_EQ(caught([&] { parse_json(very_deep); }).reason(), Reason::kTooDeep);
}

TEST(JsonReader, RequiredAndOptionalTypedFields) {
  const Json v = parse_json(R"({"s":"abc","n":7,"b":true,"o":{"x":1},"a":[1],"z":null})");
  const JsonObjectReader r(v, "thing");
  r.expect({"s", "n", "b", "o", "a"}, {"z", "w"});
  EXPECT_EQ(r.string("s"), "abc");
  EXPECT_EQ(r.string("s", kLower), "abc");
  EXPECT_EQ(r.integer("n", 0, 10), 7);
  EXPECT_TRUE(r.boolean("b"));
  EXPECT_EQ(r.object("o").integer("x", 0, 1), 1);
  EXPECT_EQ(r.array("a").size(), 1u);
  EXPECT_EQ(r.optional_string("z"), std::nullopt);
  EXPECT_EQ(r.optional_string("w"), std::nullopt);
  EXPECT_EQ(r.optional_integer("w", 0, 1), std::nullopt);
  EXPECT_EQ(r.optional_integer("n", 0, 9), 7);
  EXPECT_TRUE(r.absent_or_null("z"));
  EXPECT_EQ(r.find("z"), nullptr);
  EXPECT_NE(r.find("s"), nullptr);
}

TEST(JsonReader, UnknownKeyIsRejectedByName) {
  const Json v = parse_json(R"({"s":"a","extra":1,"other":2})");
  const auto e = caught([&] { JsonObjectReader(v, "thing").expect({"s"}, {"t"}); });
  EXPECT_EQ(e.reason(), Reason::kUnknown);
  EXPECT_THAT(e.what(), ::testing::HasSubstr("thing has unknown field(s): extra, other"));
}

TEST(JsonReader, MissingRequiredFieldIsNamed) {
  const Json v = parse_json(R"({"s":"a"})");
  const auto e = caught([&] { JsonObjectReader(v, "thing").exact({"s", "n"}); });
  EXPECT_EQ(e.reason(), Reason::kMissing);
  EXPECT_EQ(e.field(), "n");
  EXPECT_THAT(e.what(), ::testing::HasSubstr("thing is missing n"));
  EXPECT_EQ(caught([&] { JsonObjectReader(v, "thing").integer("n", 0, 1); }).reason(),
            Reason::kMissing);
}

TEST(JsonReader, WrongTypeIsNamed) {
  const Json v = parse_json(R"({"s":1,"n":"1","b":0,"a":{},"o":[],"big":18446744073709551615})");
  const JsonObjectReader r(v, "thing");
  auto check = [](auto body, const char* field, const char* text, Reason reason) {
    const auto e = caught(body);
    EXPECT_EQ(e.reason(), reason) << text;
    EXPECT_EQ(e.field(), field);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(text));
  };
  check([&] { r.string("s"); }, "s", "s must be a string", Reason::kWrongType);
  check([&] { r.string("s", kLower); }, "s", "s must be lower-case letters", Reason::kWrongType);
  check([&] { r.integer("n", 0, 1); }, "n", "n must be an integer", Reason::kWrongType);
  check([&] { r.boolean("b"); }, "b", "b must be a boolean", Reason::kWrongType);
  check([&] { r.array("a"); }, "a", "a must be a JSON array", Reason::kWrongType);
  check([&] { r.object_value("o"); }, "o", "o must be a JSON object", Reason::kWrongType);
  check([&] { r.object("o"); }, "o", "o must be an object", Reason::kNotObject);
  check([&] { r.integer("big", 0, INT64_MAX); }, "big", "outside its bounded range",
        Reason::kOutOfRange);
  check([&] { JsonObjectReader(Json::array(), "thing"); }, "", "thing must be an object",
        Reason::kNotObject);
}

TEST(JsonReader, RuleAndRangeViolationsAreInvalidValues) {
  const Json v = parse_json(R"({"s":"ABC","n":-1,"k":"v1"})");
  const JsonObjectReader r(v, "thing");
  EXPECT_EQ(caught([&] { r.string("s", kLower); }).reason(), Reason::kInvalidValue);
  EXPECT_EQ(caught([&] { r.integer("n", 0, 5); }).reason(), Reason::kOutOfRange);
  EXPECT_EQ(r.integer("n", -1, 5), -1);
  const Json zero = parse_json(R"({"u":0})");
  EXPECT_EQ(caught([&] { JsonObjectReader(zero, "t").integer("u", 1, 5); }).reason(),
            Reason::kOutOfRange);
  const auto e = caught([&] { r.literal("k", "v2", "thing schema"); });
  EXPECT_EQ(e.reason(), Reason::kInvalidValue);
  EXPECT_THAT(e.what(), ::testing::HasSubstr("thing schema is unsupported"));
  EXPECT_NO_THROW(r.literal("k", "v1", "thing schema"));
}

TEST(JsonReader, NestedFieldsAreNamedByTheirPath) {
  const Json v = parse_json(R"({"outer":{"inner":{"n":"x"},"extra":{}}})");
  const JsonObjectReader r(v, "doc");
  const auto outer = r.object("outer");
  const auto unknown = caught([&] { outer.expect({"inner"}); });
  EXPECT_EQ(unknown.reason(), Reason::kUnknown);
  EXPECT_THAT(unknown.what(), ::testing::HasSubstr("outer has unknown field(s): extra"));
  const auto wrong = caught([&] { outer.object("inner").integer("n", 0, 1); });
  EXPECT_EQ(wrong.field(), "outer.inner.n");
  EXPECT_THAT(wrong.what(), ::testing::HasSubstr("outer.inner.n must be an integer"));
  const auto missing = caught([&] { outer.object("inner").at("m"); });
  EXPECT_EQ(missing.field(), "outer.inner.m");
  EXPECT_THAT(missing.what(), ::testing::HasSubstr("outer.inner is missing m"));
}

TEST(JsonReader, RaiserChoosesTheCallersErrorType) {
  const Json v = parse_json(R"({"s":1})");
  const JsonObjectReader r(v, "thing", raise_as<ReaderTestError>);
  CTX_EXPECT_THROW(r.string("s"), ReaderTestError, "s must be a string");
  CTX_EXPECT_THROW(r.object("s"), ReaderTestError, "s must be an object");
  CTX_EXPECT_THROW(r.object("missing"), ReaderTestError, "thing is missing missing");
  CTX_EXPECT_THROW(JsonObjectReader(Json(1), "thing", raise_as<ReaderTestError>),
                   ReaderTestError, "thing must be an object");
}

TEST(JsonReader, EnumStringsRoundTripAndRejectUnknownSpellings) {
  for (const Colour c : {Colour::kRed, Colour::kGreen}) {
    EXPECT_EQ(kColourStrings.find(kColourStrings.to_string(c)), c);
  }
  EXPECT_EQ(kColourStrings.find("blue"), std::nullopt);
  EXPECT_EQ(kColourStrings.find("Red"), std::nullopt);
  const Json v = parse_json(R"({"c":"green","d":"blue","e":3})");
  const JsonObjectReader r(v, "thing");
  EXPECT_EQ(r.enumerated("c", kColourStrings), Colour::kGreen);
  EXPECT_EQ(r.optional_enumerated("x", kColourStrings), std::nullopt);
  const auto unknown = caught([&] { r.enumerated("d", kColourStrings); });
  EXPECT_EQ(unknown.reason(), Reason::kInvalidValue);
  EXPECT_THAT(unknown.what(), ::testing::HasSubstr("unknown d; must be one of red, green"));
  EXPECT_EQ(caught([&] { r.enumerated("e", kColourStrings); }).reason(), Reason::kWrongType);
}

}  // namespace
}  // namespace ctx::core
