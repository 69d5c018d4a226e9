#include "host/runtime/catalog/state_service.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/journal_store.hpp"
#include "host/runtime/catalog/state_dir.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
namespace fs = std::filesystem;

template <typename T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json actions_json(const std::vector<ManagedActionSummary>& actions) {
  Json out = Json::array();
  for (const auto& action : actions) {
    out.push_back({{"action_id", action.action_id()},
                   {"kind", action.kind()},
                   {"entity_id", optional_json(action.entity_id())}});
  }
  return out;
}

}  // namespace

StatePaths StatePaths::of(const fs::path& state_dir) {
  if (!state_dir.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
  StatePaths paths;
  paths.state_dir = state_dir.lexically_normal();
  paths.registry = paths.state_dir / "registry";
  paths.service_dir = paths.state_dir / "service";
  paths.journal = paths.service_dir / "journal.sqlite3";
  paths.audit = paths.service_dir / "audit.sqlite3";
  paths.queries = paths.service_dir / "queries.sqlite3";
  paths.inputs = paths.service_dir / "inputs";
  paths.install_policy = paths.state_dir / "install-policy";
  return paths;
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
  std::unique_ptr<StateService> state(new StateService());
  state->paths_ = StatePaths::of(state_dir);
  const StatePaths& paths = state->paths_;
  try {
    state->key_ = read_installation_key(paths.state_dir);
  } catch (const NotFound&) {
    throw NotFound("state directory is not initialised (run ctx init)");
  }
  try {
    state->catalog_ = ImportedCatalog::open(paths.state_dir);
  } catch (const NotFound&) {
    throw NotFound("no catalog is imported (run ctx catalog import DIR)");
  }
  ensure_private_dir(paths.service_dir, "service directory");
  auto registry = open_managed_artifact_registry(paths.registry);
  {
    // Concurrent first opens (several hooks at a session's start) would race the store's
    // creation (one opener sweeps another's unpublished stage); one at a time.
    const ExclusiveFileLock creating(paths.service_dir / ".open.lock", std::chrono::seconds(30));
    state->store_ = open_managed_query_store(paths.queries, state->key_);
  }
  auto facts = std::make_shared<CatalogBenefitFactsPort>(state->catalog_);
  auto material = std::make_shared<CatalogMaterialPort>(state->catalog_);
  auto install = std::make_shared<CatalogInstallBundlePort>(state->catalog_);
  const NetBenefitPolicy policy = default_net_benefit_policy();

  CatalogInputAuthorityOptions authority;
  authority.catalog = state->catalog_;
  authority.registry = registry;
  authority.query_store = state->store_;
  authority.benefit_facts_port = facts;
  authority.material_port = material;
  authority.install_bundle_port = install;
  authority.net_benefit_policy = policy;
  authority.journal_path = paths.journal;
  authority.benefit_audit_path = paths.audit;
  authority.inputs_dir = paths.inputs;
  authority.installation_key = state->key_;
  authority.planner_version = std::string(kDefaultRuntimePlannerVersion);
  authority.trusted_clock = clock;
  state->authority_ = std::make_shared<CatalogInputAuthority>(std::move(authority));

  ManagedQueryServiceOptions options;
  options.registry = registry;
  options.query_store = state->store_;
  options.journal_path = paths.journal;
  options.benefit_audit_path = paths.audit;
  options.benefit_facts_port = facts;
  options.net_benefit_policy = policy;
  options.material_port = material;
  options.install_bundle_port = install;
  options.input_authority = state->authority_;
  options.policy_store_root = paths.install_policy;
  options.trusted_clock = std::move(clock);
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
  // A session whose first plan another preparer is committing is waited for (up to ~2 s).
  constexpr int kConflictAttempts = 8;
  constexpr int kPendingAttempts = 40;
  int conflicts = 0;
  int pending = 0;
  for (;;) {
    try {
      const auto registration = authority_->register_work(work);
      const auto input = authority_->resolve(registration.current_work_ref);
      const auto& artifact = input->artifact();
      sources = {paths_.inputs / (registration.plan_id + ".json"),
                 paths_.registry / "manifests" / (artifact.manifest_digest() + ".json"),
                 paths_.registry / "artifacts" / (artifact.graph_artifact_digest() + ".sqlite3")};
      return service_->prepare(ManagedQueryRequest::create(registration.logical_query_id,
                                                           registration.current_work_ref));
    } catch (const engine::RevisionConflict&) {
      if (++conflicts == kConflictAttempts) throw;
    } catch (const ManagedQuerySupersededError&) {
      // This work's plan was the head when it was registered; another one replaced it since.
      if (++conflicts == kConflictAttempts) throw;
    } catch (const SessionStartPending&) {
      if (++pending == kPendingAttempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

ManagedQueryServiceResult StateService::reopen(const std::string& query_ref) {
  return service_->reopen(query_ref);
}

std::optional<ManagedQueryServiceResult> StateService::reopen_current(const CurrentWork& work) {
  const auto query_ref = authority_->current_query_ref(work);
  if (!query_ref) return std::nullopt;
  return service_->reopen(*query_ref);
}

ManagedDesiredSetResult StateService::set_desired(const std::string& query_ref,
                                                  std::vector<std::string> capability_ids,
                                                  std::optional<std::string> logical_choice_id) {
  if (!is_query_ref(query_ref)) {
    throw InvalidArgument("query_ref must be an opaque managed-query reference");
  }
  std::vector<std::string> sorted = capability_ids;
  std::sort(sorted.begin(), sorted.end());
  const auto choice_of = [&](const std::string& predecessor) {
    Json ids = Json::array();
    for (const auto& id : sorted) ids.push_back(id);
    std::string message = "ctx.desired-choice-v1";
    message.push_back('\0');
    message += core::canonical_json(
        Json{{"capability_ids", ids}, {"predecessor", predecessor}, {"query_ref", query_ref}});
    return core::hmac_sha256_hex(key_, message);
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

Json challenge_json(const std::optional<ManagedConsentChallengeProjection>& challenge) {
  if (!challenge) return nullptr;
  return {{"audience", challenge->audience()},
          {"capability_id", challenge->capability_id()},
          {"challenge_digest", challenge->challenge_digest()},
          {"expires_at", challenge->expires_at()},
          {"kind", challenge->kind()}};
}

Json managed_result_json(const ManagedQueryServiceResult& result) {
  const auto& prepared = result.prepared();
  Json selections = Json::array();
  for (const auto& row : prepared.selections()) {
    selections.push_back({{"capability_id", row.capability_id()},
                          {"kind", row.kind()},
                          {"name", row.name()},
                          {"actionability", row.actionability()},
                          {"matching_signals", row.matching_signals()},
                          {"reason_codes", row.reason_codes()},
                          {"benefit_tier", row.benefit_tier()},
                          {"individual_net_benefit_u", row.individual_net_benefit_u()},
                          {"marginal_net_benefit_u", row.marginal_net_benefit_u()},
                          {"source_digest", row.source_digest()},
                          {"catalog_identity_digest", row.catalog_identity_digest()},
                          {"install_descriptor_digest", optional_json(row.install_descriptor_digest())},
                          {"install_plan_digest", optional_json(row.install_plan_digest())}});
  }
  return {{"query_ref", result.query_ref()},
          {"status", prepared.status()},
          {"abstention_code", optional_json(prepared.abstention_code())},
          {"plan_id", prepared.plan_id()},
          {"planning_environment_digest", prepared.planning_environment_digest()},
          {"decision_digest", prepared.decision_digest()},
          {"journal_revision", prepared.journal_revision()},
          {"journal_record_digest", prepared.journal_record_digest()},
          {"benefit_result_digest", optional_json(prepared.benefit_result_digest())},
          {"requested_limit", optional_json(prepared.requested_limit())},
          {"candidate_pool_count", optional_json(prepared.candidate_pool_count())},
          {"search_evaluation_count", optional_json(prepared.search_evaluation_count())},
          {"selections", std::move(selections)},
          {"actions", actions_json(result.actions())},
          {"challenge", challenge_json(result.challenge())}};
}

Json desired_result_json(const ManagedDesiredSetResult& result) {
  return {{"query_ref", result.query_ref()},
          {"desired_set_ref", result.desired_set_ref()},
          {"logical_choice_id", result.logical_choice_id()},
          {"capability_ids", result.capability_ids()},
          {"deferred_capability_ids", result.deferred_capability_ids()},
          {"failed_capability_ids", result.failed_capability_ids()},
          {"status", std::string(to_string(result.status()))},
          {"reason_code", optional_json(result.reason_code())},
          {"plan_id", result.plan_id()},
          {"decision_digest", result.decision_digest()},
          {"journal_revision", result.journal_revision()},
          {"journal_record_digest", result.journal_record_digest()},
          {"actions", actions_json(result.actions())},
          {"challenge", challenge_json(result.challenge())}};
}

}  // namespace ctx::runtime
