// OpenSSH public keys for the sshsig verifier: the wire blob (RFC 4253 §6.6, RFC 5656 §3.1,
// RFC 8709, PROTOCOL.u2f) to an OpenSSL EVP_PKEY, one authorized_keys line to a key, and one
// SSH signature checked over data with OpenSSL EVP. Thread-safe (immutable keys, pure functions).
// Errors never quote key, signature or data bytes.
#ifndef CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_KEY_HPP_
#define CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_KEY_HPP_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

typedef struct evp_pkey_st EVP_PKEY;

namespace ctx::sshsig {

enum class KeyType { kEd25519, kEcdsaP256, kRsa, kSkEd25519, kSkEcdsaP256 };

// The key type's wire name ("ssh-ed25519", "sk-ecdsa-sha2-nistp256@openssh.com", ...).
std::string_view key_type_name(KeyType type) noexcept;
bool is_security_key(KeyType type) noexcept;

// Smallest RSA modulus accepted (bits).
inline constexpr int kMinRsaBits = 2048;

struct SshPublicKey {
  KeyType type = KeyType::kEd25519;
  std::string blob;                // the exact wire blob
  std::string application;         // security keys only (e.g. "ssh:")
  std::shared_ptr<EVP_PKEY> pkey;  // the public key, validated
};

// Parses a complete public-key blob of one of the five key types. Errors: InvalidArgument when
// the blob is truncated, has trailing bytes, names another type or curve, or holds an invalid key
// (point not on P-256, RSA modulus under kMinRsaBits, ...).
SshPublicKey parse_public_key(std::string_view blob);

// Parses one authorized_keys line: [options] keytype base64-blob [comment]. The blob's own type
// must equal `keytype`. Errors: InvalidArgument as for parse_public_key, or when the line does not
// have that shape.
SshPublicKey parse_authorized_key(std::string_view line);

// True when `signature_blob` (the algorithm-specific part of an SSH signature) is a valid
// `signature_algorithm` signature by `key` over `data`: Ed25519 over data; ECDSA P-256 with
// SHA-256 over data (r, s as mpints); RSA PKCS#1 v1.5 with SHA-256/512 for rsa-sha2-256/512
// (a signature shorter than the modulus is left-padded with zeros, as OpenSSH does).
// The caller has matched `signature_algorithm` to the key type.
// Errors: InvalidArgument when the signature blob is malformed for its algorithm.
bool verify_signature(const SshPublicKey& key, std::string_view signature_algorithm,
                      std::string_view signature_blob, std::string_view data);

}  // namespace ctx::sshsig

#endif  // CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_KEY_HPP_
