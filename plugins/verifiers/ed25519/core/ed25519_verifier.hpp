// Ed25519 human-decision verifier: the logic behind the "ed25519" plugin, linked straight into
// tests. Immutable after construction; verify() is thread-safe. OpenSSL EVP only.
//
// Config (JSON object): {"public_key_pem": "<SubjectPublicKeyInfo PEM, as openssl pkey -pubout
//   prints it>"} — exactly one Ed25519 public key.
// Assertion: the wire payload of runtime spec §5.6; its proof is the 64-byte Ed25519 signature
//   over signing_bytes, and signing_bytes must be the payload's own claims.
// Messages never contain the key, the proof or the signing bytes.
#ifndef CTX_PLUGINS_VERIFIERS_ED25519_CORE_ED25519_VERIFIER_HPP_
#define CTX_PLUGINS_VERIFIERS_ED25519_CORE_ED25519_VERIFIER_HPP_

#include <cstddef>
#include <memory>
#include <string_view>

typedef struct evp_pkey_st EVP_PKEY;

namespace ctx::ed25519 {

inline constexpr std::string_view kPluginId = "ed25519";
inline constexpr std::size_t kSignatureBytes = 64;

class Ed25519Verifier {
 public:
  // Errors: InvalidArgument when the config is not an object, "public_key_pem" is missing, is not
  // one PEM public key, or the key is not Ed25519.
  explicit Ed25519Verifier(std::string_view config_json);
  ~Ed25519Verifier();
  Ed25519Verifier(const Ed25519Verifier&) = delete;
  Ed25519Verifier& operator=(const Ed25519Verifier&) = delete;

  // True only when signing_bytes are the payload's own claims and the proof is a valid Ed25519
  // signature over them by the configured key; false otherwise.
  // Errors: InvalidArgument when the payload is not a JSON object with a base64 "proof_base64",
  // or the proof is not kSignatureBytes long; ctx::Error (kInternal) when OpenSSL fails.
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) const;

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* key) const noexcept;
  };
  std::unique_ptr<EVP_PKEY, KeyFree> key_;
};

}  // namespace ctx::ed25519

#endif  // CTX_PLUGINS_VERIFIERS_ED25519_CORE_ED25519_VERIFIER_HPP_
