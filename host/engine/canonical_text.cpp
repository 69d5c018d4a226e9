#include "host/engine/canonical_text.hpp"

#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"

namespace ctx::engine {

CanonicalText CanonicalText::encode(const core::Json& value) {
  std::string text = core::canonical_json(value);
  std::string digest = core::sha256_hex(text);
  return CanonicalText(std::move(text), std::move(digest));
}

CanonicalText CanonicalText::adopt(std::string text) {
#ifndef NDEBUG
  CTX_CHECK(core::canonical_json(core::parse_json(text)) == text);
#endif
  std::string digest = core::sha256_hex(text);
  return CanonicalText(std::move(text), std::move(digest));
}

CanonicalText CanonicalText::verify(std::string_view text, std::string_view what) {
  try {
    core::parse_canonical_json(text);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(std::string(what) + " must be canonical json");
  }
  return CanonicalText(std::string(text), core::sha256_hex(text));
}

}  // namespace ctx::engine
