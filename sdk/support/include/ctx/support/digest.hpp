// The one OpenSSL helper set host and plugins share: SHA-256 (one-shot and incremental),
// HMAC-SHA256, lower-case hex, constant-time comparison and cleansing, through OpenSSL EVP with
// the implementations fetched once per process. Thread-safe. Nothing here throws on an OpenSSL
// failure: it answers nullopt/false and each caller raises its own typed error.
#ifndef CTX_SUPPORT_DIGEST_HPP_
#define CTX_SUPPORT_DIGEST_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ctx::support {

using Sha256Bytes = std::array<std::uint8_t, 32>;

// Initialises OpenSSL without reading its configuration file or loading ciphers and digests
// nobody asked for (call once, first thing in main). False when OpenSSL fails.
bool init_openssl_without_config() noexcept;

// SHA-256 of `bytes`; nullopt when OpenSSL fails.
std::optional<Sha256Bytes> sha256(std::string_view bytes) noexcept;

// HMAC-SHA256 of `message` under `key` (an empty key too); nullopt when OpenSSL fails.
std::optional<Sha256Bytes> hmac_sha256(std::string_view key, std::string_view message) noexcept;

// Incremental SHA-256. Not copyable. After any false or nullopt answer the stream is spent.
class Sha256Stream {
 public:
  Sha256Stream() noexcept;
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  // False when OpenSSL could not start the stream or the update failed.
  bool update(const void* data, std::size_t size) noexcept;
  // The digest (once); nullopt when OpenSSL failed at any point.
  std::optional<Sha256Bytes> finish() noexcept;

 private:
  void* context_;  // EVP_MD_CTX
  bool ok_;
};

// Lower-case hex of `size` bytes at `data`.
std::string to_hex(const std::uint8_t* data, std::size_t size);
inline std::string to_hex(const Sha256Bytes& bytes) { return to_hex(bytes.data(), bytes.size()); }
inline std::string to_hex(std::string_view bytes) {
  return to_hex(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

// Equal sizes and bytes, compared in time that depends only on the sizes (CRYPTO_memcmp).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// Overwrites `secret` with zeros in a way the optimiser keeps (OPENSSL_cleanse), then clears it.
void cleanse(std::string& secret) noexcept;

}  // namespace ctx::support

#endif  // CTX_SUPPORT_DIGEST_HPP_
