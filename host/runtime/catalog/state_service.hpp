// StateService: the managed query service of one state directory (the embedded default) over its
// imported catalog, as `ctx query`, `ctx desired`, `ctx hook` and `ctx serve` open it. Layout:
//   <state>/installation.key    the 32-byte key (ctx init)
//   <state>/catalog/            the imported catalog (ctx catalog import)
//   <state>/registry/           the managed artifact registry
//   <state>/service/            journal.sqlite3, audit.sqlite3, queries.sqlite3, inputs/
//   <state>/install-policy/     the install consent policy (ctx policy set)
// Results are projected to JSON with the seed's field names (managed_result_json,
// desired_result_json): no paths, bodies, prompts or secrets.
// Thread-safe (the service and the authority are); process-bound like the service.
#ifndef CTX_HOST_RUNTIME_CATALOG_STATE_SERVICE_HPP_
#define CTX_HOST_RUNTIME_CATALOG_STATE_SERVICE_HPP_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/catalog_input_authority.hpp"
#include "host/runtime/service/managed_service.hpp"

namespace ctx::runtime {

struct StatePaths {
  std::filesystem::path state_dir;
  std::filesystem::path registry;
  std::filesystem::path service_dir;
  std::filesystem::path journal;
  std::filesystem::path audit;
  std::filesystem::path queries;
  std::filesystem::path inputs;
  std::filesystem::path install_policy;
  // The layout above for absolute `state_dir`. Errors: InvalidArgument (relative).
  static StatePaths of(const std::filesystem::path& state_dir);
};

// The net-benefit policy of the embedded default (calibration "ctx.default-calibration-v1":
// relevance must be positive, each context token costs one unit).
NetBenefitPolicy default_net_benefit_policy();

class StateService {
 public:
  // Opens everything on an initialised state dir with an imported catalog. Errors: NotFound
  // ("run ctx init" / "run ctx catalog import DIR"), FailedPrecondition (unsafe state dir), the
  // stores' and registry's errors.
  static std::unique_ptr<StateService> open(const std::filesystem::path& state_dir,
                                            std::shared_ptr<const core::Clock> clock = nullptr);
  StateService(const StateService&) = delete;
  StateService& operator=(const StateService&) = delete;
  ~StateService();

  // Registers `work` with the input authority and prepares it (an exact retry of the same work
  // returns the same result); when a concurrent preparer of other work in the session moved the
  // head first (RevisionConflict, or this work's plan was superseded since it was found at the
  // head), registers again on the new head, up to eight attempts; while
  // another preparer commits the session's first plan (SessionStartPending), waits up to ~2 s.
  // Errors: the authority's and the service's.
  ManagedQueryServiceResult prepare(CurrentWork work);
  // The same, also naming in `sources` the files besides the state dir's databases the result
  // was read from: the work's registration, its artifact's manifest and graph copy (what
  // HookRunner's exact-retry replies are checked against).
  ManagedQueryServiceResult prepare(CurrentWork work, std::vector<std::filesystem::path>& sources);
  ManagedQueryServiceResult reopen(const std::string& query_ref);
  // Reopens the plan committed at the head of `work`'s session, if there is one.
  std::optional<ManagedQueryServiceResult> reopen_current(const CurrentWork& work);
  // `logical_choice_id` defaults to an HMAC of the query, the ids and the predecessor; the
  // predecessor is the query's latest committed desired set (none for a first choice or for an
  // exact retry of the first). Errors: the request's and the service's.
  ManagedDesiredSetResult set_desired(const std::string& query_ref,
                                      std::vector<std::string> capability_ids,
                                      std::optional<std::string> logical_choice_id = std::nullopt);

  const CatalogVocabulary& vocabulary() const noexcept { return authority_->vocabulary(); }
  const std::string& installation_key() const noexcept { return key_; }
  const StatePaths& paths() const noexcept { return paths_; }
  const ImportedCatalog& catalog() const noexcept { return *catalog_; }
  ManagedQueryService& service() noexcept { return *service_; }

 private:
  StateService() = default;
  StatePaths paths_;
  std::string key_;
  std::shared_ptr<const ImportedCatalog> catalog_;
  std::shared_ptr<ManagedQueryStore> store_;
  std::shared_ptr<CatalogInputAuthority> authority_;
  std::shared_ptr<ManagedQueryService> service_;
};

// {"query_ref","status","abstention_code","plan_id","planning_environment_digest",
//  "decision_digest","journal_revision","journal_record_digest","benefit_result_digest",
//  "requested_limit","candidate_pool_count","search_evaluation_count",
//  "selections":[{"capability_id","kind","name","actionability","matching_signals",
//  "reason_codes","benefit_tier","individual_net_benefit_u","marginal_net_benefit_u",
//  "source_digest","catalog_identity_digest","install_descriptor_digest",
//  "install_plan_digest"}], "actions":[{"action_id","kind","entity_id"}], "challenge"}.
core::Json managed_result_json(const ManagedQueryServiceResult& result);
// The 14 fields of ManagedDesiredSetResult with "status" spelled as to_string().
core::Json desired_result_json(const ManagedDesiredSetResult& result);
core::Json challenge_json(const std::optional<ManagedConsentChallengeProjection>& challenge);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_STATE_SERVICE_HPP_
