// `ctx consent ...`: the human side of install consent.
//   ctx consent trust --audience A --authenticator ID --principal DIGEST --verifier PLUGIN_ID
//                     --config FILE [--state DIR] [--json]
//       registers the verifier plugin PLUGIN_ID (pinned in <state>/plugins.lock.json; loaded and
//       instantiated once with the JSON object in FILE to check it) as the one that checks
//       decisions of (A, ID, DIGEST), in <state>/consent-verifiers.json (verifier_registry.hpp).
//       A key may be registered once. FILE holds the public key material only: for the user's
//       Ed25519 key {"public_key_pem": "..."} (verifier ed25519), for an OpenSSH key
//       {"public_key": "ssh-ed25519 AAAA..."} (verifier sshsig).
// Exit codes: 0 done, 1 failed (one stderr line, nothing changed), 2 usage.
#ifndef CTX_HOST_CLI_CONSENT_COMMAND_HPP_
#define CTX_HOST_CLI_CONSENT_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// args[0] is "consent". Never throws.
int run_consent_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env);

std::string consent_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CONSENT_COMMAND_HPP_
