// Engine state of a v3 (installation-contract) stream, spec §1.9: the committed plan, the
// runtime lifecycle record of every executable capability, pending effects and consents,
// evidence and the blocked / rollback id lists. EngineState::create validates every invariant
// of the persisted projection; to_json_text() is canon-U and from_json_text() demands canonical
// bytes. Errors: StateValidationError naming the rule. Thread-safe (immutable values).
#ifndef CTX_HOST_ENGINE_STATE_HPP_
#define CTX_HOST_ENGINE_STATE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/plan.hpp"
#include "host/engine/protocol.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

using core::Json;

inline constexpr std::string_view kStateSchemaV3 = "ctx.engine-state-v3";
inline constexpr std::size_t kMaxActiveCapabilities = 5;

// One owner's claim on a capability activation.
struct LeaseRef {
  std::string lease_id;
  std::string owner_id;
  std::string exposure_id;
  Json to_json() const;
  static LeaseRef from_json(const Json& value);
  friend bool operator==(const LeaseRef&, const LeaseRef&) = default;
};

// Runtime lifecycle of one executable (load / install) plan row.
struct CapabilityStateV3 {
  PlanCapabilityV3 selection;
  MaterialIdentity material_identity;
  std::optional<AuthorizedMaterial> current_authorized_material;
  Installation installation = Installation::kAbsent;
  std::string plan_id;
  std::string catalog_snapshot_id;
  std::vector<LeaseRef> leases{};  // sorted by lease_id, unique
  Activation activation = Activation::kInactive;
  std::optional<std::string> activation_lease_id{};
  bool rollback_held = false;
  std::optional<std::string> rollback_owner_id{};

  const std::string& capability_id() const noexcept { return selection.capability_id(); }
  const std::string& source_digest() const noexcept { return selection.source_digest(); }
  CapabilityKind kind() const noexcept { return selection.kind(); }
  bool desired() const noexcept { return !leases.empty(); }
  bool active() const noexcept { return activation == Activation::kActive; }
  bool installed() const noexcept { return installation == Installation::kInstalled; }
  // Errors: StateValidationError.
  void validate() const;
  Json to_json() const;
  static CapabilityStateV3 from_json(const Json& value);
  friend bool operator==(const CapabilityStateV3&, const CapabilityStateV3&) = default;
};

// An emitted action awaiting its receipt.
struct PendingEffect {
  HostAction action;
  Effect effect = Effect::kInstall;
  std::optional<std::string> rollback_capability_id{};  // only for Effect::kActivate
  Json to_json() const;
  static PendingEffect from_json(const Json& value);
  friend bool operator==(const PendingEffect&, const PendingEffect&) = default;
};

// An offered RequestConsent with the pre-computed InstallCapability it would release.
struct PendingConsent {
  std::string consent_id;
  HostAction install_action;
  Json to_json() const;
  static PendingConsent from_json(const Json& value);
  friend bool operator==(const PendingConsent&, const PendingConsent&) = default;
};

struct CapabilityEvidence {
  std::string exposure_id;
  std::string capability_id;
  std::string source_digest;
  Exposure exposure = Exposure::kUnexposed;
  Invocation invocation = Invocation::kNotInvoked;
  Json to_json() const;
  static CapabilityEvidence from_json(const Json& value);
  friend bool operator==(const CapabilityEvidence&, const CapabilityEvidence&) = default;
};

class EngineState {
 public:
  struct Fields {
    std::int64_t revision = 1;
    ScopeRef scope;
    HostLevel host_level = HostLevel::kQueryOnly;
    std::string host_descriptor_digest;
    SessionStatus session_status = SessionStatus::kActive;
    std::vector<CapabilityStateV3> capabilities{};
    std::vector<PendingEffect> pending_effects{};
    std::vector<PendingConsent> pending_consents{};
    std::optional<CommittedPlanV3> committed_plan{};
    std::vector<CapabilityEvidence> evidence{};
    std::vector<std::string> last_manual_bundle{};
    std::vector<std::string> blocked_capability_ids{};
    std::vector<std::string> blocked_deactivation_ids{};
    std::vector<std::string> blocked_install_descriptor_digests{};
    std::optional<std::string> install_policy_snapshot_digest{};
    std::vector<std::string> rollback_requested_capability_ids{};
    std::vector<std::string> terminal_cleanup_notified_ids{};
    friend bool operator==(const Fields&, const Fields&) = default;
  };

  // Validates every field, cross-reference and persisted-projection invariant (§1.9).
  // Errors: StateValidationError.
  static EngineState create(Fields fields);
  static EngineState from_json(const Json& value);
  // Errors: StateValidationError "state JSON must use canonical encoding" unless `text` is
  // byte-identical to its canon-U re-encoding.
  static EngineState from_json_text(std::string_view text);
  // The 18-key form (state_schema included).
  Json to_json() const;
  std::string to_json_text() const;

  const Fields& fields() const noexcept { return f_; }
  std::int64_t revision() const noexcept { return f_.revision; }
  const ScopeRef& scope() const noexcept { return f_.scope; }
  HostLevel host_level() const noexcept { return f_.host_level; }
  const std::string& host_descriptor_digest() const noexcept { return f_.host_descriptor_digest; }
  SessionStatus session_status() const noexcept { return f_.session_status; }
  const std::vector<CapabilityStateV3>& capabilities() const noexcept { return f_.capabilities; }
  const std::vector<PendingEffect>& pending_effects() const noexcept { return f_.pending_effects; }
  const std::vector<PendingConsent>& pending_consents() const noexcept {
    return f_.pending_consents;
  }
  const std::optional<CommittedPlanV3>& committed_plan() const noexcept {
    return f_.committed_plan;
  }
  const std::vector<CapabilityEvidence>& evidence() const noexcept { return f_.evidence; }
  const std::vector<std::string>& last_manual_bundle() const noexcept {
    return f_.last_manual_bundle;
  }
  const std::optional<std::string>& install_policy_snapshot_digest() const noexcept {
    return f_.install_policy_snapshot_digest;
  }
  const CapabilityStateV3* capability(std::string_view capability_id) const noexcept;
  const PendingEffect* pending_effect(std::string_view action_id) const noexcept;
  std::vector<std::string> active_capability_ids() const;

  friend bool operator==(const EngineState&, const EngineState&) = default;

 private:
  friend class EngineStateInternal;
  explicit EngineState(Fields fields) : f_(std::move(fields)) {}
  Fields f_;
};

// What EngineState must not offer to every caller (leveldb's XxxInternal pattern).
class EngineStateInternal {
 public:
  // The reducer's constructor: its states are valid by construction, so the §1.9 validation
  // runs only in debug builds, where a violation is a bug (aborts like CTX_CHECK). Untrusted
  // bytes go through EngineState::from_json_text / create, which always validate.
  static EngineState from_reducer(EngineState::Fields fields);
};

// The v3 InstallCapability payload for `capability` under `policy_snapshot_digest`.
Json install_payload_v3(const CapabilityStateV3& capability,
                        const std::string& policy_snapshot_digest);
// The v3 material action payload (Activate / Prepare / Deactivate) for an installed capability.
Json material_payload_v3(const CapabilityStateV3& capability);

// sha("ctx-install-plan-executor-v1:typed-plan-only:no-raw-command").
const std::string& installer_digest();

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_STATE_HPP_
