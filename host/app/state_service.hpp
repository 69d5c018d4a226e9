// StateService: the managed query service of one state directory (the embedded default) over its
// imported catalog, as `ctx query`, `ctx desired`, `ctx hook` and `ctx serve` open it. Layout
// (StatePaths, state_layout.hpp, the one place that names these):
//   <state>/installation.key    the 32-byte key (ctx init)
//   <state>/catalog/            the imported catalog (ctx catalog import)
//   <state>/registry/           the managed artifact registry
//   <state>/service/            journal.sqlite3, audit.sqlite3, queries.sqlite3, inputs/
//   <state>/install-policy/     the install consent policy (ctx policy set)
//   <state>/service/consent.sqlite3   the consent broker (audience kStateConsentAudience;
//                               rows HMAC'd under the installation key like the query store)
//   <state>/consent-verifiers.json    the trusted verifier registry (ctx consent trust)
//   <state>/skills/             the skill installer's content-addressed store (objects/, tmp/)
//   <state>/agents/, <state>/mcp-servers/   the agent and MCP installers' stores (objects/,
//                               tmp/, records/ of what they wrote into the host's files)
//   <state>/activation-targets/  where installed capabilities become active, one target per
//                               project (and user) a host's hooks were installed for, found from
//                               a session's cwd (project_activation.hpp); without one
//                               <state>/skills/active (agents: <state>/agents/active, MCP
//                               servers: <state>/mcp-servers/active.json)
//   <state>/projects/           each project's recent prompts and lingering skills
// Consent and install wiring (issue 10): the broker, the trusted verifier registry (verifier
// plugins pinned in <state>/plugins.lock.json, loaded on the first decision), the trusted clock,
// and the install actuators — the pinned "skill-installer" plugin for descriptors of
// "ctx-skill-installer-v1" (root <state>/skills, activation root per project as above), install
// bodies read from the imported catalog's verified objects. Without a pinned skill-installer a
// pending consent fails closed ("no physical installation actuator"). The pinned
// "agent-installer" and "mcp-installer" install agents and MCP servers the same way (descriptors
// "ctx-agent-installer-v1", "ctx-mcp-server-installer-v1"), activating into the agents directory
// and MCP config file the project's host adapter names; without them those capabilities stay
// recommendations. Results are projected to JSON with the seed's field names
// (managed_result_json, desired_result_json): no paths, bodies, prompts or secrets.
// Thread-safe (the service and the authority are); process-bound like the service.
#ifndef CTX_HOST_APP_STATE_SERVICE_HPP_
#define CTX_HOST_APP_STATE_SERVICE_HPP_

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host/app/state_layout.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/time.hpp"
#include "host/runtime/catalog/catalog_input_authority.hpp"
#include "host/runtime/catalog/project_activation.hpp"
#include "host/runtime/consent/install_approvals.hpp"
#include "host/runtime/pinned_plugins.hpp"
#include "host/runtime/service/managed_service.hpp"

namespace ctx::app {
class Installation;
}  // namespace ctx::app

namespace ctx::runtime {

// The one audience of the state dir's consent broker: assertions for it are signed by the
// user's own key (ctx consent approve|deny).
inline constexpr std::string_view kStateConsentAudience = "ctx-local";
// The installer plugins and the descriptor installer ids they install skills, agents and MCP
// servers for.
inline constexpr std::string_view kSkillInstallerPluginId = "skill-installer";
inline constexpr std::string_view kSkillInstallerId = "ctx-skill-installer-v1";
inline constexpr std::string_view kAgentInstallerPluginId = "agent-installer";
inline constexpr std::string_view kAgentInstallerId = "ctx-agent-installer-v1";
inline constexpr std::string_view kMcpInstallerPluginId = "mcp-installer";
inline constexpr std::string_view kMcpInstallerId = "ctx-mcp-server-installer-v1";

// The net-benefit policy of the embedded default (calibration "ctx.default-calibration-v1":
// relevance must be positive, each context token costs one unit).
NetBenefitPolicy default_net_benefit_policy();

// Asks the pinned host adapter `adapter` (loaded from <state>/plugins.lock.json) where the
// skills of `dir` live — a project directory, or with kUser the user's home directory — and
// records that target (record_activation_target); sessions of that host whose cwd is in `dir`
// (kProject), or any of its sessions without a project target (kUser), activate skills there
// from then on. The skills directory is created (0755) when missing, so the host lists it from
// its next start. `config_dir` (kUser only): the host's own user configuration directory it runs
// with ($CLAUDE_CONFIG_DIR), for an adapter whose user locations move there. Idempotent.
// Errors: NotFound (adapter not pinned, not initialised), InvalidArgument (relative path, no
// skills location, a config_dir the adapter refuses), plugin errors.
ActivationTarget set_activation_target(
    const std::filesystem::path& state_dir, const std::string& adapter,
    const std::filesystem::path& dir, ActivationScope scope = ActivationScope::kProject,
    const std::optional<std::filesystem::path>& config_dir = std::nullopt);

// What activating an installed capability did (activate_installed).
struct ActivationSummary {
  std::string capability_id;
  engine::Outcome outcome = engine::Outcome::kIndeterminate;
  bool settled = false;
  // A deactivation only: the installer removed it from the host's skills directory (false when
  // another session or a recent prompt of the project keeps it there).
  bool left = false;
  // An activation only: where the host loads it (the skills or agents directory or the MCP file
  // that `ctx hooks install` named for the session's project or user); empty when none is named,
  // so it went to the state dir's default place, which no host reads. Local only: never on the
  // wire.
  std::filesystem::path place;
};

// A consent decision and, after a grant installed the capability, its activation.
struct ConsentDecisionResult {
  ManagedConsentResolutionResult resolution;
  std::optional<ActivationSummary> activation;
};

class StateService {
 public:
  // Opens everything on an initialised state dir with an imported catalog. Errors: NotFound
  // ("run ctx init" / "run ctx catalog import DIR"), FailedPrecondition (unsafe state dir), the
  // stores' and registry's errors.
  static std::unique_ptr<StateService> open(const std::filesystem::path& state_dir,
                                            std::shared_ptr<const core::Clock> clock = nullptr);
  // As open(), with the state dir's installation (key and plugins.lock.json) as the caller
  // already read it (one read of each per process: the hook reads them first, for its adapter).
  static std::unique_ptr<StateService> open(const std::filesystem::path& state_dir,
                                            std::shared_ptr<const core::Clock> clock,
                                            const app::Installation& installation);
  StateService(const StateService&) = delete;
  StateService& operator=(const StateService&) = delete;
  ~StateService();

  // Registers `work` with the input authority and prepares it (an exact retry of the same work
  // returns the same result); when a concurrent preparer of other work in the session moved the
  // head first (a kAborted error: RevisionConflict, this work's plan superseded since it was found
  // at the head, head drift), registers again on the new head, up to eight attempts; while
  // another preparer commits the session's first plan (SessionStartPending), waits up to ~2 s.
  // Work refused because the session's consent is pending, when that consent's challenge has
  // expired, first commits the expiry (recover_consent, once) and registers again.
  // Errors: the authority's and the service's.
  ManagedQueryServiceResult prepare(CurrentWork work);
  // The same, also naming in `sources` the files besides the state dir's databases the result
  // was read from: the work's registration, its artifact's manifest and graph copy (what
  // HookRunner's exact-retry replies are checked against).
  ManagedQueryServiceResult prepare(CurrentWork work, std::vector<std::filesystem::path>& sources);
  ManagedQueryServiceResult reopen(const std::string& query_ref);
  // Reopens the plan committed at the head of `work`'s session, if there is one.
  std::optional<ManagedQueryServiceResult> reopen_current(const CurrentWork& work);
  // That plan in outline, with the head's revision (read from the session's head, nothing
  // reopened); nullopt before the session's first plan. Errors: the journal's.
  std::optional<SessionPlan> current_plan(const CurrentWork& work) const;
  // `logical_choice_id` defaults to an HMAC of the query, the ids and the predecessor; the
  // predecessor is the query's latest committed desired set (none for a first choice or for an
  // exact retry of the first). Errors: the request's and the service's.
  ManagedDesiredSetResult set_desired(const std::string& query_ref,
                                      std::vector<std::string> capability_ids,
                                      std::optional<std::string> logical_choice_id = std::nullopt);
  // The query's first choice of `capability_ids` with the default logical choice id: what a
  // hook chooses for the user. An exact retry (the query's latest desired set is that same first
  // choice) returns the same result and commits nothing new; nullopt, with nothing done, when the
  // query already has another desired set (the user's own choice is never replaced).
  // Errors: set_desired's.
  std::optional<ManagedDesiredSetResult> set_first_desired(const std::string& query_ref,
                                                           std::vector<std::string> capability_ids);

  // The challenges still awaiting a human decision that are current (recover_consent reports
  // consent-required or reauthentication-required for them), oldest first, at most 16. Like
  // every broker read and recover_consent, this durably applies due expiry (an expired
  // challenge's InstallConsentExpired is committed, once) — nothing else changes.
  // Errors: broker errors.
  std::vector<ManagedConsentChallengeProjection> pending_challenges();
  // The projection of one published challenge, whatever its state.
  // Errors: InvalidArgument (not 64 hex), ConsentBrokerChallengeNotFound.
  ManagedConsentChallengeProjection challenge(const std::string& challenge_digest);

  // resolve_consent (§3.14) of the exact wire payload; after an installed-inactive outcome the
  // installed capability is activated (activate_installed). Errors: the service's.
  ConsentDecisionResult resolve_consent(std::string_view assertion_payload);
  // recover_consent (§3.20), then the same activation step.
  ConsentDecisionResult recover_consent(const std::string& challenge_digest);
  // Forgets the standing approval of `capability_id` (a later plan asks consent for it again);
  // false when it had none. Errors: InstallApprovals' (DataLoss, UnsafeStateFile, SystemError).
  bool revoke_approval(const std::string& capability_id);
  // The standing approvals recorded in this state dir (whatever policy they were given under).
  InstallApprovalMap approvals() const;
  // Executes the pending ActivateCapability of the challenge's capability on its stream, if there
  // is one (claim → installer activate → outcome → receipt, exactly once; a re-run after a
  // crash reconciles). nullopt when no activation is pending. Errors: ActivationExecutionError,
  // InstallActuatorError ("no physical installation actuator"), broker and engine errors.
  std::optional<ActivationSummary> activate_installed(const std::string& challenge_digest);
  // The same for the pending ActivateCapability of `capability_id` that a preapproved-auto
  // install left in `query_ref`'s session. Errors: InvalidArgument (not a query ref), ManagedQueryStoreNotFound, as above.
  std::optional<ActivationSummary> activate_chosen(const std::string& query_ref,
                                                   const std::string& capability_id);
  // Executes the pending DeactivateCapability effects of `query_ref`'s session, one after
  // another (a plan that dropped an active capability releases it: the installer deactivates
  // it, and its receipt lets the session plan on); stops at an indeterminate one. What each did,
  // in order; empty when none is pending. Errors: InvalidArgument (not a query ref),
  // ManagedQueryStoreNotFound, ActivationExecutionError, the engine's.
  //
  // Deactivation rule: a capability leaves the host's skills directory only when no other
  // session of it holds it and none of the project's last kRecentPrompts prompts planned it;
  // otherwise the session's effect is settled and the capability stays (a project's skill it
  // keeps that way is "lingering" until record_prompt finds no recent prompt wanting it).
  std::vector<ActivationSummary> release_deactivations(const std::string& query_ref);

  // The session of `session` (its scope; signals ignored) has ended: what it holds active is
  // released as a plan that drops everything would release it (release_deactivations: the
  // installer deactivates a capability no other session holds). The stream stays open: a
  // resumed session plans again, and a prompt that needs a capability brings it back. Nothing is
  // written when the session holds nothing active. What each release did, in order.
  // Errors: prepare's and release_deactivations'.
  // SessionEnd keeps what the project's recent prompts want (the deactivation rule above), so
  // the project's next session lists it from its start. The session's branches (branch_for) end
  // with it. A project's session is recorded as ended (ProjectLifecycle::end_session) before
  // anything is released, until a prompt of it comes again (a resumed session).
  std::vector<ActivationSummary> end_session(const CurrentWork& session);

  // The plan follows the work (issue 36): other work in a session whose consent is pending
  // cannot replace its plan (the engine settles a consent before any replacement), so it is
  // planned in a branch of the session — a stream of its own, "<session>:ctxb<12 hex>", named by
  // the pending consent — where it gets its own plan and challenge. The earlier challenge stays
  // approvable until it expires (nothing withdraws it); once it is settled, the session's own
  // stream plans again. The branch of `work` (recorded for end_session), or nullopt when its
  // session has no pending consent. Errors: the journal's, UnsafeStateFile, SystemError.
  std::optional<CurrentWork> branch_for(const CurrentWork& work);

  // A prompt of `work`'s session came: if the session had ended (a resumed session), it is live
  // again, and what it activates from now on is held by it. Nothing for work outside a project.
  // Errors: UnsafeStateFile, DataLoss, SystemError.
  void resume_session(const CurrentWork& work);

  // Puts `work` in the project of a session of host adapter `adapter` running in `cwd`
  // (find_activation_target): its repository id becomes the project's token, so its skills
  // activate in that project's skills directory and its prompts count in that project's window;
  // its project_dir becomes that project's folder (else the absolute cwd), whose manifests give
  // the work's project signals. Unchanged when no target fits and cwd is not absolute.
  // Errors: read_activation_targets'.
  void place_in_project(CurrentWork& work, const std::string& adapter,
                        const std::optional<std::filesystem::path>& cwd) const;
  // A prompt of `work`'s project (`prompt_key`: the host's work reference of that prompt, so a
  // retried prompt counts once) planned `capability_ids` (none for a prompt about nothing the
  // catalog knows): they join the project's recent window, and each lingering capability no
  // recent prompt wants and no session holds leaves the skills directory (the installer
  // deactivates it). What left. Nothing for work outside a project.
  // Errors: UnsafeStateFile, DataLoss, SystemError, plugin errors.
  std::vector<std::string> record_prompt(const CurrentWork& work, const std::string& prompt_key,
                                         const std::vector<std::string>& capability_ids);

  // True when a pinned installer installs capabilities of `kind` here (the skill installer for
  // skills; the agent and MCP installers when pinned): a plan's row of that kind can be chosen.
  bool installs(engine::CapabilityKind kind) const;

  const CatalogVocabulary& vocabulary() const noexcept { return authority_->vocabulary(); }
  const std::string& installation_key() const noexcept { return key_; }
  // The trusted clock every decision of this service reads (consent expiry included).
  const core::Clock& clock() const noexcept { return *clock_; }
  const StatePaths& paths() const noexcept { return paths_; }
  const ImportedCatalog& catalog() const noexcept { return *catalog_; }
  ManagedQueryService& service() noexcept { return *service_; }

 private:
  // The approval store's entry for the challenge's capability once its install settled.
  void record_approval(const std::string& challenge_digest);
  // Records the approval of an install that settled, then activates it (resolve/recover).
  ConsentDecisionResult after_decision(ManagedConsentResolutionResult resolution);

  StateService() = default;
  // StateService::open's steps: the key, catalog, registry and query store; the input authority
  // over them; the consent broker and verifiers; the pinned installers (when the skill installer
  // is pinned) as the service's actuators and body source.
  void open_stores(const app::Installation& installation);
  void open_authority(const std::shared_ptr<const core::Clock>& trusted_clock);
  void attach_consent(const app::Installation& installation, ManagedQueryServiceOptions& options);
  void attach_installers(const app::Installation& installation,
                         ManagedQueryServiceOptions& options);
  // Commits InstallConsentExpired for the consent pending in `work`'s session when its published
  // challenge has expired; true when the session then has no pending consent.
  bool settle_expired_consent(const CurrentWork& work);
  // The activation target of a session scope's repository id `project` (a project token), if
  // any.
  std::optional<ActivationTarget> target_of(const std::string& project) const;
  // The activation port and skills directory of `scope`'s sessions: its target's, else the
  // state dir's default (<state>/skills/active). Errors: plugin errors.
  std::pair<std::shared_ptr<engine::ActivationPort>, std::string> activation_for(
      const std::string& project);
  // Which sessions hold a capability active in an activation root: one empty private file per
  // session (an HMAC of its stream) in <state>/activation-holders/<digest of root and id>/.
  std::filesystem::path holders_dir(const std::string& root,
                                    const std::string& capability_id) const;
  std::string holder_name(const engine::StreamId& stream) const;
  // The keyed reference of `work`'s session stream (holder_name of its stream).
  std::string stream_ref(const CurrentWork& work) const;
  // When `scope`'s session has ended (ProjectLifecycle::ended), ends it again (end_session): what
  // an approval activated for it after its SessionEnd is released like the rest.
  void release_if_ended(const engine::ScopeRef& scope);
  // Errors: UnsafeStateFile, SystemError.
  void hold_activation(const std::string& root, const std::string& capability_id,
                       const engine::StreamId& stream);
  // Held by a session other than `stream` (nullopt: by any session).
  bool held_elsewhere(const std::string& root, const std::string& capability_id,
                      const std::optional<engine::StreamId>& stream) const;
  void release_holder(const std::string& root, const std::string& capability_id,
                      const engine::StreamId& stream);
  // <state>/session-branches/<HMAC of the session's stream>.json: the branch session ids.
  std::filesystem::path branches_file(const CurrentWork& session) const;
  std::vector<ActivationSummary> end_one(const CurrentWork& session);
  // A composition over `query`'s artifact with this state dir's ports and activation actuator.
  std::unique_ptr<EngineComposition> open_composition(const ManagedQueryRecord& query);
  // Executes the pending activation of `capability_id` on `query`'s session; the caller's
  // verification digest names `authority` = `authority_ref`.
  std::optional<ActivationSummary> activate_pending(const ManagedQueryRecord& query,
                                                    const std::string& capability_id,
                                                    const char* authority,
                                                    const std::string& authority_ref);
  StatePaths paths_;
  std::string key_;
  std::string default_activation_root_;                         // <state>/skills/active
  std::shared_ptr<const PinnedPlugins> installer_plugins_;      // the pinned installers, loaded
  std::mutex activations_mutex_;
  // One installer instance per project skills directory.
  std::map<std::string, std::shared_ptr<engine::ActivationPort>> activations_;  // GUARDED_BY
  std::shared_ptr<const core::Clock> clock_;
  // The options every composition over the state dir opens with (Installation fills them).
  ManagedCompositionOptions composition_;
  std::shared_ptr<ManagedArtifactRegistry> registry_;
  std::shared_ptr<SharedJournal> journal_;  // the one connection every part journals through
  std::shared_ptr<ConsentBroker> broker_;
  std::shared_ptr<const InstallApprovals> approvals_;
  std::shared_ptr<const ManagedInstallActuators> actuators_;
  std::set<engine::CapabilityKind> installed_kinds_;  // kinds a pinned installer installs
  std::shared_ptr<engine::ActivationPort> activation_;
  std::shared_ptr<BenefitFactsPort> facts_;
  std::shared_ptr<MaterialPort> material_;
  std::shared_ptr<InstallBundlePort> install_;
  std::shared_ptr<const ImportedCatalog> catalog_;
  std::shared_ptr<ManagedQueryStore> store_;
  std::shared_ptr<CatalogInputAuthority> authority_;
  std::shared_ptr<ManagedQueryService> service_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_APP_STATE_SERVICE_HPP_
