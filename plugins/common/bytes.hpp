// Byte encodings and digests for the in-tree plugin cores: hex, strict base64, SHA-256 and
// HMAC-SHA256 and constant-time comparison (over ctx::support_digest, the one OpenSSL helper set
// host and plugins share). Byte strings are std::string.
// Thread-safe (pure functions). Errors never quote the input.
#ifndef CTX_PLUGINS_COMMON_BYTES_HPP_
#define CTX_PLUGINS_COMMON_BYTES_HPP_

#include <ctx/support/text.hpp>
#include <string>
#include <string_view>

namespace ctx::plugin_common {

// Lower-case hex of `bytes`.
std::string to_hex(std::string_view bytes);

// Decodes hex (either case, even length). Errors: InvalidArgument "<what> is not hex".
std::string from_hex(std::string_view hex, std::string_view what);

// True when `text` is exactly 64 lower-case hex characters (the one rule, in ctx::support).
using support::is_sha256_hex;

// Decodes standard base64 (RFC 4648 §4, padding required, no whitespace).
// Errors: InvalidArgument "<what> is not base64".
std::string from_base64(std::string_view text, std::string_view what);

// Raw 32-byte SHA-256 of `bytes`; sha256_hex is its lower-case hex. Errors: ctx::Error (kInternal)
// when OpenSSL fails.
std::string sha256(std::string_view bytes);
std::string sha256_hex(std::string_view bytes);

// Raw 32-byte HMAC-SHA256 of `message` under `key` (EVP_Q_mac). Errors: ctx::Error (kInternal).
std::string hmac_sha256(std::string_view key, std::string_view message);

// Equal sizes and bytes, compared in time that depends only on the sizes (CRYPTO_memcmp).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// Overwrites `secret` with zeros in a way the optimiser keeps (OPENSSL_cleanse), then clears it.
void cleanse(std::string& secret) noexcept;

}  // namespace ctx::plugin_common

#endif  // CTX_PLUGINS_COMMON_BYTES_HPP_
