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

// ---- composing canonical text ----------------------------------------------------------------

void append_canonical_string(std::string& out, std::string_view value) {
  for (const char c : value) {
    // Printable ASCII other than '"' and '\\' is written as itself by the canonical encoder;
    // anything else (escapes, UTF-8 validation) is left to it.
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
      out += core::canonical_json(core::Json(std::string(value)));
      return;
    }
  }
  out.reserve(out.size() + value.size() + 2);
  out += '"';
  out += value;
  out += '"';
}

void CanonicalObject::key(std::string_view key) {
  CTX_CHECK(out_.size() == 1 || last_key_ < key);
#ifndef NDEBUG
  for (const char c : key) CTX_CHECK(c >= 0x20 && c <= 0x7e && c != '"' && c != '\\');
#endif
  last_key_ = key;
  if (out_.size() > 1) out_ += ',';
  out_ += '"';
  out_ += key;
  out_ += "\":";
}

CanonicalObject& CanonicalObject::text(std::string_view k, std::string_view canonical) {
  key(k);
  out_ += canonical;
  return *this;
}

CanonicalObject& CanonicalObject::string(std::string_view k, std::string_view value) {
  key(k);
  append_canonical_string(out_, value);
  return *this;
}

CanonicalObject& CanonicalObject::optional_string(std::string_view k,
                                                  const std::optional<std::string>& value) {
  if (!value) return text(k, "null");
  return string(k, *value);
}

CanonicalObject& CanonicalObject::integer(std::string_view k, std::int64_t value) {
  key(k);
  out_ += std::to_string(value);
  return *this;
}

CanonicalObject& CanonicalObject::strings(std::string_view k,
                                          const std::vector<std::string>& values) {
  key(k);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    append_canonical_string(out_, values[i]);
  }
  out_ += ']';
  return *this;
}

CanonicalObject& CanonicalObject::json(std::string_view k, const core::Json& value) {
  key(k);
  out_ += core::canonical_json(value);
  return *this;
}

std::string CanonicalObject::finish() {
  out_ += '}';
  return std::move(out_);
}

std::string canonical_array(const std::vector<std::string_view>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += items[i];
  }
  out += ']';
  return out;
}

}  // namespace ctx::engine
