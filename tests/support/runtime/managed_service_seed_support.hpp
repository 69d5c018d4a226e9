// Test doubles and the _setup builder of seed 001 (test_managed_query_service.py), for what the
// prepare/reopen/desired seeds fake: the benefit-facts port (call log, settable snapshot digest),
// the all-manual material port, the install-bundle port, the input authority, and a fixed
// trusted clock. ServiceSetup builds the seed's graph, artifact registry, query store and
// service under one private temporary directory. Header-only; the fakes are thread-safe.
#ifndef CTX_TESTS_SUPPORT_RUNTIME_MANAGED_SERVICE_SEED_SUPPORT_HPP_
#define CTX_TESTS_SUPPORT_RUNTIME_MANAGED_SERVICE_SEED_SUPPORT_HPP_

#include <fcntl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
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

#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/engine/planning/candidate_source.hpp"
#include "host/runtime/composition.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/store/graph_store.hpp"
#include "tests/support/engine/seed_benefit_facts.hpp"

namespace ctx::testing::service {

namespace planning = ::ctx::engine::planning;

inline constexpr std::string_view kNow = "2026-08-03T12:00:00Z";

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
                                      const std::string& kind) override {
    return engine::MaterialDescriptor::create(capability_id, kind, "manual", std::nullopt, 0, 0,
                                              material_snapshot_digest(), std::nullopt);
  }
};

// The seed's _InstallPort: the configured bundles (none in the prepare/desired seeds).
class InstallPort final : public planning::InstallBundlePort {
 public:
  std::string installation_snapshot_digest() const override {
    return digest("managed-service-installs");
  }
  std::optional<engine::InstallPlanningBundle> describe_bundle(const std::string& capability_id,
                                                               const std::string&) override {
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

class FixedClock final : public core::Clock {
 public:
  explicit FixedClock(std::string_view rfc3339) : now_(core::parse_rfc3339(rfc3339)) {}
  core::Timestamp now() const override { return now_; }

 private:
  core::Timestamp now_;
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

// The seeds' INSTALLABLE_SKILL_BODY.
inline constexpr std::string_view kInstallableSkillBody =
    "---\nname: installable\ndescription: managed service install fixture\n---\n"
    "Use the managed service.\n";

// The seeds' _install_bundle: a v2 descriptor for ctx-<kind>-installer-v1 whose result material
// is kInstallableSkillBody.
inline engine::InstallPlanningBundle install_bundle(const std::string& capability_id,
                                                    const std::string& snapshot_digest,
                                                    bool permission_expansion = false,
                                                    bool credential_requirement = false) {
  const std::string kind = capability_id.substr(0, capability_id.find(':'));
  auto material = engine::MaterialIdentity::create(
      capability_id, kind, digest(kInstallableSkillBody),
      static_cast<std::int64_t>(kInstallableSkillBody.size()));
  engine::InstallPlanDescriptor::Fields fields;
  fields.capability_id = capability_id;
  fields.kind = kind;
  fields.installer_id = "ctx-" + kind + "-installer-v1";
  fields.plan_digest = digest("install-plan:" + capability_id);
  fields.provenance_digest = snapshot_digest;
  fields.permission_expansion = permission_expansion;
  fields.credential_requirement = credential_requirement;
  fields.result_material_identity_digest = material.identity_digest();
  return engine::InstallPlanningBundle(engine::InstallPlanDescriptor::create(std::move(fields)),
                                       std::move(material));
}

// The seeds' _BodySource: counts loads; fails the next `fail_loads_remaining` loads.
class BodySource final : public runtime::InstallBodySource {
 public:
  std::string load(const engine::MaterialIdentity&) override {
    std::lock_guard lock(mutex_);
    ++load_calls_;
    if (fail_loads_remaining_ > 0) {
      --fail_loads_remaining_;
      throw std::runtime_error("simulated trusted body-source failure");
    }
    return std::string(kInstallableSkillBody);
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
  int load_calls_ = 0;
  int fail_loads_remaining_ = 0;
};

// The seeds' skill CAS driver behind the installer port: the installed file is
// `<root>/<content sha256>` holding exactly the body (staged O_EXCL, fsynced, renamed); reconcile
// reports whether that exact file is there. The target identity is the root's (device, inode,
// owner, mode, path) now; `identity_label` stands for the plugin identity. `on_target_identity`,
// when set, runs once at the next target_identity call (a fault injected through the port).
class SkillCasInstaller final : public engine::InstallerPort {
 public:
  explicit SkillCasInstaller(std::filesystem::path root,
                             std::string identity_label = "seed-skill-cas-1.0.0")
      : root_(std::move(root)), identity_label_(std::move(identity_label)) {}

  engine::TargetIdentity target_identity() override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = std::exchange(on_target_identity_, nullptr);
    }
    if (hook) hook();
    struct stat info {};
    if (::stat(root_.c_str(), &info) != 0) throw SystemError("skill root is unavailable");
    return engine::TargetIdentity{static_cast<std::uint64_t>(info.st_dev),
                                  static_cast<std::uint64_t>(info.st_ino), info.st_uid,
                                  info.st_mode, root_.string()};
  }

  core::Json install(const core::Json& request) override {
    std::lock_guard lock(mutex_);
    ++install_calls_;
    const std::string id = request.at("capability_id");
    const std::string sha = request.at("content_sha256");
    const std::string encoded = request.at("content_base64");
    std::string body(encoded.size(), '\0');
    const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(body.data()),
                                        reinterpret_cast<const unsigned char*>(encoded.data()),
                                        static_cast<int>(encoded.size()));
    if (decoded < 0) throw InvalidArgument("install body is not base64");
    std::size_t padding = 0;
    for (auto it = encoded.rbegin(); it != encoded.rend() && *it == '='; ++it) ++padding;
    body.resize(static_cast<std::size_t>(decoded) - padding);
    const std::string kind = id.substr(0, id.find(':'));
    const std::string observed = engine::MaterialIdentity::create(
        id, kind, digest(body), static_cast<std::int64_t>(body.size())).identity_digest();
    if (digest(body) != sha) return {{"outcome", "failed"}, {"capability_id", id}};
    const auto stage = root_ / (".ctx-skill-" + sha + ".pending");
    const int fd = ::open(stage.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw SystemError("cannot stage the skill body");
    const bool written = ::write(fd, body.data(), body.size()) ==
                             static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!written || ::rename(stage.c_str(), (root_ / sha).c_str()) != 0) {
      throw SystemError("cannot install the skill body");
    }
    return {{"outcome", "applied"},
            {"capability_id", id},
            {"observed_material_identity_digest", observed},
            {"verification_digest", digest("skill-cas-observation:" + sha)}};
  }

  core::Json reconcile(const core::Json& request) override {
    std::lock_guard lock(mutex_);
    core::Json states = core::Json::array();
    for (const auto& entry : request.at("capabilities")) {
      const std::string sha = entry.at("content_sha256");
      const auto path = root_ / sha;
      const bool installed = std::filesystem::is_regular_file(path) && digest(file_bytes(path)) == sha;
      states.push_back({{"capability_id", entry.at("capability_id")},
                        {"installed", installed},
                        {"active", false}});
    }
    return {{"capabilities", states}};
  }

  core::Json activate(const core::Json&) override { return {{"outcome", "failed"}}; }
  core::Json deactivate(const core::Json&) override { return {{"outcome", "failed"}}; }
  std::string id() const override { return "ctx-skill-installer-v1"; }
  std::string identity_digest() const override { return digest(identity_label_); }

  void on_next_target_identity(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    on_target_identity_ = std::move(hook);
  }
  int install_calls() const {
    std::lock_guard lock(mutex_);
    return install_calls_;
  }
  const std::filesystem::path& root() const noexcept { return root_; }

 private:
  std::filesystem::path root_;
  std::string identity_label_;
  mutable std::mutex mutex_;
  std::function<void()> on_target_identity_;  // GUARDED_BY(mutex_)
  int install_calls_ = 0;                     // GUARDED_BY(mutex_)
};

// The seeds' SkillCasRuntimeConfig: the skill driver for ctx-skill-installer-v1 at `root` (its
// target captured now), `bodies`, and the seeds' host identity.
inline std::shared_ptr<const runtime::InstallActuator> skill_actuator(
    std::shared_ptr<SkillCasInstaller> installer, std::shared_ptr<BodySource> bodies) {
  auto actuator = std::make_shared<runtime::InstallActuator>();
  actuator->installers = std::make_shared<runtime::StaticInstallerResolver>(
      std::map<std::string, std::shared_ptr<engine::InstallerPort>>{
          {"ctx-skill-installer-v1", std::move(installer)}});
  actuator->bodies = std::move(bodies);
  actuator->host_identity_digest = digest("managed-service-host");
  return actuator;
}

// A trusted clock tests may move.
class SettableClock final : public core::Clock {
 public:
  explicit SettableClock(std::string_view rfc3339) : now_(core::parse_rfc3339(rfc3339)) {}
  core::Timestamp now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  void set(std::string_view rfc3339) {
    std::lock_guard lock(mutex_);
    now_ = core::parse_rfc3339(rfc3339);
  }

 private:
  mutable std::mutex mutex_;
  core::Timestamp now_;
};

struct SetupArgs {
  int requested_limit = 5;
  // The seeds' installable=True catalog: skill:installable, skill:installable-2, ... with
  // install bundles, a skill driver at <tmp>/private/skills and a body source.
  bool installable = false;
  int installable_count = 1;
  bool permission_expansion = false;
  bool credential_requirement = false;
  std::string trusted_now = std::string(kNow);
  std::shared_ptr<const core::Clock> trusted_clock = nullptr;  // overrides trusted_now
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
  std::shared_ptr<const core::Clock> clock;
  std::shared_ptr<runtime::ManagedQueryService> service;
  // installable setups only (null otherwise)
  std::shared_ptr<BodySource> body_source;
  std::filesystem::path skill_root;
  std::shared_ptr<SkillCasInstaller> skill_installer;
  std::shared_ptr<const runtime::InstallActuator> install_actuator;

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
    options.install_actuator = install_actuator;
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
  std::vector<std::string> capabilities = {"agent:reviewer", "harness:python-runner",
                                           "mcp-server:docs", "skill:lint",
                                           "skill:test",      "skill:types"};
  if (args.installable) {
    capabilities.clear();
    for (int index = 0; index < args.installable_count; ++index) {
      capabilities.push_back(index == 0 ? std::string("skill:installable")
                                        : "skill:installable-" + std::to_string(index + 1));
    }
  }
  std::vector<store::GraphNode> nodes;
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
                         args.permission_expansion, args.credential_requirement));
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
  setup.store = runtime::open_managed_query_store(setup.store_path, store_key());
  setup.journal_path = tmp / "private" / "journal.sqlite3";
  setup.audit_path = tmp / "private" / "audit.sqlite3";
  setup.policy_root = tmp / "private" / "install-policy";
  setup.clock = args.trusted_clock ? args.trusted_clock
                                   : std::make_shared<FixedClock>(args.trusted_now);
  if (args.installable) {
    setup.skill_root = tmp / "private" / "skills";
    std::filesystem::create_directories(setup.skill_root);
    std::filesystem::permissions(tmp / "private", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace);
    std::filesystem::permissions(setup.skill_root, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace);
    setup.body_source = std::make_shared<BodySource>();
    setup.skill_installer = std::make_shared<SkillCasInstaller>(setup.skill_root);
    setup.install_actuator = skill_actuator(setup.skill_installer, setup.body_source);
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
// first column of the first row as text ("" when there is none). Throws on SQLite errors.
inline std::string sqlite_scalar(const std::filesystem::path& path, const std::string& sql) {
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
  if (rc == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
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
