// json_text: member spans, insertion laid out like the siblings, removal that restores the text.
#include "plugins/mcp-installer/core/json_text.hpp"

#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>
#include <string>

namespace ctx::mcp_installer {
namespace {

using Ordered = nlohmann::ordered_json;

std::string insert_top(const std::string& text, const std::string& key, const Ordered& value) {
  return insert_member(text, scan_object(text, top_level_object(text)), key, value);
}

std::string remove_top(const std::string& text, const std::string& key,
                       const std::string& inside = "") {
  const JsonObjectSpan span = scan_object(text, top_level_object(text));
  for (std::size_t i = 0; i < span.members.size(); ++i) {
    if (span.members[i].key == key) return remove_member(text, span, i, inside);
  }
  ADD_FAILURE() << "no member " << key;
  return text;
}

TEST(JsonText, ScansMembersWithEscapedKeysAndNestedValues) {
  const std::string text = "\xEF\xBB\xBF {\"a\\\"b\": [1, {\"x\": \"}\"}], \"c\" : null }";
  const JsonObjectSpan span = scan_object(text, top_level_object(text));
  ASSERT_EQ(span.members.size(), 2u);
  EXPECT_EQ(span.members[0].key, "a\"b");
  EXPECT_EQ(text.substr(span.members[0].value_begin,
                        span.members[0].value_end - span.members[0].value_begin),
            "[1, {\"x\": \"}\"}]");
  EXPECT_EQ(span.members[1].key, "c");
  EXPECT_EQ(text[span.close], '}');
  EXPECT_EQ(top_level_object("[1]"), std::string::npos);
}

TEST(JsonText, InsertFollowsTheSiblingsAndRemoveRestoresTheBytes) {
  for (const std::string& original : {
           std::string("{\n  \"a\": 1\n}\n"),
           std::string("{\n\t\"a\": 1\n}"),
           std::string("{\"a\":1}"),
           std::string("{\r\n    \"a\" : 1,\r\n    \"b\": {\"c\": 2}\r\n}\r\n"),
       }) {
    SCOPED_TRACE(original);
    const std::string added = insert_top(original, "new", Ordered{{"k", {1, 2}}});
    EXPECT_EQ(nlohmann::json::parse(added)["new"], nlohmann::json::parse(R"({"k":[1,2]})"));
    EXPECT_EQ(remove_top(added, "new"), original);
  }
  EXPECT_EQ(insert_top("{\n  \"a\": 1\n}\n", "n", Ordered{{"k", 1}}),
            "{\n  \"a\": 1,\n  \"n\": {\n    \"k\": 1\n  }\n}\n");
  EXPECT_EQ(insert_top("{\"a\":1}", "n", Ordered{{"k", 1}}), "{\"a\":1,\"n\":{\"k\":1}}");
}

TEST(JsonText, RemovesAMemberInTheMiddleOrFirst) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}";
  EXPECT_EQ(remove_top(text, "b"), "{\n  \"a\": 1,\n  \"c\": 3\n}");
  EXPECT_EQ(remove_top(text, "a"), "{\n  \"b\": 2,\n  \"c\": 3\n}");
  EXPECT_EQ(remove_top("{ \"only\": 1 }", "only", " "), "{ }");
}

TEST(JsonText, InsertsIntoAnEmptyObjectOnItsOwnLines) {
  const std::string text = "{}\n";
  const std::string added = insert_top(text, "k", Ordered{{"x", 1}});
  EXPECT_EQ(added, "{\n  \"k\": {\n    \"x\": 1\n  }\n}\n");
  EXPECT_EQ(remove_top(added, "k"), text);
}

TEST(JsonText, ReplacesAValueInPlace) {
  const std::string text = "{\n  \"a\": {\"old\": true},\n  \"b\": 2\n}\n";
  const JsonObjectSpan span = scan_object(text, top_level_object(text));
  EXPECT_EQ(replace_member_value(text, span.members[0], Ordered{{"new", 1}}),
            "{\n  \"a\": {\n    \"new\": 1\n  },\n  \"b\": 2\n}\n");
}

TEST(JsonText, MalformedTextIsRefused) {
  EXPECT_THROW(scan_object("{\"a\" 1}", 0), InvalidArgument);
  EXPECT_THROW(scan_object("{\"a\": 1", 0), InvalidArgument);
}

TEST(JsonText, OnlyObjectChangedHoldsForTheEditAndNothingElse) {
  const std::string before = "{\"a\": [1, 2],\n \"s\": {\"x\": 1},\n \"z\": true}\n";
  const JsonObjectSpan top = scan_object(before, top_level_object(before));
  const JsonObjectSpan inner = scan_object(before, top.find("s")->value_begin);
  const std::string edited =
      replace_member_value(before, *top.find("s"), Ordered{{"x", 1}, {"y", 2}});
  const nlohmann::json expect = {{"x", 1}, {"y", 2}};
  EXPECT_TRUE(only_object_changed(before, edited, inner, expect));
  // The same object, but a byte outside it changed (before it, after it).
  std::string outside = edited;
  outside[outside.find('1')] = '3';
  EXPECT_FALSE(only_object_changed(before, outside, inner, expect));
  EXPECT_FALSE(only_object_changed(before, edited.substr(0, edited.size() - 1), inner, expect));
  // The bytes outside kept, but the object is not the expected one, or not one object.
  EXPECT_FALSE(only_object_changed(before, edited, inner, nlohmann::json{{"x", 1}}));
  std::string twice = before;
  twice.replace(inner.open, inner.close - inner.open + 1, "{\"x\": 1, \"x\": 1}");
  EXPECT_FALSE(only_object_changed(before, twice, inner, nlohmann::json{{"x", 1}}));
  std::string two = before;
  two.replace(inner.open, inner.close - inner.open + 1, "{\"x\": 1}, \"q\": {}");
  EXPECT_FALSE(only_object_changed(before, two, inner, nlohmann::json{{"x", 1}}));
}

}  // namespace
}  // namespace ctx::mcp_installer
