// RFC 3339 UTC timestamps with microsecond precision, and the clock port. Thread-safe.
#ifndef CTX_HOST_CORE_TIME_HPP_
#define CTX_HOST_CORE_TIME_HPP_

#include <cstdint>
#include <string>
#include <string_view>

namespace ctx::core {

// Microseconds since the Unix epoch, UTC.
struct Timestamp {
  std::int64_t micros = 0;
  friend auto operator<=>(const Timestamp&, const Timestamp&) = default;
};

// Parses `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$` into UTC.
// Errors: InvalidArgument ("rfc 3339") for any other text or an impossible date.
Timestamp parse_rfc3339(std::string_view text);

// Renders `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, the fraction without trailing zeros (absent when 0).
std::string format_rfc3339(Timestamp t);

// True when `text` is already in the normalised form format_rfc3339 produces.
bool is_normalized_rfc3339(std::string_view text) noexcept;

// The clock port: the only place the host reads the time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

// The system's real-time clock.
class SystemClock final : public Clock {
 public:
  Timestamp now() const override;
};

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_TIME_HPP_
