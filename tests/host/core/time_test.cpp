#include "host/core/time.hpp"

#include "host/core/error.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::core {
namespace {

TEST(Rfc3339, ParsesAndNormalisesToUtc) {
  EXPECT_EQ(format_rfc3339(parse_rfc3339("2026-08-02T12:00:00Z")), "2026-08-02T12:00:00Z");
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:01Z").micros, 1'000'000);
  EXPECT_EQ(format_rfc3339(parse_rfc3339("2026-08-02T14:30:00+02:30")), "2026-08-02T12:00:00Z");
  EXPECT_EQ(format_rfc3339(parse_rfc3339("2026-08-02T12:00:00.120000Z")),
            "2026-08-02T12:00:00.12Z");
  EXPECT_EQ(format_rfc3339(parse_rfc3339("2024-02-29T23:59:59.000001-00:00")),
            "2024-02-29T23:59:59.000001Z");
}

TEST(Rfc3339, RejectsOtherText) {
  for (const char* text : {"2026-08-02 12:00:00Z", "2026-08-02T12:00:00", "2026-13-01T00:00:00Z",
                           "2023-02-29T00:00:00Z", "2026-08-02T12:00:00.1234567Z",
                           "2026-08-02T12:00:00.Z", "2026-08-02T24:00:00Z", "x"}) {
    CTX_EXPECT_THROW(parse_rfc3339(text), InvalidArgument, "rfc 3339") << text;
  }
}

TEST(Rfc3339, NormalisedFormCheck) {
  EXPECT_TRUE(is_normalized_rfc3339("2026-08-02T12:00:00Z"));
  EXPECT_FALSE(is_normalized_rfc3339("2026-08-02T12:00:00.000Z"));
  EXPECT_FALSE(is_normalized_rfc3339("2026-08-02T12:00:00+00:00"));
}

TEST(Rfc3339, SystemClockIsAfter2025) {
  EXPECT_GT(SystemClock().now(), parse_rfc3339("2025-01-01T00:00:00Z"));
}

}  // namespace
}  // namespace ctx::core
