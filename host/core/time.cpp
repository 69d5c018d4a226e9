#include "host/core/time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "host/core/error.hpp"

namespace ctx::core {
namespace {

constexpr std::int64_t kMicrosPerSecond = 1'000'000;

bool digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

bool is_leap(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kDays[month - 1];
}

// Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

[[noreturn]] void bad(std::string_view text) {
  (void)text;
  throw InvalidArgument("timestamp is not rfc 3339");
}

}  // namespace

Timestamp parse_rfc3339(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (text.size() < 20 || !digits(text, 0, 4, year) || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) ||
      text[10] != 'T' || !digits(text, 11, 2, hour) || text[13] != ':' ||
      !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second)) {
    bad(text);
  }
  std::size_t pos = 19;
  std::int64_t fraction = 0;
  if (text[pos] == '.') {
    std::size_t n = 0;
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && n < 7) {
      fraction = fraction * 10 + (text[pos] - '0');
      ++pos;
      ++n;
    }
    if (n == 0 || n > 6) bad(text);
    for (; n < 6; ++n) fraction *= 10;
  }
  std::int64_t offset_minutes = 0;
  if (pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!digits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(text, pos + 4, 2, om) || oh > 23 || om > 59) {
      bad(text);
    }
    offset_minutes = (text[pos] == '-' ? -1 : 1) * (oh * 60 + om);
    pos += 6;
  } else {
    bad(text);
  }
  if (pos != text.size() || month < 1 || month > 12 || day < 1 ||
      day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 59) {
    bad(text);
  }
  const std::int64_t seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 +
                               minute * 60 + second - offset_minutes * 60;
  return Timestamp{seconds * kMicrosPerSecond + fraction};
}

std::string format_rfc3339(Timestamp t) {
  std::int64_t seconds = t.micros / kMicrosPerSecond;
  std::int64_t micros = t.micros % kMicrosPerSecond;
  if (micros < 0) {
    micros += kMicrosPerSecond;
    --seconds;
  }
  const std::time_t tt = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buffer[48];
  int n = std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string out(buffer, static_cast<std::size_t>(n));
  if (micros != 0) {
    std::snprintf(buffer, sizeof buffer, ".%06lld", static_cast<long long>(micros));
    std::string fraction(buffer);
    while (fraction.back() == '0') fraction.pop_back();
    out += fraction;
  }
  out += 'Z';
  return out;
}

bool is_normalized_rfc3339(std::string_view text) noexcept {
  try {
    return format_rfc3339(parse_rfc3339(text)) == text;
  } catch (const Error&) {
    return false;
  }
}

Timestamp SystemClock::now() const {
  const auto since = std::chrono::system_clock::now().time_since_epoch();
  return Timestamp{std::chrono::duration_cast<std::chrono::microseconds>(since).count()};
}

}  // namespace ctx::core
