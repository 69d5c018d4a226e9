// Test doubles and builders of seed 000 (test_managed_query.py): the benefit-facts port, the
// material and install-bundle authorities, the structured observation normaliser, and builders
// for scopes, events, candidates and compositions, and JournalOwner, a second owner of a
// composition's journal file (the seeds' `composition._engine`: another engine on the same file,
// through public engine APIs only). Header-only (ctx::testing is INTERFACE). The fakes are
// thread-safe where the seeds use them from two threads (Facts).
#ifndef CTX_TESTS_SUPPORT_ENGINE_MANAGED_QUERY_SEED_SUPPORT_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_MANAGED_QUERY_SEED_SUPPORT_HPP_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/runtime/composition.hpp"
#include "tests/support/engine/seed_benefit_facts.hpp"
#include "host/runtime/managed_query.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/candidates.hpp"
#include "host/engine/planning/ports.hpp"
#include "host/engine/protocol.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::testing {

namespace planning = ::ctx::engine::planning;

inline constexpr std::string_view kSeedNow = "2026-08-02T12:00:00Z";

// sha256 hex of the UTF-8 bytes of `value` (the seeds' _digest).
inline std::string digest(std::string_view value) { return core::sha256_hex(value); }

inline std::string catalog_namespace_digest() { return digest("managed-query-catalog"); }

// Closes a composition when the enclosing block ends (the seeds' `with composition:`), while the
// composition object itself stays inspectable afterwards (`composition.closed`).
class ScopedClose {
 public:
  explicit ScopedClose(runtime::EngineComposition& composition) : composition_(composition) {}
  ScopedClose(const ScopedClose&) = delete;
  ScopedClose& operator=(const ScopedClose&) = delete;
  ~ScopedClose() { composition_.close(); }

 private:
  runtime::EngineComposition& composition_;
};

inline engine::ScopeRef seed_scope(std::string_view suffix = "one") {
  return engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1",
                                  "session-" + std::string(suffix),
                                  "exposure-" + std::string(suffix), "host-neutral");
}

inline std::string file_sha256(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return core::sha256_hex(bytes);
}

// The seeds' _install_bundle: a v2 descriptor bound to a result material.
inline engine::InstallPlanningBundle install_bundle(const std::string& capability_id,
                                                    const std::string& snapshot_digest) {
  const auto kind =
      engine::parse_enum<engine::CapabilityKind>(capability_id.substr(0, capability_id.find(':')));
  auto material = engine::MaterialIdentity::create(capability_id, kind,
                                                   digest("installed:" + capability_id), 64);
  engine::InstallPlanDescriptor::Fields fields;
  fields.capability_id = capability_id;
  fields.kind = kind;
  fields.installer_id = "ctx-" + std::string(engine::to_string(kind)) + "-installer-v1";
  fields.plan_digest = digest("install-plan:" + capability_id);
  fields.provenance_digest = snapshot_digest;
  fields.result_material_identity_digest = material.identity_digest();
  return engine::InstallPlanningBundle(engine::InstallPlanDescriptor::create(std::move(fields)),
                                       std::move(material));
}

// The seeds' _candidate: a presentation row; the graph builder uses its id, kind and name.
inline planning::CapabilityCandidate candidate(
    const std::string& capability_id, const std::string& actionability,
    const std::optional<std::string>& installation_snapshot_digest = std::nullopt) {
  const auto colon = capability_id.find(':');
  planning::CapabilityCandidate row;
  row.capability_id = capability_id;
  row.kind = engine::parse_enum<engine::CapabilityKind>(capability_id.substr(0, colon));
  row.name = capability_id.substr(colon + 1);
  row.source_digest = digest("source:" + capability_id + ":" + actionability);
  row.normalized_score_ppm = 900'000;
  row.matching_signals = {"python"};
  row.reason_codes = {"graph-match"};
  row.actionability = engine::parse_enum<engine::CandidateActionability>(actionability);
  if (installation_snapshot_digest) {
    auto bundle = install_bundle(capability_id, *installation_snapshot_digest);
    row.install_descriptor_digest = bundle.descriptor().descriptor_digest();
    row.install_plan_digest = bundle.descriptor().plan_digest();
  }
  planning::validate_capability_candidate(row);
  return row;
}

// The seeds' _Facts: every candidate is relevant, trusted and approved; records each call.
class Facts final : public planning::BenefitFactsPort {
 public:
  std::string benefit_facts_snapshot_digest() const override {
    return digest("managed-benefit-facts");
  }
  std::optional<planning::BenefitCandidate> benefit_candidate(
      const planning::CapabilityCandidate& presentation,
      const planning::WorkObservation&) override {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(presentation.capability_id);
    }
    return seed_benefit_candidate(presentation);
  }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  void clear_calls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
};

// The seeds' _MaterialAuthority: "load" material for known ids, "manual" for the rest; planning
// must never prepare material.
class MaterialAuthority final : public planning::MaterialPort {
 public:
  explicit MaterialAuthority(std::set<std::string> capability_ids)
      : capability_ids_(std::move(capability_ids)) {}
  std::string material_snapshot_digest() const override { return digest("material-snapshot"); }
  engine::MaterialDescriptor describe(const std::string& capability_id,
                                      engine::CapabilityKind kind) override {
    if (!capability_ids_.contains(capability_id)) {
      return engine::MaterialDescriptor::create(capability_id, kind, engine::Actionability::kManual,
                                                std::nullopt, 0, 0, material_snapshot_digest(),
                                                std::nullopt);
    }
    auto identity = engine::MaterialIdentity::create(capability_id, kind,
                                                     digest("content:" + capability_id), 64);
    return engine::MaterialDescriptor::create(capability_id, kind, engine::Actionability::kLoad,
                                              identity.content_sha256(), identity.content_bytes(),
                                              16, material_snapshot_digest(),
                                              identity.identity_digest());
  }

 private:
  std::set<std::string> capability_ids_;
};

// The seeds' _InstallAuthority: returns the configured bundle (or none) per capability id.
class InstallAuthority final : public planning::InstallBundlePort {
 public:
  InstallAuthority(std::string installation_snapshot_digest,
                   std::map<std::string, std::optional<engine::InstallPlanningBundle>> bundles)
      : installation_snapshot_digest_(std::move(installation_snapshot_digest)),
        bundles_(std::move(bundles)) {}
  std::string installation_snapshot_digest() const override {
    return installation_snapshot_digest_;
  }
  std::optional<engine::InstallPlanningBundle> describe_bundle(const std::string& capability_id,
                                                               engine::CapabilityKind) override {
    auto it = bundles_.find(capability_id);
    if (it == bundles_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::string installation_snapshot_digest_;
  std::map<std::string, std::optional<engine::InstallPlanningBundle>> bundles_;
};

// The seeds' _normalizer: one current-work surrogate with the "python" signal.
inline runtime::ObservationNormalizer normalizer(int requested_limit) {
  return [requested_limit](const engine::ObservationReference&,
                           const engine::EngineState*) -> engine::StructuredSurrogate {
    core::Json value = {{"signals", {"python"}},
                        {"languages", {"python"}},
                        {"baseline_capability_ids", core::Json::array()},
                        {"active_capability_ids", core::Json::array()},
                        {"rejected_capability_ids", core::Json::array()},
                        {"requested_limit", requested_limit}};
    return engine::StructuredSurrogate::create("ctx.observation.current-work", 1, value);
  };
}

// A trusted clock fixed at one instant (the seeds' trusted_utc_now lambdas).
class FixedClock final : public core::Clock {
 public:
  explicit FixedClock(std::string_view rfc3339) : now_(core::parse_rfc3339(rfc3339)) {}
  core::Timestamp now() const override { return now_; }

 private:
  core::Timestamp now_;
};

// Arguments of the seeds' _composition helper.
struct CompositionArgs {
  std::vector<planning::CapabilityCandidate> candidates;
  int requested_limit = 5;
  std::shared_ptr<MaterialAuthority> material_authority;
  std::shared_ptr<InstallAuthority> install_authority;
  std::shared_ptr<Facts> facts;
  runtime::ObservationNormalizer observation_normalizer;
  bool interactive_install_decision_guard = false;  // the seeds' `lambda _: nullcontext()`
  bool trusted_clock = false;  // the seeds' fixed 2026-08-02T12:01:00Z clock
  std::string suffix = "one";
  std::shared_ptr<engine::ActivationPort> activation_port;  // may be null
  // The decision guard to use instead of the seeds' `lambda _: nullcontext()` (requires
  // interactive_install_decision_guard = true).
  runtime::InteractiveInstallDecisionGuard decision_guard;
  // Ports injected instead of the composition's own journal (both or neither).
  std::shared_ptr<engine::JournalStore> journal_store;
  std::shared_ptr<engine::ClaimStore> claim_store;
};

inline constexpr std::string_view kSeedTrustedNow = "2026-08-02T12:01:00Z";

// managed-<suffix>.sqlite3 under `tmp`: the journal open_composition uses.
inline std::filesystem::path seed_journal_path(const std::filesystem::path& tmp,
                                               const std::string& suffix) {
  return tmp / ("managed-" + suffix + ".sqlite3");
}

// A SqliteJournalStore on `path` with the seeds' trusted clock, shared (the clock lives as long
// as the store).
inline std::shared_ptr<store::SqliteJournalStore> open_seed_journal(
    const std::filesystem::path& path) {
  auto clock = std::make_shared<FixedClock>(kSeedTrustedNow);
  return std::shared_ptr<store::SqliteJournalStore>(
      new store::SqliteJournalStore(path, *clock),
      [clock](store::SqliteJournalStore* journal) { delete journal; });
}

// Another owner of a composition's journal file: its own SqliteJournalStore and engine::Engine
// with the seeds' trusted clock and no planning ports (it claims, records and settles only).
struct JournalOwner {
  explicit JournalOwner(const std::filesystem::path& journal_path)
      : clock(kSeedTrustedNow),
        journal(journal_path, clock),
        engine(journal, &journal, clock, engine::EnginePorts{}) {}
  JournalOwner(const JournalOwner&) = delete;
  JournalOwner& operator=(const JournalOwner&) = delete;

  FixedClock clock;
  store::SqliteJournalStore journal;
  engine::Engine engine;
};

inline std::unique_ptr<JournalOwner> open_journal_owner(const std::filesystem::path& tmp,
                                                        const std::string& suffix) {
  return std::make_unique<JournalOwner>(seed_journal_path(tmp, suffix));
}

// The seeds' _composition: writes (once per suffix) a read-only graph of the candidates and opens
// a composition over managed-<suffix>.sqlite3 with the seed's policy and namespace.
inline std::unique_ptr<runtime::EngineComposition> open_composition(
    const std::filesystem::path& tmp, CompositionArgs args) {
  const auto graph_path = tmp / ("managed-" + args.suffix + "-graph.sqlite3");
  if (!std::filesystem::exists(graph_path)) {
    std::vector<store::GraphNode> nodes;
    for (const auto& item : args.candidates) {
      store::GraphNode node;
      node.id = item.capability_id;
      node.type = engine::to_string(item.kind);
      node.label = item.name;
      node.tags = {"python"};
      nodes.push_back(std::move(node));
    }
    store::build_graph_store(graph_path, nodes);
    std::filesystem::permissions(graph_path,
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::group_read |
                                     std::filesystem::perms::others_read,
                                 std::filesystem::perm_options::replace);
  }
  runtime::EngineCompositionOptions options;
  options.graph_artifact_path = graph_path;
  options.graph_artifact_sha256 = file_sha256(graph_path);
  options.journal_path = seed_journal_path(tmp, args.suffix);
  options.observation_normalizer = args.observation_normalizer
                                       ? args.observation_normalizer
                                       : normalizer(args.requested_limit);
  options.benefit_facts_port = args.facts ? args.facts : std::make_shared<Facts>();
  planning::NetBenefitPolicyConfig policy;
  policy.calibration_digest = digest("calibration");
  policy.minimum_relevance_ppm = 1;
  options.net_benefit_policy = planning::NetBenefitPolicy(policy);
  options.catalog_namespace_digest = catalog_namespace_digest();
  options.benefit_audit_path = tmp / ("managed-" + args.suffix + "-audit.sqlite3");
  options.material_port = args.material_authority;
  options.install_bundle_port = args.install_authority;
  options.planner_version = "ctx-managed-query-planner-v3";
  if (args.interactive_install_decision_guard) {
    // The seeds' `lambda _reservation: nullcontext()`: admit the decision, settle nothing.
    options.interactive_install_decision_guard =
        args.decision_guard ? args.decision_guard
                            : [](const engine::InteractiveInstallDecisionReservation&) {
                                return std::function<void()>([] {});
                              };
  }
  if (args.trusted_clock) {
    options.trusted_clock = std::make_shared<FixedClock>(kSeedTrustedNow);
  }
  options.activation_port = args.activation_port;
  options.journal_store = args.journal_store;
  options.claim_store = args.claim_store;
  return runtime::open_engine_composition(std::move(options));
}

// The seeds' observation_ref payload for `name` ("observation-<name>", digest of work:<name>).
inline core::Json observation_payload(const std::string& name) {
  return {{"observation_ref",
           {{"provider_id", "managed-query-test"},
            {"opaque_id", "observation-" + name},
            {"content_digest", digest("work:" + name)}}}};
}

// The seeds' _event.
inline engine::EngineEvent seed_event(const runtime::EngineComposition& composition,
                                      const std::string& kind, std::int64_t revision,
                                      const std::string& suffix, core::Json payload) {
  std::string lowered = kind;
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  engine::EngineEvent::Fields fields{.event_id = "event-" + lowered + "-" + suffix,
                                     .kind = kind,
                                     .scope = seed_scope(suffix),
                                     .expected_revision = revision,
                                     .occurred_at = std::string(kSeedNow),
                                     .payload = std::move(payload)};
  fields.correlation_id = "plan-" + suffix;
  fields.causation_id = "cause-" + suffix;
  fields.engine_version = "ctx-engine-v1";
  fields.planner_version = composition.planner_version();
  fields.policy_version = "policy-v1";
  fields.host_descriptor_digest = digest("host-neutral-managing");
  fields.catalog_snapshot_digest = composition.catalog_snapshot_digest();
  fields.semantic_model_digest = digest("semantic-disabled");
  fields.semantic_index_digest = digest("semantic-index-disabled");
  fields.work_signature = digest("work:" + suffix);
  fields.random_seed = 0;
  return engine::EngineEvent::create(std::move(fields));
}

// dataclasses.replace for events: copies `event`'s fields, applies `edit`, re-validates.
inline engine::EngineEvent replace_event(
    const engine::EngineEvent& event,
    const std::function<void(engine::EngineEvent::Fields&)>& edit) {
  engine::EngineEvent::Fields fields = event.fields();
  edit(fields);
  return engine::EngineEvent::create(std::move(fields));
}

// The seeds' _managed_events: SessionStarted at 0 and IntentObserved at 1.
inline std::pair<engine::EngineEvent, engine::EngineEvent> managed_events(
    const runtime::EngineComposition& composition, const std::string& suffix) {
  return {seed_event(composition, "SessionStarted", 0, suffix, {{"host_level", "managing"}}),
          seed_event(composition, "IntentObserved", 1, suffix, observation_payload(suffix))};
}

// The seeds' _prepare.
inline runtime::PreparedManagedQuery seed_prepare(runtime::EngineComposition& composition,
                                                  const std::string& suffix) {
  auto events = managed_events(composition, suffix);
  auto session_started = events.first;
  auto intent_observed = events.second;
  return runtime::prepare_managed_query(composition, session_started, intent_observed);
}

// The seeds' _development_event.
inline engine::EngineEvent development_event(const engine::EngineEvent& initial_intent,
                                             std::int64_t revision, const std::string& attempt,
                                             const std::optional<engine::ScopeRef>& scope = {}) {
  return replace_event(initial_intent, [&](engine::EngineEvent::Fields& f) {
    f.event_id = "event-developmentobserved-" + attempt;
    f.kind = "DevelopmentObserved";
    if (scope) f.scope = *scope;
    f.expected_revision = revision;
    f.payload = observation_payload(attempt);
    f.correlation_id = "plan-" + attempt;
    f.causation_id = "cause-" + attempt;
    f.work_signature = digest("work:" + attempt);
  });
}

inline core::Json optional_json(const std::optional<std::string>& value) {
  return value ? core::Json(*value) : core::Json(nullptr);
}
inline core::Json optional_json(const std::optional<std::int64_t>& value) {
  return value ? core::Json(*value) : core::Json(nullptr);
}
inline core::Json optional_json(const std::optional<engine::AbstentionCode>& value) {
  return value ? core::Json(engine::to_string(*value)) : core::Json(nullptr);
}

// The seeds' _projection_fields, as one JSON array (equality and readable failure output).
inline core::Json projection_fields(const runtime::PreparedManagedQuery& prepared) {
  core::Json selections = core::Json::array();
  for (const auto& item : prepared.selections()) {
    selections.push_back(core::Json::array(
        {item.capability_id(), item.kind(), item.name(), item.actionability(),
         item.matching_signals(), item.reason_codes(), item.benefit_tier(),
         item.individual_net_benefit_u(), item.marginal_net_benefit_u(), item.source_digest(),
         item.catalog_identity_digest(), optional_json(item.install_descriptor_digest()),
         optional_json(item.install_plan_digest())}));
  }
  return core::Json::array({prepared.status(), optional_json(prepared.abstention_code()),
                            prepared.plan_id(), prepared.planning_environment_digest(),
                            prepared.decision_digest(), prepared.journal_revision(),
                            prepared.journal_record_digest(),
                            optional_json(prepared.benefit_result_digest()),
                            optional_json(prepared.requested_limit()),
                            optional_json(prepared.candidate_pool_count()),
                            optional_json(prepared.search_evaluation_count()), selections});
}

// The seeds' _explanatory_fields: every projection field except the journal head (5 and 6).
inline core::Json explanatory_fields(const runtime::PreparedManagedQuery& prepared) {
  core::Json fields = projection_fields(prepared);
  fields.erase(6);
  fields.erase(5);
  return fields;
}

// dataclasses.replace for states: copies `state`'s fields, applies `edit`, re-validates.
inline engine::EngineState edit_state(
    const engine::EngineState& state,
    const std::function<void(engine::EngineState::Fields&)>& edit) {
  engine::EngineState::Fields fields = state.fields();
  edit(fields);
  return engine::EngineState::create(std::move(fields));
}

// The seeds' _snapshot_at_revision: the same state re-labelled at a later head.
inline runtime::EngineSnapshot snapshot_at_revision(
    const runtime::EngineSnapshot& snapshot, std::int64_t revision,
    const std::optional<std::string>& record_digest = std::nullopt,
    const std::optional<engine::CommittedPlanV3>& committed_plan = std::nullopt) {
  engine::EngineState state = edit_state(*snapshot.state, [&](engine::EngineState::Fields& f) {
    f.revision = revision;
    if (committed_plan) f.committed_plan = *committed_plan;
  });
  return runtime::EngineSnapshot{snapshot.stream_id, revision, std::move(state),
                                 record_digest ? *record_digest
                                               : digest("record:" + std::to_string(revision))};
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_MANAGED_QUERY_SEED_SUPPORT_HPP_
