// The wire forms of the front door's results: the JSON objects `ctx ... --json` prints and the
// server's JSON-RPC methods return for queries, desired sets, consents, catalogs and plugins,
// encoded here once. Results name only the fields listed (no bodies, bindings, proofs or
// secrets; a path only where the command is about one, and never over the server).
#ifndef CTX_HOST_APP_WIRE_HPP_
#define CTX_HOST_APP_WIRE_HPP_

#include <ctx/loader/lock_file.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/app/catalog.hpp"
#include "host/app/hook/hooks_config.hpp"
#include "host/app/state_service.hpp"
#include "host/core/canonical_json.hpp"

namespace ctx::runtime {

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
// The 9 fields of ManagedConsentResolutionResult ("outcome" spelled as to_string()).
core::Json consent_result_json(const ManagedConsentResolutionResult& result);
// {"challenges": [{"audience","capability_id","challenge_digest","expires_at","kind",
//   "approve": "ctx consent approve DIGEST --key FILE", "deny": "ctx consent deny ..."}]}:
// what `ctx consent show --json` and the server's consent.show return. Each command ends in
// " --state DIR" when `shown_state` names a state dir (consent/printed_command.hpp). With
// `catalog`, an MCP server's challenge also has "effects" (install_effects_json).
core::Json consent_show_json(const std::vector<ManagedConsentChallengeProjection>& challenges,
                             const std::optional<std::filesystem::path>& shown_state,
                             const ImportedCatalog* catalog = nullptr);
// What installing `capability_id` adds to the host, for the human deciding: for an MCP server
// {"command": [program, args...]} or {"url", "type"?}, and "env_names": the environment variable
// names it sets (never their values); null for other kinds or an unknown id. The challenge's
// signed decision covers these exact bytes: its install descriptor's plan digest names the
// entry file's sha-256.
core::Json install_effects_json(const ImportedCatalog& catalog, std::string_view capability_id);
// The same in one line for `ctx consent show`, e.g. "runs npx -y server; sets GITHUB_TOKEN
// (value not shown)"; empty when there is nothing to show.
std::string install_effects_text(const ImportedCatalog& catalog, std::string_view capability_id);
// {"resolution": consent_result_json, "activation": {"capability_id","outcome","settled"}|null}.
core::Json consent_decision_json(const ConsentDecisionResult& result);

// {"catalog_digest","changed","entries","graph_sha256","objects","skipped":[{"file","rule"}]}:
// `ctx catalog import --json` (and each source's import below).
core::Json catalog_import_json(const CatalogImportResult& result);
// {"source","commit","previous_commit","added","changed","removed","import"}: one source's
// `ctx catalog add|update --json`.
core::Json source_update_json(const SourceUpdate& update);
// {"sources":[{"name","kind" ("git"|"directory"),"location","ref","subpath","commit",
// "tree_digest","entries","skipped"}]}: `ctx catalog list --json`.
core::Json source_list_json(const std::vector<CatalogSource>& sources);
// {"capability_id","label","description","when_to_use","source","location","commit","path"}:
// `ctx catalog show --json` (`source`: the entry's source when it is still recorded).
core::Json catalog_entry_json(const CatalogEntry& entry, const CatalogSource* source);
// "git" or "directory".
const char* source_kind_name(const SourceOrigin& origin);

// {"plugins":[{"kind","id","version","sha256","size","abi":{"major","minor"},"platform",
// "needed"}]} in the lock's (kind, id) order: the server's plugin.list (no paths).
core::Json plugin_list_json(const plugins::LockFile& lock);

// What `ctx hooks install` did: {"host","action":"install","changed","file","events","notice",
// "created"}, "backup" when the previous bytes were saved, the activation places
// ("skills_activate_in", "agents_activate_in", "mcp_servers_activate_in") when a target was
// recorded, and for Codex "project_trusted" (project scope) and "trusted_now"/"trusted" (--trust).
// Local only (it names files): the CLI's --json.
struct HooksInstallReport {
  std::string host;
  hooks::HooksChange change;
  std::optional<ActivationTarget> activation;
  std::optional<bool> project_trusted;
  std::optional<std::pair<std::size_t, std::size_t>> trusted;  // trusted now, trusted in all
};
core::Json hooks_install_json(const HooksInstallReport& report);

// What `ctx hooks uninstall` did: {"host","action":"uninstall","changed","file","events",
// "restored","activation_links_removed","activation_target_removed"}, "backup" when kept, and
// for Codex "trust_entries_removed" and "codex_config_restored".
struct HooksUninstallReport {
  std::string host;
  hooks::HooksChange change;
  std::vector<std::string> links_removed;
  bool target_removed = false;
  std::optional<std::pair<std::size_t, bool>> codex_trust;  // entries removed, config restored
};
core::Json hooks_uninstall_json(const HooksUninstallReport& report);

// What `ctx hooks status` found: {"host","file","installed","events","missing_events",
// "state_dir" (null: the default),"state_dir_default"}, the activation places of the scope's
// target, and for Codex "project_trusted" (project scope), "trusted" (null when unknown or nothing
// is installed) and "trust_unknown" (why it is unknown).
struct HooksStatusReport {
  std::string host;
  hooks::InstalledHooks installed;
  std::optional<std::filesystem::path> state_dir;
  std::optional<ActivationTarget> activation;
  bool codex = false;
  std::optional<bool> project_trusted;
  std::optional<bool> trusted;
  std::optional<std::string> trust_unknown;
};
core::Json hooks_status_json(const HooksStatusReport& report);

}  // namespace ctx::runtime

#endif  // CTX_HOST_APP_WIRE_HPP_
