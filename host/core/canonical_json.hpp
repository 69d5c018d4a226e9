// Canonical JSON and the digests built on it: the one helper every identity in ctx uses.
//
// Both encodings equal Python's json.dumps(sort_keys=True, separators=(",", ":"),
// allow_nan=False): canon-U keeps non-ASCII as raw UTF-8, canon-A escapes it as \uXXXX.
// Thread-safe (pure functions).
#ifndef CTX_HOST_CORE_CANONICAL_JSON_HPP_
#define CTX_HOST_CORE_CANONICAL_JSON_HPP_

#include <string>
#include <string_view>

#include "host/core/json_reader.hpp"

namespace ctx::core {

enum class Encoding { kUtf8, kAscii };  // canon-U, canon-A

// Canonical text of `value`. Errors: InvalidArgument for NaN/infinity or invalid UTF-8.
std::string canonical_json(const Json& value, Encoding encoding = Encoding::kUtf8);

// sha256 hex of canonical_json(value, encoding).
std::string canonical_digest(const Json& value, Encoding encoding = Encoding::kUtf8);

// Parses `text` and requires it to be byte-identical to its canonical re-encoding.
// Errors: InvalidArgument "json is not canonical", or parse_json's JsonFieldError.
Json parse_canonical_json(std::string_view text, Encoding encoding = Encoding::kUtf8);

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_CANONICAL_JSON_HPP_
