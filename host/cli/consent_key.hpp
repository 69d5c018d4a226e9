// The user's own decision key for `ctx consent approve|deny --key FILE`: an Ed25519 private key
// in PEM (signed here through OpenSSL EVP), or an OpenSSH key (signed by `ssh-keygen -Y sign -n
// ctx-consent`, so the private half may live in ssh-agent or on a security key: FILE may then be
// the public key alone). Also what `ctx consent trust` must register for it (the verifier plugin
// id and its config), and the signed assertion for one challenge. Thread-safe (no shared state).
#ifndef CTX_HOST_CLI_CONSENT_KEY_HPP_
#define CTX_HOST_CLI_CONSENT_KEY_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/app/consent.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/time.hpp"

namespace ctx::cli {

inline constexpr std::string_view kSshSignatureNamespace = "ctx-consent";

class UserDecisionKey {
 public:
  enum class Type { kEd25519Pem, kOpenSsh };

  // Reads FILE: "-----BEGIN PRIVATE KEY-----" / "-----BEGIN ENCRYPTED PRIVATE KEY-----" (Ed25519
  // only; OpenSSL asks for the passphrase on the terminal), "-----BEGIN OPENSSH PRIVATE KEY-----"
  // (its public half from FILE.pub, else `ssh-keygen -y`), or one public-key line "TYPE BASE64
  // [comment]" whose private half ssh-agent holds. Errors: InvalidArgument naming the file and
  // what is wrong (never its bytes); NotFound; SystemError.
  static UserDecisionKey load(const std::filesystem::path& file);

  Type type() const noexcept { return type_; }
  // "ed25519" or "sshsig": the in-tree verifier that checks this key's proofs.
  std::string_view verifier_id() const noexcept;
  // That verifier's config: {"public_key_pem": PEM} or {"public_key": "TYPE BASE64"}.
  core::Json verifier_config() const;
  // sha256 hex of the public key's canonical text: a stable principal digest for this key.
  std::string default_principal_digest() const;
  // True when `config` (a registration's) names this very public key.
  bool matches(std::string_view verifier_id, const core::Json& config) const;
  // The public key: PEM SubjectPublicKeyInfo (kEd25519Pem) or "TYPE BASE64" (kOpenSsh).
  const std::string& public_text() const noexcept { return public_text_; }

  // The proof over `message`: the 64-byte Ed25519 signature, or the armored SSH signature text.
  // Errors: FailedPrecondition (ssh-keygen failed: the message names its exit status);
  // SystemError.
  std::string sign(std::string_view message) const;

 private:
  UserDecisionKey() = default;
  Type type_ = Type::kEd25519Pem;
  std::filesystem::path file_;
  std::string private_pem_;  // kEd25519Pem: the file's bytes
  std::string public_text_;  // PEM SPKI, or "TYPE BASE64"
};

// A decision key to trust, read from a public key file (`ctx consent trust --key FILE`): its
// verifier, that verifier's config, and the authenticator id and principal digest derived from it.
// Rules: an OpenSSH key ("ssh-ed25519" or "sk-ssh-ed25519@openssh.com") is checked by the
// sshsig verifier with config {"public_key": "TYPE BASE64"}, authenticator "sshsig:TYPE"; an
// Ed25519 PEM key by the ed25519 verifier with config {"public_key_pem": PEM}, authenticator
// "ed25519:pem". The principal digest is the hex SHA-256 of the key's OpenSSH public key blob
// (for a PEM key: of the ssh-ed25519 blob of the same key), i.e. the digest `ssh-keygen -l`
// prints in base64 as the fingerprint.
struct TrustKey {
  std::string key_type;  // "ssh-ed25519", "sk-ssh-ed25519@openssh.com" or "ed25519" (PEM)
  std::string verifier_id;
  core::Json config;
  std::string authenticator_id;
  std::string principal_digest;
  std::string fingerprint;  // "SHA256:" + base64 without padding, as ssh-keygen -l prints
};

// Reads FILE: one OpenSSH public key line "TYPE BASE64 [comment]" of an accepted type (its blob
// parsed bounds-checked: the type inside equals TYPE, a 32-byte Ed25519 key, for a security key
// the application string, nothing after), an Ed25519 PEM public key, or a key file
// UserDecisionKey::load reads (its public half). Errors: InvalidArgument naming the file and what
// is wrong (another key type, truncated, not one key, larger than 64 KiB; never its bytes);
// NotFound.
TrustKey read_trust_key(const std::filesystem::path& file);

// "SHA256:<base64 of SHA-256(blob), no padding>": OpenSSH's fingerprint of a public key blob.
std::string ssh_fingerprint(std::string_view blob);

// The fingerprint of the public key a verifier config holds: {"public_key": OpenSSH line} of
// any type (sshsig), {"public_key_pem": Ed25519 PEM} (ed25519, as its ssh-ed25519 blob); nullopt
// for other verifiers and configs without a readable key.
std::optional<std::string> config_fingerprint(std::string_view verifier_id,
                                              const core::Json& config);

// The registration of `registrations` for `audience` whose verifier config is `key`'s public key.
// Errors: NotFound ("this key is not trusted for audience ...: run ctx consent trust").
runtime::VerifierRegistration registration_for(
    const std::vector<runtime::VerifierRegistration>& registrations, std::string_view audience,
    const UserDecisionKey& key);

// Builds and signs the assertion `decision` of `challenge_digest` for
// `registration`: a fresh 32-byte random nonce, issued at `now`, expiring at the earlier of
// `challenge_expires_at` and now + 10 minutes. Errors: AssertionCodecError; FailedPrecondition
// (the challenge has expired); the key's sign() errors.
runtime::SignedAssertion sign_decision(const UserDecisionKey& key,
                                       const runtime::VerifierRegistration& registration,
                                       std::string_view challenge_digest, engine::Decision decision,
                                       core::Timestamp now, core::Timestamp challenge_expires_at);

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CONSENT_KEY_HPP_
