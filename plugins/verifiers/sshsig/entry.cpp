// The "sshsig" verifier plugin: SshsigVerifier behind the SDK's verifier base class.
#include <ctx/sdk/plugin.hpp>

#include <string_view>

#include "plugins/verifiers/sshsig/core/sshsig_verifier.hpp"

namespace {

class SshsigPlugin final : public ctx::sdk::Verifier {
 public:
  explicit SshsigPlugin(std::string_view config_json) : verifier_(config_json) {}
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) override {
    return verifier_.verify(assertion_json, signing_bytes);
  }

 private:
  ctx::sshsig::SshsigVerifier verifier_;
};

}  // namespace

CTX_PLUGIN(SshsigPlugin, verifier, "sshsig", "1.0.0");
