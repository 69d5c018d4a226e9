// An installer port that forwards every call to the port it wraps (typically the real
// skill-installer plugin behind AbiInstaller). Fault-injecting doubles derive from it and override
// only the call they interpose on. Header-only.
#ifndef CTX_TESTS_SUPPORT_RUNTIME_FORWARDING_INSTALLER_HPP_
#define CTX_TESTS_SUPPORT_RUNTIME_FORWARDING_INSTALLER_HPP_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "host/engine/ports/installer_port.hpp"

namespace ctx::testing {

class ForwardingInstaller : public engine::InstallerPort {
 public:
  explicit ForwardingInstaller(std::shared_ptr<engine::InstallerPort> inner)
      : inner_(std::move(inner)) {}
  engine::TargetIdentity target_identity() override { return inner_->target_identity(); }
  core::Json install(const core::Json& request) override { return inner_->install(request); }
  core::Json activate(const core::Json& request) override { return inner_->activate(request); }
  core::Json deactivate(const core::Json& request) override {
    return inner_->deactivate(request);
  }
  core::Json reconcile(const core::Json& request) override { return inner_->reconcile(request); }
  std::optional<core::Json> install_from_source(const core::Json& request,
                                                const engine::InstallBodyLookup& bodies) override {
    return inner_->install_from_source(request, bodies);
  }
  std::string id() const override { return inner_->id(); }
  std::string identity_digest() const override { return inner_->identity_digest(); }

 private:
  std::shared_ptr<engine::InstallerPort> inner_;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_RUNTIME_FORWARDING_INSTALLER_HPP_
