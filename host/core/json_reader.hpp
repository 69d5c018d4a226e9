// The one strict JSON reader of the host: parse_json() detects duplicate keys and excessive nesting
// while parsing, and JsonObjectReader reads typed required/optional fields of one object, rejects
// unknown keys and fails with a JsonFieldError naming the field (or the caller's own error type).
// No nlohmann exception leaves this header's functions. Thread-safe (no shared state).
#ifndef CTX_HOST_CORE_JSON_READER_HPP_
#define CTX_HOST_CORE_JSON_READER_HPP_

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/error.hpp"

namespace ctx::core {

using Json = nlohmann::json;

// Deepest nesting parse_json accepts by default; deeper input is refused rather than walked.
inline constexpr std::size_t kMaxJsonDepth = 64;

// JSON text or a JSON value that breaks a reader's rules. field() is the dotted path of the
// offending field ("" for the whole document); what() names it and never quotes input bytes.
// Code: kInvalidArgument. Retry: no.
class JsonFieldError : public InvalidArgument {
 public:
  enum class Reason {
    kMalformed,     // not JSON at all
    kDuplicateKey,  // an object repeats a key
    kTooDeep,       // nested deeper than the parse limit
    kNotObject,     // the value read as an object is not one
    kMissing,       // a required field is absent
    kUnknown,       // a field the schema does not list
    kWrongType,     // present with another JSON type
    kOutOfRange,    // a number outside its bounds
    kInvalidValue,  // the right type but not an allowed value
  };
  JsonFieldError(Reason reason, std::string field, const std::string& message)
      : InvalidArgument(message), reason_(reason), field_(std::move(field)) {}
  Reason reason() const noexcept { return reason_; }
  const std::string& field() const noexcept { return field_; }

 private:
  Reason reason_;
  std::string field_;
};

// Parses `text` as one JSON document (a NUL byte anywhere is malformed: JSON has none, and
// nlohmann's reader would take it for the end of the input). Errors: JsonFieldError kMalformed
// ("json is malformed (parse error at byte N)"), kDuplicateKey ("json has a duplicate key"),
// kTooDeep ("json is nested too deeply").
Json parse_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// Turns a JsonFieldError into the caller's error type; must throw. `raise_as<E>` throws
// E(error.what()) for any E constructible from a std::string.
using JsonErrorRaiser = void (*)(const JsonFieldError& error);
template <typename E>
[[noreturn]] void raise_as(const JsonFieldError& error) {
  throw E(error.what());
}

// A string field's domain rule: `accept` decides, `requirement` completes "<field> must be …".
struct StringRule {
  bool (*accept)(std::string_view value) noexcept;
  std::string_view requirement;  // e.g. "a lowercase SHA-256 digest"
};

// A persisted enum's strings, defined once beside the enum: `names[i]` spells `values[i]`.
template <typename E, std::size_t N>
struct EnumStrings {
  std::string_view what;  // the enum's name in messages, e.g. "installation"
  E values[N];
  std::string_view names[N];

  // The persisted spelling of `value`. REQUIRES: `value` is listed.
  constexpr std::string_view to_string(E value) const noexcept {
    for (std::size_t i = 0; i < N; ++i) {
      if (values[i] == value) return names[i];
    }
    return {};
  }
  // The enum spelled `text`, or nullopt for an unknown spelling.
  constexpr std::optional<E> find(std::string_view text) const noexcept {
    for (std::size_t i = 0; i < N; ++i) {
      if (names[i] == text) return values[i];
    }
    return std::nullopt;
  }
  // "a, b, c" for messages.
  std::string listing() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) out.append(i ? ", " : "").append(names[i]);
    return out;
  }
};

// Binds a persisted enum to its one EnumStrings table: specialise with
// `static constexpr const auto& kStrings = kMyEnumStrings;` beside the enum.
template <typename E>
struct EnumTraits;

template <typename E>
concept PersistedEnum = requires { EnumTraits<E>::kStrings.to_string(E{}); };

// The persisted spelling of `value`.
template <PersistedEnum E>
constexpr std::string_view to_string(E value) noexcept {
  return EnumTraits<E>::kStrings.to_string(value);
}

// The enum spelled `text`. Errors: JsonFieldError kInvalidValue "unknown <what>" (the text itself
// is not quoted: it may be untrusted).
template <PersistedEnum E>
E parse_enum(std::string_view text) {
  if (const auto found = EnumTraits<E>::kStrings.find(text)) return *found;
  throw JsonFieldError(JsonFieldError::Reason::kInvalidValue, "",
                       "unknown " + std::string(EnumTraits<E>::kStrings.what));
}

// The enum spelled `text`, or nullopt.
template <PersistedEnum E>
constexpr std::optional<E> find_enum(std::string_view text) noexcept {
  return EnumTraits<E>::kStrings.find(text);
}

// Reads the fields of one JSON object named `name` in messages. Every failure calls the raiser
// (default: throw the JsonFieldError itself). The reader borrows `value`: it must outlive it.
class JsonObjectReader {
 public:
  // Errors: kNotObject "<name> must be an object".
  JsonObjectReader(const Json& value, std::string name, JsonErrorRaiser raise = nullptr);

  // Requires every key to be listed in `required` or `optional` and every `required` key to be
  // present. Errors: kUnknown "<name> has unknown field(s): k1, k2",
  // kMissing "<name> is missing k".
  const JsonObjectReader& expect(std::initializer_list<std::string_view> required,
                                 std::initializer_list<std::string_view> optional = {}) const;
  // expect(keys) with no optional keys.
  const JsonObjectReader& exact(std::initializer_list<std::string_view> keys) const {
    return expect(keys);
  }

  // True when `key` is present (null included).
  bool has(std::string_view key) const { return value_.contains(key); }
  // True when `key` is absent or null.
  bool absent_or_null(std::string_view key) const;
  // The value of a required field. Errors: kMissing.
  const Json& at(std::string_view key) const;
  // The value of `key`, or nullptr when absent or null.
  const Json* find(std::string_view key) const;

  // Errors: kMissing; kWrongType "<field> must be a string" (or "must be <rule.requirement>"
  // when the value is not a string or the rule refuses it).
  std::string string(std::string_view key) const;
  std::string string(std::string_view key, const StringRule& rule) const;
  const std::string& string_ref(std::string_view key) const;
  // Absent or null → nullopt; otherwise as string().
  std::optional<std::string> optional_string(std::string_view key) const;
  std::optional<std::string> optional_string(std::string_view key, const StringRule& rule) const;

  // Errors: kWrongType "<field> must be an integer", kOutOfRange "<field> is outside its bounded
  // range".
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min,
                                               std::int64_t max) const;
  // Errors: kWrongType "<field> must be a boolean".
  bool boolean(std::string_view key) const;
  // Errors: kWrongType "<field> must be a JSON array" / "must be a JSON object".
  const Json& array(std::string_view key) const;
  const Json& object_value(std::string_view key) const;
  // A reader of the nested object `key`, named by its dotted path and raising alike.
  JsonObjectReader object(std::string_view key) const;

  // The enum spelled by string field `key`. Errors: kWrongType; kInvalidValue
  // "unknown <field>; must be one of a, b, c".
  template <typename E, std::size_t N>
  E enumerated(std::string_view key, const EnumStrings<E, N>& strings) const {
    const std::string& text = string_ref(key);
    if (const auto found = strings.find(text)) return *found;
    fail_message(JsonFieldError::Reason::kInvalidValue, key,
                 "unknown " + field(key) + "; must be one of " + strings.listing());
  }
  template <typename E, std::size_t N>
  std::optional<E> optional_enumerated(std::string_view key,
                                       const EnumStrings<E, N>& strings) const {
    if (absent_or_null(key)) return std::nullopt;
    return enumerated(key, strings);
  }
  template <PersistedEnum E>
  E enumerated(std::string_view key) const {
    return enumerated(key, EnumTraits<E>::kStrings);
  }
  template <PersistedEnum E>
  std::optional<E> optional_enumerated(std::string_view key) const {
    return optional_enumerated(key, EnumTraits<E>::kStrings);
  }

  // Requires string field `key` to equal `expected` (schema ids, fixed literals).
  // Errors: kInvalidValue "<what> is unsupported".
  void literal(std::string_view key, std::string_view expected, std::string_view what) const;

  // Raises a JsonFieldError for `key` with message "<field> <fact>". Never returns.
  [[noreturn]] void fail(JsonFieldError::Reason reason, std::string_view key,
                         std::string_view fact) const;
  // Raises with a message of the caller's wording. Never returns.
  [[noreturn]] void fail_message(JsonFieldError::Reason reason, std::string_view key,
                                 std::string message) const;

  const std::string& name() const noexcept { return name_; }
  const Json& value() const noexcept { return value_; }

 private:
  JsonObjectReader(const Json& value, std::string name, std::string path, JsonErrorRaiser raise);
  std::string field(std::string_view key) const;

  const Json& value_;
  std::string name_;
  std::string path_;  // prefix of field paths: "" at the top, "scope." below
  JsonErrorRaiser raise_;
};

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_JSON_READER_HPP_
