#include "host/core/crypto.hpp"

#include <openssl/crypto.h>
#include <sys/random.h>

#include <cerrno>

#include "ctx/support/digest.hpp"
#include "host/core/error.hpp"

namespace ctx::core {

void init_crypto_without_config() {
  if (!support::init_openssl_without_config()) throw SystemError("openssl init failed");
}

struct Sha256::Ctx {
  support::Sha256Stream stream;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t size) {
  if (!ctx_->stream.update(data, size)) throw SystemError("sha256: openssl update failed");
}

Sha256Digest Sha256::finish() {
  const auto digest = ctx_->stream.finish();
  if (!digest) throw SystemError("sha256: openssl failed");
  return *digest;
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  return support::to_hex(data, size);
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  const auto mac = support::hmac_sha256(key, message);
  if (!mac) throw SystemError("hmac-sha256: openssl failed");
  return *mac;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  return to_hex(hmac_sha256(key, message));
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  return support::constant_time_equal(a, b);
}

void random_bytes(std::uint8_t* out, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::getrandom(out, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("the kernel gave no random bytes");
    }
    out += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  random_bytes(reinterpret_cast<std::uint8_t*>(raw.data()), raw.size());
  return to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

}  // namespace ctx::core
