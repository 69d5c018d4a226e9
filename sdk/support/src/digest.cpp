#include "ctx/support/digest.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace ctx::support {
namespace {

// OpenSSL 3 looks an implementation up (locks, property matching) on every EVP_sha256() use and
// every EVP_Q_mac: both are fetched once per process and kept (never freed: a plugin may be
// unloaded after OpenSSL's own cleanup has run).
const EVP_MD* sha256_md() noexcept {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

// An HMAC context with its digest (SHA-256) set and no key: each MAC starts from a copy of it,
// which only reads it.
const EVP_MAC_CTX* hmac_sha256_template() noexcept {
  static EVP_MAC_CTX* const context = []() -> EVP_MAC_CTX* {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac == nullptr) return nullptr;
    EVP_MAC_CTX* made = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);  // the context holds its own reference
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (made == nullptr || EVP_MAC_CTX_set_params(made, params) != 1) {
      EVP_MAC_CTX_free(made);
      return nullptr;
    }
    return made;
  }();
  return context;
}

const unsigned char* bytes_of(std::string_view text) noexcept {
  return reinterpret_cast<const unsigned char*>(text.data());
}

}  // namespace

std::optional<Sha256Bytes> sha256(std::string_view bytes) noexcept {
  Sha256Bytes out{};
  unsigned int size = 0;
  const EVP_MD* md = sha256_md();
  if (md == nullptr ||
      EVP_Digest(bytes.data(), bytes.size(), out.data(), &size, md, nullptr) != 1 ||
      size != out.size()) {
    return std::nullopt;
  }
  return out;
}

std::optional<Sha256Bytes> hmac_sha256(std::string_view key, std::string_view message) noexcept {
  Sha256Bytes out{};
  std::size_t size = 0;
  const EVP_MAC_CTX* base = hmac_sha256_template();
  if (key.empty() || base == nullptr) {
    // EVP_MAC_init reads "no key" as "keep the last one": an empty key takes the one-shot call.
    if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                  bytes_of(message), message.size(), out.data(), out.size(), &size) == nullptr ||
        size != out.size()) {
      return std::nullopt;
    }
    return out;
  }
  EVP_MAC_CTX* context = EVP_MAC_CTX_dup(base);
  const bool ok = context != nullptr &&
                  EVP_MAC_init(context, bytes_of(key), key.size(), nullptr) == 1 &&
                  EVP_MAC_update(context, bytes_of(message), message.size()) == 1 &&
                  EVP_MAC_final(context, out.data(), &size, out.size()) == 1 && size == out.size();
  EVP_MAC_CTX_free(context);
  if (!ok) return std::nullopt;
  return out;
}

Sha256Stream::Sha256Stream() noexcept : context_(EVP_MD_CTX_new()), ok_(false) {
  auto* md = static_cast<EVP_MD_CTX*>(context_);
  ok_ = md != nullptr && sha256_md() != nullptr && EVP_DigestInit_ex(md, sha256_md(), nullptr) == 1;
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

bool Sha256Stream::update(const void* data, std::size_t size) noexcept {
  if (ok_ && size != 0) {
    ok_ = EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), data, size) == 1;
  }
  return ok_;
}

std::optional<Sha256Bytes> Sha256Stream::finish() noexcept {
  Sha256Bytes out{};
  unsigned int size = 0;
  const bool done =
      ok_ && EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), out.data(), &size) == 1 &&
      size == out.size();
  ok_ = false;
  if (!done) return std::nullopt;
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

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && (a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0);
}

void cleanse(std::string& secret) noexcept {
  if (!secret.empty()) OPENSSL_cleanse(secret.data(), secret.size());
  secret.clear();
}

bool init_openssl_without_config() noexcept {
  constexpr std::uint64_t kOptions = OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                                     OPENSSL_INIT_NO_ADD_ALL_DIGESTS;
  return OPENSSL_init_crypto(kOptions, nullptr) == 1;
}

}  // namespace ctx::support
