#include "host/app/wire.hpp"

#include <utility>

#include "host/runtime/consent/printed_command.hpp"

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

Json consent_result_json(const ManagedConsentResolutionResult& result) {
  return {{"challenge_digest", result.challenge_digest()},
          {"capability_id", result.capability_id()},
          {"kind", result.kind()},
          {"outcome", std::string(to_string(result.outcome()))},
          {"reason_code", result.reason_code()},
          {"next_challenge", challenge_json(result.next_challenge())},
          {"actions", actions_json(result.actions())},
          {"journal_revision", result.journal_revision()},
          {"journal_record_digest", result.journal_record_digest()}};
}

Json install_effects_json(const ImportedCatalog& catalog, std::string_view capability_id) {
  const CatalogEntry* entry = catalog.find(capability_id);
  if (entry == nullptr || entry->kind != engine::CapabilityKind::kMcpServer) return nullptr;
  Json effects = Json::object();
  if (entry->command) {
    Json argv = Json::array({*entry->command});
    for (const auto& arg : entry->args) argv.push_back(arg);
    effects["command"] = std::move(argv);
  }
  if (entry->url) effects["url"] = *entry->url;
  effects["env_names"] = entry->env_names;
  return effects;
}

std::string install_effects_text(const ImportedCatalog& catalog, std::string_view capability_id) {
  const Json effects = install_effects_json(catalog, capability_id);
  if (effects.is_null()) return {};
  std::string text;
  if (effects.contains("command")) {
    text = "runs";
    for (const auto& word : effects["command"]) text += " " + word.get<std::string>();
  }
  if (effects.contains("url")) text = "connects to " + effects["url"].get<std::string>();
  if (!effects["env_names"].empty()) {
    text += "; sets";
    for (const auto& name : effects["env_names"]) text += " " + name.get<std::string>();
    text += " (values not shown)";
  }
  return text;
}

Json consent_show_json(const std::vector<ManagedConsentChallengeProjection>& challenges,
                       const std::optional<fs::path>& shown_state, const ImportedCatalog* catalog) {
  Json list = Json::array();
  for (const auto& c : challenges) {
    Json item = {{"audience", c.audience()},
                 {"capability_id", c.capability_id()},
                 {"challenge_digest", c.challenge_digest()},
                 {"expires_at", c.expires_at()},
                 {"kind", c.kind()},
                 {"approve", consent_command("approve", c.challenge_digest(), shown_state)},
                 {"deny", consent_command("deny", c.challenge_digest(), shown_state)}};
    if (catalog != nullptr) {
      Json effects = install_effects_json(*catalog, c.capability_id());
      if (!effects.is_null()) item["effects"] = std::move(effects);
    }
    list.push_back(std::move(item));
  }
  return Json{{"challenges", std::move(list)}};
}

Json consent_decision_json(const ConsentDecisionResult& result) {
  Json activation = nullptr;
  if (result.activation) {
    activation = {{"capability_id", result.activation->capability_id},
                  {"outcome", result.activation->outcome},
                  {"settled", result.activation->settled}};
  }
  return {{"resolution", consent_result_json(result.resolution)}, {"activation", activation}};
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
    selections.push_back(
        {{"capability_id", row.capability_id()},
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

Json catalog_import_json(const CatalogImportResult& result) {
  Json skipped = Json::array();
  for (const auto& p : result.skipped) skipped.push_back({{"file", p.file}, {"rule", p.rule}});
  return {{"catalog_digest", result.catalog_digest}, {"changed", result.changed},
          {"entries", result.entry_count},           {"graph_sha256", result.graph_sha256},
          {"objects", result.object_count},          {"skipped", std::move(skipped)}};
}

Json source_update_json(const SourceUpdate& update) {
  return {{"added", update.added},
          {"changed", update.changed},
          {"commit", update.commit},
          {"import", catalog_import_json(update.import)},
          {"previous_commit", update.previous_commit},
          {"removed", update.removed},
          {"source", update.name}};
}

const char* source_kind_name(const SourceOrigin& origin) {
  return origin.kind == SourceOrigin::Kind::kGit ? "git" : "directory";
}

Json source_list_json(const std::vector<CatalogSource>& sources) {
  Json list = Json::array();
  for (const auto& s : sources) {
    list.push_back({{"commit", s.commit},
                    {"entries", s.entries.size()},
                    {"kind", source_kind_name(s.origin)},
                    {"location", s.origin.location},
                    {"name", s.name},
                    {"ref", s.origin.ref},
                    {"skipped", s.skipped.size()},
                    {"subpath", s.origin.subpath},
                    {"tree_digest", s.tree_digest}});
  }
  return Json{{"sources", std::move(list)}};
}

Json catalog_entry_json(const CatalogEntry& entry, const CatalogSource* source) {
  return {{"capability_id", entry.capability_id()},
          {"commit", source ? source->commit : ""},
          {"description", entry.description},
          {"label", entry.label},
          {"location", source ? source->origin.location : ""},
          {"path", entry_location(entry)},
          {"source", entry.source},
          {"when_to_use", entry.when_to_use}};
}

Json plugin_list_json(const plugins::LockFile& lock) {
  Json list = Json::array();
  for (const plugins::LockEntry& entry : lock.entries()) {
    list.push_back({{"kind", plugins::kind_name(entry.kind)},
                    {"id", entry.id},
                    {"version", entry.version},
                    {"sha256", entry.sha256},
                    {"size", entry.size},
                    {"abi", {{"major", entry.abi_major}, {"minor", entry.abi_minor}}},
                    {"platform", entry.platform},
                    {"needed", entry.needed}});
  }
  return Json{{"plugins", std::move(list)}};
}

namespace {

void add_activation_places(core::Json& result, const std::optional<ActivationTarget>& target) {
  if (!target) return;
  result["skills_activate_in"] = target->skills_dir.string();
  if (!target->agents_dir.empty()) result["agents_activate_in"] = target->agents_dir.string();
  if (!target->mcp_file.empty()) result["mcp_servers_activate_in"] = target->mcp_file.string();
}

// What install and uninstall both say of the hook file they changed.
core::Json hooks_change_json(const std::string& host, const char* action,
                             const hooks::HooksChange& change) {
  core::Json result = {{"host", host},
                       {"action", action},
                       {"changed", change.changed},
                       {"file", change.file.string()},
                       {"events", change.events}};
  if (change.backup) result["backup"] = change.backup->string();
  return result;
}

}  // namespace

core::Json hooks_install_json(const HooksInstallReport& report) {
  core::Json result = hooks_change_json(report.host, "install", report.change);
  result["notice"] = report.change.notice;
  result["created"] = report.change.created;
  add_activation_places(result, report.activation);
  if (report.project_trusted) result["project_trusted"] = *report.project_trusted;
  if (report.trusted) {
    result["trusted_now"] = report.trusted->first;
    result["trusted"] = report.trusted->second;
  }
  return result;
}

core::Json hooks_uninstall_json(const HooksUninstallReport& report) {
  core::Json result = hooks_change_json(report.host, "uninstall", report.change);
  result["restored"] = report.change.restored;
  result["activation_links_removed"] = report.links_removed;
  result["activation_target_removed"] = report.target_removed;
  if (report.codex_trust) {
    result["trust_entries_removed"] = report.codex_trust->first;
    result["codex_config_restored"] = report.codex_trust->second;
  }
  return result;
}

core::Json hooks_status_json(const HooksStatusReport& report) {
  const auto& installed = report.installed;
  core::Json result = {{"host", report.host},
                       {"file", installed.file.string()},
                       {"installed", installed.missing.empty()},
                       {"events", installed.events},
                       {"missing_events", installed.missing},
                       {"state_dir", report.state_dir ? core::Json(report.state_dir->string())
                                                      : core::Json(nullptr)},
                       {"state_dir_default", !installed.state_dir.has_value()}};
  add_activation_places(result, report.activation);
  if (report.codex) {
    if (report.project_trusted) result["project_trusted"] = *report.project_trusted;
    result["trusted"] = report.trusted ? core::Json(*report.trusted) : core::Json(nullptr);
    if (report.trust_unknown) result["trust_unknown"] = *report.trust_unknown;
  }
  return result;
}

}  // namespace ctx::runtime
