// CanonicalObject / append_canonical_string compose exactly the text core::canonical_json
// encodes, including strings that need escapes or carry non-ASCII UTF-8.
#include "host/engine/canonical_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/core/error.hpp"
#include "host/engine/journal_store.hpp"

namespace ctx::engine {
namespace {

const std::vector<std::string> kStrings = {"",
                                           "plain-token",
                                           "with \"quotes\"",
                                           "back\\slash",
                                           "tab\tnew\nline",
                                           std::string("nul\0x", 5),
                                           "\x7f",
                                           "caf\xc3\xa9",
                                           "\xf0\x9f\x98\x80 emoji",
                                           "\x1f"};

TEST(CanonicalText, StringsEncodeAsTheCanonicalEncoderDoes) {
  for (const auto& s : kStrings) {
    std::string out;
    append_canonical_string(out, s);
    EXPECT_EQ(out, core::canonical_json(core::Json(s))) << s;
  }
  std::string out;
  EXPECT_THROW(append_canonical_string(out, "\xff\xfe"), InvalidArgument);
}

TEST(CanonicalText, ObjectsComposeAsTheCanonicalEncoderDoes) {
  for (const auto& s : kStrings) {
    const core::Json nested = {{"b", {1, 2}}, {"a", s}};
    const std::string composed = CanonicalObject()
                                     .json("array", core::Json::array({s, 3}))
                                     .integer("count", -42)
                                     .text("nested", core::canonical_json(nested))
                                     .optional_string("none", std::nullopt)
                                     .optional_string("some", s)
                                     .string("value", s)
                                     .strings("values", {s, "x", s})
                                     .finish();
    const core::Json value = {{"array", core::Json::array({s, 3})},
                              {"count", -42},
                              {"nested", nested},
                              {"none", nullptr},
                              {"some", s},
                              {"value", s},
                              {"values", {s, "x", s}}};
    EXPECT_EQ(composed, core::canonical_json(value));
  }
  EXPECT_EQ(CanonicalObject().finish(), "{}");
  EXPECT_EQ(canonical_array({}), "[]");
  EXPECT_EQ(canonical_array({"1", "{}"}), "[1,{}]");
}

// A golden value computed with core::canonical_digest of the spec's eleven-key object: the
// composed record digest must never drift from it (persisted chains depend on it).
TEST(CanonicalText, RecordDigestKeepsTheSpecEncoding) {
  JournalRecord record{StreamId("tenant-1", "workspace-1", "repository-1", "session-one"),
                       2, "ev", "aa", "r", "rd", "t", "td", "sd", std::string("pp"), "",
                       PrivacyClass::kPrivate, Retention::kLocal, "v3"};
  EXPECT_EQ(journal_record_digest(record),
            "d32d947ee75f6bc82c2b0dfe403d2ba4392627dc7d815c1fdca84bdc83c5e39e");
  record.previous_record_digest.reset();
  record.revision = 1;
  EXPECT_EQ(journal_record_digest(record),
            core::canonical_digest(core::Json{{"event_content_digest", "aa"},
                                              {"event_id", "ev"},
                                              {"previous_record_digest", nullptr},
                                              {"privacy_classification", "private"},
                                              {"reducer_version", "v3"},
                                              {"replay_digest", "rd"},
                                              {"retention_class", "local"},
                                              {"result_state_digest", "sd"},
                                              {"revision", 1},
                                              {"stream_key", record.stream.stream_key()},
                                              {"transition_digest", "td"}}));
}

}  // namespace
}  // namespace ctx::engine
