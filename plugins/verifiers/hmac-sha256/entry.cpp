// The "hmac-sha256" verifier plugin: HmacVerifier behind the SDK's verifier base class.
#include <ctx/sdk/plugin.hpp>

#include <string_view>

#include "plugins/verifiers/hmac-sha256/core/hmac_verifier.hpp"

namespace {

class HmacPlugin final : public ctx::sdk::Verifier {
 public:
  explicit HmacPlugin(std::string_view config_json) : verifier_(config_json) {}
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) override {
    return verifier_.verify(assertion_json, signing_bytes);
  }

 private:
  ctx::hmac_sha256::HmacVerifier verifier_;
};

}  // namespace

CTX_PLUGIN(HmacPlugin, verifier, "hmac-sha256", "1.0.0");
