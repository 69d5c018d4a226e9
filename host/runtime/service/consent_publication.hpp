// Interactive consent publication (runtime spec §3.13, §5.1): derives the install consent
// challenge a human is asked to decide from the exact journal authority — the single pending
// consent, the RequestConsent of the head transition that offered it, the capability's
// schema-v3 selection and descriptor — and the execution binding resolved now, which names the
// exact installer plugin identity (driver digest) and install target the human approves.
// ManagedQueryService::publish_current_consent (consent_publication.cpp) publishes it through the
// consent broker. Pure functions; thread-safe.
#ifndef CTX_HOST_RUNTIME_SERVICE_CONSENT_PUBLICATION_HPP_
#define CTX_HOST_RUNTIME_SERVICE_CONSENT_PUBLICATION_HPP_

#include <optional>
#include <string>
#include <string_view>

#include "host/engine/identities.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/state.hpp"
#include "host/runtime/consent/consent_challenge.hpp"

namespace ctx::runtime {

// Who publishes: the broker audience and the workspace / release root the challenge binds.
struct ConsentPublicationIdentity {
  std::string audience;
  std::string workspace_identity_digest;  // sha256
  std::string release_root_digest;        // sha256
};

// The RequestConsent of `transition` that offered `pending`: exactly one action of kind
// RequestConsent whose consent id, entity and requested action id / content digest /
// precondition revision are those of the pending install action; nullopt otherwise.
std::optional<engine::HostAction> consent_request_for(const engine::Transition& transition,
                                                      const engine::PendingConsent& pending);

// The challenge for `pending` under `binding` (spec §5.1 derivation): challenge_id = consent id,
// expires_at = the install action's expiry, every identity field from the state's capability
// row, its install descriptor and result material, and the request's policy digest.
// Errors: ConsentChallengeError / ManagedQueryServiceError when the authority does not agree
// (capability, descriptor, material, request, binding driver id).
ConsentChallenge derive_install_consent_challenge(const engine::EngineState& state,
                                                  const engine::PendingConsent& pending,
                                                  const engine::HostAction& request,
                                                  const engine::InstallExecutionBinding& binding,
                                                  const ConsentPublicationIdentity& identity);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_CONSENT_PUBLICATION_HPP_
