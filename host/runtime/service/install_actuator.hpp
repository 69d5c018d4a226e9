// ManagedInstallActuators: the physical installation actuators a managed service binds installs
// to (DESIGN.md §2 "Binding"): installer drivers keyed by the install descriptor's installer id,
// each with the target identity captured when the service was configured. binding() re-reads
// the driver's identity and target now and returns the InstallExecutionBinding an install would
// run under — the exact installer plugin identity (driver digest) and target a human approves in
// a consent challenge. A different target than the captured one → "root changed"; no driver for
// the descriptor → "no physical installation actuator". Thread-safety: immutable after
// construction; the drivers serialise their own calls.
#ifndef CTX_HOST_RUNTIME_SERVICE_INSTALL_ACTUATOR_HPP_
#define CTX_HOST_RUNTIME_SERVICE_INSTALL_ACTUATOR_HPP_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "host/core/error.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/ports/installer_port.hpp"
#include "host/runtime/install_execution.hpp"

namespace ctx::runtime {

// The actuator cannot bind an install: none is configured for the descriptor ("no physical
// installation actuator"), or its target is not the captured one ("root changed").
// Code: kFailedPrecondition. Retry: after restoring the target or reconfiguring.
class InstallActuatorError : public FailedPrecondition {
 public:
  using FailedPrecondition::FailedPrecondition;
};

// Also the InstallerResolver the service's compositions execute installs through.
class ManagedInstallActuators final : public InstallerResolver {
 public:
  // `installers` maps a descriptor installer id (e.g. "ctx-skill-installer-v1") to its driver;
  // each driver's target identity is captured now. `host_identity_digest` is a sha256.
  // Errors: InvalidArgument (empty map key, null driver, bad digest); the drivers' errors.
  ManagedInstallActuators(std::map<std::string, std::shared_ptr<engine::InstallerPort>> installers,
                          std::string host_identity_digest);

  // The binding an install of `descriptor` executes under now:
  // {driver_id = descriptor installer id, driver_digest = the driver's identity digest,
  //  host_identity_digest, target_identity_digest = the captured target's digest}.
  // Errors: InstallActuatorError ("no physical installation actuator", "root changed").
  engine::InstallExecutionBinding binding(const engine::InstallPlanDescriptor& descriptor) const;

  // The driver for `installer_id`. Errors: InstallActuatorError ("no physical installation
  // actuator").
  std::shared_ptr<engine::InstallerPort> installer(std::string_view installer_id) const;

  const std::string& host_identity_digest() const noexcept { return host_identity_digest_; }

  // InstallerResolver: the driver for `installer_id` (any kind), nullptr when none is configured.
  // Errors: InstallActuatorError ("root changed") when its target is not the captured one.
  std::shared_ptr<engine::InstallerPort> resolve(
      std::string_view installer_id, engine::CapabilityKind capability_kind) const override;

 private:
  struct Entry {
    std::shared_ptr<engine::InstallerPort> driver;
    engine::TargetIdentity captured;
  };
  std::map<std::string, Entry, std::less<>> installers_;
  std::string host_identity_digest_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_INSTALL_ACTUATOR_HPP_
