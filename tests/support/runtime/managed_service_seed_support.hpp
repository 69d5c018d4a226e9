// Test doubles and the _setup builder of seed 001 (test_managed_query_service.py), for what the
// prepare/reopen/desired seeds fake: the benefit-facts port (call log, settable snapshot digest),
// the all-manual material port, the install-bundle port, the input authority, and a fixed
// trusted clock (settable, for the expiry seeds). ServiceSetup builds the seed's graph, artifact
// registry, query store and service under one private temporary directory; with
// SetupArgs::installable it builds the seed's installable catalog with its consent authorities:
// the real consent broker (over its SQLite store, behind a FaultyConsentStore), the install policy
// root and the real skill-installer plugin (loaded
// through the host's PluginLoader) as the physical actuator. Header-only; the fakes are
// thread-safe.
#ifndef CTX_TESTS_SUPPORT_RUNTIME_MANAGED_SERVICE_SEED_SUPPORT_HPP_
#define CTX_TESTS_SUPPORT_RUNTIME_MANAGED_SERVICE_SEED_SUPPORT_HPP_

#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <ctx/loader/plugin_loader.hpp>
#include <ctx/sdk/skill_tree.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/app/installation.hpp"
#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/engine/planning/candidate_source.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/composition.hpp"
#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/service/install_actuator.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/sqlite_consent_store.hpp"
#include "host/store/sqlite_managed_query_store.hpp"
#include "tests/support/consent/faulty_consent_store.hpp"
#include "tests/support/engine/seed_benefit_facts.hpp"

namespace ctx::testing::service {

namespace planning = ::ctx::engine::planning;

inline constexpr std::string_view kNow = "2026-08-03T12:00:00Z";
inline constexpr std::string_view kConsentAudience = "ctx-managed-query";
inline constexpr std::string_view kInstallableSkillBody =
    "---\nname: installable\ndescription: managed service install fixture\n---\n"
    "Use the managed service.\n";

inline std::string digest(std::string_view value) { return core::sha256_hex(value); }

inline std::string catalog_namespace_digest() { return digest("managed-service-catalog"); }

// STORE_KEY = sha256(b"managed-service-store-key").digest(): the raw 32 bytes.
inline std::string store_key() {
  const auto hex = digest("managed-service-store-key");
  std::string raw;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return raw;
}

inline engine::ScopeRef seed_scope() {
  return engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1", "session-1",
                                  "exposure-1", "host-neutral");
}

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The seed's _Facts: records every candidate asked about; the snapshot digest can drift.
class Facts final : public planning::BenefitFactsPort {
 public:
  std::string benefit_facts_snapshot_digest() const override {
    std::lock_guard lock(mutex_);
    return snapshot_digest_;
  }
  void set_benefit_facts_snapshot_digest(std::string value) {
    std::lock_guard lock(mutex_);
    snapshot_digest_ = std::move(value);
  }
  std::optional<planning::BenefitCandidate> benefit_candidate(
      const planning::CapabilityCandidate& presentation,
      const planning::WorkObservation&) override {
    std::lock_guard lock(mutex_);
    calls_.push_back(presentation.capability_id);
    return seed_benefit_candidate(presentation);
  }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::string snapshot_digest_ = digest("managed-service-facts");
  std::vector<std::string> calls_;
};

// The seed's _MaterialPort: every capability is "manual" (no content).
class MaterialPort final : public planning::MaterialPort {
 public:
  std::string material_snapshot_digest() const override {
    return digest("managed-service-materials");
  }
  engine::MaterialDescriptor describe(const std::string& capability_id,
                                      engine::CapabilityKind kind) override {
    return engine::MaterialDescriptor::create(capability_id, kind, engine::Actionability::kManual,
                                              std::nullopt, 0, 0, material_snapshot_digest(),
                                              std::nullopt);
  }
};

// The seed's _InstallPort: the configured bundles (none in the prepare/desired seeds).
class InstallPort final : public planning::InstallBundlePort {
 public:
  std::string installation_snapshot_digest() const override {
    return digest("managed-service-installs");
  }
  std::optional<engine::InstallPlanningBundle> describe_bundle(const std::string& capability_id,
                                                               engine::CapabilityKind) override {
    auto it = bundles.find(capability_id);
    if (it == bundles.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, engine::InstallPlanningBundle> bundles;
};

// The seed's _InputAuthority: a map of work references; unknown ones raise a lookup error.
class InputAuthority final : public runtime::ManagedInputAuthority {
 public:
  std::shared_ptr<const runtime::ManagedQueryInput> resolve(
      const std::string& current_work_ref) override {
    std::lock_guard lock(mutex_);
    calls_.push_back(current_work_ref);
    auto it = values_.find(current_work_ref);
    if (it == values_.end()) throw NotFound("current-work reference is unavailable");
    return it->second;
  }
  void set(const std::string& ref, std::shared_ptr<const runtime::ManagedQueryInput> value) {
    std::lock_guard lock(mutex_);
    values_[ref] = std::move(value);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const runtime::ManagedQueryInput>> values_;
  std::vector<std::string> calls_;
};

// The seeds' trusted clock: fixed unless a test moves it (`current[0] = ...`).
class FixedClock final : public core::Clock {
 public:
  explicit FixedClock(std::string_view rfc3339) : micros_(core::parse_rfc3339(rfc3339).micros) {}
  core::Timestamp now() const override { return core::Timestamp{micros_.load()}; }
  void set(std::string_view rfc3339) { micros_ = core::parse_rfc3339(rfc3339).micros; }

 private:
  std::atomic<std::int64_t> micros_;
};

inline planning::NetBenefitPolicy seed_policy() {
  planning::NetBenefitPolicyConfig config;
  config.calibration_digest = digest("managed-service-calibration");
  config.minimum_relevance_ppm = 1;
  return planning::NetBenefitPolicy(config);
}

// The seed's _surrogate.
inline engine::StructuredSurrogate surrogate(int requested_limit) {
  const core::Json value = {{"signals", {"python"}},
                            {"languages", {"python"}},
                            {"baseline_capability_ids", core::Json::array()},
                            {"active_capability_ids", core::Json::array()},
                            {"rejected_capability_ids", core::Json::array()},
                            {"requested_limit", requested_limit}};
  return engine::StructuredSurrogate::create("ctx.observation.current-work", 1, value);
}

inline core::Json observation_payload(const runtime::ManagedArtifactHandle& artifact) {
  const auto& reference = artifact.observation_reference();
  return {{"observation_ref",
           {{"provider_id", reference.provider_id},
            {"opaque_id", reference.opaque_id},
            {"content_digest", reference.content_digest}}}};
}

// The seed's _events: SessionStarted at 0 and IntentObserved at 1 for `artifact`.
inline std::pair<engine::EngineEvent, engine::EngineEvent> seed_events(
    const runtime::ManagedArtifactHandle& artifact) {
  engine::EngineEvent::Fields common{.event_id = "event-session-started",
                                     .kind = "SessionStarted",
                                     .scope = seed_scope(),
                                     .expected_revision = 0,
                                     .occurred_at = std::string(kNow),
                                     .payload = {{"host_level", "managing"}}};
  common.correlation_id = "plan-initial";
  common.causation_id = "cause-session";
  common.engine_version = "ctx-engine-v1";
  common.planner_version = artifact.planning_schema_version();
  common.policy_version = "policy-v1";
  common.host_descriptor_digest = digest("host-neutral-managing");
  common.catalog_snapshot_digest = artifact.planning_environment_digest();
  common.semantic_model_digest = digest("semantic-model-disabled");
  common.semantic_index_digest = digest("semantic-index-disabled");
  common.work_signature = digest("managed-service-work");
  common.random_seed = 0;
  auto started = engine::EngineEvent::create(common);
  engine::EngineEvent::Fields intent = common;
  intent.event_id = "event-intent-observed";
  intent.kind = "IntentObserved";
  intent.expected_revision = 1;
  intent.payload = observation_payload(artifact);
  intent.causation_id = started.event_id();
  return {started, engine::EngineEvent::create(std::move(intent))};
}

// dataclasses.replace for events.
template <typename Edit>
engine::EngineEvent replace_event(const engine::EngineEvent& event, Edit edit) {
  engine::EngineEvent::Fields fields = event.fields();
  edit(fields);
  return engine::EngineEvent::create(std::move(fields));
}

// The installable material: kInstallableSkillBody (the seeds' plain form), or the tree root
// (plugin_abi.h "Tree material") of `tree` when one is given.
inline std::string installable_material(
    const std::optional<std::vector<runtime::InstallBodyFile>>& tree) {
  if (!tree) return std::string(kInstallableSkillBody);
  return runtime::tree_material_of(*tree).root;
}

// The seeds' _install_bundle: a v2 skill descriptor bound to `material` (by default
// kInstallableSkillBody).
inline engine::InstallPlanningBundle install_bundle(const std::string& capability_id,
                                                    const std::string& snapshot_digest,
                                                    bool permission_expansion = false,
                                                    bool credential_requirement = false,
                                                    std::string_view material_bytes =
                                                        kInstallableSkillBody) {
  const auto kind =
      engine::parse_enum<engine::CapabilityKind>(capability_id.substr(0, capability_id.find(':')));
  auto material = engine::MaterialIdentity::create(
      capability_id, kind, core::sha256_hex(material_bytes),
      static_cast<std::int64_t>(material_bytes.size()));
  engine::InstallPlanDescriptor::Fields fields;
  fields.capability_id = capability_id;
  fields.kind = kind;
  fields.installer_id = "ctx-" + std::string(engine::to_string(kind)) + "-installer-v1";
  fields.plan_digest = digest("install-plan:" + capability_id);
  fields.provenance_digest = snapshot_digest;
  fields.permission_expansion = permission_expansion;
  fields.credential_requirement = credential_requirement;
  fields.result_material_identity_digest = material.identity_digest();
  return engine::InstallPlanningBundle(engine::InstallPlanDescriptor::create(std::move(fields)),
                                       std::move(material));
}

// The seeds' _BodySource: the trusted source of install bodies; counts loads and fails the next
// fail_next_loads(n) loads ("simulated trusted body-source failure"). Serves
// kInstallableSkillBody, or the tree given to set_tree (SetupArgs::tree); serve_files makes a
// tree body carry other files beside that tree's root (a body that does not match its material).
class BodySource final : public runtime::InstallBodySource {
 public:
  runtime::InstallBody load(const engine::MaterialIdentity&) override {
    std::lock_guard lock(mutex_);
    ++load_calls_;
    if (fail_loads_remaining_ > 0) {
      --fail_loads_remaining_;
      throw std::runtime_error("simulated trusted body-source failure");
    }
    if (served_files_) return {material_, served_files_};
    return {material_, tree_};
  }
  void serve_files(std::optional<std::vector<runtime::InstallBodyFile>> files) {
    std::lock_guard lock(mutex_);
    served_files_ = std::move(files);
  }
  void set_tree(std::optional<std::vector<runtime::InstallBodyFile>> tree) {
    std::lock_guard lock(mutex_);
    tree_ = std::move(tree);
    material_ = installable_material(tree_);  // once, as a catalog's stored object is
  }
  int load_calls() const {
    std::lock_guard lock(mutex_);
    return load_calls_;
  }
  void fail_next_loads(int count) {
    std::lock_guard lock(mutex_);
    fail_loads_remaining_ = count;
  }

 private:
  mutable std::mutex mutex_;
  int load_calls_ = 0;            // GUARDED_BY(mutex_)
  int fail_loads_remaining_ = 0;  // GUARDED_BY(mutex_)
  std::optional<std::vector<runtime::InstallBodyFile>> tree_;          // GUARDED_BY(mutex_)
  std::string material_ = installable_material(std::nullopt);           // GUARDED_BY(mutex_)
  std::optional<std::vector<runtime::InstallBodyFile>> served_files_;  // GUARDED_BY(mutex_)
};

struct SetupArgs {
  int requested_limit = 5;
  // The seeds' installable=True catalog: "skill:installable", "skill:installable-2", ...
  bool installable = false;
  int installable_count = 1;
  bool permission_expansion = false;
  bool credential_requirement = false;
  std::string_view trusted_now = kNow;
  // The consent broker and actuator without an installable catalog (installable implies them).
  bool consent_authorities = false;
  // Installable skills are this tree (SKILL.md plus resources) instead of kInstallableSkillBody.
  std::optional<std::vector<runtime::InstallBodyFile>> tree = std::nullopt;
};

// The consent parts of an installable setup (the seed's consent_broker, skill_runtime, ...).
struct ConsentSetup {
  std::filesystem::path consent_store_path;
  std::filesystem::path skill_root;
  std::string workspace_identity_digest = digest("managed-service-workspace");
  std::string release_root_digest = digest("managed-service-release-root");
  std::string host_identity_digest = digest("managed-service-host");
  std::shared_ptr<plugins::PluginLoader> loader;
  std::shared_ptr<::ctx::app::LoadedPlugins> plugins;
  std::shared_ptr<engine::InstallerPort> skill_installer;  // the real skill-installer plugin
  std::shared_ptr<const runtime::ManagedInstallActuators> actuators;
  std::shared_ptr<BodySource> body_source = std::make_shared<BodySource>();
  // The broker's SQLite store (consent_store_path) behind a FaultyConsentStore, so that a seed
  // can fail or follow one store operation (the seeds' patched SQLiteInstallConsentBrokerStore).
  std::shared_ptr<FaultyConsentStore> consent_store;
  std::shared_ptr<runtime::ConsentBroker> broker;
};

// The seed's _Setup / _setup for the non-installable catalog.
struct ServiceSetup {
  std::filesystem::path tmp;
  std::shared_ptr<runtime::ManagedArtifactRegistry> registry;
  std::shared_ptr<const runtime::ManagedArtifactHandle> artifact;
  std::shared_ptr<runtime::ManagedQueryStore> store;
  std::filesystem::path store_path;
  std::filesystem::path journal_path;
  std::filesystem::path audit_path;
  std::filesystem::path policy_root;
  std::shared_ptr<Facts> facts;
  planning::NetBenefitPolicy policy = seed_policy();
  std::shared_ptr<MaterialPort> materials;
  std::shared_ptr<InstallPort> installs;
  std::shared_ptr<InputAuthority> inputs;
  std::shared_ptr<const runtime::ManagedQueryInput> managed_input;
  std::shared_ptr<FixedClock> clock;
  std::optional<ConsentSetup> consent;  // installable setups only
  std::shared_ptr<runtime::ManagedQueryService> service;

  // The seed's persist_install_policy(policy, setup.policy_root).
  void persist_policy(const runtime::InstallConsentPolicy& value) const {
    runtime::InstallPolicyStore(policy_root).persist(value);
  }

  // The service factory's options with this setup's inputs (the seeds' keyword arguments).
  runtime::ManagedQueryServiceOptions service_options() const {
    runtime::ManagedQueryServiceOptions options;
    options.registry = registry;
    options.query_store = store;
    options.journal_path = journal_path;
    options.benefit_audit_path = audit_path;
    options.benefit_facts_port = facts;
    options.net_benefit_policy = policy;
    options.material_port = materials;
    options.install_bundle_port = installs;
    options.input_authority = inputs;
    options.policy_store_root = policy_root;
    options.trusted_clock = clock;
    if (consent) {
      options.consent_broker = consent->broker;
      options.consent_workspace_identity_digest = consent->workspace_identity_digest;
      options.consent_release_root_digest = consent->release_root_digest;
      options.install_actuators = consent->actuators;
      options.install_body_source = consent->body_source;
    }
    return options;
  }

  // The seeds' _open_peer_service: a second service on the same files.
  std::shared_ptr<runtime::ManagedQueryService> open_peer_service() const {
    auto options = service_options();
    options.trusted_clock = std::make_shared<FixedClock>(kNow);
    return runtime::open_managed_query_service(std::move(options));
  }

  // open_managed_engine_composition with this setup's ports (the seeds' direct compositions).
  std::unique_ptr<runtime::EngineComposition> open_composition(
      std::shared_ptr<const runtime::ManagedArtifactHandle> handle = nullptr) const {
    runtime::ManagedCompositionOptions options;
    options.journal_path = journal_path;
    options.benefit_audit_path = audit_path;
    options.benefit_facts_port = facts;
    options.net_benefit_policy = policy;
    options.material_port = materials;
    options.install_bundle_port = installs;
    return runtime::open_managed_engine_composition(*registry, handle ? handle : artifact,
                                                    std::move(options));
  }

  // The seeds' _register.
  runtime::ManagedQueryRecord register_query(const std::string& logical_query_id) const {
    return store->register_query(logical_query_id, managed_input->session_started(),
                                 managed_input->decision_event(), artifact->manifest_digest(),
                                 artifact->planning_environment_digest());
  }
};

inline ServiceSetup make_setup(const std::filesystem::path& tmp, SetupArgs args = {}) {
  std::filesystem::create_directories(tmp);
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  ServiceSetup setup;
  setup.tmp = tmp;
  std::vector<store::GraphNode> nodes;
  std::vector<std::string> capabilities;
  if (args.installable) {
    for (int index = 0; index < args.installable_count; ++index) {
      capabilities.push_back(index == 0 ? std::string("skill:installable")
                                        : "skill:installable-" + std::to_string(index + 1));
    }
  } else {
    capabilities = {"agent:reviewer", "harness:python-runner", "mcp-server:docs",
                    "skill:lint",     "skill:test",            "skill:types"};
  }
  for (const auto& capability_id : capabilities) {
    store::GraphNode node;
    node.id = capability_id;
    node.type = capability_id.substr(0, capability_id.find(':'));
    node.label = capability_id.substr(capability_id.find(':') + 1);
    node.tags = {"python"};
    nodes.push_back(std::move(node));
  }
  const auto graph_path = tmp / "graph.sqlite3";
  store::build_graph_store(graph_path, nodes);
  std::filesystem::permissions(graph_path, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  const std::string graph_digest = core::sha256_hex(file_bytes(graph_path));
  setup.facts = std::make_shared<Facts>();
  setup.materials = std::make_shared<MaterialPort>();
  setup.installs = std::make_shared<InstallPort>();
  if (args.installable) {
    for (const auto& capability_id : capabilities) {
      setup.installs->bundles.emplace(
          capability_id,
          install_bundle(capability_id, setup.installs->installation_snapshot_digest(),
                         args.permission_expansion, args.credential_requirement,
                         installable_material(args.tree)));
    }
  }
  const auto current_work = surrogate(args.requested_limit);
  std::string retrieval_digest;
  {
    auto graph = store::GraphStore::open(graph_path, graph_digest);
    planning::CatalogCandidateSource source(*graph, setup.materials.get(), setup.installs.get());
    retrieval_digest = source.catalog_snapshot_digest();
  }
  std::string planning_environment_digest;
  {
    runtime::EngineCompositionOptions options;
    options.graph_artifact_path = graph_path;
    options.graph_artifact_sha256 = graph_digest;
    options.journal_path = tmp / "identity-journal.sqlite3";
    options.observation_normalizer = [current_work](const engine::ObservationReference&,
                                                    const engine::EngineState*) {
      return current_work;
    };
    options.benefit_facts_port = setup.facts;
    options.net_benefit_policy = setup.policy;
    options.catalog_namespace_digest = catalog_namespace_digest();
    options.benefit_audit_path = tmp / "identity-audit.sqlite3";
    options.material_port = setup.materials;
    options.install_bundle_port = setup.installs;
    options.planner_version = "ctx-managed-service-planner-v3";
    auto identity = runtime::open_engine_composition(std::move(options));
    planning_environment_digest = identity->catalog_snapshot_digest();
    identity->close();
  }
  setup.registry = runtime::open_managed_artifact_registry(tmp / "registry");
  runtime::ManagedArtifactIngest ingest;
  ingest.graph_store_path = graph_path;
  ingest.expected_graph_artifact_digest = graph_digest;
  ingest.planning_environment_digest = planning_environment_digest;
  ingest.catalog_namespace_digest = catalog_namespace_digest();
  ingest.catalog_retrieval_digest = retrieval_digest;
  ingest.benefit_facts_snapshot_digest = setup.facts->benefit_facts_snapshot_digest();
  ingest.benefit_policy_snapshot_digest = setup.policy.policy_digest();
  ingest.material_snapshot_digest = setup.materials->material_snapshot_digest();
  ingest.installation_snapshot_digest = setup.installs->installation_snapshot_digest();
  ingest.observation_surrogate = current_work;
  ingest.planning_schema_version = "ctx-managed-service-planner-v3";
  setup.artifact = setup.registry->ingest_graph_store(ingest);
  auto [started, intent] = seed_events(*setup.artifact);
  setup.managed_input = runtime::ManagedQueryInput::create(setup.artifact, started, intent);
  setup.inputs = std::make_shared<InputAuthority>();
  setup.inputs->set("work-one", setup.managed_input);
  setup.store_path = tmp / "private" / "queries.sqlite3";
  setup.store = store::open_managed_query_store(setup.store_path, store_key());
  setup.journal_path = tmp / "private" / "journal.sqlite3";
  setup.audit_path = tmp / "private" / "audit.sqlite3";
  setup.policy_root = tmp / "private" / "install-policy";
  setup.clock = std::make_shared<FixedClock>(args.trusted_now);
  if (args.installable || args.consent_authorities) {
    ConsentSetup consent;
    consent.consent_store_path = tmp / "private" / "consent.sqlite3";
    consent.consent_store = std::make_shared<FaultyConsentStore>(
        std::make_shared<store::SqliteConsentStore>(consent.consent_store_path, store_key()));
    consent.broker = std::make_shared<runtime::ConsentBroker>(
        consent.consent_store, std::string(kConsentAudience), *setup.clock,
        runtime::ConsentBroker::Options{});
    consent.skill_root = tmp / "private" / "skills";
    std::filesystem::create_directory(consent.skill_root);
    std::filesystem::permissions(consent.skill_root, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace);
    consent.loader = std::make_shared<plugins::PluginLoader>(tmp / "loader-state");
    consent.plugins = std::make_shared<::ctx::app::LoadedPlugins>();
#ifdef CTX_SKILL_INSTALLER_SO
    consent.plugins->add(
        consent.loader->load(consent.loader->inspect_for_pin(CTX_SKILL_INSTALLER_SO)));
#else
    throw std::logic_error("installable setups need CTX_SKILL_INSTALLER_SO (the real plugin)");
#endif
    const core::Json config = {{"root", consent.skill_root.string()}};
    consent.skill_installer = std::make_shared<plugins::AbiInstaller>(
        consent.plugins->registry().get(plugins::PluginKind::kInstaller, "skill-installer"),
        config.dump());
    consent.actuators = std::make_shared<runtime::ManagedInstallActuators>(
        std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
            {"ctx-skill-installer-v1", consent.skill_installer}},
        consent.host_identity_digest);
    consent.body_source->set_tree(args.tree);
    setup.consent.emplace(std::move(consent));
  }
  setup.service = runtime::open_managed_query_service(setup.service_options());
  return setup;
}

// The ingest inputs of `setup.artifact` with another surrogate (a replacement plan's artifact).
inline runtime::ManagedArtifactIngest reingest(const ServiceSetup& setup,
                                               engine::StructuredSurrogate replacement) {
  const auto& a = *setup.artifact;
  runtime::ManagedArtifactIngest ingest;
  ingest.graph_store_path = setup.tmp / "graph.sqlite3";
  ingest.expected_graph_artifact_digest = a.graph_artifact_digest();
  ingest.planning_environment_digest = a.planning_environment_digest();
  ingest.catalog_namespace_digest = a.catalog_namespace_digest();
  ingest.catalog_retrieval_digest = a.catalog_retrieval_digest();
  ingest.benefit_facts_snapshot_digest = a.benefit_facts_snapshot_digest();
  ingest.benefit_policy_snapshot_digest = a.benefit_policy_snapshot_digest();
  ingest.material_snapshot_digest = a.material_snapshot_digest();
  ingest.installation_snapshot_digest = a.installation_snapshot_digest();
  ingest.observation_surrogate = std::move(replacement);
  ingest.planning_schema_version = a.planning_schema_version();
  return ingest;
}

}  // namespace ctx::testing::service

#endif  // CTX_TESTS_SUPPORT_RUNTIME_MANAGED_SERVICE_SEED_SUPPORT_HPP_


namespace ctx::testing::service {

// Runs `sql` on the SQLite file at `path` (the seeds' sqlite3.connect blocks) and returns the
// first row's `column` (default the first) as text ("" when there is none). Throws on SQLite
// errors.
inline std::string sqlite_scalar(const std::filesystem::path& path, const std::string& sql,
                                 int column = 0) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path.string());
  }
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    const std::string message = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw std::runtime_error(message);
  }
  std::string value;
  const int rc = sqlite3_step(statement);
  if (rc == SQLITE_ROW && sqlite3_column_text(statement, column) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, column));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw std::runtime_error("sqlite step failed");
  return value;
}

inline long sqlite_count(const std::filesystem::path& path, const std::string& table) {
  return std::stol(sqlite_scalar(path, "SELECT count(*) FROM " + table));
}

}  // namespace ctx::testing::service
