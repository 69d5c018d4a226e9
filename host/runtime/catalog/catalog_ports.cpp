#include "host/runtime/catalog/catalog_ports.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"
#include "host/runtime/catalog/common_english.hpp"
#include "host/runtime/catalog/project_signals.hpp"
#include "host/runtime/service/artifact_registry.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
using engine::Actionability;
using engine::CapabilityKind;
using engine::planning::CandidateAuthorityUnavailable;

std::string snapshot_digest(const ImportedCatalog& catalog, std::string_view schema) {
  return core::canonical_digest(
      Json{{"catalog_digest", catalog.catalog_digest()}, {"schema", std::string(schema)}},
      core::Encoding::kAscii);
}

const CatalogEntry& entry_of(const ImportedCatalog& catalog, const std::string& capability_id,
                             CapabilityKind kind) {
  const CatalogEntry* entry = catalog.find(capability_id);
  if (entry == nullptr || entry->kind != kind) {
    throw CandidateAuthorityUnavailable("capability is not in the imported catalog");
  }
  return *entry;
}

std::int64_t tokens_for(std::int64_t bytes) {
  return std::min<std::int64_t>((bytes + 3) / 4, engine::kMaxPreparedContentTokens);
}

bool fits_material(const CatalogFile& file) {
  return file.bytes >= 1 && file.bytes <= engine::kMaxPreparedContentBytes;
}

// What an install of the entry writes, as a material: a tree skill's root text (resources, or a
// SKILL.md over the plain bound), else the entry file itself.
const CatalogFile& material_file(const CatalogEntry& e) { return e.tree ? *e.tree : e.primary; }

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool permission_expansion(const CatalogEntry& e) {
  // An MCP server runs a command on the user's machine or reaches a service on their behalf:
  // its install always asks (the sensitive-risk rule), under preapproved-auto too.
  if (e.kind == CapabilityKind::kMcpServer) return true;
  if (e.kind == CapabilityKind::kAgent) return e.tools.empty();
  return false;
}

bool credential_requirement(const CatalogEntry& e) {
  return std::any_of(e.env_names.begin(), e.env_names.end(),
                     [](const std::string& name) { return is_secret_env_name(name); });
}

template <typename T>
std::shared_ptr<const ImportedCatalog> require(std::shared_ptr<const ImportedCatalog> catalog) {
  if (!catalog) throw InvalidArgument(std::string(T::kWhat) + " needs an imported catalog");
  return catalog;
}

struct FactsWhat {
  static constexpr const char* kWhat = "catalog benefit facts port";
};
struct MaterialWhat {
  static constexpr const char* kWhat = "catalog material port";
};
struct InstallWhat {
  static constexpr const char* kWhat = "catalog install bundle port";
};
struct WorkWhat {
  static constexpr const char* kWhat = "catalog work authority";
};

}  // namespace

std::optional<std::string_view> term_alias(std::string_view lowered) {
  // Sorted by short form (binary search).
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"gql", "graphql"},  {"js", "javascript"}, {"k8s", "kubernetes"},      {"mongo", "mongodb"},
      {"oauth", "oauth2"}, {"pg", "postgresql"}, {"postgres", "postgresql"}, {"py", "python"},
      {"rb", "ruby"},      {"tf", "terraform"},  {"ts", "typescript"}};
  static_assert(std::is_sorted(std::begin(kAliases), std::end(kAliases)));
  const auto it = std::lower_bound(std::begin(kAliases), std::end(kAliases), lowered,
                                   [](const std::pair<std::string_view, std::string_view>& a,
                                      std::string_view b) { return a.first < b; });
  if (it == std::end(kAliases) || it->first != lowered) return std::nullopt;
  return it->second;
}

namespace {
// The catalog words a prompt word is a synonym of (a fixed table), or none.
std::vector<std::string_view> term_synonyms(std::string_view lowered) {
  // Sorted by word (binary search).
  static constexpr std::pair<std::string_view, std::string_view> kSynonyms[] = {
      {"login", "auth"}, {"logon", "auth"}, {"signin", "auth"}, {"sso", "auth"}};
  static_assert(std::is_sorted(std::begin(kSynonyms), std::end(kSynonyms)));
  auto it = std::lower_bound(std::begin(kSynonyms), std::end(kSynonyms), lowered,
                             [](const std::pair<std::string_view, std::string_view>& a,
                                std::string_view b) { return a.first < b; });
  std::vector<std::string_view> out;
  for (; it != std::end(kSynonyms) && it->first == lowered; ++it) out.push_back(it->second);
  return out;
}
}  // namespace

bool is_secret_env_name(std::string_view name) {
  const std::string u = upper(name);
  for (const char* part : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY",
                           "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "AUTH"}) {
    if (u.find(part) != std::string::npos) return true;
  }
  const auto ends_with = [&](std::string_view suffix) {
    return u.size() >= suffix.size() &&
           u.compare(u.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("_KEY") || ends_with("_PAT");
}

// ---- benefit facts ----

namespace {

bool among(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// One incidental word is not a match (catalog_ports.hpp, relevance_ppm): two distinct matching
// signals (but two of the most common English words, neither a word of the entry's name, are
// one: "less" and "make" for avoid-ai-writing), the entry named by a signal, or one signal that
// is a word of its name and few entries use. When the work has signals, a language (a project's
// framework) is never a match alone: it re-ranks what the work's words match, and with one of
// them it is the second match (a word of the work and the project's framework, e.g. "schedule"
// in a Celery project for a Celery skill). `entries_using` counts the entries using a word.
bool has_evidence(const planning::CapabilityCandidate& presentation, const CatalogEntry& entry,
                  const planning::WorkObservation& observation,
                  const std::function<std::size_t(const std::string&)>& entries_using,
                  std::size_t catalog_size) {
  const auto name_words = planning::ascii_tokens(entry.name);
  std::vector<std::string> matching;
  bool language = false;
  std::optional<std::string> named_language;  // a matching language that is a word of the name
  for (const auto& term : presentation.matching_signals) {
    if (observation.signals.empty() || among(observation.signals, term)) {
      matching.push_back(term);
    } else if (among(observation.languages, term)) {
      // A project term that is an everyday English word ("data", "web" and "order" from a
      // Spring manifest's artifact names) says nothing about which entry fits: no language.
      language = language || english_commonness(term) != EnglishCommonness::kMostCommon;
      if (!named_language && among(name_words, term)) named_language = term;
    }
  }
  if (matching.size() == 2 && !among(name_words, matching[0]) && !among(name_words, matching[1]) &&
      english_commonness(matching[0]) == EnglishCommonness::kMostCommon &&
      english_commonness(matching[1]) == EnglishCommonness::kMostCommon) {
    matching.pop_back();
  }
  // One word of the work and a project term are two matches when the work says more than that
  // one word ("great job" or "what time is it?" in a Python project is not Python work).
  if (matching.size() >= 2 ||
      (matching.size() == 1 && language && observation.signals.size() >= 2)) {
    return true;
  }
  for (const auto& signal : observation.signals) {
    if (signal == entry.name || signal == presentation.capability_id) return true;
  }
  // Work in the project's language ("Add an API endpoint" in a Go module) makes the entry named
  // after that language (golang-pro: a name of at most two words) a match as one name word would
  // be, when the work says something more specific than everyday English: a signal that is not
  // among the most common English words ("api"; not "plan", "next", "step"), and more than one
  // word ("commit it" or "gif" alone in a Go module is not Go work).
  if (matching.empty() && named_language && name_words.size() <= 2 &&
      observation.signals.size() >= 2 &&
      std::any_of(observation.signals.begin(), observation.signals.end(),
                  [](const std::string& signal) {
                    return english_commonness(signal) != EnglishCommonness::kMostCommon;
                  })) {
    matching.push_back(*named_language);
  }
  if (matching.empty() || !among(name_words, matching.front())) return false;
  const std::string& word = matching.front();
  const std::size_t using_word = entries_using(word);
  // A word of a name of one or two words that few entries use ("pdf" for pdf-export; not "file"
  // or "end", which many entries' texts share): at least half of the name.
  if (name_words.size() <= 2 && using_word <= std::max<std::size_t>(2, catalog_size / 100)) {
    return true;
  }
  // A word of a name of any length that is no common English word (a product or tool:
  // "terraform" for terraform-module-library, "helm" for helm-chart-scaffolding; not "table" for
  // postgresql-table-design) and that at most max(2, 3%) of the entries use.
  return english_commonness(word) == EnglishCommonness::kUncommon &&
         using_word <= std::max<std::size_t>(2, catalog_size * 3 / 100);
}

}  // namespace

CatalogBenefitFactsPort::CatalogBenefitFactsPort(std::shared_ptr<const ImportedCatalog> catalog)
    : catalog_(require<FactsWhat>(std::move(catalog))),
      snapshot_digest_(snapshot_digest(*catalog_, kCatalogBenefitFactsSchema)) {}

std::optional<planning::BenefitCandidate> CatalogBenefitFactsPort::benefit_candidate(
    const planning::CapabilityCandidate& presentation,
    const planning::WorkObservation& observation) {
  const CatalogEntry* entry = catalog_->find(presentation.capability_id);
  if (entry == nullptr || entry->kind != presentation.kind) return std::nullopt;
  const std::optional<Actionability> actionability =
      engine::presentable(presentation.actionability);
  const bool executable = actionability && *actionability != Actionability::kManual;
  const bool install = actionability == Actionability::kInstall;

  planning::ResourceCosts costs;
  if (entry->kind == CapabilityKind::kSkill || entry->kind == CapabilityKind::kAgent) {
    costs.context_tokens = tokens_for(entry->primary.bytes);
  }
  if (entry->kind == CapabilityKind::kMcpServer) {
    costs.tool_schema_tokens = 400;
    costs.process_units = 1;
  }
  if (entry->kind == CapabilityKind::kAgent) costs.child_agent_units = 1;
  if (install) {
    costs.approval_prompts = 1;
    if (permission_expansion(*entry)) costs.permission_burden_units = 1;
    if (credential_requirement(*entry)) costs.credential_burden_units = 1;
  }

  planning::BenefitCandidate out;
  out.capability_id = presentation.capability_id;
  out.source_digest = presentation.source_digest;
  out.resource_profile_digest =
      core::canonical_digest(Json{{"capability_id", presentation.capability_id},
                                  {"costs", planning::to_json(costs)},
                                  {"schema", std::string(kCatalogBenefitFactsSchema)}},
                             core::Encoding::kAscii);
  out.availability =
      executable ? engine::Availability::kExecutable : engine::Availability::kAdvisory;
  out.relevance_ppm =
      has_evidence(
          presentation, *entry, observation,
          [this](const std::string& word) { return entries_using(word); },
          catalog_->entries().size())
          ? std::clamp<std::int64_t>(presentation.normalized_score_ppm, 0, planning::kMaxPpm)
          : 0;
  out.expected_task_benefit_ppm = std::min<std::int64_t>(
      planning::kMaxPpm,
      400'000 + 150'000 * static_cast<std::int64_t>(presentation.matching_signals.size()));
  out.trust_ppm = planning::kMaxPpm;
  out.costs = costs;
  out.evidence.capability_id = presentation.capability_id;
  out.evidence.kind = entry->kind;
  out.evidence.source_digest = presentation.source_digest;
  out.evidence.evidence_window_digest = core::sha256_hex("ctx.catalog-evidence-none-v1");
  out.evidence.opportunity_observable = false;
  out.source_trusted = true;
  out.security_approved = true;
  out.permissions_allowed = true;
  out.credentials_available = true;
  const std::set<std::string> signals(observation.signals.begin(), observation.signals.end());
  for (const auto& tag : entry->tags) {
    if (signals.count(tag) && engine::is_canonical_token(tag) &&
        out.coverage_keys.size() < static_cast<std::size_t>(planning::kMaxRelationKeys)) {
      out.coverage_keys.push_back(tag);
    }
  }
  return out;
}

std::size_t CatalogBenefitFactsPort::entries_using(const std::string& word) const {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = entries_using_.find(word); it != entries_using_.end()) return it->second;
  }
  std::size_t count = 0;
  for (const auto& e : catalog_->entries()) {  // terms are sorted unique (catalog.hpp)
    if (std::binary_search(e.terms.begin(), e.terms.end(), word)) ++count;
  }
  std::lock_guard lock(mutex_);
  entries_using_.emplace(word, count);
  return count;
}

// ---- material ----

CatalogMaterialPort::CatalogMaterialPort(std::shared_ptr<const ImportedCatalog> catalog)
    : catalog_(require<MaterialWhat>(std::move(catalog))),
      snapshot_digest_(snapshot_digest(*catalog_, kCatalogMaterialSnapshotSchema)) {
  for (const auto& e : catalog_->entries()) {
    const std::string id = e.capability_id();
    const CatalogFile& material = material_file(e);
    if (e.kind == CapabilityKind::kSkill && fits_material(material)) {
      // Verified now, so the bytes never lie (a tree's files are verified when installed).
      catalog_->read_object(material.sha256);
      identities_.emplace(
          id, engine::MaterialIdentity::create(id, e.kind, material.sha256, material.bytes));
    }
    // No load authority: an imported entry is not installed where the host loads skills from
    // (a load row is installed material, engine spec §3.4), so the planner offers it through
    // the install bundle port, and installing it passes the install consent policy.
    descriptors_.emplace(
        id, engine::MaterialDescriptor::create(id, e.kind, engine::Actionability::kManual,
                                               std::nullopt, 0, 0, snapshot_digest_, std::nullopt));
  }
}

engine::MaterialDescriptor CatalogMaterialPort::describe(const std::string& capability_id,
                                                         CapabilityKind kind) {
  entry_of(*catalog_, capability_id, kind);
  return descriptors_.at(capability_id);
}

std::optional<engine::MaterialIdentity> CatalogMaterialPort::material_identity(
    const std::string& capability_id) const {
  const auto it = identities_.find(capability_id);
  if (it == identities_.end()) return std::nullopt;
  return it->second;
}

std::string CatalogMaterialPort::material_content(const std::string& capability_id) const {
  const auto it = identities_.find(capability_id);
  if (it == identities_.end()) throw NotFound("capability has no loadable catalog material");
  return catalog_->read_object(it->second.content_sha256());
}

// ---- install bundles ----

CatalogInstallBundlePort::CatalogInstallBundlePort(std::shared_ptr<const ImportedCatalog> catalog)
    : catalog_(require<InstallWhat>(std::move(catalog))),
      snapshot_digest_(snapshot_digest(*catalog_, kCatalogInstallSnapshotSchema)) {}

std::optional<engine::InstallPlanningBundle> CatalogInstallBundlePort::describe_bundle(
    const std::string& capability_id, CapabilityKind kind) {
  const CatalogEntry& e = entry_of(*catalog_, capability_id, kind);
  const CatalogFile& material_of = material_file(e);
  if (e.kind == CapabilityKind::kHarness || !fits_material(material_of)) return std::nullopt;
  const auto material =
      engine::MaterialIdentity::create(capability_id, kind, material_of.sha256, material_of.bytes);
  Json files = Json::array();
  for (const auto& f : e.files) {
    files.push_back(Json{{"bytes", f.bytes}, {"path", f.path}, {"sha256", f.sha256}});
  }
  engine::InstallPlanDescriptor::Fields fields;
  fields.capability_id = capability_id;
  fields.kind = kind;
  fields.installer_id = "ctx-" + std::string(engine::to_string(kind)) + "-installer-v1";
  fields.plan_digest =
      core::canonical_digest(Json{{"capability_id", capability_id},
                                  {"files", files},
                                  {"kind", e.kind},
                                  {"schema", std::string(kCatalogInstallPlanSchema)},
                                  {"target_scope", engine::TargetScope::kUser}},
                             core::Encoding::kAscii);
  fields.provenance_digest = snapshot_digest_;
  fields.permission_expansion = permission_expansion(e);
  fields.credential_requirement = credential_requirement(e);
  fields.result_material_identity_digest = material.identity_digest();
  return engine::InstallPlanningBundle(engine::InstallPlanDescriptor::create(std::move(fields)),
                                       material);
}

// ---- vocabulary and current work ----

CatalogVocabulary::CatalogVocabulary(const ImportedCatalog& catalog) {
  for (const auto& e : catalog.entries()) {
    // Each term once per entry: its terms are sorted unique (catalog.hpp); its name and id count
    // when they are not among them.
    for (const auto& term : e.terms) ++terms_[term];
    for (const std::string& extra : {e.name, e.capability_id()}) {
      if (!std::binary_search(e.terms.begin(), e.terms.end(), extra)) ++terms_[extra];
    }
  }
}

bool CatalogVocabulary::contains(std::string_view token) const {
  std::string lowered(token);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return terms_.count(lowered) != 0;
}

std::size_t CatalogVocabulary::entries_using(std::string_view term) const {
  const auto it = terms_.find(term);
  return it == terms_.end() ? 0 : it->second;
}

std::vector<std::string> CatalogVocabulary::most_informative(const std::vector<std::string>& tokens,
                                                             std::size_t limit) const {
  std::set<std::string> kept;
  for (const auto& token : tokens) {
    std::string lowered(token);
    for (char& c : lowered) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    // A word that is no term is looked up by its stem ("brainstorm" finds "brainstorming"), then
    // as the word its short form stands for ("postgres" finds "postgresql"). A stop word says
    // nothing about the work; a credential-like word is never planned on (the surrogate would
    // refuse it).
    if (!terms_.count(lowered)) {
      std::string stem = planning::term_stem(lowered);
      if (terms_.count(stem)) {
        lowered = std::move(stem);
      } else if (const auto full = term_alias(lowered)) {
        lowered = std::string(*full);
      }
    }
    // A word's synonym (a fixed table: login/signin auth, slow/latency performance) joins it.
    for (const std::string_view synonym : term_synonyms(lowered)) {
      if (terms_.count(synonym)) kept.emplace(synonym);
    }
    if (terms_.count(lowered) && !planning::is_stop_word(lowered) && !credential_like(lowered)) {
      kept.insert(std::move(lowered));
    }
  }
  std::vector<std::string> out(kept.begin(), kept.end());
  // Stable: terms used by as many entries stay in alphabetical order.
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return terms_.find(a)->second < terms_.find(b)->second;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::vector<std::string> CatalogVocabulary::filter(const std::vector<std::string>& tokens,
                                                   std::size_t limit) const {
  std::vector<std::string> out = most_informative(tokens, limit);
  std::sort(out.begin(), out.end());
  return out;
}

CatalogWorkAuthority::CatalogWorkAuthority(std::shared_ptr<const ImportedCatalog> catalog)
    : catalog_(require<WorkWhat>(std::move(catalog))), vocabulary_(*catalog_) {}

void CatalogWorkAuthority::register_work(const std::string& current_work_ref, CurrentWork work) {
  if (!engine::is_opaque_token(current_work_ref)) {
    throw InvalidArgument("current_work_ref must be an opaque token");
  }
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"tenant", &work.tenant},
        {"workspace", &work.workspace},
        {"repository", &work.repository},
        {"session", &work.session}}) {
    if (!engine::is_opaque_token(*value)) {
      throw InvalidArgument(std::string("current work ") + field + " must be an opaque token");
    }
  }
  if (work.requested_limit < 0 || work.requested_limit > planning::kMaxSelectedCapabilities) {
    throw InvalidArgument("current work requested_limit must be 0 through 5");
  }
  if (work.signals.size() > 256) throw InvalidArgument("current work has more than 256 signals");
  if (work.languages.size() > 64) throw InvalidArgument("current work has more than 64 languages");
  std::lock_guard lock(mutex_);
  works_[current_work_ref] = std::move(work);
}

CurrentWork current_work_from_json(std::string_view text) {
  Json value;
  try {
    value = core::parse_json(text);
  } catch (const std::exception&) {
    throw InvalidArgument("current work is not valid JSON (or repeats a key)");
  }
  return current_work_from_value(value);
}

CurrentWork current_work_from_value(const Json& value) {
  const auto require_keys = [](const Json& object, const std::string& what,
                               std::initializer_list<const char*> allowed,
                               std::initializer_list<const char*> required) {
    if (!object.is_object()) throw InvalidArgument(what + " must be a JSON object");
    for (const auto& item : object.items()) {
      const std::string& key = item.key();
      if (std::find_if(allowed.begin(), allowed.end(), [&](const char* k) { return key == k; }) ==
          allowed.end()) {
        throw InvalidArgument(what + " has a key that is not allowed");
      }
    }
    for (const char* key : required) {
      if (!object.contains(key)) throw InvalidArgument(what + "." + key + " is required");
    }
  };
  require_keys(value, "current work", {"session", "signals", "languages", "requested_limit"},
               {"session", "signals"});
  const Json& session = value.at("session");
  require_keys(session, "current work session", {"tenant", "workspace", "repository", "session"},
               {"tenant", "workspace", "repository", "session"});
  const auto string_of = [](const Json& v, const std::string& field) {
    if (!v.is_string()) throw InvalidArgument("current work " + field + " must be a string");
    return v.get<std::string>();
  };
  const auto strings_of = [](const Json& v, const std::string& field, std::size_t max_items) {
    if (!v.is_array() || v.size() > max_items) {
      throw InvalidArgument("current work " + field + " must be an array of at most " +
                            std::to_string(max_items) + " strings");
    }
    std::vector<std::string> out;
    for (const auto& item : v) {
      if (!item.is_string() || item.get_ref<const std::string&>().empty() ||
          item.get_ref<const std::string&>().size() > 128 ||
          !engine::is_valid_unicode(item.get_ref<const std::string&>())) {
        throw InvalidArgument("current work " + field + " must hold strings of 1-128 characters");
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  };
  CurrentWork work;
  work.tenant = string_of(session["tenant"], "session.tenant");
  work.workspace = string_of(session["workspace"], "session.workspace");
  work.repository = string_of(session["repository"], "session.repository");
  work.session = string_of(session["session"], "session.session");
  work.signals = strings_of(value.at("signals"), "signals", 256);
  if (value.contains("languages"))
    work.languages = strings_of(value.at("languages"), "languages", 64);
  if (value.contains("requested_limit")) {
    const Json& limit = value.at("requested_limit");
    if (!limit.is_number_integer() || limit.get<std::int64_t>() < 0 ||
        limit.get<std::int64_t>() > planning::kMaxSelectedCapabilities) {
      throw InvalidArgument("current work requested_limit must be an integer 0 through 5");
    }
    work.requested_limit = limit.get<std::int64_t>();
  }
  for (const auto* id : {&work.tenant, &work.workspace, &work.repository, &work.session}) {
    if (!engine::is_opaque_token(*id)) {
      throw InvalidArgument("current work session ids must be opaque tokens");
    }
  }
  return work;
}

std::vector<std::string> CatalogWorkAuthority::project_terms(const CurrentWork& work) const {
  constexpr std::size_t kSessionsRemembered = 64;
  const std::string key = work.tenant + '\0' + work.workspace + '\0' + work.repository + '\0' +
                          work.session + '\0' + work.project_dir.string();
  {
    std::lock_guard lock(mutex_);
    if (const auto it = project_terms_.find(key); it != project_terms_.end()) return it->second;
  }
  // Read outside the lock (bounded in bytes and time); only catalog terms are kept.
  std::vector<std::string> terms = vocabulary_.most_informative(
      project_signals(work.project_dir), static_cast<std::size_t>(planning::kMaxLanguages));
  std::lock_guard lock(mutex_);
  if (project_terms_.emplace(key, terms).second) {
    project_order_.push_back(key);
    if (project_order_.size() > kSessionsRemembered) {
      project_terms_.erase(project_order_.front());
      project_order_.erase(project_order_.begin());
    }
  }
  return terms;
}

ResolvedCurrentWork CatalogWorkAuthority::resolve(const std::string& current_work_ref) const {
  CurrentWork work;
  {
    std::lock_guard lock(mutex_);
    const auto it = works_.find(current_work_ref);
    if (it == works_.end()) throw NotFound("current-work reference is unavailable");
    work = it->second;
  }
  planning::WorkObservation observation;
  observation.signals = vocabulary_.filter(work.signals);
  std::set<std::string> languages;
  for (auto language : work.languages) {
    for (char& c : language) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (engine::is_canonical_token(language) && !credential_like(language)) {
      languages.insert(std::move(language));
    }
  }
  const auto max_languages = static_cast<std::size_t>(planning::kMaxLanguages);
  while (languages.size() > max_languages) languages.erase(std::prev(languages.end()));
  // The project's terms fill what the host's languages leave, most informative first.
  if (!observation.signals.empty() && !work.project_dir.empty()) {
    for (auto& term : project_terms(work)) {
      if (languages.size() >= max_languages) break;
      languages.insert(std::move(term));
    }
  }
  observation.languages.assign(languages.begin(), languages.end());
  observation.requested_limit = work.requested_limit;
  planning::validate_work_observation(observation);
  Json value{{"active_capability_ids", Json::array()},
             {"baseline_capability_ids", Json::array()},
             {"languages", observation.languages},
             {"rejected_capability_ids", Json::array()},
             {"requested_limit", observation.requested_limit},
             {"signals", observation.signals}};
  auto surrogate =
      engine::StructuredSurrogate::create("ctx.observation.current-work", 1, std::move(value));
  return ResolvedCurrentWork{work.tenant,  work.workspace,         work.repository,
                             work.session, std::move(observation), std::move(surrogate)};
}

}  // namespace ctx::runtime
