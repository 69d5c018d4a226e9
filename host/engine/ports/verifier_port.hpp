// VerifierPort: the engine's view of a human-decision verifier. The engine never knows whether
// a plugin (plugins::AbiVerifier) or a test double sits behind it.
// Thread-safety: implementations serialise their own calls; one instance may be shared.
#ifndef CTX_HOST_ENGINE_PORTS_VERIFIER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_VERIFIER_PORT_HPP_

#include <string>
#include <string_view>

namespace ctx::engine {

// A verifier's answer. Only kAccepted authorises anything; persisted: never renumber.
enum class Verdict : int { kRejected = 0, kAccepted = 1 };

class VerifierPort {
 public:
  virtual ~VerifierPort() = default;

  // Checks the proof inside `assertion_json` over `signing_bytes` with the verifier's configured
  // key material. Returns kAccepted only for a valid proof; a bad or malformed proof is kRejected.
  // Errors: ctx::Error carrying the verifier's code when it fails to decide (callers treat a
  // failure as a rejection).
  virtual Verdict verify(std::string_view assertion_json, std::string_view signing_bytes) = 0;

  // Token naming the verifier implementation (a plugin id such as "hmac-sha256").
  virtual std::string id() const = 0;

  // Digest that pins the exact implementation (a plugin's identity digest); recorded in events.
  virtual std::string identity_digest() const = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_VERIFIER_PORT_HPP_
