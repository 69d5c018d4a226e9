#include "plugins/common/json_input.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::plugin_common {
namespace {

TEST(PluginJsonInput, ParsesAnObject) {
  const Json value = parse_object(R"({"a":"x","b":{"c":1}})", "payload");
  EXPECT_EQ(require_string(value, "a", "payload"), "x");
  EXPECT_EQ(require_object(value, "b", "payload").at("c"), 1);
  EXPECT_EQ(optional_string(value, "missing", "payload"), std::nullopt);
}

TEST(PluginJsonInput, RejectsWhatIsNotOneObject) {
  CTX_EXPECT_THROW(parse_object("", "payload"), InvalidArgument, "payload is not valid json");
  CTX_EXPECT_THROW(parse_object("[1]", "payload"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(parse_object("{} {}", "payload"), InvalidArgument, "not valid json");
  CTX_EXPECT_THROW(parse_object("{\"a\":\"\xff\"}", "payload"), InvalidArgument, "not valid json");
}

TEST(PluginJsonInput, RejectsDuplicateKeysAtAnyDepth) {
  CTX_EXPECT_THROW(parse_object(R"({"a":1,"a":2})", "p"), InvalidArgument, "duplicate key");
  CTX_EXPECT_THROW(parse_object(R"({"x":[{"a":1,"a":1}]})", "p"), InvalidArgument, "duplicate key");
  EXPECT_NO_THROW(parse_object(R"({"x":[{"a":1},{"a":1}],"a":0})", "p"));
}

TEST(PluginJsonInput, RejectsDeepNesting) {
  const std::string deep = "{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}";
  CTX_EXPECT_THROW(parse_object(deep, "p"), InvalidArgument, "nested too deeply");
}

TEST(PluginJsonInput, CheckObjectAppliesTheSameRulesWithoutADocument) {
  const std::string deep = "{\"a\":" + std::string(33, '[') + std::string(33, ']') + "}";
  for (const auto& [text_bound, fact_bound] :
       {std::pair<std::string, std::string>{"", "is not valid json"},
        {"{} {}", "is not valid json"},
        {"{\"a\":\"\xff\"}", "is not valid json"},
        {"[1]", "is not a json object"},
        {"7", "is not a json object"},
        {R"({"x":[{"a":1,"a":1}]})", "has a duplicate key"},
        {deep, "is nested too deeply"}}) {
    // Copies: Clang 14 lambdas (in CTX_EXPECT_THROW) cannot capture structured bindings.
    const std::string text = text_bound;
    const std::string fact = fact_bound;
    SCOPED_TRACE(text);
    CTX_EXPECT_THROW(check_object(text, "p"), InvalidArgument, "p " + fact);
    CTX_EXPECT_THROW(parse_object(text, "p"), InvalidArgument, "p " + fact);
  }
  const std::string ok = "{\"a\":" + std::string(31, '[') + std::string(31, ']') +
                         R"(,"x":[{"a":1},{"a":1}],"b":{"a":{}}})";
  EXPECT_NO_THROW(check_object(ok, "p"));
  EXPECT_EQ(parse_object(ok, "p").at("b"), Json::parse(R"({"a":{}})"));
}

TEST(PluginJsonInput, MessagesNeverQuoteTheInput) {
  try {
    parse_object(R"({"secret": "hunter2-secret" oops})", "payload");
    FAIL() << "expected a parse error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("hunter2")));
  }
}

TEST(PluginJsonInput, FieldAccessorsNameTheFieldOnly) {
  const Json value = parse_object(R"({"n":1,"s":"hidden-value"})", "request");
  CTX_EXPECT_THROW(require_string(value, "n", "request"), InvalidArgument,
                   "request needs a string \"n\"");
  CTX_EXPECT_THROW(optional_string(value, "n", "request"), InvalidArgument, "not a string");
  CTX_EXPECT_THROW(require_object(value, "s", "request"), InvalidArgument,
                   "request needs an object \"s\"");
}

}  // namespace
}  // namespace ctx::plugin_common
