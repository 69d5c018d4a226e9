// The production planning ports over the imported example catalog: a PDF-export prompt's signals
// retrieve and plan skill:pdf-export through the real graph store, candidate source and planner;
// material / install / facts answers follow the documented rules and are stable across imports.
#include "host/runtime/catalog/catalog_ports.hpp"

#include <algorithm>
#include <ctx/sdk/skill_tree.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "host/app/state_layout.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/planning/candidate_source.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/planner.hpp"
#include "host/runtime/service/artifact_registry.hpp"
#include "host/store/benefit_audit_store.hpp"
#include "host/store/graph_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef CTX_EXAMPLES_DIR
#error "CTX_EXAMPLES_DIR must be defined by the build"
#endif

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using engine::planning::CandidateAuthorityUnavailable;
using engine::planning::CapabilityCandidate;
using engine::planning::WorkObservation;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const fs::path kExamples = fs::path(CTX_EXAMPLES_DIR) / "catalog";

struct Imported {
  TempDir temp;
  std::shared_ptr<const ImportedCatalog> catalog;
  Imported() {
    init_state_dir(temp / "state");
    import_catalog(kExamples, temp / "state");
    catalog = ImportedCatalog::open(temp / "state");
  }
};

// The host adapter's raw tokens of "Please export the quarterly report as a PDF".
std::vector<std::string> pdf_prompt_tokens() {
  return {"please", "export", "the", "quarterly", "report", "as", "a", "PDF"};
}

TEST(CatalogPorts, APdfExportPromptRetrievesAndPlansTheSkill) {
  Imported imported;
  CatalogWorkAuthority authority(imported.catalog);
  CurrentWork work{"tenant-1", "workspace-1", "repository-1", "session-1", pdf_prompt_tokens(), {},
                   3};
  authority.register_work("work-1", work);
  const ResolvedCurrentWork resolved = authority.resolve("work-1");
  // Only catalog vocabulary survives: "quarterly", "please", "the" are nobody's terms.
  EXPECT_EQ(resolved.observation.signals, (std::vector<std::string>{"export", "pdf", "report"}));
  EXPECT_EQ(resolved.surrogate.schema_id(), "ctx.observation.current-work");

  const auto graph =
      store::GraphStore::open(imported.catalog->graph_path(), imported.catalog->graph_sha256());
  CatalogMaterialPort material(imported.catalog);
  CatalogInstallBundlePort install(imported.catalog);
  engine::planning::CatalogCandidateSource source(*graph, &material, &install);
  const auto candidates = source.retrieve(resolved.observation);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front().capability_id, "skill:pdf-export");
  // Not installed anywhere the host loads from: offered as an install (through consent).
  EXPECT_EQ(candidates.front().actionability, engine::CandidateActionability::kInstall);
  EXPECT_EQ(candidates.front().normalized_score_ppm, 1'000'000);

  // The whole planner: facts from the catalog, the real policy and audit store.
  CatalogBenefitFactsPort facts(imported.catalog);
  auto audit = store::SqliteBenefitAuditStore::open(imported.temp / "audit.sqlite3");
  engine::planning::NetBenefitPolicyConfig policy_config;
  policy_config.calibration_digest = core::sha256_hex("catalog-test-calibration");
  policy_config.minimum_relevance_ppm = 1;
  policy_config.context_token_cost_u = 1;
  engine::planning::CapabilityPlannerConfig config;
  config.planner_version = "ctx-managed-query-planner-v3";
  config.catalog_namespace_digest = imported.catalog->catalog_digest();
  engine::planning::CapabilityPlanner planner(config,
                                              engine::planning::NetBenefitPolicy(policy_config),
                                              *graph, facts, &material, &install, *audit);
  const auto plan = planner.plan(resolved.observation);
  ASSERT_EQ(plan.status(), engine::PlanStatus::kReady);
  ASSERT_FALSE(plan.capabilities().empty());
  EXPECT_EQ(plan.capabilities().front().presentation.capability_id, "skill:pdf-export");
  EXPECT_LE(plan.capabilities().size(), 3u);
}

TEST(CatalogPorts, MaterialDescriptorsBindTheStoredSkillBytes) {
  Imported imported;
  CatalogMaterialPort material(imported.catalog);
  // A SKILL.md-only skill's material is its SKILL.md (the plain form).
  const std::string bytes = read(kExamples / "skills/csv-cleanup/SKILL.md");
  // A catalog skill has no load authority (it is not installed where the host loads skills):
  // its material is what an install of it writes.
  const auto descriptor = material.describe("skill:csv-cleanup", engine::CapabilityKind::kSkill);
  EXPECT_EQ(descriptor.actionability(), engine::Actionability::kManual);
  EXPECT_FALSE(descriptor.content_sha256());
  EXPECT_EQ(descriptor.provenance_digest(), material.material_snapshot_digest());
  const auto identity = engine::MaterialIdentity::create(
      "skill:csv-cleanup", engine::CapabilityKind::kSkill, core::sha256_hex(bytes),
      static_cast<std::int64_t>(bytes.size()));
  EXPECT_EQ(material.material_identity("skill:csv-cleanup"), identity);
  EXPECT_EQ(material.material_content("skill:csv-cleanup"), bytes);
  // A skill with resources: the tree root over its folder's manifest (content digest = tree
  // digest, content bytes = root length), here built from the example folder's files.
  std::vector<sdk::TreeFile> files;
  for (const char* path : {"SKILL.md", "scripts/export.py"}) {
    const std::string file = read(kExamples / "skills/pdf-export" / path);
    files.push_back({path, file.size(), core::sha256_hex(file)});
  }
  const std::string root =
      sdk::tree_root_text(files, core::sha256_hex(sdk::tree_manifest_text(files)));
  const auto tree = engine::MaterialIdentity::create(
      "skill:pdf-export", engine::CapabilityKind::kSkill, core::sha256_hex(root),
      static_cast<std::int64_t>(root.size()));
  EXPECT_EQ(material.material_identity("skill:pdf-export"), tree);
  EXPECT_EQ(material.material_content("skill:pdf-export"), root);
  CatalogInstallBundlePort install(imported.catalog);
  const auto bundle = install.describe_bundle("skill:pdf-export", engine::CapabilityKind::kSkill);
  ASSERT_TRUE(bundle.has_value());
  EXPECT_EQ(bundle->descriptor().result_material_identity_digest(), tree.identity_digest());
  // Agents, servers and harnesses are installed or run, never loaded.
  for (const auto& [id, kind] : std::vector<std::pair<std::string, engine::CapabilityKind>>{
           {"agent:code-reviewer", engine::CapabilityKind::kAgent},
           {"mcp-server:github", engine::CapabilityKind::kMcpServer},
           {"harness:python-runner", engine::CapabilityKind::kHarness}}) {
    const auto d = material.describe(id, kind);
    EXPECT_EQ(d.actionability(), engine::Actionability::kManual) << id;
    EXPECT_FALSE(material.material_identity(id)) << id;
  }
  CTX_EXPECT_THROW(material.material_content("agent:code-reviewer"), NotFound, "loadable");
  CTX_EXPECT_THROW(material.describe("skill:nope", engine::CapabilityKind::kSkill),
                   CandidateAuthorityUnavailable, "not in the imported catalog");
  CTX_EXPECT_THROW(material.describe("skill:pdf-export", engine::CapabilityKind::kAgent),
                   CandidateAuthorityUnavailable, "not in the imported catalog");
  try {
    material.describe("skill:nope", engine::CapabilityKind::kSkill);
    ADD_FAILURE() << "an unknown entry was described";
  } catch (const CandidateAuthorityUnavailable& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);  // not until the catalog changes
  }
}

TEST(CatalogPorts, InstallBundlesFlagPermissionsAndCredentialsByTheDocumentedRule) {
  Imported imported;
  CatalogInstallBundlePort install(imported.catalog);
  const auto github =
      install.describe_bundle("mcp-server:github", engine::CapabilityKind::kMcpServer);
  ASSERT_TRUE(github);
  EXPECT_TRUE(github->descriptor().permission_expansion());    // command + env
  EXPECT_TRUE(github->descriptor().credential_requirement());  // GITHUB_PERSONAL_ACCESS_TOKEN
  EXPECT_EQ(github->descriptor().installer_id(), "ctx-mcp-server-installer-v1");
  EXPECT_EQ(github->descriptor().provenance_digest(), install.installation_snapshot_digest());
  EXPECT_EQ(github->result_material().content_sha256(),
            core::sha256_hex(read(kExamples / "mcp-servers/github.json")));
  EXPECT_TRUE(github->descriptor().matches_result_material(github->result_material()));

  const auto filesystem =
      install.describe_bundle("mcp-server:filesystem", engine::CapabilityKind::kMcpServer);
  ASSERT_TRUE(filesystem);
  EXPECT_TRUE(filesystem->descriptor().permission_expansion());
  EXPECT_FALSE(filesystem->descriptor().credential_requirement());
  const auto remote =
      install.describe_bundle("mcp-server:docs-search", engine::CapabilityKind::kMcpServer);
  ASSERT_TRUE(remote);
  // Every MCP server is a permission expansion (it asks under preapproved-auto), a url too.
  EXPECT_TRUE(remote->descriptor().permission_expansion());
  EXPECT_FALSE(remote->descriptor().credential_requirement());
  const auto reviewer =
      install.describe_bundle("agent:code-reviewer", engine::CapabilityKind::kAgent);
  ASSERT_TRUE(reviewer);
  EXPECT_FALSE(reviewer->descriptor().permission_expansion());  // lists its tools
  const auto skill =
      install.describe_bundle("skill:sql-migrations", engine::CapabilityKind::kSkill);
  ASSERT_TRUE(skill);
  EXPECT_EQ(skill->descriptor().installer_id(), "ctx-skill-installer-v1");
  EXPECT_FALSE(install.describe_bundle("harness:python-runner", engine::CapabilityKind::kHarness));
  CTX_EXPECT_THROW(install.describe_bundle("agent:nope", engine::CapabilityKind::kAgent),
                   CandidateAuthorityUnavailable, "not in the imported catalog");

  EXPECT_TRUE(is_secret_env_name("GITHUB_TOKEN"));
  EXPECT_TRUE(is_secret_env_name("openai_api_key"));
  EXPECT_TRUE(is_secret_env_name("AWS_SECRET_ACCESS_KEY"));
  EXPECT_TRUE(is_secret_env_name("DEPLOY_KEY"));
  EXPECT_TRUE(is_secret_env_name("GITLAB_PAT"));
  EXPECT_FALSE(is_secret_env_name("LOG_LEVEL"));
  EXPECT_FALSE(is_secret_env_name("KEYBOARD_LAYOUT"));
}

TEST(CatalogPorts, BenefitFactsAreDerivedFromTheEntryAndPassThePolicyGates) {
  Imported imported;
  CatalogBenefitFactsPort facts(imported.catalog);
  CapabilityCandidate presentation;
  presentation.capability_id = "mcp-server:github";
  presentation.kind = engine::CapabilityKind::kMcpServer;
  presentation.name = "github";
  presentation.source_digest = core::sha256_hex("source");
  presentation.normalized_score_ppm = 800'000;
  presentation.matching_signals = {"github", "issues"};
  presentation.actionability = engine::CandidateActionability::kInstall;
  WorkObservation work;
  work.signals = {"github", "issues"};
  const auto candidate = facts.benefit_candidate(presentation, work);
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->availability, engine::Availability::kExecutable);
  EXPECT_EQ(candidate->relevance_ppm, 800'000);
  EXPECT_EQ(candidate->expected_task_benefit_ppm, 700'000);
  ASSERT_TRUE(candidate->costs);
  EXPECT_EQ(candidate->costs->tool_schema_tokens, 400);
  EXPECT_EQ(candidate->costs->process_units, 1);
  EXPECT_EQ(candidate->costs->approval_prompts, 1);
  EXPECT_EQ(candidate->costs->permission_burden_units, 1);
  EXPECT_EQ(candidate->costs->credential_burden_units, 1);
  EXPECT_EQ(candidate->coverage_keys, (std::vector<std::string>{"github", "issues"}));
  engine::planning::NetBenefitPolicyConfig config;
  config.calibration_digest = core::sha256_hex("calibration");
  config.minimum_relevance_ppm = 1;
  const auto assessment = engine::planning::NetBenefitPolicy(config).assess(*candidate);
  EXPECT_EQ(assessment.tier, engine::AssessmentTier::kExecutable);
  // Same inputs, same facts; an unknown capability has none.
  EXPECT_EQ(facts.benefit_candidate(presentation, work), candidate);
  presentation.capability_id = "mcp-server:unknown";
  EXPECT_FALSE(facts.benefit_candidate(presentation, work));
}

TEST(CatalogPorts, DigestsAreStableAcrossImportsAndProcesses) {
  Imported a;
  Imported b;
  ASSERT_EQ(a.catalog->catalog_digest(), b.catalog->catalog_digest());
  CatalogMaterialPort ma(a.catalog), mb(b.catalog);
  CatalogInstallBundlePort ia(a.catalog), ib(b.catalog);
  CatalogBenefitFactsPort fa(a.catalog), fb(b.catalog);
  EXPECT_EQ(ma.material_snapshot_digest(), mb.material_snapshot_digest());
  EXPECT_EQ(ia.installation_snapshot_digest(), ib.installation_snapshot_digest());
  EXPECT_EQ(fa.benefit_facts_snapshot_digest(), fb.benefit_facts_snapshot_digest());
  EXPECT_NE(ma.material_snapshot_digest(), ia.installation_snapshot_digest());
  for (const auto& entry : a.catalog->entries()) {
    const std::string id = entry.capability_id();
    EXPECT_EQ(ma.describe(id, entry.kind).descriptor_digest(),
              mb.describe(id, entry.kind).descriptor_digest());
    const auto ba = ia.describe_bundle(id, entry.kind);
    const auto bb = ib.describe_bundle(id, entry.kind);
    ASSERT_EQ(ba.has_value(), bb.has_value()) << id;
    if (ba) {
      EXPECT_EQ(ba->descriptor().descriptor_digest(), bb->descriptor().descriptor_digest());
    }
  }
  // Pinned value: the material snapshot digest is canon-A {catalog_digest, schema}.
  EXPECT_EQ(ma.material_snapshot_digest(),
            core::canonical_digest(core::Json{{"catalog_digest", a.catalog->catalog_digest()},
                                              {"schema", "ctx.catalog-material-snapshot-v1"}},
                                   core::Encoding::kAscii));
}

TEST(CatalogPorts, VocabularyAndWorkAuthority) {
  Imported imported;
  CatalogWorkAuthority authority(imported.catalog);
  const auto& vocabulary = authority.vocabulary();
  EXPECT_TRUE(vocabulary.contains("pdf"));
  EXPECT_TRUE(vocabulary.contains("PDF"));
  EXPECT_TRUE(vocabulary.contains("pdf-export"));
  EXPECT_TRUE(vocabulary.contains("skill:pdf-export"));
  EXPECT_TRUE(vocabulary.contains("pytest"));
  EXPECT_FALSE(vocabulary.contains("quarterly"));
  EXPECT_FALSE(vocabulary.contains("the"));
  EXPECT_FALSE(vocabulary.contains(""));
  CTX_EXPECT_THROW(authority.resolve("unknown"), NotFound, "current-work reference is unavailable");
  CurrentWork work{
      "tenant-1", "workspace-1", "repository-1", "session-1", {"Python", "tests"}, {"Python"}, 5};
  CTX_EXPECT_THROW(authority.register_work("bad ref", work), InvalidArgument, "opaque token");
  work.requested_limit = 6;
  CTX_EXPECT_THROW(authority.register_work("w", work), InvalidArgument, "requested_limit");
  work.requested_limit = 5;
  work.tenant = "";
  CTX_EXPECT_THROW(authority.register_work("w", work), InvalidArgument, "tenant");
  work.tenant = "tenant-1";
  authority.register_work("w", work);
  const auto resolved = authority.resolve("w");
  EXPECT_EQ(resolved.observation.signals, (std::vector<std::string>{"python", "tests"}));
  EXPECT_EQ(resolved.observation.languages, std::vector<std::string>{"python"});
  EXPECT_EQ(resolved.tenant, "tenant-1");
  EXPECT_EQ(authority.resolve("w").surrogate.value_digest(), resolved.surrogate.value_digest());
}

// A catalog whose terms include a stop word ("with", a word of a name) and credential-like words
// ("secrets", "passwords", from a description).
struct WordyCatalog {
  TempDir temp;
  std::shared_ptr<const ImportedCatalog> catalog;
  WordyCatalog() {
    const fs::path skill = temp / "catalog" / "skills" / "deploy-with-verification";
    fs::create_directories(skill);
    std::ofstream(skill / "SKILL.md")
        << "---\nname: deploy-with-verification\ndescription: Deploy to production, verify the "
           "live build, keep secrets and passwords in the vault.\n---\n\nBody.\n";
    init_state_dir(temp / "state");
    import_catalog(temp / "catalog", temp / "state");
    catalog = ImportedCatalog::open(temp / "state");
  }
};

TEST(CatalogPorts, StopWordsAndCredentialLikeWordsAreNeverSignals) {
  WordyCatalog wordy;
  CatalogWorkAuthority authority(wordy.catalog);
  const auto& vocabulary = authority.vocabulary();
  // Catalog terms, but never planned on: "with" says nothing about the work, and the current-work
  // surrogate refuses credential-like strings (a prompt word must never fail the hook).
  for (const char* term : {"with", "secrets", "passwords", "vault", "deploy"}) {
    EXPECT_TRUE(vocabulary.contains(term)) << term;
  }
  EXPECT_EQ(vocabulary.filter({"With", "SECRETS", "passwords", "deploy", "Vault", "thanks"}),
            (std::vector<std::string>{"deploy", "vault"}));
  // A word that is no term is looked up by its stem.
  EXPECT_FALSE(vocabulary.contains("deploys"));
  EXPECT_EQ(vocabulary.filter({"deploys", "builds"}),
            (std::vector<std::string>{"build", "deploy"}));
  CurrentWork work{"tenant-1",
                   "workspace-1",
                   "repository-1",
                   "session-1",
                   {"deploy", "with", "secrets", "vault"},
                   {"Python", "password"},
                   3};
  authority.register_work("w", work);
  const auto resolved = authority.resolve("w");
  EXPECT_EQ(resolved.observation.signals, (std::vector<std::string>{"deploy", "vault"}));
  EXPECT_EQ(resolved.observation.languages, std::vector<std::string>{"python"});
  for (const auto& [key, value] : resolved.surrogate.value().items()) {
    if (!value.is_array()) continue;
    for (const auto& item : value) EXPECT_FALSE(credential_like(item.get<std::string>())) << key;
  }
}

// The facts' relevance: the retrieval's share of the best score when the match has evidence (two
// signals, the name, or one word that is half the name or more), else 0.
TEST(CatalogPorts, RelevanceNeedsEvidenceAndAShareOfTheBestScore) {
  Imported imported;
  CatalogBenefitFactsPort facts(imported.catalog);
  CapabilityCandidate presentation;
  presentation.capability_id = "skill:pdf-export";
  presentation.kind = engine::CapabilityKind::kSkill;
  presentation.name = "pdf-export";
  presentation.source_digest = core::sha256_hex("source");
  presentation.actionability = engine::CandidateActionability::kInstall;
  WorkObservation work;
  const auto relevance = [&](std::int64_t score, std::vector<std::string> matching,
                             std::vector<std::string> signals) {
    presentation.normalized_score_ppm = score;
    presentation.matching_signals = std::move(matching);
    work.signals = std::move(signals);
    const auto candidate = facts.benefit_candidate(presentation, work);
    return candidate ? candidate->relevance_ppm : -1;
  };
  EXPECT_EQ(relevance(1'000'000, {"pdf", "report"}, {"pdf", "report"}), 1'000'000);
  // The share of the best is the planner's rule over the pool (relevance_share_of_best_ppm).
  EXPECT_EQ(relevance(400'000, {"pdf", "report"}, {"pdf", "report"}), 400'000);
  EXPECT_EQ(facts.relevance_share_of_best_ppm(), kRelevanceShareOfBestPpm);
  EXPECT_EQ(relevance(1'000'000, {"pdf"}, {"pdf", "invoice"}), 1'000'000);  // half of its name
  EXPECT_EQ(relevance(1'000'000, {"report"}, {"report", "invoice"}), 0);    // one incidental word
  EXPECT_EQ(relevance(1'000'000, {}, {"pdf-export"}), 1'000'000);           // named
  presentation.capability_id = "skill:sql-migrations";
  presentation.name = "sql-migrations";
  EXPECT_EQ(relevance(1'000'000, {"sql", "schema"}, {"sql", "schema"}), 1'000'000);
  presentation.capability_id = "mcp-server:docs-search";
  presentation.kind = engine::CapabilityKind::kMcpServer;
  presentation.name = "docs-search";
  EXPECT_EQ(relevance(1'000'000, {"docs"}, {"docs"}), 1'000'000);
}

// One word that is half of an entry's name is evidence only when few entries use it: "end" in
// session-end is not, when three other entries' texts hold it; "pdf" in pdf-export is.
TEST(CatalogPorts, AnEntrysNameWordManyEntriesShareIsNoEvidenceAlone) {
  TempDir temp;
  const auto skill = [&](const std::string& name, const std::string& description) {
    fs::create_directories(temp / "catalog" / "skills" / name);
    std::ofstream(temp / "catalog" / "skills" / name / "SKILL.md")
        << "---\nname: " << name << "\ndescription: " << description << "\n---\nBody\n";
  };
  skill("session-end", "Close the work session.");
  skill("pdf-export", "Export reports as PDF documents.");
  skill("release-notes", "Write notes at the end of a release.");
  skill("sprint-review", "Review the sprint at its end.");
  skill("log-rotation", "Rotate logs that never end.");
  init_state_dir(temp / "state");
  import_catalog(temp / "catalog", temp / "state");
  const auto catalog = ImportedCatalog::open(temp / "state");
  CatalogBenefitFactsPort facts(catalog);
  const auto relevance = [&](const std::string& name, std::vector<std::string> matching,
                             std::vector<std::string> signals) {
    CapabilityCandidate presentation;
    presentation.capability_id = "skill:" + name;
    presentation.kind = engine::CapabilityKind::kSkill;
    presentation.name = name;
    presentation.source_digest = core::sha256_hex("source");
    presentation.actionability = engine::CandidateActionability::kInstall;
    presentation.normalized_score_ppm = 1'000'000;
    presentation.matching_signals = std::move(matching);
    WorkObservation work;
    work.signals = std::move(signals);
    return facts.benefit_candidate(presentation, work)->relevance_ppm;
  };
  EXPECT_EQ(relevance("session-end", {"end"}, {"end", "line"}), 0);  // four entries use "end"
  EXPECT_EQ(relevance("pdf-export", {"pdf"}, {"pdf", "line"}), 1'000'000);
  EXPECT_EQ(relevance("session-end", {"end", "session"}, {"end", "session"}), 1'000'000);
}

// Relevance of a one-presentation plan in a small catalog of `skills` (name -> description).
class SmallCatalog {
 public:
  explicit SmallCatalog(const std::map<std::string, std::string>& skills) {
    for (const auto& [name, description] : skills) {
      fs::create_directories(temp_ / "catalog" / "skills" / name);
      std::ofstream(temp_ / "catalog" / "skills" / name / "SKILL.md")
          << "---\nname: " << name << "\ndescription: " << description << "\n---\nBody\n";
    }
    init_state_dir(temp_ / "state");
    import_catalog(temp_ / "catalog", temp_ / "state");
    catalog_ = ImportedCatalog::open(temp_ / "state");
    facts_.emplace(catalog_);
  }
  std::int64_t relevance(const std::string& name, std::vector<std::string> matching,
                         std::vector<std::string> signals,
                         std::vector<std::string> languages = {}) {
    CapabilityCandidate presentation;
    presentation.capability_id = "skill:" + name;
    presentation.kind = engine::CapabilityKind::kSkill;
    presentation.name = name;
    presentation.source_digest = core::sha256_hex("source");
    presentation.actionability = engine::CandidateActionability::kInstall;
    presentation.normalized_score_ppm = 1'000'000;
    presentation.matching_signals = std::move(matching);
    WorkObservation work;
    work.signals = std::move(signals);
    work.languages = std::move(languages);
    return facts_->benefit_candidate(presentation, work)->relevance_ppm;
  }
  const std::shared_ptr<const ImportedCatalog>& catalog() const { return catalog_; }

 private:
  TempDir temp_;
  std::shared_ptr<const ImportedCatalog> catalog_;
  std::optional<CatalogBenefitFactsPort> facts_;
};

// Two matching words that are among the most common English words ("less", "make") are one
// match, unless one is a word of the entry's name; three are evidence, and so is a pair with a
// rarer word.
TEST(CatalogPorts, TwoOfTheMostCommonEnglishWordsAreOneMatch) {
  SmallCatalog catalog({{"avoid-ai-writing", "Make prose read less like a machine wrote it."},
                        {"pdf-export", "Export reports as PDF documents."}});
  EXPECT_EQ(catalog.relevance("avoid-ai-writing", {"less", "make"}, {"less", "make", "pods"}), 0);
  EXPECT_EQ(
      catalog.relevance("avoid-ai-writing", {"less", "make", "prose"}, {"less", "make", "prose"}),
      1'000'000);
  EXPECT_EQ(catalog.relevance("avoid-ai-writing", {"make", "prose"}, {"make", "prose"}), 1'000'000);
  EXPECT_EQ(catalog.relevance("avoid-ai-writing", {"make", "writing"}, {"make", "writing"}),
            1'000'000);
}

// One word of a name of three words or more is evidence alone when it is no common English word
// (a tool: "helm") and few entries use it; a common word ("table") or one that more entries use
// ("kubernetes" in three of five) is not.
TEST(CatalogPorts, AnUncommonWordOfALongNameIsEvidenceAlone) {
  SmallCatalog catalog(
      {{"helm-chart-scaffolding", "Scaffold Helm charts for Kubernetes workloads."},
       {"postgresql-table-design", "Design PostgreSQL tables and their table keys."},
       {"k8s-manifest-generator", "Generate Kubernetes manifests."},
       {"kubernetes-cluster-architect", "Design Kubernetes clusters."},
       {"pdf-export", "Export reports as PDF documents."}});
  EXPECT_EQ(catalog.relevance("helm-chart-scaffolding", {"helm"}, {"helm", "values"}), 1'000'000);
  EXPECT_EQ(catalog.relevance("postgresql-table-design", {"table"}, {"table", "values"}), 0);
  EXPECT_EQ(
      catalog.relevance("kubernetes-cluster-architect", {"kubernetes"}, {"kubernetes", "pods"}), 0);
}

// Work in the project's language makes the entry named after it a match, as a word of its name
// would be, when the work says something more specific than everyday English ("api"); work of
// the most common English words ("plan", "next") does not, nor does a language no word of the
// entry's name is.
TEST(CatalogPorts, WorkInTheProjectsLanguageMatchesTheEntryNamedAfterIt) {
  SmallCatalog catalog({{"golang-pro", "Write idiomatic Go with goroutines and generics."},
                        {"pdf-export", "Export reports as PDF documents."}});
  EXPECT_EQ(catalog.relevance("golang-pro", {"golang"}, {"api", "order"}, {"golang"}), 1'000'000);
  EXPECT_EQ(catalog.relevance("golang-pro", {"golang"}, {"plan", "next"}, {"golang"}), 0);
  EXPECT_EQ(catalog.relevance("pdf-export", {"reports"}, {"api", "order"}, {"reports"}), 0);
  // One word of work is not work in the language: "commit it" in a Go module.
  EXPECT_EQ(catalog.relevance("golang-pro", {"golang"}, {"commit"}, {"golang"}), 0);
}

// A project term is a second match beside one word of the work ("schedule" in a Celery project),
// but not when it is an everyday English word ("data", "order" and "web" from a Spring manifest's
// artifact names), nor when that word is all the work says ("great job" in a Python project):
// then the one word is as incidental as without a project.
TEST(CatalogPorts, AProjectTermThatIsAnEverydayWordIsNoSecondMatch) {
  SmallCatalog catalog({{"report-builder", "Build weekly reports from warehouse data."},
                        {"celery-beat", "Schedule periodic jobs with Celery beat."},
                        {"pdf-export", "Export reports as PDF documents."}});
  EXPECT_EQ(
      catalog.relevance("celery-beat", {"celery", "schedule"}, {"reports", "schedule"}, {"celery"}),
      1'000'000);
  EXPECT_EQ(catalog.relevance("celery-beat", {"celery", "schedule"}, {"schedule"}, {"celery"}), 0);
  EXPECT_EQ(catalog.relevance("report-builder", {"data", "weekly"}, {"pdf", "weekly"}, {"data"}),
            0);
  EXPECT_EQ(catalog.relevance("report-builder", {"weekly"}, {"pdf", "weekly"}), 0);
}

// A short form that is no catalog term is read as the term it stands for ("postgres" as
// "postgresql", "k8s" as "kubernetes"); one that is a term stays itself.
TEST(CatalogPorts, AShortFormIsReadAsTheTermItStandsFor) {
  SmallCatalog catalog({{"postgresql-table-design", "Design PostgreSQL tables on Kubernetes."},
                        {"pdf-export", "Export reports as PDF documents (k8s too)."}});
  const CatalogVocabulary vocabulary(*catalog.catalog());
  EXPECT_EQ(vocabulary.filter({"Postgres", "indexes"}), (std::vector<std::string>{"postgresql"}));
  EXPECT_EQ(vocabulary.filter({"k8s"}), (std::vector<std::string>{"k8s"}));
  EXPECT_EQ(term_alias("postgres"), std::optional<std::string_view>("postgresql"));
  EXPECT_EQ(term_alias("postgresql"), std::nullopt);
}

// "login" joins "auth" (a fixed synonym table), so "Add OAuth login" reaches an auth skill whose
// texts never say "login"; a word that is no synonym adds nothing.
TEST(CatalogPorts, ASynonymJoinsTheWordItStandsBeside) {
  TempDir temp;
  fs::create_directories(temp / "catalog" / "skills" / "auth-implementation-patterns");
  std::ofstream(temp / "catalog" / "skills" / "auth-implementation-patterns" / "SKILL.md")
      << "---\nname: auth-implementation-patterns\ndescription: Sessions, tokens and OAuth2 "
         "flows.\n---\nBody\n";
  init_state_dir(temp / "state");
  import_catalog(temp / "catalog", temp / "state");
  const CatalogVocabulary vocabulary(*ImportedCatalog::open(temp / "state"));
  EXPECT_EQ(vocabulary.filter({"Add", "Google", "login"}), std::vector<std::string>{"auth"});
  EXPECT_EQ(vocabulary.filter({"signin", "SSO"}), std::vector<std::string>{"auth"});
  const std::vector<std::string> plain = vocabulary.filter({"logout", "sessions"});
  EXPECT_FALSE(plain.empty());
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "auth"), 0);
}

TEST(CatalogPorts, TheExampleWorkFileResolvesToThePdfExportSkill) {
  Imported imported;
  const CurrentWork work =
      current_work_from_json(read(fs::path(CTX_EXAMPLES_DIR) / "work/pdf-export.json"));
  EXPECT_EQ(work.tenant, "local");
  EXPECT_EQ(work.requested_limit, 3);
  CatalogWorkAuthority authority(imported.catalog);
  authority.register_work("work-file", work);
  const auto resolved = authority.resolve("work-file");
  const auto graph =
      store::GraphStore::open(imported.catalog->graph_path(), imported.catalog->graph_sha256());
  CatalogMaterialPort material(imported.catalog);
  engine::planning::CatalogCandidateSource source(*graph, &material, nullptr);
  const auto candidates = source.retrieve(resolved.observation);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front().capability_id, "skill:pdf-export");
}

// The session's project re-ranks what the work's words retrieve: the same prompt puts the Django
// skill first in a project whose requirements.txt names Django and the Express one first in a
// project whose package.json depends on express; only catalog terms join the observation, and
// work without signals (chit-chat) gets none.
TEST(CatalogPorts, AProjectsManifestChangesTheRanking) {
  TempDir temp;
  const auto skill = [&](const std::string& name, const std::string& description) {
    fs::create_directories(temp / "catalog" / "skills" / name);
    std::ofstream(temp / "catalog" / "skills" / name / "SKILL.md")
        << "---\nname: " << name << "\ndescription: " << description << "\n---\nBody\n";
  };
  skill("django-rest-api", "Build REST API endpoints with Django views and serializers.");
  skill("express-rest-api", "Build REST API endpoints with Express routes and middleware.");
  skill("pdf-export", "Export reports as PDF documents.");
  skill("django-celery-tasks", "Run background tasks from Django with Celery workers.");
  skill("celery-beat", "Schedule periodic jobs with Celery beat.");
  init_state_dir(temp / "state");
  import_catalog(temp / "catalog", temp / "state");
  const auto catalog = ImportedCatalog::open(temp / "state");
  fs::create_directories(temp / "python-project");
  std::ofstream(temp / "python-project" / "requirements.txt")
      << "Django>=4.2\ncelery\nunheard-of-lib\n";
  fs::create_directories(temp / "node-project");
  std::ofstream(temp / "node-project" / "package.json")
      << R"({"dependencies": {"express": "^4", "left-pad": "1"}})";

  CatalogWorkAuthority authority(catalog);
  const auto graph = store::GraphStore::open(catalog->graph_path(), catalog->graph_sha256());
  CatalogMaterialPort material(catalog);
  engine::planning::CatalogCandidateSource source(*graph, &material, nullptr);
  const auto resolve = [&](const std::string& session, const fs::path& project,
                           std::vector<std::string> words) {
    CurrentWork work{"tenant-1", "workspace-1", "repository-1", session, std::move(words), {}, 3};
    work.project_dir = project;
    authority.register_work("work-" + session, work);
    return authority.resolve("work-" + session);
  };
  const auto first = [&](const ResolvedCurrentWork& resolved) {
    const auto candidates = source.retrieve(resolved.observation);
    return candidates.empty() ? std::string() : candidates.front().capability_id;
  };
  const std::vector<std::string> prompt = {"add", "a", "rest", "api", "endpoint"};
  const auto in_python = resolve("s1", temp / "python-project", prompt);
  const auto in_node = resolve("s2", temp / "node-project", prompt);
  EXPECT_EQ(in_python.observation.languages, (std::vector<std::string>{"celery", "django"}));
  EXPECT_EQ(in_node.observation.languages, std::vector<std::string>{"express"});
  EXPECT_EQ(first(in_python), "skill:django-rest-api");
  EXPECT_EQ(first(in_node), "skill:express-rest-api");
  // The surrogate differs with the project (a new logical query), and holds catalog terms only.
  EXPECT_NE(in_python.surrogate.value_digest(), in_node.surrogate.value_digest());
  for (const auto& resolved : {in_python, in_node}) {
    const std::string text = resolved.surrogate.value().dump();
    for (const char* never : {"javascript", "python", "unheard", "left-pad", "project"}) {
      EXPECT_EQ(text.find(never), std::string::npos) << never << " in " << text;
    }
  }
  // Read once per session: a manifest changed later in the session changes nothing.
  std::ofstream(temp / "python-project" / "requirements.txt") << "express\n";
  EXPECT_EQ(resolve("s1", temp / "python-project", prompt).observation.languages,
            (std::vector<std::string>{"celery", "django"}));
  // A project's framework alone is no evidence: other work in that project plans without it.
  std::ofstream(temp / "python-project" / "requirements.txt") << "Django\ncelery\n";
  CatalogBenefitFactsPort facts(catalog);
  const auto relevance = [&](const std::vector<std::string>& words) {
    const auto resolved = resolve("s4", temp / "python-project", words);
    EXPECT_EQ(resolved.observation.languages, (std::vector<std::string>{"celery", "django"}));
    std::map<std::string, std::int64_t> out;
    for (const auto& candidate : source.retrieve(resolved.observation)) {
      const auto benefit = facts.benefit_candidate(candidate, resolved.observation);
      if (benefit) out[candidate.capability_id] = benefit->relevance_ppm;
    }
    return out;
  };
  const auto pdf = relevance({"export", "pdf"});
  EXPECT_GT(pdf.at("skill:pdf-export"), 0);
  // skill:django-celery-tasks matches two of the project's terms and none of the work's words.
  EXPECT_EQ(pdf.count("skill:django-celery-tasks") ? pdf.at("skill:django-celery-tasks") : 0, 0);
  EXPECT_GT(relevance(prompt).at("skill:django-rest-api"), 0);
  // One word of the work and one of the project's terms are two matches: "schedule" alone is one
  // incidental word; in a Celery project it is the project's scheduler.
  EXPECT_GT(relevance({"schedule", "reports"}).at("skill:celery-beat"), 0);
  CurrentWork outside{"tenant-1", "workspace-1", "repository-1", "s5", {"schedule", "reports"}, {},
                      3};
  authority.register_work("work-s5", outside);
  const auto no_project = authority.resolve("work-s5");
  for (const auto& candidate : source.retrieve(no_project.observation)) {
    if (candidate.capability_id != "skill:celery-beat") continue;
    EXPECT_EQ(facts.benefit_candidate(candidate, no_project.observation)->relevance_ppm, 0);
  }
  // Chit-chat in a project: no signals, no project terms, nothing retrieved.
  const auto chat = resolve("s3", temp / "python-project", {"thanks", "ok"});
  EXPECT_TRUE(chat.observation.signals.empty());
  EXPECT_TRUE(chat.observation.languages.empty());
  EXPECT_TRUE(source.retrieve(chat.observation).empty());
}

// A project declares more catalog terms than a work's languages hold (planning::kMaxLanguages):
// the kept ones are those the fewest entries use, not the alphabetically first.
TEST(CatalogPorts, AProjectsMostInformativeTermsAreKept) {
  TempDir temp;
  const auto skill = [&](const std::string& name, const std::string& description) {
    fs::create_directories(temp / "catalog" / "skills" / name);
    std::ofstream(temp / "catalog" / "skills" / name / "SKILL.md")
        << "---\nname: " << name << "\ndescription: " << description << "\n---\nBody\n";
  };
  const std::string common = "axios babel chalk dayjs eslint jest lodash moment nodemon prettier";
  for (const char* name : {"tooling-one", "tooling-two", "tooling-three"}) {
    skill(name, "Configure " + common + " for the build.");
  }
  skill("yup-schemas", "Validate form input schemas with yup.");
  skill("zod-schemas", "Validate form input schemas with zod.");
  init_state_dir(temp / "state");
  import_catalog(temp / "catalog", temp / "state");
  const auto catalog = ImportedCatalog::open(temp / "state");
  fs::create_directories(temp / "project");
  std::ofstream(temp / "project" / "package.json")
      << R"({"dependencies": {"axios": "1", "babel": "1", "chalk": "1", "dayjs": "1",
             "eslint": "1", "jest": "1", "lodash": "1", "moment": "1", "nodemon": "1",
             "prettier": "1", "zod": "3"}})";

  CatalogVocabulary vocabulary(*catalog);
  EXPECT_EQ(vocabulary.entries_using("zod"), 1u);
  EXPECT_EQ(vocabulary.entries_using("lodash"), 3u);
  EXPECT_EQ(vocabulary.entries_using("unheard"), 0u);
  EXPECT_EQ(vocabulary.most_informative({"lodash", "Zod", "axios", "the", "zod"}, 2),
            (std::vector<std::string>{"zod", "axios"}));
  EXPECT_EQ(vocabulary.filter({"lodash", "zod", "axios"}, 2),
            (std::vector<std::string>{"axios", "zod"}));

  CatalogWorkAuthority authority(catalog);
  const auto graph = store::GraphStore::open(catalog->graph_path(), catalog->graph_sha256());
  engine::planning::CatalogCandidateSource source(*graph, nullptr, nullptr);
  const auto resolve = [&](const std::string& session, const fs::path& project) {
    CurrentWork work{"tenant-1",
                     "workspace-1",
                     "repository-1",
                     session,
                     {"validate", "form", "input", "schemas"},
                     {},
                     3};
    work.project_dir = project;
    authority.register_work("work-" + session, work);
    return authority.resolve("work-" + session);
  };
  const auto in_project = resolve("s1", temp / "project");
  ASSERT_EQ(in_project.observation.languages.size(), 10u);
  EXPECT_TRUE(std::binary_search(in_project.observation.languages.begin(),
                                 in_project.observation.languages.end(), std::string("zod")));
  // The alphabetically last of the common terms is the one left out.
  EXPECT_FALSE(std::binary_search(in_project.observation.languages.begin(),
                                  in_project.observation.languages.end(), std::string("prettier")));
  const auto first = [&](const ResolvedCurrentWork& resolved) {
    const auto candidates = source.retrieve(resolved.observation);
    return candidates.empty() ? std::string() : candidates.front().capability_id;
  };
  EXPECT_EQ(first(resolve("s2", fs::path())), "skill:yup-schemas");  // a tie: label order
  EXPECT_EQ(first(in_project), "skill:zod-schemas");
}

TEST(CatalogPorts, CurrentWorkFilesAreReadStrictly) {
  const std::string session =
      R"("session":{"tenant":"t","workspace":"w","repository":"r","session":"s"})";
  const CurrentWork work = current_work_from_json("{" + session + R"(,"signals":["pdf"]})");
  EXPECT_EQ(work.signals, std::vector<std::string>{"pdf"});
  EXPECT_EQ(work.requested_limit, 5);
  EXPECT_TRUE(work.languages.empty());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[]", "must be a JSON object"},
      {"{", "not valid JSON"},
      {"{" + session + "}", "signals is required"},
      {R"({"signals":[]})", "session is required"},
      {"{" + session + R"(,"signals":[],"prompt":"secret"})", "not allowed"},
      {"{" + session + R"(,"signals":[1]})", "strings of 1-128"},
      {"{" + session + R"(,"signals":[],"requested_limit":6})", "requested_limit"},
      {"{" + session + R"(,"signals":[],"requested_limit":"5"})", "requested_limit"},
      {R"({"session":{"tenant":"t","workspace":"w","repository":"r"},"signals":[]})",
       "session.session is required"},
      {R"({"session":{"tenant":"a b","workspace":"w","repository":"r","session":"s"},)"
       R"("signals":[]})",
       "opaque tokens"},
  };
  for (const auto& [input, keyword] : bad) {
    const std::string& text = input;  // a plain name: clang before 16 cannot capture a binding
    SCOPED_TRACE(text);
    CTX_EXPECT_THROW(current_work_from_json(text), InvalidArgument, keyword);
  }
  // Errors never quote the input.
  try {
    current_work_from_json("{" + session + R"(,"signals":[],"prompt":"secret"})");
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("prompt"), std::string::npos);
  }
}

TEST(CatalogPorts, AnAlteredSkillObjectRefusesTheMaterialPort) {
  Imported imported;
  const std::string sha = imported.catalog->find("skill:csv-cleanup")->primary.sha256;
  const fs::path object = imported.temp / "state/catalog/objects" / sha;
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::trunc) << "tampered";
  CTX_EXPECT_THROW(CatalogMaterialPort port(imported.catalog), DataLoss, "does not match");
}

TEST(CatalogPorts, AnAlteredTreeRootObjectRefusesTheMaterialPort) {
  Imported imported;
  const auto& tree = imported.catalog->find("skill:pdf-export")->tree;
  ASSERT_TRUE(tree.has_value());
  const fs::path object = imported.temp / "state/catalog/objects" / tree->sha256;
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::trunc) << "tampered";
  CTX_EXPECT_THROW(CatalogMaterialPort port(imported.catalog), DataLoss, "does not match");
}

// An agent file over the engine's 6000-byte material bound is a one-file tree (AGENT.md): the
// install bundle's result material is that tree's root, so the agent is installable; an agent
// at the bound keeps its file as the material.
TEST(CatalogPorts, AnAgentOverTheMaterialBoundIsInstallableByItsTreeRoot) {
  TempDir temp;
  fs::create_directories(temp / "catalog" / "agents");
  const auto agent = [&](const std::string& name, std::size_t bytes) {
    std::string text = "---\nname: " + name + "\ndescription: Reviews Go code.\ntools: Read\n---\n";
    while (text.size() < bytes) text += "Check every exported name.\n";
    text.resize(bytes);
    std::ofstream(temp / "catalog" / "agents" / (name + ".md"), std::ios::binary) << text;
    return text;
  };
  const std::string large = agent("golang-pro", 6001);
  const std::string plain = agent("rust-pro", 6000);
  init_state_dir(temp / "state");
  import_catalog(temp / "catalog", temp / "state");
  const auto catalog = ImportedCatalog::open(temp / "state");
  CatalogInstallBundlePort install(catalog);

  const std::vector<sdk::TreeFile> files{{sdk::kAgentFile, large.size(), core::sha256_hex(large)}};
  const std::string root =
      sdk::tree_root_text(files, core::sha256_hex(sdk::tree_manifest_text(files, sdk::kAgentFile)));
  const CatalogEntry* entry = catalog->find("agent:golang-pro");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->tree.has_value());
  EXPECT_EQ(entry->tree->sha256, core::sha256_hex(root));
  EXPECT_EQ(tree_paths(*entry), std::vector<std::string>{"AGENT.md"});
  EXPECT_EQ(catalog->read_object(entry->tree->sha256), root);
  const auto bundle = install.describe_bundle("agent:golang-pro", engine::CapabilityKind::kAgent);
  ASSERT_TRUE(bundle.has_value());
  const auto material = engine::MaterialIdentity::create(
      "agent:golang-pro", engine::CapabilityKind::kAgent, core::sha256_hex(root),
      static_cast<std::int64_t>(root.size()));
  EXPECT_EQ(bundle->result_material(), material);
  EXPECT_EQ(bundle->descriptor().installer_id(), "ctx-agent-installer-v1");

  EXPECT_FALSE(catalog->find("agent:rust-pro")->tree.has_value());
  const auto at_bound = install.describe_bundle("agent:rust-pro", engine::CapabilityKind::kAgent);
  ASSERT_TRUE(at_bound.has_value());
  EXPECT_EQ(at_bound->result_material().content_sha256(), core::sha256_hex(plain));
}

}  // namespace
}  // namespace ctx::runtime
