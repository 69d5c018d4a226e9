// Install execution (runtime spec §6.2, issue 8 "install execution through the plugin registry"):
// sequences the engine's one-use claim, the installer driver (resolved through an
// InstallerResolver — the plugin registry in production, a double in tests), the durable outcome
// and the idempotent receipt for one exact pending InstallCapability. The binding it executes
// under names the driver by its plugin identity digest; before the claim and again before the
// driver is called the installer is re-resolved, and a different identity fails closed
// ("captured actuator") or a changed install root ("root changed") before any claim or host
// mutation. Every durable step passes a named crash point; a re-entry after a crash finishes
// exactly once through the driver's reconcile and never re-applies. Used through
// EngineComposition::execute_install.
#ifndef CTX_HOST_RUNTIME_INSTALL_EXECUTION_HPP_
#define CTX_HOST_RUNTIME_INSTALL_EXECUTION_HPP_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctx/sdk/skill_tree.hpp>

#include "host/core/error.hpp"
#include "host/engine/engine.hpp"
#include "host/engine/plan.hpp"
#include "host/engine/ports/installer_port.hpp"
#include "host/engine/protocol.hpp"

namespace ctx::runtime {

// The install could not be executed or settled under the captured authority: no actuator
// ("no physical installation actuator"), another driver identity than the captured one
// ("captured actuator"), another install root ("root changed"), or durable state that does not
// match. Code: kFailedPrecondition. Retry: not until the configuration or journal changes.
class InstallExecutionError : public FailedPrecondition {
 public:
  explicit InstallExecutionError(const std::string& message) : FailedPrecondition(message) {}
};

// One file of a tree body: its path in the tree manifest and its bytes.
struct InstallBodyFile {
  std::string path;
  std::string bytes;
};

// Upper bound on the bytes of one tree body (every file together): sdk::kMaxTreeBytes, which the
// catalog enforces at import and the skill installer's default max_tree_bytes is. A body source
// stops reading past it; execution refuses a larger body.
inline constexpr std::uint64_t kMaxInstallTreeBytes = sdk::kMaxTreeBytes;

// The two texts of tree material (plugin_abi.h "Tree material", ctx/sdk/skill_tree.hpp): the
// canonical manifest of the files and the tree root text over it (the material).
struct TreeMaterialText {
  std::string manifest;
  std::string root;
};

// The tree material of `files` as hashed now (each file once).
// Errors: InvalidArgument when a path is not a tree path, a path repeats, SKILL.md is missing,
// or the files exceed kMaxInstallTreeBytes.
TreeMaterialText tree_material_of(const std::vector<InstallBodyFile>& files);

// The bytes of one material as its body source read them; install execution verifies them, once,
// before anything reaches the driver. Plain form (a SKILL.md of at most 6000 bytes and nothing
// else): `material` is the content and `files` is empty. Tree form (plugin_abi.h "Tree
// material"): `material` is the tree root text and `files` holds every file — the root
// tree_material_of(files) implies must be `material`, and `material` hash to the authorised
// content digest.
struct InstallBody {
  std::string material;
  std::optional<std::vector<InstallBodyFile>> files;  // engaged for the tree form only
};

// The trusted source of install bodies: the bytes of an authorised material. Called only
// after this call created the durable claim (never on recovery). Errors: any exception — the
// install then ends indeterminate, and recovery reconciles.
class InstallBodySource {
 public:
  virtual ~InstallBodySource() = default;
  virtual InstallBody load(const engine::MaterialIdentity& material) = 0;
};

// Resolves the installer driver an install descriptor names, freshly on every call (so a re-pinned
// or replaced plugin shows its new identity digest). Returns nullptr when no driver is registered
// for (installer_id, capability kind). Errors: InstallExecutionError ("root changed") when the
// driver's install root is no longer the one configured; ctx::Error from creating the driver.
class InstallerResolver {
 public:
  virtual ~InstallerResolver() = default;
  virtual std::shared_ptr<engine::InstallerPort> resolve(
      std::string_view installer_id, engine::CapabilityKind capability_kind) const = 0;
};

// A composition's physical installation actuator: drivers, bodies and the host identity every
// binding records.
struct InstallActuator {
  std::shared_ptr<const InstallerResolver> installers;  // required
  std::shared_ptr<InstallBodySource> bodies;      // required
  std::string host_identity_digest;               // sha256
};

// Schema of the verification digest an install outcome records:
// sha256(canon-A{"binding_digest", "installed", "installer_verification_digest" (or null),
// "material_identity_digest", "schema"}).
inline constexpr std::string_view kInstallVerificationSchema = "ctx.install-verification-v1";

// Safe result of one execution: digests and flags only (no path, content or body).
struct InstallExecutionReport {
  // kApplied / kFailed (recorded and settled), kIndeterminate (nothing recorded; the claim
  // stays open and a later call reconciles).
  engine::Outcome outcome = engine::Outcome::kIndeterminate;
  bool claim_was_new = false;
  bool settled = false;
  std::string execution_binding_digest;
  // The verification digest this call recorded; absent when an earlier call recorded it.
  std::optional<std::string> verification_digest;
  // The receipt transition this call committed; absent when nothing was committed by this call.
  std::optional<engine::Transition> transition;
};

// The binding the current driver of `selection`'s install descriptor would execute under:
// {driver_id = descriptor installer_id, driver_digest = the plugin's identity digest,
// host_identity_digest, target_identity_digest = the driver's install root digest}. Calls only
// the driver's target_identity (no install, no body). Errors: InstallExecutionError ("no
// physical installation actuator", "root changed", "not an install selection").
engine::InstallExecutionBinding resolve_install_binding(const InstallActuator* actuator,
                                                        const engine::PlanCapabilityV3& selection);

// The one binding formula: {descriptor installer id, driver identity digest, host identity,
// the driver's target identity digest now}. Errors: the driver's target_identity errors.
engine::InstallExecutionBinding install_binding_of(const engine::InstallPlanDescriptor& descriptor,
                                                   engine::InstallerPort& driver,
                                                   const std::string& host_identity_digest);
engine::InstallExecutionBinding resolve_install_binding(
    const InstallActuator* actuator, const engine::InstallPlanDescriptor& descriptor);

namespace detail {

// What one composition executes installs with. `actuator` may be null: then only an already
// recorded outcome can be settled. `journal_path` names the journal (execution locks beside it).
// A tree body's verified bytes go to the driver's install_from_source from memory; only for a
// driver without it (ABI minor 0) are they staged in a private install-staging/ directory beside
// the journal for the length of its install call (the installer's "source": {"directory"} form).
struct InstallActuators {
  engine::Engine& engine;
  const InstallActuator* actuator;
  const std::filesystem::path& journal_path;
  const std::string& catalog_snapshot_digest;
};

// The body of EngineComposition::execute_install (the caller holds the composition's lock).
InstallExecutionReport execute_install(const InstallActuators& actuators,
                                       const engine::HostAction& action,
                                       const engine::PlanCapabilityV3& selection,
                                       const engine::InstallExecutionBinding& captured,
                                       std::string_view expected_policy_digest);

}  // namespace detail
}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_INSTALL_EXECUTION_HPP_
