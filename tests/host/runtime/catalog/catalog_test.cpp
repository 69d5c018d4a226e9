// The catalog importer on real temp directories: every malformed-entry rule is one typed error
// naming the file with nothing written; symlinks are refused; re-import is idempotent; the
// imported graph store serves the planner's candidate retrieval; state dir init.
#include "host/runtime/catalog/catalog.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "host/app/state_layout.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/posix_state_fs.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef CTX_EXAMPLES_DIR
#error "CTX_EXAMPLES_DIR must be defined by the build"
#endif

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string skill_md(const std::string& name, const std::string& description,
                     const std::string& extra = "") {
  return "---\nname: " + name + "\ndescription: " + description + "\n" + extra + "---\n\n# " +
         name + "\n\nBody.\n";
}

// A small valid catalog: two skills (one with a resource), an agent, an mcp server, a harness.
void write_valid_catalog(const fs::path& root) {
  write(root / "skills/pdf-export/SKILL.md", skill_md("pdf-export", "Export reports to PDF files.",
                                                      "metadata:\n  tags: [pdf, export]\n"));
  write(root / "skills/pdf-export/scripts/export.py", "print('export')\n");
  write(root / "skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "Clean CSV data."));
  write(root / "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep\n---\nReview.\n");
  write(
      root / "mcp-servers/github.json",
      R"({"name":"github","description":"GitHub issues.","command":"npx",)"
      R"("args":["-y","server-github"],"env":{"GITHUB_TOKEN":"${GITHUB_TOKEN}"},)"
      R"("tags":["github"]})");
  write(root / "harnesses/python-runner.json",
        R"({"name":"python-runner","description":"Runs python.","tags":["python"]})");
}

// Every path under `dir` with its mode and bytes (symlinks by target).
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(entry.path().c_str(), &st);
    std::string value = std::to_string(st.st_mode) + ":";
    if (S_ISREG(st.st_mode)) value += core::sha256_hex(read(entry.path()));
    out[fs::relative(entry.path(), dir).string()] = value;
  }
  return out;
}

struct Fixture {
  TempDir temp;
  fs::path catalog = temp / "catalog";
  fs::path state = temp / "state";
  Fixture() {
    write_valid_catalog(catalog);
    init_state_dir(state);
  }
};

TEST(CatalogImport, ImportsEveryKindWithContentAddressedObjects) {
  Fixture f;
  const auto result = import_catalog(f.catalog, f.state);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.entry_count, 5u);
  const auto catalog = ImportedCatalog::open(f.state);
  EXPECT_EQ(catalog->catalog_digest(), result.catalog_digest);
  std::vector<std::string> ids;
  for (const auto& e : catalog->entries()) ids.push_back(e.capability_id());
  EXPECT_EQ(
      ids, (std::vector<std::string>{"agent:reviewer", "harness:python-runner", "mcp-server:github",
                                     "skill:csv-cleanup", "skill:pdf-export"}));
  const CatalogEntry* pdf = catalog->find("skill:pdf-export");
  ASSERT_NE(pdf, nullptr);
  ASSERT_EQ(pdf->files.size(), 2u);
  EXPECT_EQ(pdf->files[0].path, "skills/pdf-export/SKILL.md");
  EXPECT_EQ(pdf->files[1].path, "skills/pdf-export/scripts/export.py");
  EXPECT_EQ(pdf->tags, (std::vector<std::string>{"export", "pdf"}));
  for (const auto& file : pdf->files) {
    const std::string bytes = catalog->read_object(file.sha256);
    EXPECT_EQ(bytes, read(f.catalog / file.path));
    struct stat st {};
    ASSERT_EQ(::lstat((f.state / "catalog/objects" / file.sha256).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0444u);
  }
  const CatalogEntry* github = catalog->find("mcp-server:github");
  ASSERT_NE(github, nullptr);
  EXPECT_EQ(github->env_names, std::vector<std::string>{"GITHUB_TOKEN"});
  EXPECT_EQ(*github->command, "npx");
  EXPECT_EQ(catalog->find("agent:reviewer")->tools, (std::vector<std::string>{"Read", "Grep"}));
  // The graph artifact is pinned by its sha256 and opens through the real graph store.
  EXPECT_EQ(core::sha256_hex(read(catalog->graph_path())), catalog->graph_sha256());
  const auto graph = store::GraphStore::open(catalog->graph_path(), catalog->graph_sha256());
  EXPECT_EQ(graph->node_count(), 5);
}

// A skill folder with resources: its material is the tree root over its manifest (plugin_abi.h
// "Tree material", both spelled out here), stored as one more object; a SKILL.md-only skill keeps
// the plain form and its manifest entry has exactly the keys it had before trees existed.
TEST(CatalogImport, ASkillWithResourcesStoresItsTreeRootAsItsMaterial) {
  Fixture f;
  import_catalog(f.catalog, f.state);
  const auto catalog = ImportedCatalog::open(f.state);
  const CatalogEntry* pdf = catalog->find("skill:pdf-export");
  ASSERT_NE(pdf, nullptr);
  ASSERT_TRUE(pdf->tree.has_value());
  const std::string skill = read(f.catalog / "skills/pdf-export/SKILL.md");
  const std::string script = read(f.catalog / "skills/pdf-export/scripts/export.py");
  const std::string manifest =
      "{\"files\":[{\"bytes\":" + std::to_string(skill.size()) +
      ",\"path\":\"SKILL.md\",\"sha256\":\"" + core::sha256_hex(skill) + "\"},{\"bytes\":" +
      std::to_string(script.size()) + ",\"path\":\"scripts/export.py\",\"sha256\":\"" +
      core::sha256_hex(script) + "\"}],\"schema\":\"ctx.skill-tree-v1\"}";
  const std::string root = "{\"bytes\":" + std::to_string(skill.size() + script.size()) +
                           ",\"files\":2,\"manifest_sha256\":\"" + core::sha256_hex(manifest) +
                           "\",\"schema\":\"ctx.skill-tree-root-v1\"}";
  EXPECT_EQ(pdf->tree->path, "skills/pdf-export");
  EXPECT_EQ(pdf->tree->sha256, core::sha256_hex(root));
  EXPECT_EQ(pdf->tree->bytes, static_cast<std::int64_t>(root.size()));
  EXPECT_EQ(catalog->read_object(pdf->tree->sha256), root);
  EXPECT_EQ(pdf->primary.sha256, core::sha256_hex(skill));  // SKILL.md is still the primary file

  const CatalogEntry* csv = catalog->find("skill:csv-cleanup");
  ASSERT_NE(csv, nullptr);
  EXPECT_FALSE(csv->tree.has_value());
  const core::Json content = catalog_content_json(catalog->entries());
  std::vector<std::string> keys;
  for (const auto& item : content.at("entries")) {
    if (item.at("capability_id") != "skill:csv-cleanup") continue;
    for (const auto& [key, value] : item.items()) keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"args", "capability_id", "command", "description",
                                            "env_names", "files", "kind", "name", "primary",
                                            "tags", "terms", "tools", "url"}));
}

// The catalog's resource cap is the shared tree file cap (ctx/sdk/skill_tree.hpp) that the
// skill-installer's default max_file_bytes is
// (SkillStoreTest.DefaultCapsAcceptATreeAtTheSharedBounds): a resource of exactly that size
// imports as part of its tree.
TEST(CatalogImport, AResourceAtTheSharedTreeFileCapImports) {
  static_assert(kMaxResourceFileBytes == sdk::kMaxTreeFileBytes);
  static_assert(kMaxSkillFiles == sdk::kMaxTreeFiles && kMaxSkillTreeBytes == sdk::kMaxTreeBytes);
  Fixture f;
  const std::string at_cap(kMaxResourceFileBytes, 'r');
  write(f.catalog / "skills/pdf-export/references/big.bin", at_cap);
  import_catalog(f.catalog, f.state);
  const auto catalog = ImportedCatalog::open(f.state);
  const CatalogEntry* pdf = catalog->find("skill:pdf-export");
  ASSERT_NE(pdf, nullptr);
  ASSERT_TRUE(pdf->tree.has_value());
  const auto big = std::find_if(pdf->files.begin(), pdf->files.end(), [](const CatalogFile& file) {
    return file.path == "skills/pdf-export/references/big.bin";
  });
  ASSERT_NE(big, pdf->files.end());
  EXPECT_EQ(big->bytes, static_cast<std::int64_t>(kMaxResourceFileBytes));
  EXPECT_EQ(big->sha256, core::sha256_hex(at_cap));
  EXPECT_NE(catalog->read_object(pdf->tree->sha256).find("\"files\":3,"), std::string::npos);
}

// Only a SKILL.md-only folder of at most 6000 bytes keeps the plain form; a larger SKILL.md is a
// one-file tree (its root is its material), so every skill within the import caps has material
// within the engine's bound. 200 files: the root stays fixed-size.
TEST(CatalogImport, ALargeSkillMdAndAManyFileSkillAreTreesWithBoundedMaterial) {
  Fixture f;
  const std::string header = skill_md("csv-cleanup", "Clean CSV data.");
  write(f.catalog / "skills/csv-cleanup/SKILL.md", header + std::string(6000 - header.size(), 'a'));
  import_catalog(f.catalog, f.state);
  EXPECT_FALSE(ImportedCatalog::open(f.state)->find("skill:csv-cleanup")->tree.has_value());

  const std::string big = header + std::string(12000 - header.size(), 'a');
  write(f.catalog / "skills/csv-cleanup/SKILL.md", big);
  for (int i = 0; i < 199; ++i) {
    write(f.catalog / ("skills/pdf-export/references/part-" + std::to_string(i) + ".md"),
          "part " + std::to_string(i) + "\n");
  }
  import_catalog(f.catalog, f.state);
  const auto catalog = ImportedCatalog::open(f.state);
  const CatalogEntry* csv = catalog->find("skill:csv-cleanup");
  ASSERT_NE(csv, nullptr);
  ASSERT_TRUE(csv->tree.has_value());
  const std::string manifest = "{\"files\":[{\"bytes\":12000,\"path\":\"SKILL.md\",\"sha256\":\"" +
                               core::sha256_hex(big) + "\"}],\"schema\":\"ctx.skill-tree-v1\"}";
  const std::string root = "{\"bytes\":12000,\"files\":1,\"manifest_sha256\":\"" +
                           core::sha256_hex(manifest) +
                           "\",\"schema\":\"ctx.skill-tree-root-v1\"}";
  EXPECT_EQ(csv->tree->sha256, core::sha256_hex(root));
  EXPECT_EQ(catalog->read_object(csv->tree->sha256), root);
  EXPECT_EQ(csv->primary.sha256, core::sha256_hex(big));

  const CatalogEntry* pdf = catalog->find("skill:pdf-export");
  ASSERT_NE(pdf, nullptr);
  ASSERT_TRUE(pdf->tree.has_value());
  EXPECT_EQ(pdf->files.size(), 201u);
  EXPECT_LE(pdf->tree->bytes, static_cast<std::int64_t>(sdk::kMaxTreeRootChars));
  EXPECT_NE(catalog->read_object(pdf->tree->sha256).find("\"files\":201,"), std::string::npos);
}

// The planner gets the whole entry: label, folder and when_to_use survive the manifest, and
// when_to_use words are graph terms.
TEST(CatalogImport, EntriesCarryLabelFolderAndWhenToUseThroughTheManifest) {
  Fixture f;
  write(f.catalog / "skills/csv-cleanup/SKILL.md",
        skill_md("csv-cleanup", "Clean CSV data.", "when_to_use: Spreadsheets with stray quotes\n"));
  import_catalog(f.catalog, f.state);
  const auto catalog = ImportedCatalog::open(f.state);
  const CatalogEntry* csv = catalog->find("skill:csv-cleanup");
  ASSERT_NE(csv, nullptr);
  EXPECT_EQ(csv->label, "csv-cleanup");
  EXPECT_EQ(csv->folder, "csv-cleanup");
  EXPECT_EQ(csv->when_to_use, "Spreadsheets with stray quotes");
  EXPECT_NE(std::find(csv->terms.begin(), csv->terms.end(), "spreadsheets"), csv->terms.end());
  const CatalogEntry* reviewer = catalog->find("agent:reviewer");
  ASSERT_NE(reviewer, nullptr);
  EXPECT_EQ(reviewer->folder, "reviewer");
  EXPECT_TRUE(reviewer->when_to_use.empty());
}

TEST(CatalogImport, ImportsTheExampleCatalog) {
  TempDir temp;
  init_state_dir(temp / "state");
  const auto result = import_catalog(fs::path(CTX_EXAMPLES_DIR) / "catalog", temp / "state");
  EXPECT_GE(result.entry_count, 12u);
  std::map<engine::CapabilityKind, int> kinds;
  const auto catalog = ImportedCatalog::open(temp / "state");
  for (const auto& e : catalog->entries()) ++kinds[e.kind];
  EXPECT_EQ(kinds.size(), 4u);
  EXPECT_NE(catalog->find("skill:pdf-export"), nullptr);
}

// One rule no host would load a file under: the mutation applied to a valid catalog, the file the
// skip line must name and a keyword of its rule. (Per-rule fixtures modelled on published
// catalogs: catalog_import_rules_test.cpp.)
struct BadCase {
  std::string label;
  std::function<void(const fs::path&)> mutate;
  std::string file;
  std::string rule;
};

std::vector<BadCase> bad_cases() {
  const auto put = [](std::string rel, std::string text) {
    return [rel, text](const fs::path& root) { write(root / rel, text); };
  };
  const std::string long_name(65, 'a');
  return {
      {"folder name with capitals", put("skills/Bad/SKILL.md", skill_md("bad", "x")), "skills/Bad",
       "1-64 of [a-z0-9-]"},
      {"folder name with double hyphen", put("skills/a--b/SKILL.md", skill_md("a--b", "x")),
       "skills/a--b", "double '-'"},
      {"folder name too long", put("skills/" + long_name + "/SKILL.md", skill_md("x", "x")),
       "skills/" + long_name, "1-64"},
      {"missing description",
       put("skills/csv-cleanup/SKILL.md", "---\nname: csv-cleanup\n---\nBody\n"),
       "skills/csv-cleanup/SKILL.md", "must have a description"},
      {"empty description", put("skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "\"\"")),
       "skills/csv-cleanup/SKILL.md", "must not be empty"},
      {"invalid yaml",
       put("skills/csv-cleanup/SKILL.md", "---\nname: [csv-cleanup\ndescription: x\n---\n"),
       "skills/csv-cleanup/SKILL.md", "not valid YAML"},
      {"no frontmatter", put("skills/csv-cleanup/SKILL.md", "# just markdown\n"),
       "skills/csv-cleanup/SKILL.md", "--- frontmatter"},
      {"unterminated frontmatter",
       put("skills/csv-cleanup/SKILL.md", "---\nname: csv-cleanup\ndescription: x\n"),
       "skills/csv-cleanup/SKILL.md", "must end with a ---"},
      {"resource name a skill tree cannot hold",
       put("skills/pdf-export/scripts/bad name.py", "print()\n"),
       "skills/pdf-export/scripts/bad name.py", "skill file names must match"},
      {"resource over the shared tree file cap",
       put("skills/pdf-export/references/big.bin", std::string(kMaxResourceFileBytes + 1, 'x')),
       "skills/pdf-export/references/big.bin", "larger than 16777216"},
      {"skill files over the shared tree cap",  // four resources at the file cap plus SKILL.md
       [](const fs::path& root) {
         const std::string at_cap(kMaxResourceFileBytes, 'x');
         for (int i = 0; i < 4; ++i) {
           write(root / ("skills/pdf-export/data/part-" + std::to_string(i) + ".bin"), at_cap);
         }
       },
       "skills/pdf-export", "at most 64 MiB together"},
      {"SKILL.md over 1 MiB",
       put("skills/csv-cleanup/SKILL.md",
           skill_md("csv-cleanup", "x") + std::string(kMaxSkillMdBytes, 'x')),
       "skills/csv-cleanup/SKILL.md", "larger than 1048576"},
      {"invalid utf-8", put("skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "caf\xC3")),
       "skills/csv-cleanup/SKILL.md", "valid UTF-8"},
      {"agent without description", put("agents/reviewer.md", "---\nname: reviewer\n---\n"),
       "agents/reviewer.md", "must have a description"},
      {"agent tools not strings",
       put("agents/reviewer.md", "---\nname: reviewer\ndescription: x\ntools: {a: b}\n---\n"),
       "agents/reviewer.md", "tools must be a list"},
      {"mcp invalid json", put("mcp-servers/github.json", "{\"name\":"), "mcp-servers/github.json",
       "not valid JSON"},
      {"mcp duplicate key",
       put("mcp-servers/github.json",
           R"({"name":"github","name":"github","description":"x","command":"npx"})"),
       "mcp-servers/github.json", "repeats a key"},
      {"mcp without command or url",
       put("mcp-servers/github.json", R"({"name":"github","description":"x"})"),
       "mcp-servers/github.json", "needs a command or a url"},
      {"mcp env value not a string",
       put("mcp-servers/github.json",
           R"({"name":"github","description":"x","command":"npx","env":{"A":1}})"),
       "mcp-servers/github.json", "env must be an object of strings"},
      {"mcp args not strings",
       put("mcp-servers/github.json",
           R"({"name":"github","description":"x","command":"npx","args":[1]})"),
       "mcp-servers/github.json", "args must be an array of strings"},
      {"mcp not an object", put("mcp-servers/github.json", "[]"), "mcp-servers/github.json",
       "one JSON object"},
      {"harness description wrong type",
       put("harnesses/python-runner.json", R"({"name":"python-runner","description":3})"),
       "harnesses/python-runner.json", "description must be a string"},
  };
}

// Strict: each rule is one typed error naming the file, and nothing is written. Default: the
// file is one skip line and every other entry imports.
TEST(CatalogImport, EachRuleIsOneSkipLineAndStrictWritesNothing) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.label);
    Fixture f;
    import_catalog(f.catalog, f.state);  // a previous good import must stay exactly as it was
    c.mutate(f.catalog);
    const auto before = tree(f.state);
    try {
      import_catalog(f.catalog, f.state, {}, {.strict = true});
      ADD_FAILURE() << "a strict import accepted a catalog with a skipped file";
    } catch (const CatalogImportError& e) {
      ASSERT_EQ(e.problems().size(), 1u) << e.what();
      EXPECT_EQ(e.problems()[0].file, c.file);
      EXPECT_THAT(e.problems()[0].rule, ::testing::HasSubstr(c.rule));
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(c.file));
      EXPECT_THAT(std::string(e.what()),
                  ::testing::Not(::testing::HasSubstr(f.temp.path().string())));
    }
    EXPECT_EQ(tree(f.state), before);
    const auto result = import_catalog(f.catalog, f.state);
    ASSERT_EQ(result.skipped.size(), 1u);
    EXPECT_EQ(result.skipped[0].file, c.file);
    const auto catalog = ImportedCatalog::open(f.state);
    const std::string file = c.file;
    const bool in_entry = std::any_of(
        catalog->entries().begin(), catalog->entries().end(), [&](const CatalogEntry& e) {
          return std::any_of(e.files.begin(), e.files.end(), [&](const CatalogFile& x) {
            return x.path == file || x.path.rfind(file + "/", 0) == 0;
          });
        });
    EXPECT_FALSE(in_entry);
    EXPECT_GE(catalog->entries().size(), 3u);  // the others imported
  }
}

TEST(CatalogImport, EveryBadFileIsReportedAndAFirstStrictImportWritesNothing) {
  Fixture f;
  write(f.catalog / "skills/csv-cleanup/SKILL.md", "no frontmatter\n");
  write(f.catalog / "harnesses/python-runner.json", "{}");
  const auto before = tree(f.state);
  try {
    import_catalog(f.catalog, f.state, {}, {.strict = true});
    ADD_FAILURE() << "import accepted a malformed catalog";
  } catch (const CatalogImportError& e) {
    ASSERT_EQ(e.problems().size(), 2u);
    EXPECT_EQ(e.problems()[0].file, "harnesses/python-runner.json");
    EXPECT_EQ(e.problems()[1].file, "skills/csv-cleanup/SKILL.md");
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("and 1 more invalid file"));
  }
  EXPECT_EQ(tree(f.state), before);
  EXPECT_FALSE(fs::exists(f.state / "catalog"));
  CTX_EXPECT_THROW(ImportedCatalog::open(f.state), NotFound, "no catalog");
}

TEST(CatalogImport, SymlinksAreNeverFollowedAndEachIsASkipLine) {
  struct LinkCase {
    std::string rel;  // the link, relative to the catalog
    std::string target;
    std::string skipped;  // the entry it skips, or empty
  };
  const std::vector<LinkCase> cases = {
      {"skills/pdf-export/scripts/linked.py", "export.py", "skill:pdf-export"},
      {"skills/linked-skill", "pdf-export", ""},
      {"agents/linked.md", "reviewer.md", ""},
      {"mcp-servers/linked.json", "github.json", ""},
      {"skills/csv-cleanup/outside", "/etc", "skill:csv-cleanup"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rel);
    Fixture f;
    fs::create_symlink(c.target, f.catalog / c.rel);
    const auto before = tree(f.state);
    CTX_EXPECT_THROW(import_catalog(f.catalog, f.state, {}, {.strict = true}), CatalogImportError,
                     "symbolic links");
    EXPECT_EQ(tree(f.state), before);
    const auto result = import_catalog(f.catalog, f.state);
    ASSERT_EQ(result.skipped.size(), 1u);
    EXPECT_EQ(result.skipped[0].file, c.rel);
    EXPECT_THAT(result.skipped[0].rule, ::testing::HasSubstr("symbolic links"));
    EXPECT_EQ(result.entry_count, c.skipped.empty() ? 5u : 4u);
    if (!c.skipped.empty()) {
      EXPECT_EQ(ImportedCatalog::open(f.state)->find(c.skipped), nullptr);
    }
  }
  // SKILL.md itself a symlink skips its skill; the catalog root a symlink is refused whole.
  Fixture f;
  fs::rename(f.catalog / "skills/csv-cleanup/SKILL.md", f.temp / "SKILL.md");
  fs::create_symlink(f.temp / "SKILL.md", f.catalog / "skills/csv-cleanup/SKILL.md");
  const auto result = import_catalog(f.catalog, f.state);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].file, "skills/csv-cleanup/SKILL.md");
  Fixture g;
  fs::create_symlink(g.catalog, g.temp / "catalog-link");
  CTX_EXPECT_THROW(import_catalog(g.temp / "catalog-link", g.state), CatalogImportError,
                   "symbolic links");
  EXPECT_FALSE(fs::exists(g.state / "catalog"));
}

TEST(CatalogImport, ReimportIsIdempotentAndAChangeSwitchesAtomically) {
  Fixture f;
  const auto first = import_catalog(f.catalog, f.state);
  const auto after_first = tree(f.state);
  const auto second = import_catalog(f.catalog, f.state);
  EXPECT_FALSE(second.changed);
  EXPECT_EQ(second.catalog_digest, first.catalog_digest);
  EXPECT_EQ(second.graph_sha256, first.graph_sha256);
  EXPECT_EQ(tree(f.state), after_first);

  write(f.catalog / "skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "Clean TSV data too."));
  const auto third = import_catalog(f.catalog, f.state);
  EXPECT_TRUE(third.changed);
  EXPECT_NE(third.catalog_digest, first.catalog_digest);
  EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), third.catalog_digest);
  EXPECT_NE(ImportedCatalog::open(f.state)->find("skill:csv-cleanup")->description.find("TSV"),
            std::string::npos);
  // The same catalog in another state dir has the same digests (a function of the bytes only).
  TempDir other;
  init_state_dir(other / "state");
  const auto elsewhere = import_catalog(f.catalog, other / "state");
  EXPECT_EQ(elsewhere.catalog_digest, third.catalog_digest);
  EXPECT_EQ(elsewhere.graph_sha256, third.graph_sha256);
}

TEST(CatalogImport, ACrashAtEveryStepKeepsThePreviousImportAndTheNextImportFinishes) {
  for (const char* point : {"catalog.import.objects-written", "catalog.import.snapshot-staged",
                            "catalog.import.snapshot-placed", "catalog.import.current-staged"}) {
    SCOPED_TRACE(point);
    Fixture f;
    const auto first = import_catalog(f.catalog, f.state);
    write(f.catalog / "skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "Clean TSV too."));
    {
      CrashPointArmed armed(point);
      EXPECT_THROW(import_catalog(f.catalog, f.state), SimulatedCrash);
      EXPECT_TRUE(armed.fired());
    }
    EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), first.catalog_digest);
    const auto second = import_catalog(f.catalog, f.state);
    EXPECT_TRUE(second.changed);
    EXPECT_NE(second.catalog_digest, first.catalog_digest);
    EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), second.catalog_digest);
    // Nothing the crash left behind survives the recovering import.
    for (const auto& [path, _] : tree(f.state / "catalog")) {
      EXPECT_EQ(path.find(".staging-"), std::string::npos) << path;
      EXPECT_EQ(path.find(".tmp-"), std::string::npos) << path;
      EXPECT_EQ(path.find(".CURRENT-"), std::string::npos) << path;
    }
  }
}

// The file system refuses the CURRENT rename (FaultyStateFs): a typed error in the store's words,
// the previous import still current and readable, CURRENT byte-identical; the next import
// switches. A failed fsync of the snapshots directory stops the import before CURRENT moves.
TEST(CatalogImport, AFailedCurrentRenameKeepsThePreviousImportCurrent) {
  Fixture f;
  const auto first = import_catalog(f.catalog, f.state);
  const std::string current = read(f.state / "catalog" / "CURRENT");
  write(f.catalog / "skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "Clean TSV too."));
  ::ctx::testing::FaultyStateFs faulty(store::default_state_fs());
  CatalogImportOptions options;
  options.state_fs = &faulty;
  faulty.fail(core::StateFsStep::kRename, EIO, "CURRENT");
  try {
    import_catalog(f.catalog, f.state, {}, options);
    ADD_FAILURE() << "the failed CURRENT rename was not reported";
  } catch (const core::StateFsError& error) {
    EXPECT_EQ(std::string(error.what()), "catalog store: cannot switch CURRENT");
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
  }
  EXPECT_EQ(faulty.pending(), 0u);
  EXPECT_EQ(read(f.state / "catalog" / "CURRENT"), current);
  EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), first.catalog_digest);
  EXPECT_EQ(ImportedCatalog::open(f.state)->find("skill:csv-cleanup")->description,
            "Clean CSV data.");

  write(f.catalog / "skills/csv-cleanup/SKILL.md", skill_md("csv-cleanup", "Clean TSV, again."));
  faulty.fail(core::StateFsStep::kSyncDir, ENOSPC, "snapshots");
  try {
    import_catalog(f.catalog, f.state, {}, options);
    ADD_FAILURE() << "the failed fsync was not reported";
  } catch (const core::StateFsError& error) {
    EXPECT_EQ(std::string(error.what()), "catalog store: fsync failed");
    EXPECT_EQ(error.code(), ErrorCode::kResourceExhausted);
  }
  EXPECT_EQ(read(f.state / "catalog" / "CURRENT"), current);

  const auto next = import_catalog(f.catalog, f.state, {}, options);
  EXPECT_TRUE(next.changed);
  EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), next.catalog_digest);
  EXPECT_NE(next.catalog_digest, first.catalog_digest);
}

TEST(CatalogImport, ConcurrentImportsOfOneCatalogConverge) {
  Fixture f;
  constexpr int kThreads = 4;
  std::barrier start(kThreads);
  std::vector<CatalogImportResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = import_catalog(f.catalog, f.state);
    });
  }
  for (auto& t : threads) t.join();
  int changed = 0;
  for (const auto& r : results) {
    EXPECT_EQ(r.catalog_digest, results[0].catalog_digest);
    EXPECT_EQ(r.graph_sha256, results[0].graph_sha256);
    changed += r.changed ? 1 : 0;
  }
  EXPECT_EQ(changed, 1);  // exactly one import moved CURRENT; the others found it current
  EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), results[0].catalog_digest);
}

TEST(CatalogImport, TamperedObjectsAndManifestsFailClosed) {
  Fixture f;
  import_catalog(f.catalog, f.state);
  const auto catalog = ImportedCatalog::open(f.state);
  const std::string sha = catalog->find("skill:pdf-export")->primary.sha256;
  const fs::path object = f.state / "catalog/objects" / sha;
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  write(object, "altered");
  CTX_EXPECT_THROW(catalog->read_object(sha), DataLoss, "does not match");
  fs::remove(object);
  CTX_EXPECT_THROW(catalog->read_object(sha), DataLoss, "missing");
  // Re-import repairs the object store.
  EXPECT_FALSE(import_catalog(f.catalog, f.state).changed);
  EXPECT_EQ(catalog->read_object(sha), read(f.catalog / "skills/pdf-export/SKILL.md"));
  // A re-import of the same catalog with an intact manifest leaves it; a tampered manifest
  // fails open().
  const fs::path manifest =
      f.state / "catalog/snapshots" / catalog->catalog_digest() / "manifest.json";
  fs::permissions(manifest.parent_path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(manifest, fs::perms::owner_write, fs::perm_options::add);
  std::string text = read(manifest);
  text.replace(text.find("Export reports"), 6, "Import");
  write(manifest, text);
  CTX_EXPECT_THROW(ImportedCatalog::open(f.state), DataLoss, "manifest");
  // ... and a re-import rebuilds the damaged snapshot.
  EXPECT_TRUE(import_catalog(f.catalog, f.state).changed);
  EXPECT_EQ(ImportedCatalog::open(f.state)->catalog_digest(), catalog->catalog_digest());
}

TEST(CatalogImport, StateDirMustBePrivate) {
  TempDir temp;
  write_valid_catalog(temp / "catalog");
  CTX_EXPECT_THROW(import_catalog(temp / "catalog", temp / "missing"), FailedPrecondition,
                   "ctx init");
  fs::create_directory(temp / "open");
  fs::permissions(temp / "open", fs::perms(0755));
  CTX_EXPECT_THROW(import_catalog(temp / "catalog", temp / "open"), FailedPrecondition, "private");
  EXPECT_FALSE(fs::exists(temp / "open/catalog"));
}

TEST(StateDir, InitCreatesAPrivateDirAndKeyIdempotently) {
  TempDir temp;
  const fs::path state = temp / "a/b/state";
  const auto first = init_state_dir(state);
  EXPECT_TRUE(first.created_dir);
  EXPECT_TRUE(first.created_key);
  struct stat st {};
  ASSERT_EQ(::lstat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::lstat((state / "installation.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  const std::string key = read_installation_key(state);
  EXPECT_EQ(key.size(), 32u);
  const auto second = init_state_dir(state);
  EXPECT_FALSE(second.created_dir);
  EXPECT_FALSE(second.created_key);
  EXPECT_EQ(read_installation_key(state), key);
  // Another installation has another key.
  init_state_dir(temp / "other");
  EXPECT_NE(read_installation_key(temp / "other"), key);
}

TEST(StateDir, InitRefusesUnsafeDirsAndKeys) {
  TempDir temp;
  CTX_EXPECT_THROW(init_state_dir("relative/state"), InvalidArgument, "absolute");
  fs::create_directory(temp / "open");
  fs::permissions(temp / "open", fs::perms(0755));
  CTX_EXPECT_THROW(init_state_dir(temp / "open"), FailedPrecondition, "private");
  EXPECT_FALSE(fs::exists(temp / "open/installation.key"));
  init_state_dir(temp / "state");
  fs::create_symlink(temp / "state", temp / "link");
  CTX_EXPECT_THROW(init_state_dir(temp / "link"), FailedPrecondition, "symlink");
  write(temp / "short/installation.key", "short");
  fs::permissions(temp / "short", fs::perms(0700));
  fs::permissions(temp / "short/installation.key", fs::perms(0600));
  CTX_EXPECT_THROW(init_state_dir(temp / "short"), FailedPrecondition, "32-byte");
  CTX_EXPECT_THROW(read_installation_key(temp / "missing"), NotFound, "ctx init");
}

}  // namespace
}  // namespace ctx::runtime
