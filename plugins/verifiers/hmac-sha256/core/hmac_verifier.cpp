#include "plugins/verifiers/hmac-sha256/core/hmac_verifier.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/verifiers/common/wire_assertion.hpp"

namespace ctx::hmac_sha256 {

namespace pc = ctx::plugin_common;

HmacVerifier::HmacVerifier(std::string_view config_json) {
  const pc::Json config = pc::parse_object(config_json, "hmac-sha256 config");
  const std::string& key_hex = pc::require_string(config, "key_hex", "hmac-sha256 config");
  key_ = pc::from_hex(key_hex, "hmac-sha256 config key_hex");
  if (key_.size() < kMinKeyBytes) {
    pc::cleanse(key_);
    throw InvalidArgument("hmac-sha256 config key_hex is too short: need at least " +
                          std::to_string(kMinKeyBytes) + " bytes");
  }
}

HmacVerifier::~HmacVerifier() { pc::cleanse(key_); }

bool HmacVerifier::verify(std::string_view assertion_json, std::string_view signing_bytes) const {
  const verifiers::WireAssertion wire =
      verifiers::read_wire_assertion(assertion_json, signing_bytes);
  // Like the seeds' test verifier (hmac.compare_digest): a proof of another length is just unequal.
  const bool mac_matches =
      pc::constant_time_equal(pc::hmac_sha256(key_, signing_bytes), wire.proof);
  return wire.claims_match && mac_matches;
}

std::string HmacVerifier::sign(std::string_view key, std::string_view signing_bytes) {
  return pc::hmac_sha256(key, signing_bytes);
}

}  // namespace ctx::hmac_sha256
