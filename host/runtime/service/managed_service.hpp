// ManagedQueryService: what a host calls (runtime spec §3). prepare turns "the current work"
// into one durable, authority-free plan result; reopen re-projects it without planning;
// set_desired records the user's chosen subset of the committed plan. Every operation runs its
// durable part under one cross-process lifecycle lock (flock on a file beside the query store)
// and every mutation goes reserve → journal → durable mark → result projection, each step
// recoverable after a crash (crash points in service_crash_points.hpp): a retry of the same
// request, from this or another process, finishes the work exactly once.
//
// Results and requests are sealed: no public constructors (factories only), not copyable, and
// they expose only the seed's fields — no paths, bindings, bodies, prompts or secrets.
// The service is thread-safe (one in-process lock) and process-bound: used from a forked child
// it throws ("forked process"). close() is idempotent.
#ifndef CTX_HOST_RUNTIME_SERVICE_MANAGED_SERVICE_HPP_
#define CTX_HOST_RUNTIME_SERVICE_MANAGED_SERVICE_HPP_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/time.hpp"
#include "host/runtime/composition.hpp"
#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/consent/consent_challenge.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/runtime/managed_query.hpp"
#include "host/runtime/planning_ports.hpp"
#include "host/runtime/service/artifact_registry.hpp"
#include "host/runtime/service/errors.hpp"
#include "host/runtime/service/install_actuator.hpp"
#include "host/runtime/service/query_store.hpp"
#include "host/runtime/shared_journal.hpp"

namespace ctx::store {
class SqliteJournalStore;
}  // namespace ctx::store

namespace ctx::runtime {

class ManagedQueryService;
class ConsentResolution;
namespace detail {
class InteractiveGuardSlot;
}  // namespace detail

// Caps of every result.
inline constexpr std::size_t kMaxManagedActionSummaries = 16;
inline constexpr std::size_t kMaxDesiredCapabilities = 5;

// The trusted inputs of one managed query: the registry artifact and the two planning events.
class ManagedQueryInput final {
 public:
  // Errors: InvalidArgument when `artifact` is null.
  static std::shared_ptr<const ManagedQueryInput> create(
      std::shared_ptr<const ManagedArtifactHandle> artifact, engine::EngineEvent session_started,
      engine::EngineEvent decision_event);
  ManagedQueryInput(const ManagedQueryInput&) = delete;
  ManagedQueryInput& operator=(const ManagedQueryInput&) = delete;

  const ManagedArtifactHandle& artifact() const noexcept { return *artifact_; }
  const std::shared_ptr<const ManagedArtifactHandle>& artifact_handle() const noexcept {
    return artifact_;
  }
  const engine::EngineEvent& session_started() const noexcept { return session_started_; }
  const engine::EngineEvent& decision_event() const noexcept { return decision_event_; }

  // Prints the manifest digest only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryInput& value);

 private:
  ManagedQueryInput(std::shared_ptr<const ManagedArtifactHandle> artifact,
                    engine::EngineEvent session_started, engine::EngineEvent decision_event)
      : artifact_(std::move(artifact)),
        session_started_(std::move(session_started)),
        decision_event_(std::move(decision_event)) {}

  std::shared_ptr<const ManagedArtifactHandle> artifact_;
  engine::EngineEvent session_started_;
  engine::EngineEvent decision_event_;
};

// The trusted input authority: resolves an opaque current-work reference into its inputs.
// Its own errors (e.g. an unknown reference) propagate unchanged.
class ManagedInputAuthority {
 public:
  virtual ~ManagedInputAuthority() = default;
  virtual std::shared_ptr<const ManagedQueryInput> resolve(const std::string& current_work_ref) = 0;
};

// prepare's request: a caller-chosen logical id (sha256) and an opaque current-work token.
class ManagedQueryRequest final {
 public:
  // Errors: InvalidArgument ("must be a lowercase SHA-256 digest", "opaque token").
  static ManagedQueryRequest create(std::string logical_query_id, std::string current_work_ref);
  ManagedQueryRequest(const ManagedQueryRequest&) = delete;
  ManagedQueryRequest& operator=(const ManagedQueryRequest&) = delete;
  ManagedQueryRequest(ManagedQueryRequest&&) noexcept = default;
  ManagedQueryRequest& operator=(ManagedQueryRequest&&) = delete;

  const std::string& logical_query_id() const noexcept { return logical_query_id_; }
  const std::string& current_work_ref() const noexcept { return current_work_ref_; }

  // Prints the logical id only (never the work reference).
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryRequest& value);

 private:
  ManagedQueryRequest(std::string logical_query_id, std::string current_work_ref)
      : logical_query_id_(std::move(logical_query_id)),
        current_work_ref_(std::move(current_work_ref)) {}
  std::string logical_query_id_;
  std::string current_work_ref_;
};

// set_desired's request (§3.1), validated in the spec's order.
class ManagedDesiredSetRequest final {
 public:
  // Errors: InvalidArgument ("opaque managed-query reference", "lowercase SHA-256 digest",
  // "more than five", capability token, "unique", predecessor reference).
  static ManagedDesiredSetRequest create(
      std::string query_ref, std::string logical_choice_id, std::vector<std::string> capability_ids,
      std::optional<std::string> expected_previous_desired_set_ref = std::nullopt);
  ManagedDesiredSetRequest(const ManagedDesiredSetRequest&) = delete;
  ManagedDesiredSetRequest& operator=(const ManagedDesiredSetRequest&) = delete;
  ManagedDesiredSetRequest(ManagedDesiredSetRequest&&) noexcept = default;
  ManagedDesiredSetRequest& operator=(ManagedDesiredSetRequest&&) = delete;

  const std::string& query_ref() const noexcept { return query_ref_; }
  const std::string& logical_choice_id() const noexcept { return logical_choice_id_; }
  const std::vector<std::string>& capability_ids() const noexcept { return capability_ids_; }
  const std::optional<std::string>& expected_previous_desired_set_ref() const noexcept {
    return expected_previous_;
  }

  // Prints query_ref and logical_choice_id only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetRequest& value);

 private:
  ManagedDesiredSetRequest() = default;
  std::string query_ref_;
  std::string logical_choice_id_;
  std::vector<std::string> capability_ids_;
  std::optional<std::string> expected_previous_;
};

// Exactly {action_id, kind, entity_id} of one host action.
class ManagedActionSummary final {
 public:
  ManagedActionSummary(const ManagedActionSummary&) = delete;
  ManagedActionSummary& operator=(const ManagedActionSummary&) = delete;
  ManagedActionSummary(ManagedActionSummary&&) noexcept = default;
  ManagedActionSummary& operator=(ManagedActionSummary&&) = delete;

  // Summarises `action` (the only way to make one).
  static ManagedActionSummary of(const engine::HostAction& action);
  // Summarises each of `actions`; ManagedQueryServiceError over kMaxManagedActionSummaries.
  static std::vector<ManagedActionSummary> of_all(const std::vector<engine::HostAction>& actions);

  const std::string& action_id() const noexcept { return action_id_; }
  engine::ActionKind kind() const noexcept { return kind_; }
  const std::optional<std::string>& entity_id() const noexcept { return entity_id_; }
  friend bool operator==(const ManagedActionSummary&, const ManagedActionSummary&) = default;

 private:
  ManagedActionSummary() = default;
  std::string action_id_;
  engine::ActionKind kind_ = engine::ActionKind::kNoChange;
  std::optional<std::string> entity_id_;
};

// The host-visible part of one pending consent challenge (§3.1): five fields, nothing else
// (no challenge id, scope, binding, selection or proof).
class ManagedConsentChallengeProjection final {
 public:
  // The projection of a challenge the consent broker holds.
  static ManagedConsentChallengeProjection of(const ConsentChallenge& challenge);
  ManagedConsentChallengeProjection(const ManagedConsentChallengeProjection&) = delete;
  ManagedConsentChallengeProjection& operator=(const ManagedConsentChallengeProjection&) = delete;
  ManagedConsentChallengeProjection(ManagedConsentChallengeProjection&&) noexcept = default;
  ManagedConsentChallengeProjection& operator=(ManagedConsentChallengeProjection&&) = delete;

  const std::string& audience() const noexcept { return audience_; }
  const std::string& capability_id() const noexcept { return capability_id_; }
  const std::string& challenge_digest() const noexcept { return challenge_digest_; }
  const std::string& expires_at() const noexcept { return expires_at_; }
  engine::CapabilityKind kind() const noexcept { return kind_; }
  friend bool operator==(const ManagedConsentChallengeProjection&,
                         const ManagedConsentChallengeProjection&) = default;

 private:
  friend class ManagedQueryService;
  ManagedConsentChallengeProjection() = default;
  std::string audience_, capability_id_, challenge_digest_, expires_at_;
  engine::CapabilityKind kind_ = engine::CapabilityKind::kSkill;
};

// prepare / reopen result: {query_ref, prepared, actions, challenge}.
class ManagedQueryServiceResult final {
 public:
  ManagedQueryServiceResult(const ManagedQueryServiceResult&) = delete;
  ManagedQueryServiceResult& operator=(const ManagedQueryServiceResult&) = delete;
  ManagedQueryServiceResult(ManagedQueryServiceResult&&) noexcept = default;
  ManagedQueryServiceResult& operator=(ManagedQueryServiceResult&&) = delete;

  const std::string& query_ref() const noexcept { return query_ref_; }
  const PreparedManagedQuery& prepared() const noexcept { return prepared_; }
  // Summaries of the planning transition's actions (≤ 16).
  const std::vector<ManagedActionSummary>& actions() const noexcept { return actions_; }
  const std::optional<ManagedConsentChallengeProjection>& challenge() const noexcept {
    return challenge_;
  }

  // Prints query_ref and the decision digest only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryServiceResult& value);

 private:
  friend class ManagedQueryService;
  ManagedQueryServiceResult(std::string query_ref, PreparedManagedQuery prepared,
                            std::vector<ManagedActionSummary> actions,
                            std::optional<ManagedConsentChallengeProjection> challenge)
      : query_ref_(std::move(query_ref)),
        prepared_(std::move(prepared)),
        actions_(std::move(actions)),
        challenge_(std::move(challenge)) {}

  std::string query_ref_;
  PreparedManagedQuery prepared_;
  std::vector<ManagedActionSummary> actions_;
  std::optional<ManagedConsentChallengeProjection> challenge_;
};

// The outcome of one desired set (§3.2).
enum class ManagedDesiredStatus {
  kReconciled,
  kConsentRequired,
  kEffectPending,
  kManualDeferred,
  kLifecycleDeferred,
};
// The status's wire spelling (set_desired results, "status"), from its one table.
inline constexpr core::EnumStrings<ManagedDesiredStatus, 5> kManagedDesiredStatusStrings{
    "desired set status",
    {ManagedDesiredStatus::kReconciled, ManagedDesiredStatus::kConsentRequired,
     ManagedDesiredStatus::kEffectPending, ManagedDesiredStatus::kManualDeferred,
     ManagedDesiredStatus::kLifecycleDeferred},
    {"reconciled", "consent-required", "effect-pending", "manual-deferred", "lifecycle-deferred"}};
constexpr std::string_view to_string(ManagedDesiredStatus status) noexcept {
  return kManagedDesiredStatusStrings.to_string(status);
}
std::ostream& operator<<(std::ostream& out, ManagedDesiredStatus status);

// set_desired's result (14 fields, §3.1).
class ManagedDesiredSetResult final {
 public:
  // The only factory; enforces every invariant of §3.1 against the committed `record`
  // ("committed desired-set record", "status", "reason", "challenge", "deferred subset",
  // "failed subset", "action summary"). Errors: ManagedQueryServiceError.
  static ManagedDesiredSetResult create(const ManagedDesiredSetRecord& record,
                                        std::vector<std::string> deferred_capability_ids,
                                        std::vector<std::string> failed_capability_ids,
                                        ManagedDesiredStatus status,
                                        std::optional<std::string> reason_code,
                                        std::vector<ManagedActionSummary> actions,
                                        std::optional<ManagedConsentChallengeProjection> challenge);
  ManagedDesiredSetResult(const ManagedDesiredSetResult&) = delete;
  ManagedDesiredSetResult& operator=(const ManagedDesiredSetResult&) = delete;
  ManagedDesiredSetResult(ManagedDesiredSetResult&&) noexcept = default;
  ManagedDesiredSetResult& operator=(ManagedDesiredSetResult&&) = delete;

  const std::string& query_ref() const noexcept { return query_ref_; }
  const std::string& desired_set_ref() const noexcept { return desired_set_ref_; }
  const std::string& logical_choice_id() const noexcept { return logical_choice_id_; }
  const std::vector<std::string>& capability_ids() const noexcept { return capability_ids_; }
  const std::vector<std::string>& deferred_capability_ids() const noexcept { return deferred_; }
  const std::vector<std::string>& failed_capability_ids() const noexcept { return failed_; }
  ManagedDesiredStatus status() const noexcept { return status_; }
  const std::optional<std::string>& reason_code() const noexcept { return reason_code_; }
  const std::string& plan_id() const noexcept { return plan_id_; }
  const std::string& decision_digest() const noexcept { return decision_digest_; }
  // Of the desired event's commit (not the head).
  std::int64_t journal_revision() const noexcept { return journal_revision_; }
  const std::string& journal_record_digest() const noexcept { return journal_record_digest_; }
  // Summaries of the current head transition's actions.
  const std::vector<ManagedActionSummary>& actions() const noexcept { return actions_; }
  const std::optional<ManagedConsentChallengeProjection>& challenge() const noexcept {
    return challenge_;
  }

  // Prints desired_set_ref and status only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedDesiredSetResult& value);

 private:
  ManagedDesiredSetResult() = default;

  std::string query_ref_;
  std::string desired_set_ref_;
  std::string logical_choice_id_;
  std::vector<std::string> capability_ids_;
  std::vector<std::string> deferred_;
  std::vector<std::string> failed_;
  ManagedDesiredStatus status_ = ManagedDesiredStatus::kReconciled;
  std::optional<std::string> reason_code_;
  std::string plan_id_;
  std::string decision_digest_;
  std::int64_t journal_revision_ = 0;
  std::string journal_record_digest_;
  std::vector<ManagedActionSummary> actions_;
  std::optional<ManagedConsentChallengeProjection> challenge_;
};

// The outcome of one signed consent resolution or recovery (§3.1, §3.2).
enum class ManagedConsentOutcome {
  kConsentRequired,
  kReauthenticationRequired,
  kDenied,
  kInstalledInactive,
  kInstallFailed,
  kInstallIndeterminate,
  kExpired,
  kQuarantined,
  kSuperseded,
};
// The outcome's wire spelling (consent resolution results, "outcome"), from its one table.
inline constexpr core::EnumStrings<ManagedConsentOutcome, 9> kManagedConsentOutcomeStrings{
    "consent resolution outcome",
    {ManagedConsentOutcome::kConsentRequired, ManagedConsentOutcome::kReauthenticationRequired,
     ManagedConsentOutcome::kDenied, ManagedConsentOutcome::kInstalledInactive,
     ManagedConsentOutcome::kInstallFailed, ManagedConsentOutcome::kInstallIndeterminate,
     ManagedConsentOutcome::kExpired, ManagedConsentOutcome::kQuarantined,
     ManagedConsentOutcome::kSuperseded},
    {"consent-required", "reauthentication-required", "denied", "installed-inactive",
     "install-failed", "install-indeterminate", "expired", "quarantined", "superseded"}};
constexpr std::string_view to_string(ManagedConsentOutcome outcome) noexcept {
  return kManagedConsentOutcomeStrings.to_string(outcome);
}
std::ostream& operator<<(std::ostream& out, ManagedConsentOutcome outcome);

// resolve_consent / recover_consent's result (9 fields, §3.1): no scope, challenge id, driver,
// binding, verifier, proof or principal. The journal fields are the stream head's.
class ManagedConsentResolutionResult final {
 public:
  // The only factory. Invariants: challenge digest and record digest 64 hex, capability id and
  // reason code tokens, revision ≥ 1, ≤ 16 actions; a next challenge exactly for
  // consent-required / reauthentication-required, naming the same capability and kind (and, for
  // reauthentication, the same challenge digest). Errors: ManagedQueryServiceError.
  static ManagedConsentResolutionResult create(
      std::string challenge_digest, std::string capability_id, engine::CapabilityKind kind,
      ManagedConsentOutcome outcome, std::string reason_code,
      std::optional<ManagedConsentChallengeProjection> next_challenge,
      std::vector<ManagedActionSummary> actions, std::int64_t journal_revision,
      std::string journal_record_digest);
  ManagedConsentResolutionResult(const ManagedConsentResolutionResult&) = delete;
  ManagedConsentResolutionResult& operator=(const ManagedConsentResolutionResult&) = delete;
  ManagedConsentResolutionResult(ManagedConsentResolutionResult&&) noexcept = default;
  ManagedConsentResolutionResult& operator=(ManagedConsentResolutionResult&&) = delete;

  const std::string& challenge_digest() const noexcept { return challenge_digest_; }
  const std::string& capability_id() const noexcept { return capability_id_; }
  engine::CapabilityKind kind() const noexcept { return kind_; }
  ManagedConsentOutcome outcome() const noexcept { return outcome_; }
  const std::string& reason_code() const noexcept { return reason_code_; }
  const std::optional<ManagedConsentChallengeProjection>& next_challenge() const noexcept {
    return next_challenge_;
  }
  // Summaries of the head transition's actions.
  const std::vector<ManagedActionSummary>& actions() const noexcept { return actions_; }
  std::int64_t journal_revision() const noexcept { return journal_revision_; }
  const std::string& journal_record_digest() const noexcept { return journal_record_digest_; }

  // Prints challenge_digest, outcome and reason_code only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedConsentResolutionResult& value);

 private:
  ManagedConsentResolutionResult() = default;
  std::string challenge_digest_;
  std::string capability_id_;
  engine::CapabilityKind kind_ = engine::CapabilityKind::kSkill;
  ManagedConsentOutcome outcome_ = ManagedConsentOutcome::kQuarantined;
  std::string reason_code_;
  std::optional<ManagedConsentChallengeProjection> next_challenge_;
  std::vector<ManagedActionSummary> actions_;
  std::int64_t journal_revision_ = 0;
  std::string journal_record_digest_;
};

// Inputs of open_managed_engine_composition: one composition over a registry artifact.
struct ManagedCompositionOptions {
  std::filesystem::path journal_path;
  // The connection the composition journals through (on journal_path); null: its own.
  std::shared_ptr<SharedJournal> journal;
  std::filesystem::path benefit_audit_path;
  std::shared_ptr<BenefitFactsPort> benefit_facts_port;
  std::optional<NetBenefitPolicy> net_benefit_policy;
  std::shared_ptr<MaterialPort> material_port;
  std::shared_ptr<InstallBundlePort> install_bundle_port;
  InteractiveInstallDecisionGuard interactive_install_decision_guard;
  std::shared_ptr<const core::Clock> trusted_clock;
  // The physical installation actuator and the install policy root (EngineCompositionOptions).
  std::shared_ptr<const InstallActuator> install_actuator;
  std::optional<std::filesystem::path> policy_store_root;
  // The standing install approvals (consent/install_approvals.hpp): an install a human already
  // approved, exactly, under the current policy is granted without a new consent. May be null.
  std::shared_ptr<const InstallApprovals> install_approvals;
  // The activation actuator execute_activation calls (EngineCompositionOptions); may be null.
  std::shared_ptr<engine::ActivationPort> activation_port;
};

// Opens a composition for an artifact `registry` issued (§1.2 managed form): the ports' snapshot
// digests must equal the handle's ("snapshot does not match the handle"), the normaliser is the
// handle, namespace and planner version come from it, and the composition's planning
// environment must equal the handle's. Errors: ManagedArtifactRegistryError ("not issued"),
// InvalidArgument, the composition's errors.
std::unique_ptr<EngineComposition> open_managed_engine_composition(
    const ManagedArtifactRegistry& registry, std::shared_ptr<const ManagedArtifactHandle> artifact,
    ManagedCompositionOptions options);

// Inputs of open_managed_query_service (§3.4): the options of the compositions it opens (the
// base, as its caller filled it: host/app's Installation for a state dir; journal_path and
// benefit_audit_path absolute, policy_store_root absolute when given, a null trusted_clock the
// system clock, a null journal a connection the service opens on first use and shares with its
// compositions), plus the service's own. Of the base, install_actuator is the service's to set
// (per composition, from install_actuators and install_body_source below: composition_options).
struct ManagedQueryServiceOptions : ManagedCompositionOptions {
  std::shared_ptr<ManagedArtifactRegistry> registry;
  std::shared_ptr<ManagedQueryStore> query_store;
  std::shared_ptr<ManagedInputAuthority> input_authority;
  // Interactive consent (§3.13–§3.21). Without a broker a pending interactive consent fails
  // closed ("publication authorities"); with one, both digests are sha256 and the broker's file
  // is distinct from the journal, audit and store.
  std::shared_ptr<ConsentBrokerPort> consent_broker;
  std::string consent_workspace_identity_digest;
  std::string consent_release_root_digest;
  // The trusted human-decision verifiers resolve_consent authenticates with; may be null.
  std::shared_ptr<VerifierDirectory> verifier_registry;
  // The physical installation actuators (installer drivers + captured targets); null: an install
  // cannot be bound ("no physical installation actuator").
  std::shared_ptr<const ManagedInstallActuators> install_actuators;
  // The trusted source of install bodies preapproved installs load after their claim; null:
  // installs cannot apply ("no physical installation actuator body source").
  std::shared_ptr<InstallBodySource> install_body_source;
};

namespace detail {
// The options of one composition the service opens: the composition part of `options` as its
// caller filled it, with `guard` and, when `with_install_actuator` and options.install_actuators
// is set, the install actuator over options.install_actuators and options.install_body_source.
ManagedCompositionOptions composition_options(const ManagedQueryServiceOptions& options,
                                              InteractiveInstallDecisionGuard guard,
                                              bool with_install_actuator);
}  // namespace detail

class ManagedQueryService final {
 public:
  ManagedQueryService(const ManagedQueryService&) = delete;
  ManagedQueryService& operator=(const ManagedQueryService&) = delete;
  ~ManagedQueryService();

  // §3.6: resolves the current work, validates it ("not issued", "snapshot does not match"),
  // refuses while a desired choice is pending (ManagedDesiredSetBusyError) or when another
  // logical id owns the scope and plan (ManagedQueryStoreConflict), registers, advances and
  // marks the query. An exact retry returns the same result without planning.
  ManagedQueryServiceResult prepare(const ManagedQueryRequest& request);

  // §3.7: re-projects a registered query, finishing an interrupted prepare. Errors:
  // InvalidArgument ("opaque managed-query reference"), ManagedQueryStoreNotFound /
  // Corruption ("authentication failed"), ManagedQuerySupersededError ("superseded").
  ManagedQueryServiceResult reopen(const std::string& query_ref);

  // §3.9: records one desired subset of the committed plan (canonical plan order), recovering
  // an interrupted reservation, commit or mark. Errors: ManagedDesiredSetConflictError ("not
  // contained", "another event"), ManagedDesiredSetBusyError, ManagedDesiredSetSupersededError.
  ManagedDesiredSetResult set_desired(const ManagedDesiredSetRequest& request);

  // §3.14: authenticates one signed human decision (the exact wire payload, spec §5.6) for its
  // published challenge and commits it; a grant installs through the captured actuator.
  // Refused before any broker lookup: AssertionCodecError (malformed payload),
  // ManagedQueryServiceError ("audience"), UnknownHumanDecisionVerifier. Refused before
  // authentication (the assertion is not burned): ManagedQueryHeadDriftError ("policy changed",
  // "current pending"), "root changed". Broker refusals (ConsentBrokerDecisionRejected,
  // ConsentBrokerExpired, ConsentBrokerReplay) leave the consent store and journal unchanged.
  ManagedConsentResolutionResult resolve_consent(std::string_view assertion_payload);

  // §3.20: finishes whatever a challenge's durable state allows without authenticating:
  // still pending → consent-required; decided → reconciles the broker with the journal and
  // finishes (or expires) exactly once. Errors: InvalidArgument (not 64 hex),
  // ConsentBrokerChallengeNotFound, ManagedQueryServiceError.
  ManagedConsentResolutionResult recover_consent(const std::string& challenge_digest);

  // Idempotent; afterwards every operation throws ("closed").
  void close();
  bool closed() const;

  // Prints "ManagedQueryService(closed=...)" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedQueryService& value);

 private:
  friend std::shared_ptr<ManagedQueryService> open_managed_query_service(
      ManagedQueryServiceOptions options);
  friend class ConsentResolution;  // consent_resolution.cpp
  explicit ManagedQueryService(ManagedQueryServiceOptions options);

  // The service's one place of exclusion: an operation holds mutex_ (after the fork and closed
  // checks) for its whole length; lifecycle() takes the cross-process lifecycle lock that orders
  // store rows and journal heads (once); composition() is the kept composition of `artifact`,
  // dropped when the operation leaves by an exception after taking it (the next opens afresh).
  class Operation {
   public:
    explicit Operation(ManagedQueryService& service);
    ~Operation();
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;
    void lifecycle();
    EngineComposition& composition(const std::shared_ptr<const ManagedArtifactHandle>& artifact);

   private:
    ManagedQueryService& service_;
    std::lock_guard<std::mutex> lock_;
    std::optional<ExclusiveFileLock> lifecycle_;
    int exceptions_at_composition_ = -1;  // uncaught exceptions when composition() was taken
  };

  void assert_usable() const;
  std::unique_ptr<EngineComposition> open_composition(
      const std::shared_ptr<const ManagedArtifactHandle>& artifact) const;
  // The open composition of `artifact` for prepare / reopen / set_desired / resolve_consent. The
  // one of the last artifact is kept open between calls (its pinned graph snapshot, journal and
  // audit connections, planner memos and head-checked state cache): it is reused while the artifact
  // (manifest and planning environment) is the same, it is still issued, and every port
  // snapshot still matches the handle — the checks a fresh open makes. Caller holds mutex_.
  // Errors: as open_composition.
  EngineComposition& composition_for(const std::shared_ptr<const ManagedArtifactHandle>& artifact);
  // Closes the kept composition (after any failed operation, so the next call opens afresh).
  void drop_composition() noexcept;
  // The shared journal connection for the service's own reads (records, heads) and its
  // compositions, opened on first use and kept until close(); every read runs in its own SQLite
  // transaction and verifies what it reads, so another process's commits are seen. Caller holds
  // mutex_.
  store::SqliteJournalStore& journal_reader();
  // The trusted clock of the options, else the system clock.
  const core::Clock& clock() const;
  void validate_input(const ManagedQueryInput& input) const;
  ManagedQueryServiceResult advance_record(Operation& op, ManagedQueryRecord record,
                                           const ManagedQueryInput& input);
  std::shared_ptr<const ManagedQueryInput> input_of(const ManagedQueryRecord& record) const;
  // The persisted install policy (the safe default when none is), and whether one is persisted.
  InstallConsentPolicy current_install_policy() const;
  // §3.13 (consent_publication.cpp): publishes the single pending interactive consent of the
  // head of `scope` through the broker, idempotently, and projects it; nullopt when there is
  // none, it routes automatically, or the broker record is not pending. Errors:
  // ManagedQueryHeadDriftError ("changed", "stale"), ManagedQueryServiceError ("publication
  // authorities", "policy snapshot"), InstallActuatorError, broker errors.
  std::optional<ManagedConsentChallengeProjection> publish_current_consent(
      EngineComposition& composition, const engine::ScopeRef& scope,
      const std::string& expected_plan_id);

  ManagedQueryServiceOptions options_;
  std::filesystem::path lifecycle_lock_path_;
  pid_t owner_pid_;
  mutable std::mutex mutex_;
  bool closed_ = false;  // GUARDED_BY(mutex_)
  std::unique_ptr<EngineComposition> composition_;  // GUARDED_BY(mutex_)
  std::string composition_key_;                     // GUARDED_BY(mutex_)
  // With a consent broker: the kept composition's interactive decision guard, which
  // resolve_consent arms for the one decision it authenticated (interactive_guard_slot.hpp).
  std::shared_ptr<detail::InteractiveGuardSlot> interactive_guard_;
  std::shared_ptr<store::SqliteJournalStore> journal_reader_;  // GUARDED_BY(mutex_)
};

// §3.4 factory. Checks (creating no file): registry, store, ports and policy present; journal
// and audit paths absolute ("absolute Path"); journal, audit and store file pairwise distinct,
// also through symlinks and hard links ("must be distinct"); their existing directories private
// to this user; policy root absolute. Errors: InvalidArgument.
std::shared_ptr<ManagedQueryService> open_managed_query_service(ManagedQueryServiceOptions options);

}  // namespace ctx::runtime

namespace ctx::core {
template <>
struct EnumTraits<runtime::ManagedDesiredStatus> {
  static constexpr const auto& kStrings = runtime::kManagedDesiredStatusStrings;
};
template <>
struct EnumTraits<runtime::ManagedConsentOutcome> {
  static constexpr const auto& kStrings = runtime::kManagedConsentOutcomeStrings;
};
}  // namespace ctx::core

#endif  // CTX_HOST_RUNTIME_SERVICE_MANAGED_SERVICE_HPP_
