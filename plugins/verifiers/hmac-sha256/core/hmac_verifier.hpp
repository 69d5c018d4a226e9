// HMAC-SHA256 human-decision verifier: the logic behind the "hmac-sha256" plugin, linked
// straight into tests. An instance is immutable after construction; verify() is thread-safe.
//
// Config (JSON object): {"key_hex": "<hex of the shared key, at least kMinKeyBytes bytes>"}
// Assertion: the wire payload of runtime spec §5.6; its proof (base64 in "proof_base64") is the
//   raw 32-byte HMAC-SHA256(key, signing_bytes), and signing_bytes must be the payload's claims.
// Messages never contain the key, the proof or the signing bytes.
#ifndef CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_
#define CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_

#include <cstddef>
#include <string>
#include <string_view>

namespace ctx::hmac_sha256 {

inline constexpr std::string_view kPluginId = "hmac-sha256";
// Shortest key accepted (128 bits); shorter keys are configuration errors.
inline constexpr std::size_t kMinKeyBytes = 16;
inline constexpr std::size_t kMacBytes = 32;

class HmacVerifier {
 public:
  // Reads the key from `config_json`. Errors: InvalidArgument when the config is not an object,
  // "key_hex" is missing, not hex, or shorter than kMinKeyBytes.
  explicit HmacVerifier(std::string_view config_json);
  ~HmacVerifier();
  HmacVerifier(const HmacVerifier&) = delete;
  HmacVerifier& operator=(const HmacVerifier&) = delete;

  // True only when signing_bytes are the payload's own claims and the proof is exactly
  // HMAC-SHA256(key, signing_bytes), compared in constant time; false otherwise (also for a proof
  // that is not kMacBytes long).
  // Errors: InvalidArgument when the payload is not a JSON object with a base64 "proof_base64".
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) const;

  // The raw proof a signer holding `key` produces for `signing_bytes`.
  static std::string sign(std::string_view key, std::string_view signing_bytes);

 private:
  std::string key_;  // raw key bytes; cleansed on destruction
};

}  // namespace ctx::hmac_sha256

#endif  // CTX_PLUGINS_VERIFIERS_HMAC_SHA256_CORE_HMAC_VERIFIER_HPP_
