// What a verifier plugin reads from the signed-assertion wire payload (runtime spec §5.6): the raw
// proof (standard padded base64 in "proof_base64"), and whether the signing bytes the host passed
// are exactly the payload's own claims (CJSON-A of the payload without "proof_base64").
// Thread-safe (pure function). Messages never contain payload bytes or the proof.
#ifndef CTX_PLUGINS_VERIFIERS_COMMON_WIRE_ASSERTION_HPP_
#define CTX_PLUGINS_VERIFIERS_COMMON_WIRE_ASSERTION_HPP_

#include <cstddef>
#include <string>
#include <string_view>

namespace ctx::verifiers {

// Longest proof a wire payload carries (bytes).
inline constexpr std::size_t kMaxProofBytes = 8192;

struct WireAssertion {
  std::string proof;          // decoded proof bytes, 1..kMaxProofBytes
  bool claims_match = false;  // signing_bytes == canonical claims of the payload
};

// Errors: InvalidArgument "assertion is not valid json" | "is not a json object" | "has a
// duplicate key" | "needs a string \"proof_base64\"" | "proof_base64 is not base64" |
// "proof must be 1..8192 bytes".
WireAssertion read_wire_assertion(std::string_view assertion_json, std::string_view signing_bytes);

}  // namespace ctx::verifiers

#endif  // CTX_PLUGINS_VERIFIERS_COMMON_WIRE_ASSERTION_HPP_
