// InstallerPort: the engine's view of an installer driver (its JSON contract, plugin_abi.h), plus
// TargetIdentity, the identity of the install root that every install/activation binding
// captures, and ActivationPort, the typed activate / deactivate / reconcile view the runtime's
// activation execution calls (InstallerActivation adapts an InstallerPort to it).
// Thread-safety: implementations serialise their own calls; the structs are plain values.
#ifndef CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/identities.hpp"

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

// The bytes of each file of a tree body by its manifest path, borrowed for one install call;
// std::nullopt when the body has no such file.
using InstallBodyLookup = std::function<std::optional<std::string_view>(std::string_view path)>;

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

  // Installs tree material whose file bodies come from `bodies` (plugin_abi.h
  // install_from_source): `request` is install's tree-form request without "source"; the reply is
  // install's. std::nullopt when the driver has no such operation (an ABI minor 0 installer):
  // the caller then stages the tree in a directory and calls install. Errors: as install.
  virtual std::optional<core::Json> install_from_source(const core::Json& /*request*/,
                                                        const InstallBodyLookup& /*bodies*/) {
    return std::nullopt;
  }

  // Token naming the driver implementation (a plugin id such as "skill-installer").
  virtual std::string id() const = 0;

  // Digest that pins the exact driver (a plugin's identity digest); recorded in bindings.
  virtual std::string identity_digest() const = 0;
};

// ---- Activation -----------------------------------------------------------------------------

// What an installer observed for one activation.
//   applied: the exact material is active now (observed material + verification digest given);
//   failed: the installer verified that it is not active (e.g. the material is not installed);
//   indeterminate: no trustworthy observation (error, conflicting material, malformed reply).
enum class ActivationResult : int { kApplied = 1, kFailed = 2, kIndeterminate = 3 };

// One capability's authorised material, as an activation request names it.
struct ActivationRequest {
  MaterialIdentity material;

  // {"capability_id", "content_bytes", "content_sha256", "kind", "material_identity_digest"}:
  // the installer activate / deactivate request, and one entry of a reconcile request.
  core::Json to_json() const;
};

struct ActivationObservation {
  ActivationResult result = ActivationResult::kIndeterminate;
  // The MaterialIdentity digest of what is active (applied only; plugin_abi.h states the schema).
  std::optional<std::string> observed_material_identity_digest;
  // The installer's digest of what it verified (applied only).
  std::optional<std::string> verification_digest;
  // Why it is not applied; a short fixed phrase, never a path or content.
  std::string reason;

  friend bool operator==(const ActivationObservation&, const ActivationObservation&) = default;
};

// The engine's activation actuator: in production the installer plugin (InstallerActivation over
// plugins::AbiInstaller), in tests a double. Implementations never throw for "not applied": they
// report kFailed / kIndeterminate. Errors: ctx::Error when the driver cannot be called at all
// (callers treat it as indeterminate).
//   activate:   makes `request.material` the active material of its capability; returns what
//               it verified.
//   deactivate: deactivates the capability; kApplied when it is (now) inactive.
//   reconcile:  what is active now, changing nothing (crash recovery): kApplied when exactly
//               `request.material` is active, kFailed when it verifiably is not, else
//               kIndeterminate (InstallerActivation: also when the entry's optional
//               "activation_state" is "indeterminate").
class ActivationPort {
 public:
  virtual ~ActivationPort() = default;
  [[nodiscard]] virtual ActivationObservation activate(const ActivationRequest& request) = 0;
  [[nodiscard]] virtual ActivationObservation deactivate(const ActivationRequest& request) = 0;
  [[nodiscard]] virtual ActivationObservation reconcile(const ActivationRequest& request) = 0;
};

// ActivationPort over an InstallerPort's JSON contract (plugin_abi.h, ctx_installer_ops). A reply
// that does not follow the contract reads as kIndeterminate, never as applied.
class InstallerActivation final : public ActivationPort {
 public:
  // REQUIRES: installer != nullptr.
  explicit InstallerActivation(std::shared_ptr<InstallerPort> installer);

  ActivationObservation activate(const ActivationRequest& request) override;
  ActivationObservation deactivate(const ActivationRequest& request) override;
  ActivationObservation reconcile(const ActivationRequest& request) override;

 private:
  std::shared_ptr<InstallerPort> installer_;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_INSTALLER_PORT_HPP_
