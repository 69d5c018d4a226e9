// The user's own decision key for `ctx consent approve|deny --key FILE`: an Ed25519 private key
// in PEM (signed here through OpenSSL EVP), or an OpenSSH key (signed by `ssh-keygen -Y sign -n
// ctx-consent`, so the private half may live in ssh-agent or on a security key: FILE may then be
// the public key alone). Also what `ctx consent trust` must register for it (the verifier plugin
// id and its config), and the signed assertion for one challenge. Thread-safe (no shared state).
#ifndef CTX_HOST_CLI_CONSENT_KEY_HPP_
#define CTX_HOST_CLI_CONSENT_KEY_HPP_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/time.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/consent/verifier_registry.hpp"

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
