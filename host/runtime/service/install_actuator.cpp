#include "host/runtime/service/install_actuator.hpp"

#include <utility>

#include "host/core/crypto.hpp"

namespace ctx::runtime {

ManagedInstallActuators::ManagedInstallActuators(
    std::map<std::string, std::shared_ptr<engine::InstallerPort>> installers,
    std::string host_identity_digest)
    : host_identity_digest_(std::move(host_identity_digest)) {
  if (!core::is_sha256_hex(host_identity_digest_)) {
    throw InvalidArgument("install actuator host identity digest must be a sha256 digest");
  }
  for (auto& [installer_id, driver] : installers) {
    if (installer_id.empty() || !driver) {
      throw InvalidArgument("install actuators need a driver for every installer id");
    }
    auto captured = driver->target_identity();
    installers_.emplace(installer_id, Entry{std::move(driver), std::move(captured)});
  }
}

std::shared_ptr<engine::InstallerPort> ManagedInstallActuators::installer(
    std::string_view installer_id) const {
  const auto it = installers_.find(installer_id);
  if (it == installers_.end()) {
    throw InstallActuatorError("install descriptor has no physical installation actuator");
  }
  return it->second.driver;
}

std::shared_ptr<engine::InstallerPort> ManagedInstallActuators::resolve(
    std::string_view installer_id, engine::CapabilityKind) const {
  const auto it = installers_.find(installer_id);
  if (it == installers_.end()) return nullptr;
  const auto& [driver, captured] = it->second;
  if (!(driver->target_identity() == captured)) {
    throw InstallActuatorError("install target root changed after runtime configuration");
  }
  return driver;
}

engine::InstallExecutionBinding ManagedInstallActuators::binding(
    const engine::InstallPlanDescriptor& descriptor) const {
  auto driver = resolve(descriptor.installer_id(), descriptor.kind());
  if (!driver) {
    throw InstallActuatorError("install descriptor has no physical installation actuator");
  }
  return install_binding_of(descriptor, *driver, host_identity_digest_);
}

}  // namespace ctx::runtime
