// "readme-hmac": accepts an assertion whose proof.mac_hex is HMAC-SHA256(key, signing bytes).
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <ctx/sdk/plugin.hpp>
#include <nlohmann/json.hpp>
#include <string>

// The string at `pointer` in the JSON text; anything else is an invalid argument.
std::string member(std::string_view text, const char* pointer) {
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json::json_pointer at(pointer);
  if (doc.is_discarded() || !doc.contains(at) || !doc[at].is_string())
    throw ctx::InvalidArgument(std::string("expected a string at ") + pointer);
  return doc[at].get<std::string>();
}

class ReadmeVerifier final : public ctx::sdk::Verifier {
 public:
  // config: {"key": "<shared secret, at least 16 bytes>"}
  explicit ReadmeVerifier(std::string_view config) : key_(member(config, "/key")) {
    if (key_.size() < 16) throw ctx::InvalidArgument("the key needs at least 16 bytes");
  }
  // assertion: {"proof": {"mac_hex": "<64 hex digits>"}, ...}; a wrong proof is a rejection.
  bool verify(std::string_view assertion, std::string_view signing_bytes) override {
    const std::string hex = member(assertion, "/proof/mac_hex");
    unsigned char want[32], mac[32];
    std::size_t want_size = 0;
    unsigned int size = 0;
    if (!OPENSSL_hexstr2buf_ex(want, sizeof want, &want_size, hex.c_str(), '\0')) return false;
    HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
         reinterpret_cast<const unsigned char*>(signing_bytes.data()), signing_bytes.size(), mac,
         &size);
    return want_size == size && CRYPTO_memcmp(want, mac, size) == 0;
  }
 private:
  std::string key_;
};

CTX_PLUGIN(ReadmeVerifier, verifier, "readme-hmac", "1.0.0");
