// CanonicalText: an immutable canon-U JSON text and its sha-256 digest, computed once when the
// text is made — by encoding a value, by adopting what a canonical encoder of this process just
// produced (no re-parse), or by verifying bytes read from outside (parse + canonical check).
// Thread-safe (immutable value).
#ifndef CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_
#define CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_

#include <string>
#include <string_view>
#include <utility>

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

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_CANONICAL_TEXT_HPP_
