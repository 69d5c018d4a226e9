#include "host/app/state_service.hpp"

#include <algorithm>
#include <chrono>
#include <ctx/loader/lock_file.hpp>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "host/app/installation.hpp"
#include "host/app/state_layout.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/activation_execution.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/consent/printed_command.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/runtime/plugin_ports.hpp"
#include "host/store/sqlite_managed_query_store.hpp"

namespace ctx::runtime {
namespace {

// The activation port of the state dir: each capability's activation goes to the installer of
// its kind; a kind without one is indeterminate (nothing is called).
struct KindActivation final : engine::ActivationPort {
  std::map<engine::CapabilityKind, std::shared_ptr<engine::ActivationPort>> by_kind;

  engine::ActivationObservation activate(const engine::ActivationRequest& request) override {
    return port(request, &engine::ActivationPort::activate);
  }
  engine::ActivationObservation deactivate(const engine::ActivationRequest& request) override {
    return port(request, &engine::ActivationPort::deactivate);
  }
  engine::ActivationObservation reconcile(const engine::ActivationRequest& request) override {
    return port(request, &engine::ActivationPort::reconcile);
  }

 private:
  using Op =
      engine::ActivationObservation (engine::ActivationPort::*)(const engine::ActivationRequest&);
  engine::ActivationObservation port(const engine::ActivationRequest& request, Op op) {
    const auto it = by_kind.find(request.material.kind());
    if (it == by_kind.end()) {
      engine::ActivationObservation none;
      none.reason = "no installer activates this kind";
      return none;
    }
    return ((*it->second).*op)(request);
  }
};

using core::Json;
namespace fs = std::filesystem;

// The installer drivers of one activation place, by installer id, and the activation port that
// sends each capability to the driver of its kind.
struct InstallerSet {
  std::map<std::string, std::shared_ptr<engine::InstallerPort>> drivers;
  std::shared_ptr<KindActivation> activation = std::make_shared<KindActivation>();
};

// Drivers over the pinned installers in `plugins` (the skill installer always; the agent and MCP
// installers when pinned) whose stores are the state dir's and which activate where `target`
// says: its skills directory, and its agents directory and MCP config file when it names them;
// a place it leaves empty is the state dir's default (<state>/skills/active,
// <state>/agents/active, <state>/mcp-servers/active.json).
InstallerSet installers_for(const PinnedPlugins& plugins, const StatePaths& paths,
                            const ActivationTarget& target) {
  InstallerSet set;
  const auto add = [&](std::string_view plugin_id, std::string_view installer_id,
                       engine::CapabilityKind kind, const Json& config) {
    if (!plugins.installer_identity(plugin_id)) return;
    auto driver = plugins.installer(plugin_id, core::canonical_json(config));
    set.drivers.emplace(std::string(installer_id), driver);
    set.activation->by_kind[kind] = std::make_shared<engine::InstallerActivation>(driver);
  };
  Json skill = {{"root", paths.skills.string()}};
  if (!target.skills_dir.empty()) skill["activation_root"] = target.skills_dir.string();
  add(kSkillInstallerPluginId, kSkillInstallerId, engine::CapabilityKind::kSkill, skill);
  const bool named = !target.mcp_format.empty();
  add(kAgentInstallerPluginId, kAgentInstallerId, engine::CapabilityKind::kAgent,
      Json{{"activation_root", named ? target.agents_dir.string() : paths.agents_active.string()},
           {"format", target.mcp_format == "toml" ? "toml" : "markdown"},
           {"root", paths.agents.string()}});
  add(kMcpInstallerPluginId, kMcpInstallerId, engine::CapabilityKind::kMcpServer,
      Json{{"config_file", named ? target.mcp_file.string() : paths.mcp_active_config.string()},
           {"format", named ? target.mcp_format : std::string("json")},
           {"root", paths.mcp_servers.string()}});
  return set;
}

constexpr std::size_t kMaxShownChallenges = 16;
// Deactivations one release_deactivations call settles at most (a plan holds at most five).
constexpr std::size_t kMaxReleasedPerCall = 8;

// Install bodies from the imported catalog's object store, read as stored (the executor verifies
// them once: the root the files imply, or SKILL.md, against the material).
// A tree entry's material is its tree root object; its files are the entry's files, by digest,
// under their tree paths (a skill folder's relative paths, a large agent's AGENT.md: tree_paths).
class CatalogBodySource final : public InstallBodySource {
 public:
  explicit CatalogBodySource(std::shared_ptr<const ImportedCatalog> catalog)
      : catalog_(std::move(catalog)) {}
  InstallBody load(const engine::MaterialIdentity& material) override {
    const CatalogEntry* entry = catalog_->find(material.capability_id());
    if (entry == nullptr || !entry->tree || entry->tree->sha256 != material.content_sha256()) {
      return {catalog_->read_object_unverified(material.content_sha256()), std::nullopt};
    }
    InstallBody body{catalog_->read_object_unverified(entry->tree->sha256),
                     std::vector<InstallBodyFile>{}};
    const std::vector<std::string> paths = tree_paths(*entry);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < entry->files.size(); ++i) {
      const CatalogFile& file = entry->files[i];
      total += static_cast<std::uint64_t>(file.bytes);
      if (total > kMaxInstallTreeBytes) throw InvalidArgument("skill tree exceeds the install cap");
      body.files->push_back({paths[i], catalog_->read_object_unverified(file.sha256)});
    }
    return body;
  }

 private:
  std::shared_ptr<const ImportedCatalog> catalog_;
};

}  // namespace

ActivationTarget set_activation_target(const fs::path& state_dir, const std::string& adapter,
                                       const fs::path& project_dir, ActivationScope scope,
                                       const std::optional<fs::path>& config_dir) {
  const StatePaths paths = StatePaths::of(state_dir);
  const bool user = scope == ActivationScope::kUser;
  if (!project_dir.is_absolute()) {
    throw InvalidArgument(user ? "home directory must be absolute"
                               : "project directory must be absolute");
  }
  const app::Installation installation(paths.state_dir);
  (void)installation.key();  // an uninitialised state dir says so first
  if (!installation.pinned(plugins::PluginKind::kHostAdapter, adapter)) {
    throw NotFound("no host adapter \"" + adapter + "\" is pinned in the state directory");
  }
  Json config = {{user ? "home" : "project_dir", project_dir.lexically_normal().string()},
                 {"scope", user ? "user" : "project"}};
  if (user && config_dir) {
    if (!config_dir->is_absolute()) throw InvalidArgument("config directory must be absolute");
    config["config_dir"] = config_dir->lexically_normal().string();
  }
  const auto locations = installation.host_adapter(adapter, config)->install_locations();
  if (!locations || !locations->is_object() || !locations->contains("skills") ||
      !(*locations)["skills"].is_string()) {
    throw InvalidArgument("host adapter " + adapter + " names no skills location");
  }
  const auto location = [&](const char* key) -> fs::path {
    const auto it = locations->find(key);
    if (it == locations->end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
      return {};
    }
    fs::path path = it->get<std::string>();
    if (path.is_relative()) path = project_dir / path;
    return path.lexically_normal();
  };
  ActivationTarget target;
  target.adapter = adapter;
  target.project_dir = project_dir.lexically_normal();
  target.skills_dir = location("skills");
  target.scope = scope;
  target.agents_dir = location("agents");
  target.mcp_file = location("mcp");
  if (const auto it = locations->find("mcp_format"); it != locations->end() && it->is_string()) {
    target.mcp_format = it->get<std::string>();
  }
  if ((target.mcp_format != "json" && target.mcp_format != "toml") || target.agents_dir.empty() ||
      target.mcp_file.empty()) {
    target.agents_dir.clear();
    target.mcp_file.clear();
    target.mcp_format.clear();
  }
  record_activation_target(paths.state_dir, target);
  // The host lists a skills directory only if it existed when its session started.
  std::error_code ec;
  if (fs::create_directories(target.skills_dir, ec)) {
    fs::permissions(target.skills_dir,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    ec);
  }
  return target;
}

NetBenefitPolicy default_net_benefit_policy() {
  planning::NetBenefitPolicyConfig config;
  config.calibration_digest = core::sha256_hex("ctx.default-calibration-v1");
  config.minimum_relevance_ppm = 1;
  config.context_token_cost_u = 1;
  return NetBenefitPolicy(config);
}

std::unique_ptr<StateService> StateService::open(const fs::path& state_dir,
                                                 std::shared_ptr<const core::Clock> clock) {
  return open(state_dir, std::move(clock), app::Installation(StatePaths::of(state_dir).state_dir));
}

void StateService::open_stores(const app::Installation& installation) {
  try {
    key_ = installation.key();
  } catch (const NotFound&) {
    throw NotFound("state directory is not initialised (run ctx init)");
  }
  try {
    catalog_ = ImportedCatalog::open(paths_.state_dir);
  } catch (const NotFound&) {
    throw NotFound("no catalog is imported (run ctx catalog import DIR)");
  }
  ensure_private_dir(paths_.service_dir, "service directory");
  registry_ = open_managed_artifact_registry(paths_.registry);
  {
    // Concurrent first opens (several hooks at a session's start) would race the store's
    // creation (one opener sweeps another's unpublished stage); one at a time.
    const ExclusiveFileLock creating(paths_.open_lock, std::chrono::seconds(30));
    store_ = store::open_managed_query_store(paths_.queries, key_);
  }
  approvals_ = std::make_shared<const InstallApprovals>(paths_.approvals, key_);
  facts_ = std::make_shared<CatalogBenefitFactsPort>(catalog_);
  material_ = std::make_shared<CatalogMaterialPort>(catalog_);
  install_ = std::make_shared<CatalogInstallBundlePort>(catalog_);
  // One journal connection for the whole state: the authority, the service and its compositions.
  journal_ = std::make_shared<SharedJournal>(paths_.journal, clock_);
}

void StateService::open_authority(const std::shared_ptr<const core::Clock>& trusted_clock) {
  CatalogInputAuthorityOptions authority;
  authority.catalog = catalog_;
  authority.registry = registry_;
  authority.query_store = store_;
  authority.benefit_facts_port = facts_;
  authority.material_port = material_;
  authority.install_bundle_port = install_;
  authority.net_benefit_policy = default_net_benefit_policy();
  authority.journal_path = paths_.journal;
  authority.journal = journal_;
  authority.benefit_audit_path = paths_.audit;
  authority.inputs_dir = paths_.inputs;
  authority.installation_key = key_;
  authority.planner_version = std::string(kDefaultRuntimePlannerVersion);
  authority.trusted_clock = trusted_clock;
  authority_ = std::make_shared<CatalogInputAuthority>(std::move(authority));
}

void StateService::attach_consent(const app::Installation& installation,
                                  ManagedQueryServiceOptions& options) {
  broker_ = std::make_shared<ConsentBroker>(paths_.consent_store, key_,
                                            std::string(kStateConsentAudience), *clock_);
  options.consent_broker = broker_;
  options.consent_workspace_identity_digest = core::hmac_sha256_hex(
      key_, "ctx.state-consent-workspace-v1" + std::string(1, '\0') + paths_.state_dir.string());
  options.consent_release_root_digest =
      core::canonical_digest(Json{{"catalog_digest", catalog_->catalog_digest()},
                                  {"schema", "ctx.state-consent-release-root-v1"}},
                             core::Encoding::kAscii);
  options.verifier_registry = installation.verifiers();
}

void StateService::attach_installers(const app::Installation& installation,
                                     ManagedQueryServiceOptions& options) {
  if (installation.lock().find(plugins::PluginKind::kInstaller, kSkillInstallerPluginId) ==
      nullptr) {
    return;
  }
  // Installs write the state dir's store; each project's activations get their own instance
  // (activation_for), this one activates in <state>/skills/active.
  (void)read_activation_targets(paths_.state_dir);  // migrates an earlier build's single target
  // Agents and MCP servers go to their installers when those are pinned; without them those
  // capabilities stay recommendations (no actuator: their consent fails closed).
  installer_plugins_ =
      installation.load(plugins::PluginKind::kInstaller,
                        {kSkillInstallerPluginId, kAgentInstallerPluginId, kMcpInstallerPluginId});
  // The install drivers activate in the state dir's default places (<state>/skills/active,
  // <state>/agents/active, <state>/mcp-servers/active.json); a project's activations get
  // instances of their own (activation_for).
  InstallerSet defaults = installers_for(*installer_plugins_, paths_, ActivationTarget{});
  // The install writes the state dir's store (its root is the binding's target identity);
  // where it is activated later is not part of the install a human approves, so moving the
  // activation target leaves published challenges valid.
  const std::string host_identity = core::canonical_digest(
      Json{{"schema", "ctx.state-install-host-v1"}, {"skills_root", paths_.skills.string()}},
      core::Encoding::kAscii);
  actuators_ =
      std::make_shared<ManagedInstallActuators>(std::move(defaults.drivers), host_identity);
  for (const auto& [kind, port] : defaults.activation->by_kind) installed_kinds_.insert(kind);
  activation_ = defaults.activation;
  options.install_actuators = actuators_;
  options.install_body_source = std::make_shared<CatalogBodySource>(catalog_);
}

std::unique_ptr<StateService> StateService::open(const fs::path& state_dir,
                                                 std::shared_ptr<const core::Clock> clock,
                                                 const app::Installation& installation) {
  std::unique_ptr<StateService> state(new StateService());
  state->paths_ = StatePaths::of(state_dir);
  state->clock_ = clock ? clock : std::make_shared<core::SystemClock>();
  state->open_stores(installation);
  state->open_authority(clock);
  state->default_activation_root_ = state->paths_.skills_active.string();

  // Every composition over the state dir, the service's and open_composition's, opens with the
  // options the installation fills.
  state->composition_ = installation.composition_options(
      app::CompositionPorts{state->journal_, state->facts_, state->material_, state->install_,
                            state->clock_, state->approvals_});
  ManagedQueryServiceOptions options;
  static_cast<ManagedCompositionOptions&>(options) = state->composition_;
  options.registry = state->registry_;
  options.query_store = state->store_;
  options.input_authority = state->authority_;
  // Consent: the broker, the verifiers, and the install actuators over the pinned installer.
  state->attach_consent(installation, options);
  state->attach_installers(installation, options);
  state->service_ = open_managed_query_service(std::move(options));
  return state;
}

StateService::~StateService() {
  if (service_ && !service_->closed()) service_->close();
}

ManagedQueryServiceResult StateService::prepare(CurrentWork work) {
  std::vector<fs::path> sources;
  return prepare(std::move(work), sources);
}

ManagedQueryServiceResult StateService::prepare(CurrentWork work,
                                                std::vector<fs::path>& sources) {
  // Another preparer of other work in the same session can move the stream's head between this
  // registration and its commit; the work is then registered again on the new head.
  // What another holds for a moment (kUnavailable: a session's first plan another preparer is
  // committing, a busy store) is waited for, up to ~2 s.
  constexpr int kConflictAttempts = 8;
  constexpr int kPendingAttempts = 40;
  int conflicts = 0;
  int pending = 0;
  bool expiry_settled = false;
  // Refused while the session's consent is pending (or stranded by a policy change): an expired
  // one is settled, once, then the work registers on the head that settles it.
  const auto settle_or_rethrow = [&] {
    if (expiry_settled || !settle_expired_consent(work)) throw;
    expiry_settled = true;
  };
  for (;;) {
    try {
      const auto registration = authority_->register_work(work);
      const auto input = authority_->resolve(registration.current_work_ref);
      const auto& artifact = input->artifact();
      // The registration itself is a query-store row: the state watch sees that database.
      sources = {paths_.registry_manifests / (artifact.manifest_digest() + ".json"),
                 paths_.registry_artifacts / (artifact.graph_artifact_digest() + ".sqlite3")};
      return service_->prepare(ManagedQueryRequest::create(registration.logical_query_id,
                                                           registration.current_work_ref));
    } catch (const Error& e) {
      // By the error's retry contract (style §6.2). kUnavailable: held for a moment elsewhere
      // (the session's first plan being committed by another preparer, a busy store): back off
      // and call again. kAborted: the head moved under this registration (a revision conflict;
      // this work's plan, the head when it was registered, superseded since; the head drifted):
      // register again on the new head. kFailedPrecondition: refused in this state (the
      // session's consent pending, or stranded by a policy change): an expired consent is
      // settled, once, and the work registers again. Others propagate.
      if (e.code() == ErrorCode::kUnavailable) {
        if (++pending == kPendingAttempts) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      } else if (e.code() == ErrorCode::kAborted) {
        if (++conflicts == kConflictAttempts) throw;
      } else if (e.code() == ErrorCode::kFailedPrecondition) {
        settle_or_rethrow();
      } else {
        throw;
      }
    }
  }
}

bool StateService::settle_expired_consent(const CurrentWork& work) {
  // Any failure here (a busy store, a challenge not yet published) leaves the refusal as it was.
  try {
    const auto consent_id = authority_->pending_consent_id(work);
    if (!consent_id) return false;
    // Applies due expiry to the broker's row; NotFound when never published here, or retired.
    const ConsentRecord record = broker_->status(*consent_id);
    if (record.state != ConsentState::kExpired) return false;
    (void)service_->recover_consent(record.challenge.digest());
    return authority_->pending_consent_id(work) != consent_id;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
    return false;
  }
}

ManagedQueryServiceResult StateService::reopen(const std::string& query_ref) {
  return service_->reopen(query_ref);
}

std::optional<SessionPlan> StateService::current_plan(const CurrentWork& work) const {
  return authority_->current_plan(work);
}

std::optional<ManagedQueryServiceResult> StateService::reopen_current(const CurrentWork& work) {
  const auto query_ref = authority_->current_query_ref(work);
  if (!query_ref) return std::nullopt;
  return service_->reopen(*query_ref);
}

// The default logical choice id of choosing `capability_ids` (any order) on `query_ref` after
// `predecessor` ("none" for a first choice).
static std::string desired_choice_id(const std::string& key, const std::string& query_ref,
                                     const std::vector<std::string>& capability_ids,
                                     const std::string& predecessor) {
  std::vector<std::string> sorted = capability_ids;
  std::sort(sorted.begin(), sorted.end());
  Json ids = Json::array();
  for (const auto& id : sorted) ids.push_back(id);
  std::string message = "ctx.desired-choice-v1";
  message.push_back('\0');
  message += core::canonical_json(
      Json{{"capability_ids", ids}, {"predecessor", predecessor}, {"query_ref", query_ref}});
  return core::hmac_sha256_hex(key, message);
}

ManagedDesiredSetResult StateService::set_desired(const std::string& query_ref,
                                                  std::vector<std::string> capability_ids,
                                                  std::optional<std::string> logical_choice_id) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  const auto choice_of = [&](const std::string& predecessor) {
    return desired_choice_id(key_, query_ref, capability_ids, predecessor);
  };
  std::optional<std::string> previous;
  const auto latest = store_->find_latest_desired_set(query_ref);
  if (latest) {
    const auto parent = store_->load(query_ref);
    const bool latest_is_first =
        latest->event().causation_id() ==
        std::optional<std::string>(parent.decision_event().event_id());
    const std::string retry_id = logical_choice_id ? *logical_choice_id : choice_of("none");
    if (latest_is_first && latest->logical_choice_id() == retry_id) {
      previous.reset();  // an exact retry of the first choice
      logical_choice_id = retry_id;
    } else if (latest->committed() && latest->logical_choice_id() != logical_choice_id) {
      previous = latest->desired_set_ref();
    }
  }
  if (!logical_choice_id) logical_choice_id = choice_of(previous ? *previous : "none");
  return service_->set_desired(ManagedDesiredSetRequest::create(
      query_ref, *logical_choice_id, std::move(capability_ids), std::move(previous)));
}

std::optional<ManagedDesiredSetResult> StateService::set_first_desired(
    const std::string& query_ref, std::vector<std::string> capability_ids) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  if (const auto latest = store_->find_latest_desired_set(query_ref)) {
    const auto parent = store_->load(query_ref);
    const bool latest_is_first =
        latest->event().causation_id() ==
        std::optional<std::string>(parent.decision_event().event_id());
    if (!latest_is_first || latest->logical_choice_id() !=
                               desired_choice_id(key_, query_ref, capability_ids, "none")) {
      return std::nullopt;
    }
  }
  return set_desired(query_ref, std::move(capability_ids));
}

std::vector<ManagedConsentChallengeProjection> StateService::pending_challenges() {
  std::vector<ManagedConsentChallengeProjection> out;
  for (const ConsentRecord& record : broker_->awaiting_decision(kMaxShownChallenges)) {
    try {
      const auto current = service_->recover_consent(record.challenge.digest());
      if (current.outcome() == ManagedConsentOutcome::kConsentRequired ||
          current.outcome() == ManagedConsentOutcome::kReauthenticationRequired) {
        out.push_back(ManagedConsentChallengeProjection::of(record.challenge));
      }
    } catch (const std::exception&) {
      // Not current any more (its plan or head moved on): not shown.
    }
  }
  return out;
}

ManagedConsentChallengeProjection StateService::challenge(const std::string& challenge_digest) {
  return ManagedConsentChallengeProjection::of(
      broker_->status_by_challenge_digest(challenge_digest).challenge);
}

ConsentDecisionResult StateService::resolve_consent(std::string_view assertion_payload) {
  return after_decision(service_->resolve_consent(assertion_payload));
}

ConsentDecisionResult StateService::recover_consent(const std::string& challenge_digest) {
  return after_decision(service_->recover_consent(challenge_digest));
}

ConsentDecisionResult StateService::after_decision(ManagedConsentResolutionResult resolution) {
  const auto outcome = resolution.outcome();
  if (outcome == ManagedConsentOutcome::kInstalledInactive ||
      outcome == ManagedConsentOutcome::kQuarantined) {
    // Recorded after the install settled (a crash before it loses only the approval: the next
    // session asks again) and on every recovery of the decision, idempotently.
    record_approval(resolution.challenge_digest());
  }
  std::optional<ActivationSummary> activation;
  if (outcome == ManagedConsentOutcome::kInstalledInactive) {
    activation = activate_installed(resolution.challenge_digest());
  }
  return ConsentDecisionResult{std::move(resolution), std::move(activation)};
}

void StateService::record_approval(const std::string& challenge_digest) {
  const ConsentRecord record = broker_->status_by_challenge_digest(challenge_digest);
  const ConsentChallengeFields& fields = record.challenge.fields();
  const CatalogEntry* entry = catalog_->find(fields.capability_id);
  if (entry == nullptr || entry->kind != fields.kind) return;
  // The approval names the material the human approved, as the challenge bound it; a catalog
  // whose entry changed since has nothing to approve.
  const CatalogFile& file = entry->tree ? *entry->tree : entry->primary;
  const auto identity =
      engine::MaterialIdentity::create(fields.capability_id, fields.kind, file.sha256, file.bytes);
  if (identity.identity_digest() != fields.material_identity_digest) return;
  // Automatic grants need an explicitly persisted policy: the one in force (unchanged digest).
  const InstallPolicyStore policy_store(paths_.install_policy);
  const InstallConsentPolicy policy = policy_store.load();
  if (policy.policy_digest() != fields.policy_snapshot_digest) return;
  if (!policy_store.has_persisted()) policy_store.persist(policy);
  approvals_->record(InstallApproval{
      fields.capability_id, fields.kind, fields.material_identity_digest, file.sha256, file.bytes,
      fields.policy_snapshot_digest, core::format_rfc3339(clock_->now())});
}

bool StateService::revoke_approval(const std::string& capability_id) {
  return approvals_->revoke(capability_id);
}

InstallApprovalMap StateService::approvals() const { return approvals_->load(); }

bool StateService::installs(engine::CapabilityKind kind) const {
  return installed_kinds_.count(kind) != 0;
}

std::optional<ActivationTarget> StateService::target_of(const std::string& project) const {
  if (project.rfind("prj-", 0) != 0) return std::nullopt;
  for (auto& target : read_activation_targets(paths_.state_dir)) {
    if (project_token(key_, target.skills_dir) == project) return target;
  }
  return std::nullopt;
}

void StateService::place_in_project(CurrentWork& work, const std::string& adapter,
                                    const std::optional<fs::path>& cwd) const {
  const auto target =
      find_activation_target(read_activation_targets(paths_.state_dir), adapter, cwd);
  if (target) work.repository = project_token(key_, target->skills_dir);
  // Whose manifests say the project's languages (project_signals): the project target's folder
  // (a session in a subfolder reads the project's), else the session's own directory.
  if (target && target->scope == ActivationScope::kProject) {
    work.project_dir = target->project_dir;
  } else if (cwd && cwd->is_absolute()) {
    work.project_dir = *cwd;
  }
}

std::pair<std::shared_ptr<engine::ActivationPort>, std::string> StateService::activation_for(
    const std::string& project) {
  const auto target = target_of(project);
  if (!target || !installer_plugins_) return {activation_, default_activation_root_};
  const std::string root = target->skills_dir.string();
  std::lock_guard lock(activations_mutex_);
  if (const auto it = activations_.find(root); it != activations_.end()) return {it->second, root};
  // The installer creates the activation root itself (0700 when missing); its parents are the
  // project's. Agents and MCP servers activate where the target's adapter reads them.
  std::error_code ec;
  fs::create_directories(target->skills_dir.parent_path(), ec);
  std::shared_ptr<engine::ActivationPort> port =
      installers_for(*installer_plugins_, paths_, *target).activation;
  activations_.emplace(root, port);
  return {port, root};
}

std::vector<std::string> StateService::record_prompt(
    const CurrentWork& work, const std::string& prompt_key,
    const std::vector<std::string>& capability_ids) {
  std::vector<std::string> removed;
  if (work.repository.rfind("prj-", 0) != 0) return removed;
  ProjectLifecycle project(paths_.state_dir, work.repository);
  const auto leaving = project.record_prompt(prompt_key, capability_ids);
  if (leaving.empty() || !target_of(work.repository)) return removed;
  const auto [port, root] = activation_for(work.repository);
  if (!port) return removed;
  for (const auto& [capability_id, material] : leaving) {
    if (held_elsewhere(root, capability_id, std::nullopt)) continue;
    const auto observed =
        port->deactivate(engine::ActivationRequest{engine::MaterialIdentity::from_json(material)});
    if (observed.result == engine::ActivationResult::kApplied) removed.push_back(capability_id);
  }
  return removed;
}

std::optional<ActivationSummary> StateService::activate_installed(
    const std::string& challenge_digest) {
  const ConsentRecord record = broker_->status_by_challenge_digest(challenge_digest);
  const ConsentChallengeFields& fields = record.challenge.fields();
  const auto query = store_->find_planned_by_scope_and_plan(
      engine::ScopeRef::from_json(fields.scope), fields.plan_id);
  if (!query) return std::nullopt;
  return activate_pending(*query, fields.capability_id, "challenge_digest", challenge_digest);
}

std::optional<ActivationSummary> StateService::activate_chosen(const std::string& query_ref,
                                                               const std::string& capability_id) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  const ManagedQueryRecord query = store_->load(query_ref);
  if (!query.planned()) return std::nullopt;
  return activate_pending(query, capability_id, "query_ref", query_ref);
}

fs::path StateService::branches_file(const CurrentWork& session) const {
  const std::string stream = core::canonical_json(Json{{"repository", session.repository},
                                                       {"session", session.session},
                                                       {"tenant", session.tenant},
                                                       {"workspace", session.workspace}});
  return paths_.session_branches /
         (core::hmac_sha256_hex(key_, "ctx.session-branches-v1" + std::string(1, '\0') + stream) +
          ".json");
}

std::optional<CurrentWork> StateService::branch_for(const CurrentWork& work) {
  const auto consent = authority_->pending_consent_id(work);
  if (!consent) return std::nullopt;
  CurrentWork branch = work;
  // The base session of a branch: branches of branches are recorded with the base.
  const std::size_t mark = work.session.find(":ctxb");
  CurrentWork base = work;
  if (mark != std::string::npos) base.session = work.session.substr(0, mark);
  branch.session = base.session + ":ctxb" + core::sha256_hex(*consent).substr(0, 12);
  const fs::path file = branches_file(base);
  ensure_private_dir(file.parent_path(), "session branches");
  const ExclusiveFileLock lock(fs::path(file).replace_extension(".lock"), std::chrono::seconds(10));
  Json list = Json::array();
  if (const auto bytes = read_private_file(file, 65536, "session branches")) {
    try {
      list = core::parse_json(*bytes);
    } catch (const std::exception&) {
      throw DataLoss("session branches are malformed");
    }
    if (!list.is_array()) throw DataLoss("session branches are malformed");
  }
  if (std::find(list.begin(), list.end(), Json(branch.session)) == list.end()) {
    list.push_back(branch.session);
    write_private_file(file, core::canonical_json(list) + "\n", "session branches");
  }
  return branch;
}

std::vector<ActivationSummary> StateService::end_session(const CurrentWork& session) {
  std::vector<CurrentWork> streams{session};
  if (const auto bytes = read_private_file(branches_file(session), 65536, "session branches")) {
    Json list;
    try {
      list = core::parse_json(*bytes);
    } catch (const std::exception&) {
      throw DataLoss("session branches are malformed");
    }
    if (!list.is_array()) throw DataLoss("session branches are malformed");
    for (const auto& id : list) {
      if (!id.is_string()) throw DataLoss("session branches are malformed");
      streams.push_back(session);
      streams.back().session = id.get<std::string>();
    }
  }
  // Marked ended before anything is released: an approval that activates a capability for one
  // of these streams afterwards finds the mark (activate_pending) and releases it itself.
  if (session.repository.rfind("prj-", 0) == 0) {
    std::vector<std::string> refs;
    for (const auto& stream : streams) refs.push_back(stream_ref(stream));
    ProjectLifecycle(paths_.state_dir, session.repository)
        .end_session(refs, Json{{"session", session.session},
                                {"tenant", session.tenant},
                                {"workspace", session.workspace}});
  }
  std::vector<ActivationSummary> released;
  for (const auto& stream : streams) {
    for (auto& summary : end_one(stream)) released.push_back(std::move(summary));
  }
  return released;
}

void StateService::resume_session(const CurrentWork& work) {
  if (work.repository.rfind("prj-", 0) != 0) return;
  // The session, or one of its branches (branch_for): the ended entry names the base stream.
  CurrentWork base = work;
  base.session = base.session.substr(0, base.session.find(":ctxb"));
  ProjectLifecycle(paths_.state_dir, work.repository).resume(stream_ref(base));
}

std::string StateService::stream_ref(const CurrentWork& work) const {
  return holder_name(authority_->work_scope(work).stream_id());
}

void StateService::release_if_ended(const engine::ScopeRef& scope) {
  if (scope.repository_id().rfind("prj-", 0) != 0) return;
  const auto ended = ProjectLifecycle(paths_.state_dir, scope.repository_id())
                         .ended(holder_name(scope.stream_id()));
  if (!ended) return;
  CurrentWork session;
  session.tenant = ended->value("tenant", "");
  session.workspace = ended->value("workspace", "");
  session.repository = scope.repository_id();
  session.session = ended->value("session", "");
  end_session(session);
}

std::vector<ActivationSummary> StateService::end_one(const CurrentWork& session) {
  if (authority_->active_capability_ids(session).empty()) return {};
  CurrentWork nothing = session;
  nothing.signals.clear();
  nothing.languages.clear();
  nothing.requested_limit = 0;
  return release_deactivations(prepare(std::move(nothing)).query_ref());
}

std::vector<ActivationSummary> StateService::release_deactivations(const std::string& query_ref) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  const ManagedQueryRecord query = store_->load(query_ref);
  const engine::ScopeRef& scope = query.decision_event().scope();
  const std::string root = activation_for(scope.repository_id()).second;
  auto composition = open_composition(query);
  std::vector<ActivationSummary> released;
  // The engine emits one deactivation per transition; each receipt may emit the next.
  for (std::size_t i = 0; i < kMaxReleasedPerCall; ++i) {
    const auto snapshot = composition->snapshot(scope);
    if (!snapshot.state) break;
    const engine::PendingEffect* next = nullptr;
    for (const auto& pending : snapshot.state->pending_effects()) {
      if (pending.effect == engine::Effect::kDeactivate) {
        next = &pending;
        break;
      }
    }
    if (next == nullptr) break;
    const engine::HostAction action = next->action;
    const std::string capability_id = action.entity_id().value_or("");
    // Sessions of one project share its skills directory: only the last one to drop a
    // capability has the installer deactivate it, and only once none of the project's recent
    // prompts wants it (else it lingers there for the project's next prompts and sessions).
    const bool shared = held_elsewhere(root, capability_id, scope.stream_id());
    const engine::MaterialBinding* material = action.material_payload();
    const bool wanted =
        !shared && material != nullptr && target_of(scope.repository_id()) &&
        ProjectLifecycle(paths_.state_dir, scope.repository_id()).wanted(capability_id);
    // Recorded before the release: a crash leaves a lingering record, which the project's
    // prompts retire (never while a session holds the capability).
    if (wanted) {
      ProjectLifecycle(paths_.state_dir, scope.repository_id())
          .linger(capability_id, material->material_identity.to_json());
    }
    const auto report = composition->execute_deactivation(
        action, shared || wanted ? DeactivationMode::kRelease : DeactivationMode::kInstaller);
    released.push_back(ActivationSummary{
        capability_id, report.outcome, report.settled, report.settled && !(shared || wanted), {}});
    if (!report.settled) break;  // indeterminate: a later call asks the installer again
    if (report.outcome == engine::Outcome::kApplied) {
      release_holder(root, capability_id, scope.stream_id());
    }
  }
  composition->close();
  return released;
}

fs::path StateService::holders_dir(const std::string& root,
                                   const std::string& capability_id) const {
  return paths_.activation_holders /
         core::canonical_digest(Json{{"activation_root", root},
                                     {"capability_id", capability_id},
                                     {"schema", "ctx.activation-holders-v1"}},
                                core::Encoding::kAscii);
}

std::string StateService::holder_name(const engine::StreamId& stream) const {
  return core::hmac_sha256_hex(key_, "ctx.activation-holder-v1" + std::string(1, '\0') +
                                         stream.stream_key());
}

void StateService::hold_activation(const std::string& root, const std::string& capability_id,
                                   const engine::StreamId& stream) {
  ensure_private_dir(paths_.activation_holders, "activation holders");
  const fs::path dir = holders_dir(root, capability_id);
  ensure_private_dir(dir, "activation holders");
  const fs::path file = dir / holder_name(stream);
  if (!fs::exists(file)) write_private_file(file, "", "activation holder");
}

bool StateService::held_elsewhere(const std::string& root, const std::string& capability_id,
                                  const std::optional<engine::StreamId>& stream) const {
  const fs::path dir = holders_dir(root, capability_id);
  std::error_code error;
  if (!fs::is_directory(dir, error)) return false;
  const std::string own = stream ? holder_name(*stream) : std::string();
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != own && engine::is_digest(name)) return true;
  }
  return false;
}

void StateService::release_holder(const std::string& root, const std::string& capability_id,
                                  const engine::StreamId& stream) {
  std::error_code error;
  fs::remove(holders_dir(root, capability_id) / holder_name(stream), error);
}

std::unique_ptr<EngineComposition> StateService::open_composition(const ManagedQueryRecord& query) {
  auto artifact =
      registry_->reopen(query.artifact_manifest_digest(), query.planning_environment_digest());
  ManagedCompositionOptions options = composition_;
  options.activation_port = activation_for(query.decision_event().scope().repository_id()).first;
  return open_managed_engine_composition(*registry_, artifact, std::move(options));
}

std::optional<ActivationSummary> StateService::activate_pending(const ManagedQueryRecord& query,
                                                                const std::string& capability_id,
                                                                const char* authority,
                                                                const std::string& authority_ref) {
  const engine::ScopeRef& scope = query.decision_event().scope();
  auto composition = open_composition(query);
  const auto snapshot = composition->snapshot(scope);
  if (!snapshot.state) {
    composition->close();
    return std::nullopt;
  }
  for (const auto& pending : snapshot.state->pending_effects()) {
    if (pending.effect != engine::Effect::kActivate ||
        pending.action.entity_id() != std::optional<std::string>(capability_id)) {
      continue;
    }
    const auto* capability = snapshot.state->capability(capability_id);
    if (capability == nullptr || !capability->selection.install_descriptor()) {
      throw ActivationExecutionError("pending activation has no installed capability");
    }
    if (!actuators_) throw InstallActuatorError("no physical installation actuator is configured");
    const auto binding = actuators_->binding(*capability->selection.install_descriptor());
    const std::string verification =
        core::canonical_digest(Json{{"action_id", pending.action.action_id()},
                                    {authority, authority_ref},
                                    {"schema", "ctx.state-activation-request-v1"}},
                               core::Encoding::kAscii);
    // Recorded before the installer is called: a crash leaves an extra holder, which only ever
    // keeps the capability in place.
    hold_activation(activation_for(scope.repository_id()).second, capability_id, scope.stream_id());
    const auto report = composition->execute_activation(
        pending.action, binding, snapshot.state->host_descriptor_digest(), verification);
    composition->close();
    // Approved after its session ended (the user answered once the host had exited): nothing
    // will release the session's hold, so it is released now, as SessionEnd would have; the
    // project's recent prompts keep the capability for its next session.
    if (report.settled && report.outcome == engine::Outcome::kApplied) release_if_ended(scope);
    ActivationSummary summary{capability_id, report.outcome, report.settled, false, {}};
    if (const auto target = target_of(scope.repository_id())) {
      summary.place = capability->kind() == engine::CapabilityKind::kAgent ? target->agents_dir
                      : capability->kind() == engine::CapabilityKind::kMcpServer
                          ? target->mcp_file
                          : target->skills_dir;
    }
    return summary;
  }
  composition->close();
  return std::nullopt;
}

}  // namespace ctx::runtime
