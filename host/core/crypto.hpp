// SHA-256, HMAC-SHA256 and constant-time comparison with the host's typed errors, over
// ctx::support_digest (the one OpenSSL helper set host and plugins share); random bytes from the
// kernel. Thread-safe.
#ifndef CTX_HOST_CORE_CRYPTO_HPP_
#define CTX_HOST_CORE_CRYPTO_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/text.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace ctx::core {

using Sha256Digest = std::array<std::uint8_t, 32>;

// Initialises OpenSSL without reading any configuration file: $OPENSSL_CONF (or the system's
// openssl.cnf) can name provider and engine modules that OpenSSL would load into this process,
// code ctx never pinned, and ctx needs only the built-in default provider (reading the file also
// cost a cold `ctx hook` 1-5 ms). Nor does it fill OpenSSL's legacy name tables (0.6 ms at the
// first fetch): every algorithm ctx and its plugins use is fetched from the provider by name or
// through EVP_sha256() and its kin, never looked up with EVP_get_digestbyname / _cipherbyname.
// REQUIRES: called before any other OpenSSL use (first in main).
// Errors: SystemError when OpenSSL cannot initialise.
void init_crypto_without_config();

// Incremental SHA-256. Not copyable. Errors: SystemError when OpenSSL fails.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Returns the digest; the object may not be updated afterwards.
  Sha256Digest finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string to_hex(const std::uint8_t* data, std::size_t size);
inline std::string to_hex(const Sha256Digest& d) { return to_hex(d.data(), d.size()); }

// Lower-case 64-hex SHA-256 of `bytes` (the one helper, in ctx::support). Errors: SystemError.
using support::sha256_hex;

// True when `text` is 64 lower-case hex characters (the one rule, in ctx::support).
using support::is_sha256_hex;

// HMAC-SHA256 of `message` under `key`, raw 32 bytes; hmac_sha256_hex is its hex.
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// Compares in time that depends only on the sizes (CRYPTO_memcmp).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// Fills `out` from the kernel's CSPRNG (getrandom(2), which OpenSSL's own DRBG seeds from: a
// one-shot process draws its few bytes without instantiating that DRBG). Blocks only until the
// kernel pool is first initialised. Errors: SystemError when the kernel gives none.
void random_bytes(std::uint8_t* out, std::size_t size);
// `bytes` random bytes as lower-case hex (2 * bytes characters).
std::string random_hex(std::size_t bytes);

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_CRYPTO_HPP_
