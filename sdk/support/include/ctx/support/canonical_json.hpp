// Canonical JSON and the digest built on it: the one encoder every identity in ctx uses (host,
// the SDK's loader and conformance kit). Both encodings equal Python's
// json.dumps(sort_keys=True, separators=(",", ":"), allow_nan=False): canon-U keeps non-ASCII as
// raw UTF-8, canon-A escapes it as \uXXXX. Thread-safe (pure functions).
#ifndef CTX_SUPPORT_CANONICAL_JSON_HPP_
#define CTX_SUPPORT_CANONICAL_JSON_HPP_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ctx::support {

enum class Encoding { kUtf8, kAscii };  // canon-U, canon-A

// Canonical text of `value`. Errors: ctx::InvalidArgument for NaN/infinity or invalid UTF-8.
std::string canonical_json(const nlohmann::json& value, Encoding encoding = Encoding::kUtf8);

// Lower-case hex SHA-256 of `bytes`. Errors: ctx::SystemError when OpenSSL fails.
std::string sha256_hex(std::string_view bytes);

// sha256 hex of canonical_json(value, encoding). Errors: as canonical_json; ctx::SystemError when
// OpenSSL fails.
std::string canonical_digest(const nlohmann::json& value, Encoding encoding = Encoding::kUtf8);

}  // namespace ctx::support

#endif  // CTX_SUPPORT_CANONICAL_JSON_HPP_
