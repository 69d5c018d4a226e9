// HMAC-SHA256 human-decision verifier: the logic behind the "hmac-sha256" plugin, linked
// straight into tests. An instance is immutable after construction; verify() is thread-safe.
//
// Config (JSON object):   {"key_hex": "<hex of the shared key, at least kMinKeyBytes bytes>"}
// Assertion (JSON object): {"proof": {"scheme": "hmac-sha256", "mac_hex": "<64 hex digits>"}, ...}
//   Other members of the assertion are ignored: what is signed is `signing_bytes`, which the
//   host derives from the assertion, and the proof is HMAC-SHA256(key, signing_bytes).
// Messages never contain the key, the proof or the signing bytes.
#ifndef CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_
#define CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_

#include <cstddef>
#include <string>
#include <string_view>

namespace ctx::hmac_sha256 {

inline constexpr std::string_view kPluginId = "hmac-sha256";
inline constexpr std::string_view kScheme = "hmac-sha256";
// Shortest key accepted (128 bits); shorter keys are configuration errors.
inline constexpr std::size_t kMinKeyBytes = 16;

class HmacVerifier {
 public:
  // Reads the key from `config_json`. Errors: InvalidArgument when the config is not an object,
  // "key_hex" is missing, not hex, or shorter than kMinKeyBytes.
  explicit HmacVerifier(std::string_view config_json);
  ~HmacVerifier();
  HmacVerifier(const HmacVerifier&) = delete;
  HmacVerifier& operator=(const HmacVerifier&) = delete;

  // True only when the assertion's proof is exactly HMAC-SHA256(key, signing_bytes), compared in
  // constant time. A well-formed proof that does not match is false.
  // Errors: InvalidArgument when the assertion is not JSON, has no "proof" object, names another
  // scheme, or "mac_hex" is not 64 hex digits.
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) const;

  // The proof a signer holding `key` produces for `signing_bytes` (64 lower-case hex digits).
  static std::string sign_hex(std::string_view key, std::string_view signing_bytes);

 private:
  std::string key_;  // raw key bytes; cleansed on destruction
};

}  // namespace ctx::hmac_sha256

#endif  // CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_
