// `ctx consent ...`: the human side of install consent (the state dir's StateService).
//   ctx consent show [--state DIR] [--json]
//       the current challenges awaiting a decision (StateService::pending_challenges): for each
//       {audience, capability_id, challenge_digest, expires_at, kind, approve, deny} — approve /
//       deny are the exact commands to run; no paths, secrets or bodies.
//   ctx consent approve|deny [CHALLENGE] --key FILE [--state DIR] [--json]
//       CHALLENGE: a challenge digest; or a capability name ("pdf-export" or "skill:pdf-export"):
//       the one pending challenge for it; or nothing: the one pending challenge of the state dir.
//       No match, or more than one (they are listed), is a refusal that changes nothing.
//       Builds the spec §5.6 assertion for the challenge (a fresh random nonce, issued now,
//       expiring at the earlier of the challenge's expiry and now + 10 min), signs it with the
//       user's key (consent_key.hpp; the key must be trusted for the challenge's audience:
//       ctx consent trust) and resolves it; after a grant the skill is installed and activated.
//   ctx consent resolve --assertion FILE|- [--state DIR] [--json]
//       resolves an already signed wire payload (one trailing newline ignored).
//   ctx consent recover CHALLENGE_DIGEST [--state DIR] [--json]
//       recover_consent: finishes what the challenge's durable state allows, no authentication.
//   --json of approve/deny/resolve/recover: consent_decision_json (host/app/wire.hpp).
//   Refusals (malformed, tampered, replayed, wrong audience, unknown principal, expired, already
//   decided) are typed errors: exit 1 with one stderr line, consent store and journal unchanged.
//   ctx consent trust --audience A --authenticator ID --principal DIGEST --verifier PLUGIN_ID
//                     --config FILE [--state DIR] [--json]
//       registers the verifier plugin PLUGIN_ID (pinned in <state>/plugins.lock.json; loaded and
//       instantiated once with the JSON object in FILE to check it) as the one that checks
//       decisions of (A, ID, DIGEST), in <state>/consent-verifiers.json (verifier_registry.hpp).
//       A key may be registered once. FILE holds the public key material only: for the user's
//       Ed25519 key {"public_key_pem": "..."} (verifier ed25519), for an OpenSSH key
//       {"public_key": "ssh-ed25519 AAAA..."} (verifier sshsig).
//   ctx consent trust --key FILE [--audience A] [--state DIR] [--json]
//       the same from a public key file (consent_key.hpp's TrustKey: an ssh-ed25519 or
//       sk-ssh-ed25519@openssh.com line, or an Ed25519 PEM key): verifier, authenticator and
//       principal derived from it, audience A or ctx-local. Trusting a trusted key again
//       changes nothing and succeeds.
//   ctx consent keys [--state DIR] [--json]
//       the trusted registrations: fingerprint (as ssh-keygen -l prints it; null for a key
//       without a public key, such as hmac-sha256), key type, verifier, audience,
//       authenticator, principal.
//   ctx consent untrust FINGERPRINT [--state DIR] [--json]
//       removes every registration of the key with that fingerprint (NotFound when none).
// Exit codes: 0 done, 1 failed (one stderr line, nothing changed), 2 usage.
#ifndef CTX_HOST_CLI_CONSENT_COMMAND_HPP_
#define CTX_HOST_CLI_CONSENT_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "host/app/vocabulary.hpp"
#include "host/cli/command_options.hpp"

namespace ctx::cli {

// --state DIR and --json, which every consent command takes.
struct ConsentCommon {
  std::optional<std::filesystem::path> state;
  bool json = false;
};

struct ConsentShowOptions {
  ConsentCommon common;
};

struct ConsentResolveOptions {
  std::string assertion;  // FILE, or "-": io.in
  ConsentCommon common;
};

struct ConsentRecoverOptions {
  std::string challenge_digest;
  ConsentCommon common;
};

// approve (kGranted) | deny (kDenied).
struct ConsentDecideOptions {
  engine::Decision decision = engine::Decision::kGranted;
  std::string challenge;  // a digest, a capability name, or "" (the one pending)
  std::filesystem::path key;
  ConsentCommon common;
};

// Either `key` alone (with an optional audience) or all of authenticator, principal,
// verifier and config (cli.cpp enforces that as a usage rule).
struct ConsentTrustOptions {
  std::optional<std::string> audience;  // default: ctx-local
  std::string authenticator;
  std::string principal;
  std::string verifier;  // PLUGIN_ID
  std::filesystem::path config;
  std::optional<std::filesystem::path> key;
  ConsentCommon common;
};

struct ConsentKeysOptions {
  ConsentCommon common;
};

struct ConsentUntrustOptions {
  std::string fingerprint;
  ConsentCommon common;
};

struct ConsentApprovalsOptions {
  ConsentCommon common;
};

struct ConsentRevokeOptions {
  std::string name;  // "pdf-export" or "skill:pdf-export"
  ConsentCommon common;
};

// Each throws the typed refusal (InvalidArgument for a digest that is not 64 lower-case hex);
// a refused decision changes nothing.
int run_consent_show(const ConsentShowOptions& options, const CommandIo& io);
int run_consent_resolve(const ConsentResolveOptions& options, const CommandIo& io);
int run_consent_recover(const ConsentRecoverOptions& options, const CommandIo& io);
int run_consent_decide(const ConsentDecideOptions& options, const CommandIo& io);
int run_consent_trust(const ConsentTrustOptions& options, const CommandIo& io);
int run_consent_keys(const ConsentKeysOptions& options, const CommandIo& io);
int run_consent_untrust(const ConsentUntrustOptions& options, const CommandIo& io);
// Lists the standing install approvals (name, kind, when, whether the current policy and
// catalog still honour them).
int run_consent_approvals(const ConsentApprovalsOptions& options, const CommandIo& io);
// Forgets the approval of the capability NAME names (its id, or a name one approval has): a
// later plan asks consent for it again; sessions holding it keep it until they drop it.
// Errors: NotFound (no approval of that name), InvalidArgument (a name approvals of several
// kinds share: the id is asked for); nothing changes on an error.
int run_consent_revoke(const ConsentRevokeOptions& options, const CommandIo& io);

// `ctx consent trust --key FILE` on `state` for `audience` (also what `ctx init --trust-key`
// runs): prints one line (or the JSON object with `json`) to `out`; returns false when the key
// was trusted already (nothing changed). Errors: as run_consent_trust.
bool trust_key_file(const std::filesystem::path& state, const std::filesystem::path& file,
                    const std::string& audience, bool json, std::ostream& out);

// ctx init's offer: when stdin and stderr are a terminal (io.in is std::cin), no key is trusted
// in `state` yet and $HOME/.ssh/id_ed25519.pub exists, asks on io.err whether to trust it (its
// fingerprint shown) and does so on "y"/"yes". Anything else, or no terminal: nothing.
void offer_user_key(const std::filesystem::path& state, const CommandIo& io);

std::string consent_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CONSENT_COMMAND_HPP_
