// SSHSIG human-decision verifier: the logic behind the "sshsig" plugin, linked straight into
// tests. Immutable after construction; check()/verify() are thread-safe. OpenSSL EVP only.
//
// Config (JSON object): {"public_key": "<one authorized_keys line>"} of type ssh-ed25519,
//   ecdsa-sha2-nistp256, ssh-rsa (signatures rsa-sha2-256/512 only), sk-ssh-ed25519@openssh.com
//   or sk-ecdsa-sha2-nistp256@openssh.com.
// Assertion: the wire payload of runtime spec §5.6; its proof is the armored text
//   `ssh-keygen -Y sign -n ctx-consent` writes for a file holding the signing bytes
//   (PROTOCOL.sshsig: namespace "ctx-consent", hash sha256 or sha512, the configured key). For
//   security keys the user-presence flag (0x01) must be set and the signature covers
//   SHA256(application) || flags || counter || SHA256(SSHSIG signed data) (PROTOCOL.u2f).
// Messages never contain the key, the proof or the signing bytes.
#ifndef CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSHSIG_VERIFIER_HPP_
#define CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSHSIG_VERIFIER_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "plugins/verifiers/sshsig/core/ssh_key.hpp"

namespace ctx::sshsig {

inline constexpr std::string_view kPluginId = "sshsig";
inline constexpr std::string_view kNamespace = "ctx-consent";
inline constexpr std::string_view kMagic = "SSHSIG";
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint8_t kUserPresent = 0x01;

// Why a well-formed proof was not accepted (checked in this order).
enum class Verdict {
  kAccepted,
  kWrongKey,             // the signature's public key is not the configured one
  kWrongNamespace,       // namespace is not "ctx-consent"
  kUnsupportedHash,      // hash_algorithm is not sha256 or sha512
  kWrongAlgorithm,       // signature algorithm does not belong to the key (or is ssh-rsa/SHA-1)
  kUserPresenceMissing,  // security key signature without the user-presence flag
  kBadSignature,         // the signature does not verify over the signing bytes
  kClaimsMismatch,       // the signing bytes are not the payload's own claims
};

const char* verdict_name(Verdict verdict) noexcept;

// The fields of an SSHSIG blob (PROTOCOL.sshsig §2), viewing the blob they were read from.
struct SshsigBlob {
  std::string_view public_key;
  std::string_view ns;
  std::string_view reserved;
  std::string_view hash_algorithm;
  std::string_view signature;
};

// The blob inside armored text: the BEGIN line, base64 lines, the END line (optionally one final
// newline). Errors: InvalidArgument when the armor or its base64 is malformed.
std::string dearmor(std::string_view armored);

// Parses a blob: magic, version 1, five strings, nothing after. Errors: InvalidArgument on wrong
// magic or version, truncation (any length past the end) or trailing bytes.
SshsigBlob parse_sshsig(std::string_view blob);

// PROTOCOL.sshsig §3 signed data for `message_hash` (the raw hash of the message).
std::string sshsig_signed_data(std::string_view ns, std::string_view reserved,
                               std::string_view hash_algorithm, std::string_view message_hash);

class SshsigVerifier {
 public:
  // Errors: InvalidArgument when the config is not an object or "public_key" is not one
  // authorized_keys line of a supported, valid key.
  explicit SshsigVerifier(std::string_view config_json);

  // The verdict for `assertion_json` over `signing_bytes`. Errors: InvalidArgument when the
  // payload, armor, blob or signature encoding is malformed (never a crash, never a verdict).
  Verdict check(std::string_view assertion_json, std::string_view signing_bytes) const;
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) const {
    return check(assertion_json, signing_bytes) == Verdict::kAccepted;
  }

  const SshPublicKey& key() const noexcept { return key_; }

 private:
  SshPublicKey key_;
};

}  // namespace ctx::sshsig

#endif  // CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSHSIG_VERIFIER_HPP_
