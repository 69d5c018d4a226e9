#include "plugins/verifiers/hmac-sha256/core/hmac_verifier.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"

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
  const pc::Json assertion = pc::parse_object(assertion_json, "assertion");
  const pc::Json& proof = pc::require_object(assertion, "proof", "assertion");
  if (pc::require_string(proof, "scheme", "assertion proof") != kScheme) {
    throw InvalidArgument("assertion proof scheme is not hmac-sha256");
  }
  const std::string& mac_hex = pc::require_string(proof, "mac_hex", "assertion proof");
  if (mac_hex.size() != 64) throw InvalidArgument("assertion proof mac_hex is not 64 hex digits");
  const std::string presented = pc::from_hex(mac_hex, "assertion proof mac_hex");
  return pc::constant_time_equal(pc::hmac_sha256(key_, signing_bytes), presented);
}

std::string HmacVerifier::sign_hex(std::string_view key, std::string_view signing_bytes) {
  return pc::to_hex(pc::hmac_sha256(key, signing_bytes));
}

}  // namespace ctx::hmac_sha256
