// Production planning ports backed by one ImportedCatalog (not test doubles). Every answer is a
// pure function of the catalog's stored bytes, so digests are stable across runs and processes.
// Snapshot digests: canon-A sha256 of {catalog_digest, schema} with the schemas below.
//
// Benefit facts (rule "ctx.catalog-benefit-facts-v3"), for a presentation of a catalog entry:
//   availability     executable for load/install presentations, advisory otherwise
//   relevance_ppm    the presentation's normalized_score_ppm when the match has evidence (else
//                    0, which the policy's minimum excludes): two distinct matching signals (two
//                    of the most common English words, common_english.hpp, neither a word of
//                    the entry's name, are one: "less" and "make" for avoid-ai-writing), or the
//                    entry's name or id as a signal, or one signal that is a word of the
//                    entry's name and is either at least half its words and used by at most
//                    max(2, 1%) of the catalog's entries ("pdf" for pdf-export, not "end" for
//                    session-end when nine entries use it) or no common English word and used
//                    by at most max(2, 3%) of them ("helm" for helm-chart-scaffolding,
//                    "terraform" for terraform-module-library; not "table" for
//                    postgresql-table-design), or one matching signal of a work of at least
//                    two signals and a matching language (a project term that is not among the
//                    most common English words: not "data", "web" or "order" from a manifest's
//                    artifact names; not "great job" in a Python project; languages alone
//                    are no evidence when the work has signals, but for an entry named after
//                    one, below), or a language that is a word of a name of at most two words,
//                    as such a name word would be, when the work has at least two signals and
//                    one of them is not among the most common English words (golang-pro for
//                    "Add an API endpoint" in a Go module; not for "plan the next step" nor for
//                    "commit it"). The planner then keeps the relevance of the entries whose
//                    relevance is at least kRelevanceShareOfBestPpm of the best one's in the
//                    plan's pool (relevance_share_of_best_ppm): the few entries that match about
//                    as well as the best match with evidence. An entry that scores best on one
//                    incidental word sets no bar ("store" in event-store-design for "Store
//                    secrets in HashiCorp Vault", where secrets-management matches "vault" and
//                    "environment").
//   expected_task_benefit_ppm  min(10^6, 400000 + 150000 × |matching_signals|)
//   trust_ppm 10^6, source_trusted, security_approved, permissions_allowed and
//   credentials_available true (a locally imported catalog is the user's own choice; the
//   install consent step shows permission and credential needs, and the policy prices them)
//   costs            context_tokens = material estimated tokens (skills) or ceil(bytes/4) of the
//                    entry file (agents, capped at 1500); mcp-server: tool_schema_tokens 400,
//                    process_units 1; agent: child_agent_units 1; install presentations add
//                    approval_prompts 1; permission_expansion adds permission_burden_units 1;
//                    credential_requirement adds credential_burden_units 1
//   coverage_keys    the entry's explicit tags that are observation signals
//   evidence         none observed (zero counts) in window sha256("ctx.catalog-evidence-none-v1")
// Material: every entry is "manual" — nothing in an imported catalog is installed where a host
// loads it from, and a load row is installed material (engine spec §3.4 "new load row →
// installed"); skills reach the host through the install bundle below, so an install passes the
// consent policy (ask-each-time by default). material_identity / material_content name what an
// install of a skill writes (1..6000 bytes): its SKILL.md (plain form) when the folder holds
// nothing else and SKILL.md is at most 6000 bytes, else its tree root (CatalogEntry::tree,
// plugin_abi.h "Tree material": the content digest is the tree digest, the size the root text's
// length, at most 178 bytes), so every imported skill has a material and an install bundle.
// Install bundles (every skill; a markdown agent of any size, one over 6000 bytes by its one-file
// tree root, CatalogEntry::tree, ctx/sdk/skill_tree.hpp "AGENT.md"; a Codex agent or mcp-server
// file of at most 6000 bytes; harnesses never): installer_id "ctx-<kind>-installer-v1";
// plan_digest = canon-A sha256 of {capability_id, files, kind, schema
// "ctx.catalog-install-plan-v1", target_scope "user"}; the result material is the material above
// (for agents and mcp servers the entry file, or an agent's tree root). permission_expansion: an
// mcp server with a command or any env; an agent that lists no `tools` (it inherits every tool).
// credential_requirement: some env name, upper-cased, contains TOKEN, SECRET, PASSWORD, PASSWD,
// CREDENTIAL, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or AUTH, or ends in _KEY or _PAT.
// All ports are thread-safe (immutable after construction, but for the benefit facts port's
// memory of how many entries use a word, which a mutex guards).
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_PORTS_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_PORTS_HPP_

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/identities.hpp"
#include "host/engine/planning/candidates.hpp"
#include "host/engine/replay.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/runtime/planning_ports.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kCatalogBenefitFactsSchema = "ctx.catalog-benefit-facts-v3";
// A presentation whose relevance is under this share of the best relevance in its pool has none
// (above).
inline constexpr std::int64_t kRelevanceShareOfBestPpm = 700'000;
inline constexpr std::string_view kCatalogMaterialSnapshotSchema =
    "ctx.catalog-material-snapshot-v1";
inline constexpr std::string_view kCatalogInstallSnapshotSchema = "ctx.catalog-install-snapshot-v1";
inline constexpr std::string_view kCatalogInstallPlanSchema = "ctx.catalog-install-plan-v1";

// The word a common short form in a prompt stands for (a fixed table: gql graphql, js javascript,
// k8s kubernetes, mongo mongodb, oauth oauth2, pg and postgres postgresql, py python, rb ruby,
// tf terraform, ts typescript), or nullopt. The vocabulary uses it only for a word that is no
// catalog term, and keeps the result only when that is one (so only catalog terms are stored).
std::optional<std::string_view> term_alias(std::string_view lowered);

// True when an env variable name looks like it holds a secret (rule above).
bool is_secret_env_name(std::string_view name);

class CatalogBenefitFactsPort final : public BenefitFactsPort {
 public:
  // Errors: InvalidArgument when `catalog` is null.
  explicit CatalogBenefitFactsPort(std::shared_ptr<const ImportedCatalog> catalog);
  std::string benefit_facts_snapshot_digest() const override { return snapshot_digest_; }
  // nullopt when the presentation names no catalog entry of its kind.
  std::optional<planning::BenefitCandidate> benefit_candidate(
      const planning::CapabilityCandidate& presentation,
      const planning::WorkObservation& observation) override;
  // kRelevanceShareOfBestPpm.
  std::int64_t relevance_share_of_best_ppm() const override { return kRelevanceShareOfBestPpm; }

 private:
  // The number of entries whose terms hold `word`, counted once per word.
  std::size_t entries_using(const std::string& word) const;

  std::shared_ptr<const ImportedCatalog> catalog_;
  std::string snapshot_digest_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::size_t> entries_using_;  // GUARDED_BY(mutex_)
};

class CatalogMaterialPort final : public MaterialPort {
 public:
  // Reads (and verifies) every skill's material object (SKILL.md or tree root) once.
  // Errors: InvalidArgument (null), DataLoss (an object is missing or altered).
  explicit CatalogMaterialPort(std::shared_ptr<const ImportedCatalog> catalog);
  std::string material_snapshot_digest() const override { return snapshot_digest_; }
  // Errors: CandidateAuthorityUnavailable when the catalog has no such entry.
  engine::MaterialDescriptor describe(const std::string& capability_id,
                                      engine::CapabilityKind kind) override;
  // The identity of a skill's material (SKILL.md or its tree root, 1..6000 bytes), or nullopt.
  std::optional<engine::MaterialIdentity> material_identity(const std::string& capability_id) const;
  // Those stored bytes (verified against their content digest; a tree's root text).
  // Errors: NotFound (no such material), DataLoss.
  std::string material_content(const std::string& capability_id) const;

 private:
  std::shared_ptr<const ImportedCatalog> catalog_;
  std::string snapshot_digest_;
  std::map<std::string, engine::MaterialDescriptor> descriptors_;
  std::map<std::string, engine::MaterialIdentity> identities_;
};

class CatalogInstallBundlePort final : public InstallBundlePort {
 public:
  // Errors: InvalidArgument (null catalog).
  explicit CatalogInstallBundlePort(std::shared_ptr<const ImportedCatalog> catalog);
  std::string installation_snapshot_digest() const override { return snapshot_digest_; }
  // nullopt for harnesses and entries whose material is over 6000 bytes (an mcp-server file, a
  // Codex agent file: a markdown agent or a skill over it is a tree).
  // Errors: CandidateAuthorityUnavailable when the catalog has no such entry.
  std::optional<engine::InstallPlanningBundle> describe_bundle(
      const std::string& capability_id, engine::CapabilityKind kind) override;

 private:
  std::shared_ptr<const ImportedCatalog> catalog_;
  std::string snapshot_digest_;
};

// The catalog's vocabulary: every term an entry is indexed under (its graph tags: explicit tags,
// name tokens, description tokens, plus each name and kind:name id), with the number of entries
// that use each (its document frequency).
class CatalogVocabulary {
 public:
  explicit CatalogVocabulary(const ImportedCatalog& catalog);
  // Is `token` (compared lower-cased) a term some catalog entry uses?
  bool contains(std::string_view token) const;
  // The number of entries that use `term` (lower-cased already); 0 when none does.
  std::size_t entries_using(std::string_view term) const;
  // The terms of `tokens` (lower-cased; a token that is no term is looked up by its stem, then by
  // term_alias: "postgres" as "postgresql"; a token's synonym from a fixed table — login, logon,
  // signin, sso: "auth" — joins it when it is a term), unique,
  // most informative first: fewest entries using it, ties in alphabetical order; at most `limit`,
  // so a bound drops the terms most entries share ("python" before "celery"). Never a stop word
  // (engine::planning::is_stop_word: "the", "with", "thanks", "why": they say nothing about which
  // capability fits) nor a credential-like word (credential_like: "secrets", "password"), which
  // the current-work surrogate refuses.
  std::vector<std::string> most_informative(const std::vector<std::string>& tokens,
                                            std::size_t limit) const;
  // most_informative(tokens, limit), sorted.
  std::vector<std::string> filter(const std::vector<std::string>& tokens,
                                  std::size_t limit = planning::kMaxSignals) const;
  std::size_t size() const noexcept { return terms_.size(); }

 private:
  std::map<std::string, std::size_t, std::less<>> terms_;  // term -> entries using it
};

// One host's description of the current work (from a hook payload or a work file). Signals and
// languages are raw tokens from the host adapter; only vocabulary terms survive into planning.
struct CurrentWork {
  std::string tenant;
  std::string workspace;
  std::string repository;
  std::string session;
  std::vector<std::string> signals;
  std::vector<std::string> languages;
  std::int64_t requested_limit = 5;
  // The session's project folder (the host's working directory); empty: none. Its manifest files
  // are read once per session (project_signals.hpp) and, when the work has signals, their catalog
  // terms join the languages (the most informative ones, after the host's own languages, up to
  // planning::kMaxLanguages): they re-rank what the work's own words retrieve.
  std::filesystem::path project_dir{};
};

// Reads a current-work file: {"session":{"tenant","workspace","repository","session"},
// "signals":[…], "languages"?:[…], "requested_limit"?:N} (unknown keys rejected; at most 256
// signals of 1–128 characters, 64 languages; requested_limit 0..5, default 5).
// Errors: InvalidArgument naming the field (never quoting the input).
CurrentWork current_work_from_json(std::string_view text);
// The same, of a value already parsed (a JSON-RPC request's params).
CurrentWork current_work_from_value(const core::Json& value);

// What a current-work reference resolves to: the scope, the vocabulary-filtered observation and
// its "ctx.observation.current-work" v1 surrogate (what an IntentObserved event references).
struct ResolvedCurrentWork {
  std::string tenant;
  std::string workspace;
  std::string repository;
  std::string session;
  planning::WorkObservation observation;
  engine::StructuredSurrogate surrogate;
};

// The input authority's catalog half: host adapters register current work under an opaque
// reference; resolve() returns it filtered to the catalog vocabulary. Thread-safe.
class CatalogWorkAuthority {
 public:
  explicit CatalogWorkAuthority(std::shared_ptr<const ImportedCatalog> catalog);
  // Validates (scope ids are opaque tokens; requested_limit 0..5; ≤ 256 raw signals) and stores
  // `work` under `current_work_ref` (an opaque token), replacing any earlier registration.
  // Errors: InvalidArgument naming the field.
  void register_work(const std::string& current_work_ref, CurrentWork work);
  // Errors: NotFound ("current-work reference is unavailable").
  ResolvedCurrentWork resolve(const std::string& current_work_ref) const;
  const CatalogVocabulary& vocabulary() const noexcept { return vocabulary_; }

 private:
  std::shared_ptr<const ImportedCatalog> catalog_;
  CatalogVocabulary vocabulary_;
  // The catalog terms of a session's project manifests, most informative first (at most
  // planning::kMaxLanguages), read once per (session, project folder).
  std::vector<std::string> project_terms(const CurrentWork& work) const;

  mutable std::mutex mutex_;
  std::map<std::string, CurrentWork> works_;
  mutable std::map<std::string, std::vector<std::string>> project_terms_;  // GUARDED_BY(mutex_)
  mutable std::vector<std::string> project_order_;  // GUARDED_BY(mutex_), oldest first
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_PORTS_HPP_
