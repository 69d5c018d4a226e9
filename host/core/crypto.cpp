#include "host/core/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>

#include <cerrno>

#include "host/core/error.hpp"

namespace ctx::core {

namespace {

// The SHA-256 implementation, fetched once: OpenSSL 3 otherwise repeats the provider lookup
// (locks, property matching) on every EVP_DigestInit_ex with EVP_sha256(). Kept for the process.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

// An HMAC context with its digest (SHA-256) set and no key, made once for the process (as
// plugin_common's twin): each MAC is a copy of it keyed afresh, which only reads it. EVP_Q_mac
// would fetch the MAC and the digest by name (locks, property matching) on every call.
const EVP_MAC_CTX* hmac_sha256_template() {
  static EVP_MAC_CTX* const context = []() -> EVP_MAC_CTX* {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac == nullptr) return nullptr;
    EVP_MAC_CTX* made = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);  // the context holds its own reference
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_END};
    if (made == nullptr || EVP_MAC_CTX_set_params(made, params) != 1) {
      EVP_MAC_CTX_free(made);
      return nullptr;
    }
    return made;
  }();
  return context;
}

}  // namespace

void init_crypto_without_config() {
  constexpr std::uint64_t kOptions = OPENSSL_INIT_NO_LOAD_CONFIG |
                                     OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                                     OPENSSL_INIT_NO_ADD_ALL_DIGESTS;
  if (OPENSSL_init_crypto(kOptions, nullptr) != 1) {
    throw SystemError("openssl init failed");
  }
}

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || sha256_md() == nullptr ||
      EVP_DigestInit_ex(ctx_->md, sha256_md(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_->md);
    throw SystemError("sha256: openssl init failed");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(const void* data, std::size_t size) {
  if (size != 0 && EVP_DigestUpdate(ctx_->md, data, size) != 1) {
    throw SystemError("sha256: openssl update failed");
  }
}

Sha256Digest Sha256::finish() {
  Sha256Digest out{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_->md, out.data(), &size) != 1 || size != out.size()) {
    throw SystemError("sha256: openssl final failed");
  }
  return out;
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 0x0f];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return to_hex(hash.finish());
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  Sha256Digest out{};
  std::size_t size = 0;
  // (An empty key is given to EVP_Q_mac: EVP_MAC_init reads "no key" as "keep the last one".)
  if (const EVP_MAC_CTX* const prototype = key.empty() ? nullptr : hmac_sha256_template()) {
    EVP_MAC_CTX* const ctx = EVP_MAC_CTX_dup(prototype);
    const bool ok =
        ctx != nullptr &&
        EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                     nullptr) == 1 &&
        EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1 &&
        EVP_MAC_final(ctx, out.data(), &size, out.size()) == 1 && size == out.size();
    EVP_MAC_CTX_free(ctx);
    if (!ok) throw SystemError("hmac-sha256: openssl failed");
    return out;
  }
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                out.data(), out.size(), &size) == nullptr ||
      size != out.size()) {
    throw SystemError("hmac-sha256: openssl failed");
  }
  return out;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  return to_hex(hmac_sha256(key, message));
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
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
