#include "plugins/verifiers/common/wire_assertion.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"

namespace ctx::verifiers {

namespace pc = ctx::plugin_common;

WireAssertion read_wire_assertion(std::string_view assertion_json, std::string_view signing_bytes) {
  pc::Json payload = pc::parse_object(assertion_json, "assertion");
  WireAssertion out;
  out.proof = pc::from_base64(pc::require_string(payload, "proof_base64", "assertion"),
                              "assertion proof_base64");
  if (out.proof.empty() || out.proof.size() > kMaxProofBytes) {
    throw InvalidArgument("assertion proof must be 1..8192 bytes");
  }
  payload.erase("proof_base64");
  std::string claims;
  try {
    claims = payload.dump(-1, ' ', /*ensure_ascii=*/true, pc::Json::error_handler_t::strict);
  } catch (const pc::Json::exception&) {
    throw InvalidArgument("assertion claims are not canonical json");
  }
  out.claims_match = claims == signing_bytes;
  return out;
}

}  // namespace ctx::verifiers
