// CanonicalText: an immutable canon-U JSON text and its sha-256 digest, computed once when the
// text is made — by encoding a value, by adopting what a canonical encoder of this process just
// produced (no re-parse), or by verifying bytes read from outside (parse + canonical check).
// CanonicalObject composes canon-U object text from members that already are canonical text, so
// a value that keeps its text is never re-encoded. Thread-safe (immutable values).
#ifndef CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_
#define CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

class CanonicalText {
 public:
  CanonicalText() = default;  // empty text, empty digest (a placeholder to assign over)
  // Encodes `value` (canon-U). Errors: InvalidArgument (NaN, invalid UTF-8).
  static CanonicalText encode(const core::Json& value);
  // REQUIRES: `text` is exactly core::canonical_json(v) of some value v, produced by this
  // process (checked in debug builds only).
  static CanonicalText adopt(std::string text);
  // Verifies untrusted bytes. Errors: InvalidArgument "<what> must be canonical json".
  static CanonicalText verify(std::string_view text, std::string_view what);

  const std::string& text() const noexcept { return text_; }
  const std::string& digest() const noexcept { return digest_; }

  friend bool operator==(const CanonicalText&, const CanonicalText&) = default;

 private:
  CanonicalText(std::string text, std::string digest)
      : text_(std::move(text)), digest_(std::move(digest)) {}
  std::string text_;
  std::string digest_;
};

// Appends the canon-U text of the JSON string `value` to `out` (byte-identical to
// core::canonical_json of that string). Errors: InvalidArgument (invalid UTF-8).
void append_canonical_string(std::string& out, std::string_view value);

// Builds the canon-U text of one JSON object, member by member. Keys are string literals given
// in ascending byte order (canon-U's order; checked, a violation aborts like CTX_CHECK) that
// need no escaping (checked in debug builds); the result equals core::canonical_json of the
// same object (checked by tests).
class CanonicalObject {
 public:
  CanonicalObject() { out_ += '{'; }
  // A member whose value is already canonical text.
  CanonicalObject& text(std::string_view key, std::string_view canonical);
  CanonicalObject& string(std::string_view key, std::string_view value);
  CanonicalObject& optional_string(std::string_view key, const std::optional<std::string>& value);
  CanonicalObject& integer(std::string_view key, std::int64_t value);
  CanonicalObject& strings(std::string_view key, const std::vector<std::string>& values);
  // Encodes `value` (the fallback for members that keep no text).
  CanonicalObject& json(std::string_view key, const core::Json& value);
  // The object text (the builder is left empty).
  std::string finish();

 private:
  void key(std::string_view key);
  std::string out_;
  std::string_view last_key_;  // keys are literals (static storage)
};

// The canon-U text of an array of canonical texts.
std::string canonical_array(const std::vector<std::string_view>& items);

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_
