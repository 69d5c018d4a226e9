// Consent as the CLI and the server reach it — host/app is the only layer they include: the
// signed-assertion codec, the trusted verifier registry (verifier plugins are loaded by
// app::Installation), the install consent policy, the printed `ctx consent` commands and the
// private state files they write. Implemented by the runtime's consent unit; this header is the
// one way in from above the app.
#ifndef CTX_HOST_APP_CONSENT_HPP_
#define CTX_HOST_APP_CONSENT_HPP_

#include "host/runtime/consent/assertion_codec.hpp"       // IWYU pragma: export
#include "host/runtime/consent/install_policy_store.hpp"  // IWYU pragma: export
#include "host/runtime/consent/printed_command.hpp"       // IWYU pragma: export
#include "host/runtime/consent/private_file.hpp"          // IWYU pragma: export
#include "host/runtime/consent/verifier_registry.hpp"     // IWYU pragma: export

#endif  // CTX_HOST_APP_CONSENT_HPP_
