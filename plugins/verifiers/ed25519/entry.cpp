// The "ed25519" verifier plugin: Ed25519Verifier behind the SDK's verifier base class.
#include <ctx/sdk/plugin.hpp>

#include <string_view>

#include "plugins/verifiers/ed25519/core/ed25519_verifier.hpp"

namespace {

class Ed25519Plugin final : public ctx::sdk::Verifier {
 public:
  explicit Ed25519Plugin(std::string_view config_json) : verifier_(config_json) {}
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) override {
    return verifier_.verify(assertion_json, signing_bytes);
  }

 private:
  ctx::ed25519::Ed25519Verifier verifier_;
};

}  // namespace

CTX_PLUGIN(Ed25519Plugin, verifier, "ed25519", "1.0.0");
