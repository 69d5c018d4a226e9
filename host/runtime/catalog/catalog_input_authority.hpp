// CatalogInputAuthority: the service's ManagedInputAuthority over an imported catalog — the link
// that lets a host (the CLI, a hook, the server) open the managed query service on a state dir.
//
// register_work(work) keeps only the catalog-vocabulary terms of the work's signals (no other
// word reaches anything durable), ingests the graph artifact with that observation into the
// registry, reads the stream's head from the journal and derives the planning events:
//   W  = HMAC(key, "ctx.current-work-v1\0" || canon{scope ids (the engine session), observation
//        value digest})
//   L  = HMAC(key, "ctx.logical-query-v1\0" || W || "\0" || r)   (the logical query id)
//   plan id "plan-" + L[0..40), current-work reference "work-" + L,
// where r is the decision revision: 1 (IntentObserved, with a new SessionStarted) on a fresh
// stream, else the head revision (DevelopmentObserved after the session's own SessionStarted).
// When the head's committed plan is this same work (an exact retry, also after set_desired moved
// the head), or this work's registration at r was written but not finished (a crash), the stored
// events are reused, so the service's exact-retry and recovery paths apply.
// The engine stream of a host session is bound to one planning environment: its session id is
// the host's id + "@" + 12 hex of the environment digest (a keyed digest of a long host id
// otherwise), so importing another catalog starts a fresh stream instead of breaking the old one.
// Registrations are rows of the managed query store (its managed_inputs table, HMAC-bound to the
// plan id under the key; they hold scope tokens and digests only); <inputs_dir>/<plan id>.json
// files an earlier build wrote are still read. resolve() answers references registered in this
// object.
// Thread-safe.
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_INPUT_AUTHORITY_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_INPUT_AUTHORITY_HPP_

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host/core/time.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/runtime/catalog/catalog_ports.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/shared_journal.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kManagedInputSchema = "ctx.managed-input-v1";
inline constexpr std::string_view kDefaultExposureId = "exposure-main";
inline constexpr std::string_view kDefaultHostContextId = "host-neutral";

struct CatalogInputAuthorityOptions {
  std::shared_ptr<const ImportedCatalog> catalog;
  std::shared_ptr<ManagedArtifactRegistry> registry;
  std::shared_ptr<ManagedQueryStore> query_store;
  std::shared_ptr<BenefitFactsPort> benefit_facts_port;
  std::shared_ptr<MaterialPort> material_port;
  std::shared_ptr<InstallBundlePort> install_bundle_port;
  std::optional<NetBenefitPolicy> net_benefit_policy;
  std::filesystem::path journal_path;        // the service's journal (read for the head only)
  std::shared_ptr<SharedJournal> journal;    // its connection (null: the authority opens one)
  std::filesystem::path benefit_audit_path;  // the service's audit store
  std::filesystem::path inputs_dir;          // private (0700), created when missing
  std::string installation_key;              // 32 bytes
  std::string planner_version;
  std::shared_ptr<const core::Clock> trusted_clock;  // null: the system clock
};

// The session's stream holds a SessionStarted whose first plan (other work) is not committed yet:
// another preparer is committing it right now, or died between the two commits (then only a
// retry of that same work finishes it). A FailedPrecondition by type (the seeds' class), whose
// code is kUnavailable: retry shortly, with backoff.
class SessionStartPending : public FailedPrecondition {
 public:
  explicit SessionStartPending(const std::string& message)
      : FailedPrecondition(message, ErrorCode::kUnavailable) {}
};

// A committed plan in outline: its status and the capability ids it selects, in its order (what
// a host is told about it, before any consent).
struct PlanOutline {
  engine::PlanStatus status;
  std::vector<std::string> capability_ids;
};

// The plan committed at the head of a session stream: the head's revision and the plan's outline.
struct SessionPlan {
  std::int64_t revision;
  PlanOutline outline;
};

// One registered current work: what prepare needs.
struct CurrentWorkRegistration {
  std::string current_work_ref;  // "work-" + 64 hex
  std::string logical_query_id;  // 64 hex
  std::string plan_id;
  bool reused = false;  // the events of an earlier registration of this work
};

class CatalogInputAuthority final : public ManagedInputAuthority {
 public:
  // Errors: InvalidArgument (missing part, key size), the catalog ports' and registry's errors.
  explicit CatalogInputAuthority(CatalogInputAuthorityOptions options);

  // See the file comment. Errors: InvalidArgument naming the work field; SessionStartPending
  // when the session's first plan (other work) is not committed yet;
  // ManagedArtifactRegistryError; JournalCorruption / StoreBusy from the journal;
  // ManagedQueryStoreCorruption ("authentication failed") for a tampered registration file.
  CurrentWorkRegistration register_work(CurrentWork work);

  // The query whose plan is committed at the head of `work`'s session stream, if any (what a
  // host shows when a new plan cannot replace it). Errors: the journal's and store's.
  std::optional<std::string> current_query_ref(const CurrentWork& work) const;
  // The capabilities active at the head of `work`'s session stream. Errors: the journal's.
  std::vector<std::string> active_capability_ids(const CurrentWork& work) const;
  // The plan committed at the head of `work`'s session stream; nullopt before the session's
  // first plan. Errors: the journal's.
  std::optional<SessionPlan> current_plan(const CurrentWork& work) const;
  // The id of the consent pending at the head of `work`'s session stream, if one is. Errors: the
  // journal's.
  std::optional<std::string> pending_consent_id(const CurrentWork& work) const;

  // Errors: NotFound ("current-work reference is unavailable").
  std::shared_ptr<const ManagedQueryInput> resolve(const std::string& current_work_ref) override;

  const CatalogVocabulary& vocabulary() const noexcept { return work_authority_.vocabulary(); }
  const std::string& planning_environment_digest() const noexcept { return environment_digest_; }
  // The session stream scope of `work` as given (not vocabulary-filtered).
  engine::ScopeRef work_scope(const CurrentWork& work) const;

 private:
  struct Stored;
  std::string engine_session(const std::string& session) const;
  // The state at the head of `scope`'s stream, or nullopt when the stream has none. The head is
  // read (and its record verified) each time; its state text is decoded once per distinct text
  // (the last one is kept: a hook asks for the same head several times).
  std::optional<engine::EngineState> head_state(const engine::ScopeRef& scope) const;
  std::optional<Stored> load(const std::string& plan_id) const;
  void store(const std::string& plan_id, const Stored& stored) const;
  // The stream's SessionStarted as journaled at revision 1 (verified on read), for a session
  // whose registrations were retired; nullopt if revision 1 is not a managed session start.
  std::optional<engine::EngineEvent> journaled_session_start(const engine::ScopeRef& scope) const;

  CatalogInputAuthorityOptions options_;
  CatalogWorkAuthority work_authority_;
  std::string environment_digest_;
  std::string retrieval_digest_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const ManagedQueryInput>> inputs_;  // GUARDED_BY(mutex_)
  struct DecodedHead {
    std::string text;  // a head record's state text, as read
    engine::EngineState state;
  };
  mutable std::optional<DecodedHead> decoded_head_;  // GUARDED_BY(mutex_)
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_INPUT_AUTHORITY_HPP_
