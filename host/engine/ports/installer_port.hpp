// InstallerPort: the engine's view of an installer driver, plus TargetIdentity, the identity of
// the install root that every install/activation binding captures.
// Thread-safety: implementations serialise their own calls; TargetIdentity is a plain value.
#ifndef CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_

#include <cstdint>
#include <string>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

// Where an installer writes: the install root's (device, inode, owner, mode, path).
// If any of these changes between plan and execution the root changed, and execution fails closed.
struct TargetIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint32_t owner = 0;  // uid
  std::uint32_t mode = 0;   // st_mode bits
  std::string path;         // absolute path of the install root

  // {"device","inode","mode","owner","path"}.
  core::Json to_json() const;
  // canonical_digest(to_json()): the target identity digest recorded in bindings.
  std::string digest() const;
  // Parses to_json()'s shape; extra keys are ignored.
  // Errors: InvalidArgument naming the missing or mistyped field.
  static TargetIdentity from_json(const core::Json& value);

  friend bool operator==(const TargetIdentity&, const TargetIdentity&) = default;
};

class InstallerPort {
 public:
  virtual ~InstallerPort() = default;

  // Identity of the install root as it is now. Errors: ctx::Error with the driver's code.
  virtual TargetIdentity target_identity() = 0;

  // Each call passes one JSON request object and returns the driver's JSON reply object
  // (install: {"outcome": "applied"|"failed"|"indeterminate", "observed_material_identity_digest",
  // "verification_digest", ...}; reconcile: what is on disk now, for crash recovery).
  // Errors: ctx::Error carrying the driver's code; a reply that is not a JSON object is kInternal.
  virtual core::Json install(const core::Json& request) = 0;
  virtual core::Json activate(const core::Json& request) = 0;
  virtual core::Json deactivate(const core::Json& request) = 0;
  virtual core::Json reconcile(const core::Json& request) = 0;

  // Token naming the driver implementation (a plugin id such as "skill-installer").
  virtual std::string id() const = 0;

  // Digest that pins the exact driver (a plugin's identity digest); recorded in bindings.
  virtual std::string identity_digest() const = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_
