// Import as the hosts load (issue 34 item 1): one fixture per rule, modelled on published
// catalogs (anthropics/skills, obra/superpowers, wshobson/agents). What a host loads imports;
// what no host would load is one skip line naming the file and the rule, and the rest imports;
// strict imports stay all or nothing; a hostile tree reads nothing outside itself.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/app/state_layout.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using ::testing::HasSubstr;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string skill_md(const std::string& name, const std::string& description,
                     const std::string& extra = "") {
  return "---\nname: " + name + "\ndescription: " + description + "\n" + extra + "---\n\n# " +
         name + "\n\nBody.\n";
}

// What read_catalog made of a tree: entry ids, and the skipped files with their rules.
struct Read {
  std::vector<std::string> ids;
  std::map<std::string, std::string> skipped;
  CatalogContents contents;
};

Read read_tree(const fs::path& root) {
  Read out;
  out.contents = read_catalog(root);
  for (const auto& e : out.contents.entries) out.ids.push_back(e.capability_id());
  for (const auto& p : out.contents.skipped) out.skipped[p.file] = p.rule;
  return out;
}

const CatalogEntry* find(const Read& read, const std::string& id) {
  for (const auto& e : read.contents.entries) {
    if (e.capability_id() == id) return &e;
  }
  return nullptr;
}

// One file a host loads: the tree it is in, and the entry it must import as.
struct LoadCase {
  std::string label;
  std::string rel;
  std::string text;
  std::string id;
};

std::vector<LoadCase> load_cases() {
  const std::string long_description = [] {
    std::string text = "|-\n";
    for (int i = 0; i < 14; ++i) {
      text += "  Reference line " + std::to_string(i) +
              " for the Claude API: models, params, streaming, tool use and <caching>.\n";
    }
    return text;
  }();
  return {
      {"unknown frontmatter keys are ignored (a version key)", "skills/brainstorming/SKILL.md",
       skill_md("brainstorming", "Explore ideas before building.",
                "version: 1.2.0\nowner: {team: x}\nlicense: [MIT]\n"),
       "skill:brainstorming"},
      {"an agent's identity is its frontmatter name", "agents/debugger.md",
       "---\nname: debugging-toolkit-debugger\ndescription: Debugs failures.\nmodel: inherit\n"
       "---\nYou debug.\n",
       "agent:debugging-toolkit-debugger"},
      {"a skill's identity is its folder; name is its label", "skills/pdf/SKILL.md",
       skill_md("PDF Processing", "Fill PDF forms."), "skill:pdf"},
      {"a long |- block description", "skills/claude-api/SKILL.md",
       "---\nname: claude-api\ndescription: " + long_description +
           "license: Complete terms in LICENSE.txt\n---\n# Claude API\n",
       "skill:claude-api"},
      {"CRLF line ends", "skills/crlf-skill/SKILL.md",
       "---\r\nname: crlf-skill\r\ndescription: >-\r\n  Folded over\r\n  two lines.\r\n---\r\n"
       "Body\r\n",
       "skill:crlf-skill"},
      {"a UTF-8 byte-order mark", "agents/bom.md",
       "\xEF\xBB\xBF---\nname: bom-agent\ndescription: Starts with a BOM.\n---\n",
       "agent:bom-agent"},
      {"a skill without a name", "skills/unnamed/SKILL.md",
       "---\ndescription: Only a description.\n---\n", "skill:unnamed"},
      {"nested category folders", "skills/documents/office/xlsx/SKILL.md",
       skill_md("xlsx", "Spreadsheets with formulas."), "skill:xlsx"},
      {"plugin skills and agents", "plugins/debugging-toolkit/agents/dx.md",
       "---\nname: dx-optimizer\ndescription: Developer experience.\ntools: Read, Grep\n---\n",
       "agent:dx-optimizer"},
      {"malformed metadata tags are ignored", "skills/tagged/SKILL.md",
       skill_md("tagged", "Tags.", "metadata:\n  tags: [Bad Tag, good]\n"), "skill:tagged"},
      {"an mcp server with unknown keys", "mcp-servers/github.json",
       R"({"name":"github","description":"GitHub.","command":"npx","type":"stdio"})",
       "mcp-server:github"},
  };
}

TEST(CatalogImportRules, EveryFileAHostLoadsImportsWithNothingSkipped) {
  for (const LoadCase& c : load_cases()) {
    SCOPED_TRACE(c.label);
    TempDir temp;
    write(temp / "catalog" / c.rel, c.text);
    const Read read = read_tree(temp / "catalog");
    EXPECT_TRUE(read.skipped.empty())
        << (read.skipped.empty()
                ? ""
                : read.skipped.begin()->first + ": " + read.skipped.begin()->second);
    EXPECT_EQ(read.ids, std::vector<std::string>{c.id});
  }
}

TEST(CatalogImportRules, IdentityLabelAndWholeDescriptionAreKept) {
  TempDir temp;
  for (const LoadCase& c : load_cases()) write(temp / "catalog" / c.rel, c.text);
  const Read read = read_tree(temp / "catalog");
  EXPECT_TRUE(read.skipped.empty());
  const CatalogEntry* pdf = find(read, "skill:pdf");
  ASSERT_NE(pdf, nullptr);
  EXPECT_EQ(pdf->label, "PDF Processing");
  EXPECT_EQ(pdf->folder, "pdf");
  const CatalogEntry* agent = find(read, "agent:debugging-toolkit-debugger");
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ(agent->folder, "debugger");
  const CatalogEntry* api = find(read, "skill:claude-api");
  ASSERT_NE(api, nullptr);
  EXPECT_GT(api->description.size(), kMaxDescriptionChars);  // imported whole
  EXPECT_EQ(api->description.rfind("Reference line 11", std::string::npos) != std::string::npos,
            true);
  EXPECT_EQ(api->description.find('\n'), api->description.find("\nReference line 1 "));
  const CatalogEntry* crlf = find(read, "skill:crlf-skill");
  ASSERT_NE(crlf, nullptr);
  EXPECT_EQ(crlf->description, "Folded over two lines.");
  EXPECT_EQ(find(read, "skill:tagged")->tags, std::vector<std::string>{"good"});
  EXPECT_EQ(find(read, "skill:unnamed")->label, "unnamed");
}

// One file no host would load: the skip line names it and its rule; a good entry beside it
// still imports.
struct SkipCase {
  std::string label;
  std::string rel;
  std::string text;
  std::string skipped;  // the file the line names
  std::string rule;
};

std::vector<SkipCase> skip_cases() {
  return {
      {"no frontmatter", "skills/plain/SKILL.md", "# just markdown\n", "skills/plain/SKILL.md",
       "--- frontmatter"},
      {"unterminated frontmatter", "skills/open/SKILL.md", "---\nname: open\ndescription: x\n",
       "skills/open/SKILL.md", "must end with a ---"},
      {"YAML that does not parse", "skills/broken/SKILL.md",
       "---\nname: [broken\ndescription: x\n---\n", "skills/broken/SKILL.md", "not valid YAML"},
      {"a repeated key", "skills/twice/SKILL.md",
       "---\nname: twice\nname: twice\ndescription: x\n---\n", "skills/twice/SKILL.md",
       "repeats a key"},
      {"a skill without a description", "skills/quiet/SKILL.md", "---\nname: quiet\n---\n",
       "skills/quiet/SKILL.md", "must have a description"},
      {"an empty description", "skills/empty/SKILL.md", skill_md("empty", "\"  \""),
       "skills/empty/SKILL.md", "must not be empty"},
      {"a skill folder ctx cannot name", "skills/Bad Folder/SKILL.md", skill_md("bad", "x"),
       "skills/Bad Folder", "skill folder name"},
      {"an agent without a name", "agents/anon.md", "---\ndescription: x\n---\n", "agents/anon.md",
       "must have a name"},
      {"an agent without a description", "agents/mute.md", "---\nname: mute\n---\n",
       "agents/mute.md", "must have a description"},
      {"an agent name ctx cannot name", "agents/caps.md", "---\nname: Caps\ndescription: x\n---\n",
       "agents/caps.md", "name must be 1-64"},
      {"not UTF-8", "agents/latin.md", "---\nname: latin\ndescription: caf\xE9\n---\n",
       "agents/latin.md", "valid UTF-8"},
      {"over the size bound", "agents/huge.md",
       "---\nname: huge\ndescription: x\n---\n" + std::string(kMaxAgentFileBytes, 'x'),
       "agents/huge.md", "larger than 1048576"},
      {"a resource a skill tree cannot hold", "skills/pdf-export/scripts/bad name.py", "print()\n",
       "skills/pdf-export/scripts/bad name.py", "skill file names must match"},
      {"an mcp server with neither command nor url", "mcp-servers/none.json",
       R"({"name":"none","description":"x"})", "mcp-servers/none.json", "needs a command or a url"},
  };
}

TEST(CatalogImportRules, EachFileNoHostLoadsIsOneSkipLineAndTheRestImports) {
  for (const SkipCase& c : skip_cases()) {
    SCOPED_TRACE(c.label);
    TempDir temp;
    const fs::path catalog = temp / "catalog";
    write(catalog / "skills/pdf-export/SKILL.md", skill_md("pdf-export", "Export PDF."));
    write(catalog / "agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews.\n---\n");
    write(catalog / c.rel, c.text);
    const Read read = read_tree(catalog);
    ASSERT_EQ(read.skipped.size(), 1u);
    EXPECT_EQ(read.skipped.begin()->first, c.skipped);
    EXPECT_THAT(read.skipped.begin()->second, HasSubstr(c.rule));
    const bool pdf_skipped = c.skipped.rfind("skills/pdf-export", 0) == 0;
    const std::vector<std::string> expected =
        pdf_skipped ? std::vector<std::string>{"agent:reviewer"}
                    : std::vector<std::string>{"agent:reviewer", "skill:pdf-export"};
    EXPECT_EQ(read.ids, expected);
  }
}

TEST(CatalogImportRules, ImportReportsSkippedFilesAndStrictIsAllOrNothing) {
  TempDir temp;
  const fs::path catalog = temp / "catalog";
  const fs::path state = temp / "state";
  init_state_dir(state);
  write(catalog / "skills/pdf-export/SKILL.md", skill_md("pdf-export", "Export PDF."));
  write(catalog / "agents/bad.md", "no frontmatter\n");
  CTX_EXPECT_THROW(import_catalog(catalog, state, {}, {.strict = true}), CatalogImportError,
                   "agents/bad.md");
  EXPECT_FALSE(fs::exists(state / "catalog"));
  const auto result = import_catalog(catalog, state);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.entry_count, 1u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].file, "agents/bad.md");
  // Re-importing the same content changes nothing.
  const auto again = import_catalog(catalog, state);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(again.catalog_digest, result.catalog_digest);
  // Only skipped files: nothing is imported and the previous import stays.
  fs::remove_all(catalog / "skills");
  CTX_EXPECT_THROW(import_catalog(catalog, state), CatalogImportError, "agents/bad.md");
  EXPECT_EQ(ImportedCatalog::open(state)->catalog_digest(), result.catalog_digest);
}

// Two entries of one kind and name: the one with the fewest path components is kept, then the
// bytewise-first path; the other is a skip line naming both.
TEST(CatalogImportRules, DuplicatesKeepTheShallowestThenFirstPathAndAreReported) {
  TempDir temp;
  const fs::path catalog = temp / "catalog";
  write(catalog / "plugins/a/agents/reviewer.md", "---\nname: reviewer\ndescription: Deep.\n---\n");
  write(catalog / "agents/reviewer.md", "---\nname: reviewer\ndescription: Top.\n---\n");
  write(catalog / "agents/other.md", "---\nname: reviewer\ndescription: Beside.\n---\n");
  write(catalog / "skills/pdf/SKILL.md", skill_md("pdf", "Top."));
  write(catalog / "plugins/x/skills/pdf/SKILL.md", skill_md("pdf", "Deep."));
  const Read read = read_tree(catalog);
  EXPECT_EQ(read.ids, (std::vector<std::string>{"agent:reviewer", "skill:pdf"}));
  EXPECT_EQ(find(read, "agent:reviewer")->primary.path, "agents/other.md");
  EXPECT_EQ(find(read, "skill:pdf")->description, "Top.");
  ASSERT_EQ(read.skipped.size(), 3u);
  EXPECT_EQ(read.skipped.at("agents/reviewer.md"),
            "duplicate agent:reviewer (kept agents/other.md)");
  EXPECT_EQ(read.skipped.at("plugins/a/agents/reviewer.md"),
            "duplicate agent:reviewer (kept agents/other.md)");
  EXPECT_EQ(read.skipped.at("plugins/x/skills/pdf"), "duplicate skill:pdf (kept skills/pdf)");
}

void sparse_file(const fs::path& path, off_t size, const std::string& head) {
  fs::create_directories(path.parent_path());
  write(path, head);
  ASSERT_EQ(::truncate(path.c_str(), size), 0);
}

// Links (loops, escapes) are never followed, a 100 MB file is refused by its size, names with
// control bytes are named escaped, agents inside a skill are the skill's files: every skipped
// file is one line, nothing outside the tree is imported, nothing is imported twice.
TEST(CatalogImportRules, AHostileTreeReadsNothingOutsideItselfAndNamesEverySkippedFile) {
  TempDir temp;
  const fs::path catalog = temp / "catalog";
  const fs::path outside = temp / "outside";
  write(outside / "agents/stolen.md", "---\nname: stolen\ndescription: Outside.\n---\n");
  write(outside / "skills/stolen-skill/SKILL.md", skill_md("stolen-skill", "Outside."));
  write(catalog / "skills/good/SKILL.md", skill_md("good", "Good."));
  write(catalog / "skills/good/agents/helper.md", "---\nname: helper\ndescription: x\n---\n");
  fs::create_directories(catalog / "agents");
  fs::create_symlink(".", catalog / "skills/loop");
  fs::create_symlink(outside / "skills", catalog / "skills/escape");
  fs::create_symlink(outside / "agents/stolen.md", catalog / "agents/stolen.md");
  fs::create_symlink(outside, catalog / "plugins");
  fs::create_directories(catalog / "skills/linked-md");
  fs::create_symlink(outside / "skills/stolen-skill/SKILL.md",
                     catalog / "skills/linked-md/SKILL.md");
  fs::create_symlink("../../outside/agents", catalog / "docs-link");  // not where entries are
  sparse_file(catalog / "skills/big/SKILL.md", 100'000'000, skill_md("big", "Big."));
  sparse_file(catalog / "agents/big.md", 100'000'000, "---\nname: big\ndescription: x\n---\n");
  sparse_file(catalog / "skills/good2/data.bin", 100'000'000, "x");
  write(catalog / "skills/good2/SKILL.md", skill_md("good2", "Good too."));
  write(catalog / "agents/ctl\x01name.md", "---\nname: ctl\ndescription: x\n---\n");
  write(catalog / "skills/ctl\x02skill/SKILL.md", skill_md("ctl", "x"));
  write(catalog / "agents/latin\xE9.md", "---\nname: latin\ndescription: x\n---\n");

  const Read read = read_tree(catalog);
  EXPECT_EQ(read.ids, std::vector<std::string>{"skill:good"});
  const std::map<std::string, std::string> expected = {
      {"agents/big.md", "larger than"},
      {"agents/ctl\\x01name.md", "control characters"},
      {"agents/latin\\xe9.md", "control characters"},
      {"agents/stolen.md", "symbolic links"},
      {"plugins", "symbolic links"},
      {"skills/big/SKILL.md", "larger than"},
      {"skills/ctl\\x02skill", "control characters"},
      {"skills/escape", "symbolic links"},
      {"skills/good2/data.bin", "larger than"},
      {"skills/linked-md/SKILL.md", "symbolic links"},
      {"skills/loop", "symbolic links"},
  };
  std::vector<std::string> files;
  for (const auto& [file, rule] : read.skipped) files.push_back(file);
  std::vector<std::string> expected_files;
  for (const auto& [file, rule] : expected) expected_files.push_back(file);
  EXPECT_EQ(files, expected_files);
  for (const auto& [file, rule] : expected) {
    if (read.skipped.count(file)) {
      EXPECT_THAT(read.skipped.at(file), HasSubstr(rule)) << file;
    }
  }
  for (const auto& problem : read.contents.skipped) {
    EXPECT_EQ(problem.file.find(temp.path().string()), std::string::npos);
    EXPECT_TRUE(std::none_of(problem.file.begin(), problem.file.end(),
                             [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  }
  // The helper agent is a file of the good skill, not an agent; no blob holds outside bytes.
  const CatalogEntry* good = find(read, "skill:good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->files.size(), 2u);
  for (const auto& [sha, bytes] : read.contents.blobs) {
    EXPECT_EQ(bytes.find("Outside."), std::string::npos);
  }
}

// 100,000 candidate files: each is looked at once (skipped: empty), quickly; one more is over the
// entry bound and refuses the tree as a whole.
TEST(CatalogImportRules, ATreeOfAHundredThousandFilesIsReadOnceAndTheEntryBoundHolds) {
  TempDir temp;
  const fs::path agents = temp / "catalog/agents";
  fs::create_directories(agents);
  const auto touch = [&](std::size_t i) {
    const std::string path = (agents / ("a" + std::to_string(i) + ".md")).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  };
  for (std::size_t i = 0; i < kMaxCatalogEntries; ++i) touch(i);
  const Read read = read_tree(temp / "catalog");
  EXPECT_TRUE(read.ids.empty());
  EXPECT_EQ(read.skipped.size(), kMaxCatalogEntries);
  EXPECT_THAT(read.skipped.at("agents/a99999.md"), HasSubstr("--- frontmatter"));
  touch(kMaxCatalogEntries);
  try {
    read_catalog(temp / "catalog");
    ADD_FAILURE() << "the entry bound did not hold";
  } catch (const CatalogImportError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].file, ".");
    EXPECT_THAT(e.problems()[0].rule, HasSubstr("more than 100000 entries"));
  }
}

// Layouts as published (issue 34 item 2): a marketplace of plugins (wshobson/agents), a root
// marketplace over skills/ (anthropics/skills), a .mcp.json, Codex TOML agents; every entry once.
TEST(CatalogLayouts, PluginsMarketplacesMcpJsonAndCodexAgentsImportOnce) {
  TempDir temp;
  const fs::path c = temp / "catalog";
  write(c / ".claude-plugin/marketplace.json", R"({
    "name": "workflows", "owner": {"name": "x"},
    "plugins": [
      {"name": "debugging-toolkit", "source": "./plugins/debugging-toolkit", "version": "1.0"},
      {"name": "elsewhere", "source": {"source": "github", "repo": "someone/plugin"}},
      {"name": "root-extras", "source": "./", "strict": false,
       "agents": ["./custom/reviewer.md"],
       "mcpServers": {"fetcher": {"command": "uvx", "args": ["mcp-server-fetch"]}}}
    ]})");
  write(c / "plugins/debugging-toolkit/.claude-plugin/plugin.json", R"({
    "name": "debugging-toolkit", "version": "1.2.0", "description": "Debugging.",
    "mcpServers": {"db": {"command": "npx", "args": ["-y", "db-server"],
                          "env": {"DB_URL": "${DB_URL}"}}}})");
  write(c / "plugins/debugging-toolkit/agents/debugger.md",
        "---\nname: debugging-toolkit-debugger\ndescription: Debugs.\nmodel: inherit\n---\n");
  write(c / "plugins/debugging-toolkit/skills/triage/SKILL.md", skill_md("triage", "Triage."));
  write(c / "custom/reviewer.md", "---\nname: reviewer\ndescription: Reviews.\n---\n");
  write(c / "skills/skill-creator/SKILL.md", skill_md("skill-creator", "Create skills."));
  write(c / "skills/skill-creator/agents/grader.md", "---\nname: grader\ndescription: x\n---\n");
  write(c / "skills/document-skills/xlsx/SKILL.md", skill_md("xlsx", "Spreadsheets."));
  write(c / ".mcp.json", R"({"mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
    "docs": {"type": "http", "url": "https://docs.example.com/mcp", "description": "Docs search."}}})");
  write(c / ".codex/agents/reviewer.toml",
        "name = \"codex-reviewer\"\ndescription = \"Reviews diffs for Codex.\"\n"
        "developer_instructions = \"\"\"\nReview.\n\"\"\"\nmodel = \"gpt-5\"\n");
  const Read read = read_tree(c);
  EXPECT_EQ(read.ids,
            (std::vector<std::string>{"agent:codex-reviewer", "agent:debugging-toolkit-debugger",
                                      "agent:reviewer", "mcp-server:db", "mcp-server:docs",
                                      "mcp-server:fetcher", "mcp-server:github",
                                      "skill:skill-creator", "skill:triage", "skill:xlsx"}));
  ASSERT_EQ(read.skipped.size(), 1u);
  EXPECT_EQ(read.skipped.begin()->first, ".claude-plugin/marketplace.json#elsewhere");
  EXPECT_THAT(read.skipped.begin()->second, HasSubstr("another repository"));
  const CatalogEntry* github = find(read, "mcp-server:github");
  ASSERT_NE(github, nullptr);
  EXPECT_EQ(github->primary.path, ".mcp.json#github");
  EXPECT_EQ(github->env_names, std::vector<std::string>{"GITHUB_TOKEN"});
  EXPECT_EQ(*github->command, "npx");
  EXPECT_EQ(github->description, "MCP server github");
  // Its material is the server in ctx's mcp-servers format.
  const core::Json material = core::parse_json(read.contents.blobs.at(github->primary.sha256));
  EXPECT_EQ(material.at("name"), "github");
  EXPECT_EQ(material.at("args").size(), 2u);
  EXPECT_EQ(*find(read, "mcp-server:docs")->url, "https://docs.example.com/mcp");
  EXPECT_EQ(find(read, "mcp-server:db")->description, "MCP server db of debugging-toolkit");
  EXPECT_EQ(find(read, "mcp-server:db")->primary.path,
            "plugins/debugging-toolkit/.claude-plugin/plugin.json#db");
  EXPECT_EQ(find(read, "agent:reviewer")->primary.path, "custom/reviewer.md");
  EXPECT_EQ(find(read, "skill:skill-creator")->files.size(), 2u);  // the grader is its file
  EXPECT_EQ(find(read, "agent:codex-reviewer")->primary.path, ".codex/agents/reviewer.toml");
}

// MCP servers a host would refuse (issue 37): both command and url, a relative command, an env
// value that is not a string, a 1 MB args list; each one skip line, the good server imports.
TEST(CatalogLayouts, McpServersAHostWouldRefuseAreSkipLines) {
  TempDir temp;
  const fs::path c = temp / "catalog";
  const std::string big(1'000'000, 'a');
  write(c / ".mcp.json", R"({"mcpServers": {
    "both": {"command": "npx", "url": "https://x.example.com"},
    "relative": {"command": "bin/server"},
    "env-number": {"command": "npx", "env": {"PORT": 8080}},
    "huge-args": {"command": "npx", "args": [")" +
                             big + R"("]},
    "Bad Name": {"command": "npx"},
    "fine": {"command": "/usr/bin/server"}}})");
  const Read read = read_tree(c);
  EXPECT_EQ(read.ids, std::vector<std::string>{"mcp-server:fine"});
  EXPECT_THAT(read.skipped.at(".mcp.json#both"), HasSubstr("not both"));
  EXPECT_THAT(read.skipped.at(".mcp.json#relative"), HasSubstr("not a relative path"));
  EXPECT_THAT(read.skipped.at(".mcp.json#env-number"),
              HasSubstr("env must be an object of strings"));
  EXPECT_THAT(read.skipped.at(".mcp.json#huge-args"), HasSubstr("args are larger than 65536"));
  EXPECT_THAT(read.skipped.at(".mcp.json#Bad Name"), HasSubstr("server name must be 1-64"));
  EXPECT_EQ(read.skipped.size(), 5u);
}

// A manifest naming a path outside the tree, or through a link, is a skip line; nothing outside
// is read.
TEST(CatalogLayouts, ManifestPathsStayInsideTheTree) {
  TempDir temp;
  const fs::path c = temp / "catalog";
  write(temp / "outside/agent.md", "---\nname: stolen\ndescription: Outside.\n---\n");
  write(temp / "outside/mcp.json", R"({"mcpServers": {"stolen": {"command": "npx"}}})");
  fs::create_directories(c);
  fs::create_symlink(temp / "outside", c / "linked");
  write(c / "p/.claude-plugin/plugin.json",
        R"({"name": "p", "agents": ["../../outside/agent.md", "../linked/agent.md"],
            "mcpServers": "/etc/passwd"})");
  const Read read = read_tree(c);
  EXPECT_TRUE(read.ids.empty());
  ASSERT_EQ(read.contents.skipped.size(), 3u);
  for (const auto& problem : read.contents.skipped) {
    EXPECT_EQ(problem.file, "p/.claude-plugin/plugin.json");
    EXPECT_TRUE(problem.rule.find("leaves the catalog") != std::string::npos ||
                problem.rule.find("symbolic links") != std::string::npos)
        << problem.rule;
  }
}

}  // namespace
}  // namespace ctx::runtime
