#include "plugins/common/bytes.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstdint>
#include <ctx/sdk/error.hpp>

namespace ctx::plugin_common {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// OpenSSL 3 looks the implementation up (locks, property matching) on every EVP_sha256() use
// and every EVP_Q_mac: both are fetched once per process and kept (never freed: a plugin may be
// unloaded while OpenSSL's own cleanup has already run).
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

// An HMAC context with its digest (SHA-256) set and no key: each MAC starts from a copy of it.
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

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int base64_value(char c) noexcept {
  const auto pos = kBase64Alphabet.find(c);
  return pos == std::string_view::npos ? -1 : static_cast<int>(pos);
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<std::uint8_t>(c);
    out.push_back(kHexDigits[byte >> 4]);
    out.push_back(kHexDigits[byte & 0x0f]);
  }
  return out;
}

std::string from_hex(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0) throw InvalidArgument(std::string(what) + " is not hex");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]);
    const int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) throw InvalidArgument(std::string(what) + " is not hex");
    out.push_back(static_cast<char>((high << 4) | low));
  }
  return out;
}

std::string from_base64(std::string_view text, std::string_view what) {
  const auto invalid = [&] { return InvalidArgument(std::string(what) + " is not base64"); };
  if (text.size() % 4 != 0) throw invalid();
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const bool pad_slot = last && j >= 4 - padding;
      const int value = pad_slot ? (text[i + j] == '=' ? 0 : -1) : base64_value(text[i + j]);
      if (value < 0) throw invalid();
      group = (group << 6) | static_cast<std::uint32_t>(value);
    }
    const std::size_t produced = last ? 3 - padding : 3;
    // Non-canonical encodings (bits set in the padding) are refused: one text, one byte string.
    if (last && padding == 1 && (group & 0xff) != 0) throw invalid();
    if (last && padding == 2 && (group & 0xffff) != 0) throw invalid();
    for (std::size_t k = 0; k < produced; ++k) {
      out.push_back(static_cast<char>((group >> (16 - 8 * k)) & 0xff));
    }
  }
  return out;
}

std::string sha256(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  const EVP_MD* md = sha256_md();
  if (md == nullptr ||
      EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, md, nullptr) != 1 ||
      size != 32) {
    throw Error("sha-256 failed in openssl", ErrorCode::kInternal);
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), size);
}

std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

std::string hmac_sha256(std::string_view key, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  std::size_t size = 0;
  const auto failed = [] { return Error("hmac-sha256 failed in openssl", ErrorCode::kInternal); };
  const EVP_MAC_CTX* base = hmac_sha256_template();
  if (key.empty() || base == nullptr) {  // EVP_MAC_init takes no empty key: the one-shot call
    if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                  reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                  mac.data(), mac.size(), &size) == nullptr ||
        size != 32) {
      throw failed();
    }
    return std::string(reinterpret_cast<const char*>(mac.data()), size);
  }
  EVP_MAC_CTX* context = EVP_MAC_CTX_dup(base);
  const bool ok =
      context != nullptr &&
      EVP_MAC_init(context, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   nullptr) == 1 &&
      EVP_MAC_update(context, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1 &&
      EVP_MAC_final(context, mac.data(), &size, mac.size()) == 1 && size == 32;
  EVP_MAC_CTX_free(context);
  if (!ok) throw failed();
  return std::string(reinterpret_cast<const char*>(mac.data()), size);
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void cleanse(std::string& secret) noexcept {
  if (!secret.empty()) OPENSSL_cleanse(secret.data(), secret.size());
  secret.clear();
}

}  // namespace ctx::plugin_common
