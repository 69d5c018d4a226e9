// Catalog sources (issue 34 item 3) against git repositories the tests make (a work tree pushing
// to a bare repository read over file://; no network): SOURCE parsing, add / update / remove with
// what was added, changed and removed, the commit and tree recorded, several sources making one
// catalog, and fetching that runs nothing from the source even when the user's git config
// defines filters, LFS, hooks and submodule recursion.
#include "host/runtime/catalog/catalog_sources.hpp"

#include <stdlib.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "host/app/state_layout.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string skill_md(const std::string& name, const std::string& description) {
  return "---\nname: " + name + "\ndescription: " + description + "\n---\n\n# " + name +
         "\n\nBody.\n";
}

// The test's own git, without the user's or the system's config.
std::string git(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/git"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto run =
      ::ctx::testing::run_process(argv, "", std::chrono::seconds(60),
                                  {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
                                   "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
                                   "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"});
  EXPECT_EQ(run.code, 0) << run.err;
  return run.out.substr(0, run.out.find('\n'));
}

// A work tree and the bare repository it pushes to.
class Repo {
 public:
  explicit Repo(const fs::path& dir) : work_(dir / "work"), bare_(dir / "src.git") {
    git({"init", "-q", "-b", "main", work_.string()});
    git({"init", "-q", "--bare", "-b", "main", bare_.string()});
  }
  std::string commit(const std::string& message) {
    git({"-C", work_.string(), "add", "-A"});
    git({"-C", work_.string(), "commit", "-q", "--allow-empty", "-m", message});
    git({"-C", work_.string(), "push", "-q", bare_.string(), "main"});
    return git({"-C", work_.string(), "rev-parse", "HEAD"});
  }
  std::string url() const { return "file://" + bare_.string(); }
  const fs::path& work() const { return work_; }
  const fs::path& bare() const { return bare_; }

 private:
  fs::path work_, bare_;
};

SourceOrigin git_origin(const Repo& repo) {
  return SourceOrigin{SourceOrigin::Kind::kGit, repo.url(), "", ""};
}

std::vector<std::string> ids_of(const fs::path& state) {
  std::vector<std::string> out;
  const auto catalog = ImportedCatalog::open(state);
  for (const auto& e : catalog->entries()) out.push_back(e.capability_id());
  return out;
}

// Sets an environment variable for the test's lifetime (what the user's git reads).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class CatalogSourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "state";
    init_state_dir(state_);
    // The user's git config: empty (each test may add to it).
    config_ = dir_ / "gitconfig";
    write(config_, "");
  }
  TempDir dir_;
  fs::path state_, config_;
  ScopedEnv no_system_{"GIT_CONFIG_NOSYSTEM", "1"};
  ScopedEnv global_{"GIT_CONFIG_GLOBAL", (dir_ / "gitconfig").string()};
};

TEST(ParseSourceTest, DirectoriesUrlsAndGithubShorthand) {
  TempDir dir;
  fs::create_directories(dir / "cat");
  const SourceOrigin local = parse_source("cat", dir.path());
  EXPECT_EQ(local.kind, SourceOrigin::Kind::kDirectory);
  EXPECT_EQ(local.location, fs::canonical(dir / "cat").string());
  CTX_EXPECT_THROW(parse_source("./missing", dir.path()), NotFound, "does not exist");

  const SourceOrigin https = parse_source("https://example.com/a/skills.git", dir.path());
  EXPECT_EQ(https,
            (SourceOrigin{SourceOrigin::Kind::kGit, "https://example.com/a/skills.git", "", ""}));
  EXPECT_EQ(default_source_name(https), "skills");
  EXPECT_EQ(parse_source("git@example.com:team/Agents.git", dir.path()).kind,
            SourceOrigin::Kind::kGit);
  EXPECT_EQ(default_source_name(parse_source("git@example.com:team/Agents.git", dir.path())),
            "agents");
  EXPECT_EQ(parse_source("file:///srv/cat.git", dir.path()).location, "file:///srv/cat.git");

  const SourceOrigin gh = parse_source("wshobson/agents@v1.2/plugins/python", dir.path());
  EXPECT_EQ(gh, (SourceOrigin{SourceOrigin::Kind::kGit, "https://github.com/wshobson/agents.git",
                              "v1.2", "plugins/python"}));
  EXPECT_EQ(default_source_name(gh), "agents");
  EXPECT_EQ(parse_source("anthropics/skills", dir.path()).ref, "");

  CTX_EXPECT_THROW(parse_source("https://u:secret@example.com/x.git", dir.path()), InvalidArgument,
                   "password");
  CTX_EXPECT_THROW(parse_source("-uhttps://x", dir.path()), InvalidArgument, "'-'");
  CTX_EXPECT_THROW(parse_source("a/b@-x", dir.path()), InvalidArgument, "ref");
  CTX_EXPECT_THROW(parse_source("a/b@x..y", dir.path()), InvalidArgument, "ref");
  CTX_EXPECT_THROW(parse_source("a/b/../../etc", dir.path()), InvalidArgument, "subpath");
  CTX_EXPECT_THROW(parse_source("a/b\n", dir.path()), InvalidArgument, "control");
  CTX_EXPECT_THROW(parse_source("justaword", dir.path()), InvalidArgument, "owner/repo");
  CTX_EXPECT_THROW(parse_source("ext::sh -c touch% /tmp/x", dir.path()), InvalidArgument,
                   "owner/repo");
  EXPECT_TRUE(is_source_name("my-skills2"));
  EXPECT_FALSE(is_source_name("My"));
  EXPECT_FALSE(is_source_name("a--b"));
  EXPECT_FALSE(is_source_name(""));
}

TEST_F(CatalogSourcesTest, AddUpdateRemoveReportWhatChangedAndRecordTheCommit) {
  Repo repo(dir_ / "repo");
  write(repo.work() / "skills/pdf-export/SKILL.md", skill_md("pdf-export", "Export PDF files."));
  write(repo.work() / "skills/csv-clean/SKILL.md", skill_md("csv-clean", "Clean CSV files."));
  write(repo.work() / "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code.\n---\nBody\n");
  const std::string first = repo.commit("one");

  const SourceUpdate added = add_source(state_, "upstream", git_origin(repo));
  EXPECT_EQ(added.commit, first);
  EXPECT_EQ(added.previous_commit, "");
  EXPECT_THAT(added.added, ElementsAre("agent:reviewer", "skill:csv-clean", "skill:pdf-export"));
  EXPECT_THAT(added.changed, IsEmpty());
  EXPECT_TRUE(added.import.changed);
  EXPECT_EQ(added.import.entry_count, 3u);
  const auto catalog = ImportedCatalog::open(state_);
  for (const auto& e : catalog->entries()) EXPECT_EQ(e.source, "upstream");

  const auto recorded = find_source(state_, "upstream");
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->commit, first);
  EXPECT_EQ(recorded->tree_digest, git({"-C", repo.work().string(), "rev-parse", "HEAD^{tree}"}));
  EXPECT_EQ(recorded->origin.location, repo.url());
  EXPECT_EQ(recorded->entries.size(), 3u);

  // A new commit: one skill changed, one added, the agent removed.
  write(repo.work() / "skills/pdf-export/SKILL.md",
        skill_md("pdf-export", "Export PDF files, with a table of contents."));
  write(repo.work() / "skills/xlsx/SKILL.md", skill_md("xlsx", "Make spreadsheets."));
  fs::remove(repo.work() / "agents/reviewer.md");
  const std::string second = repo.commit("two");

  const SourceUpdate updated = update_source(state_, "upstream");
  EXPECT_EQ(updated.previous_commit, first);
  EXPECT_EQ(updated.commit, second);
  EXPECT_THAT(updated.added, ElementsAre("skill:xlsx"));
  EXPECT_THAT(updated.changed, ElementsAre("skill:pdf-export"));
  EXPECT_THAT(updated.removed, ElementsAre("agent:reviewer"));
  EXPECT_THAT(ids_of(state_), ElementsAre("skill:csv-clean", "skill:pdf-export", "skill:xlsx"));
  EXPECT_EQ(find_source(state_, "upstream")->commit, second);

  // Nothing new: nothing changes.
  const SourceUpdate again = update_source(state_, "upstream");
  EXPECT_THAT(again.added, IsEmpty());
  EXPECT_THAT(again.changed, IsEmpty());
  EXPECT_THAT(again.removed, IsEmpty());
  EXPECT_FALSE(again.import.changed);

  CTX_EXPECT_THROW(add_source(state_, "upstream", git_origin(repo)), FailedPrecondition, "exists");
  const CatalogImportResult removed = remove_source(state_, "upstream");
  EXPECT_EQ(removed.entry_count, 0u);
  EXPECT_THAT(ids_of(state_), IsEmpty());
  EXPECT_FALSE(fs::exists(state_ / "catalog" / "git" / "upstream.git"));
  EXPECT_THAT(list_sources(state_), IsEmpty());
  CTX_EXPECT_THROW(remove_source(state_, "upstream"), NotFound, "upstream");
  CTX_EXPECT_THROW(update_source(state_, "upstream"), NotFound, "upstream");
}

TEST_F(CatalogSourcesTest, ARefAndASubpathAreWhatIsRead) {
  Repo repo(dir_ / "repo");
  write(repo.work() / "catalog/skills/old/SKILL.md", skill_md("old", "The tagged one."));
  write(repo.work() / "elsewhere/skills/other/SKILL.md", skill_md("other", "Not in the subpath."));
  const std::string tagged = repo.commit("one");
  git({"-C", repo.work().string(), "tag", "v1"});
  git({"-C", repo.work().string(), "push", "-q", repo.bare().string(), "v1"});
  write(repo.work() / "catalog/skills/new/SKILL.md", skill_md("new", "After the tag."));
  repo.commit("two");

  const SourceUpdate added =
      add_source(state_, "pinned", {SourceOrigin::Kind::kGit, repo.url(), "v1", "catalog"});
  EXPECT_EQ(added.commit, tagged);
  EXPECT_THAT(added.added, ElementsAre("skill:old"));
  EXPECT_EQ(find_source(state_, "pinned")->tree_digest,
            git({"-C", repo.work().string(), "rev-parse", "v1:catalog"}));
  // The same tag again: the same commit, nothing changed.
  EXPECT_EQ(update_source(state_, "pinned").commit, tagged);

  CTX_EXPECT_THROW(
      add_source(state_, "missing", {SourceOrigin::Kind::kGit, repo.url(), "main", "no/such"}),
      NotFound, "no folder");
  CTX_EXPECT_THROW(
      add_source(state_, "badref", {SourceOrigin::Kind::kGit, repo.url(), "no-such-branch", ""}),
      SystemError, "could not fetch");
  // A failed add records nothing and leaves no repository behind.
  EXPECT_FALSE(find_source(state_, "missing"));
  EXPECT_FALSE(fs::exists(state_ / "catalog" / "git" / "missing.git"));
  EXPECT_FALSE(fs::exists(state_ / "catalog" / "git" / "badref.git"));
  EXPECT_THAT(ids_of(state_), ElementsAre("skill:old"));
}

TEST_F(CatalogSourcesTest, SeveralSourcesMakeOneCatalogAndDuplicatesAreReported) {
  write(dir_ / "local/skills/pdf-export/SKILL.md", skill_md("pdf-export", "Local PDF export."));
  import_catalog(dir_ / "local", state_);
  Repo repo(dir_ / "repo");
  write(repo.work() / "plugins/tools/skills/pdf-export/SKILL.md",
        skill_md("pdf-export", "Another PDF export."));
  write(repo.work() / "plugins/tools/agents/helper.md",
        "---\nname: git-helper\ndescription: Helps with git.\n---\nBody\n");
  repo.commit("plugin");

  const SourceUpdate added = add_source(state_, "upstream", git_origin(repo));
  ASSERT_EQ(added.import.skipped.size(), 1u);
  EXPECT_EQ(added.import.skipped[0].file, "upstream:plugins/tools/skills/pdf-export");
  EXPECT_EQ(added.import.skipped[0].rule,
            "duplicate skill:pdf-export (kept local:skills/pdf-export)");
  const auto catalog = ImportedCatalog::open(state_);
  EXPECT_THAT(ids_of(state_), ElementsAre("agent:git-helper", "skill:pdf-export"));
  EXPECT_EQ(catalog->find("skill:pdf-export")->source, "local");
  EXPECT_EQ(catalog->find("skill:pdf-export")->description, "Local PDF export.");
  EXPECT_EQ(catalog->find("agent:git-helper")->source, "upstream");

  // Re-importing the local directory keeps the git source's entries.
  write(dir_ / "local/skills/csv/SKILL.md", skill_md("csv", "CSV."));
  import_catalog(dir_ / "local", state_);
  EXPECT_THAT(ids_of(state_), ElementsAre("agent:git-helper", "skill:csv", "skill:pdf-export"));
  // Without the local source, the git source's pdf-export is the one.
  remove_source(state_, "local");
  EXPECT_EQ(ImportedCatalog::open(state_)->find("skill:pdf-export")->source, "upstream");
  std::vector<std::string> names;
  for (const auto& s : list_sources(state_)) names.push_back(s.name);
  EXPECT_THAT(names, ElementsAre("upstream"));
}

TEST_F(CatalogSourcesTest, ACatalogImportedBeforeSourcesIsKeptAsTheLocalSource) {
  write(dir_ / "local/skills/pdf-export/SKILL.md", skill_md("pdf-export", "Local PDF export."));
  import_catalog(dir_ / "local", state_);
  // As a state dir imported before sources were recorded.
  fs::remove_all(state_ / "catalog" / "sources");
  const auto listed = list_sources(state_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "local");
  EXPECT_EQ(listed[0].origin.location, "");

  Repo repo(dir_ / "repo");
  write(repo.work() / "skills/xlsx/SKILL.md", skill_md("xlsx", "Spreadsheets."));
  repo.commit("one");
  add_source(state_, "upstream", git_origin(repo));
  EXPECT_THAT(ids_of(state_), ElementsAre("skill:pdf-export", "skill:xlsx"));
  CTX_EXPECT_THROW(update_source(state_, "local"), FailedPrecondition, "ctx catalog import");
}

TEST_F(CatalogSourcesTest, ADirectorySourceIsReadAgainByUpdate) {
  write(dir_ / "mine/skills/notes/SKILL.md", skill_md("notes", "Take notes."));
  const SourceUpdate added = add_source(state_, "mine", parse_source("mine", dir_.path()));
  EXPECT_EQ(added.commit, "");
  EXPECT_THAT(added.added, ElementsAre("skill:notes"));
  const auto recorded = find_source(state_, "mine");
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->origin.kind, SourceOrigin::Kind::kDirectory);
  EXPECT_EQ(recorded->origin.location, fs::canonical(dir_ / "mine").string());
  EXPECT_EQ(recorded->tree_digest.size(), 64u);

  write(dir_ / "mine/skills/notes/SKILL.md", skill_md("notes", "Take better notes."));
  write(dir_ / "mine/skills/todo/SKILL.md", skill_md("todo", "Track todos."));
  const SourceUpdate updated = update_source(state_, "mine");
  EXPECT_THAT(updated.added, ElementsAre("skill:todo"));
  EXPECT_THAT(updated.changed, ElementsAre("skill:notes"));
  EXPECT_THAT(updated.removed, IsEmpty());
  EXPECT_NE(find_source(state_, "mine")->tree_digest, recorded->tree_digest);
  EXPECT_EQ(ImportedCatalog::open(state_)->find("skill:notes")->description, "Take better notes.");
  // A bad name records nothing.
  CTX_EXPECT_THROW(add_source(state_, "Bad Name", parse_source("mine", dir_.path())),
                   InvalidArgument, "source name");
  EXPECT_EQ(list_sources(state_).size(), 1u);
}

// The user's git config asks for every way a checkout could run something: a filter and LFS for
// the source's .gitattributes, hooks (reference-transaction runs at fetch, post-checkout at
// checkout) and submodule recursion. ctx's fetch and checkout run none of them.
TEST_F(CatalogSourcesTest, FetchingRunsNothingFromTheSource) {
  const fs::path marker = dir_ / "ran";
  const fs::path hooks = dir_ / "hooks";
  for (const char* hook : {"reference-transaction", "post-checkout", "pre-auto-gc"}) {
    write(hooks / hook, "#!/bin/sh\necho " + std::string(hook) + " >> " + marker.string() + "\n");
    fs::permissions(hooks / hook, fs::perms::owner_all);
  }
  // Each program appends its name to the marker (and passes its input through).
  const fs::path record = dir_ / "record.sh";
  write(record, "#!/bin/sh\necho \"$1\" >> " + marker.string() + "\ncat\n");
  fs::permissions(record, fs::perms::owner_all);
  write(config_, "[filter \"evil\"]\n\tsmudge = " + record.string() +
                     " filter\n\tclean = cat\n\trequired = true\n"
                     "[filter \"lfs\"]\n\tsmudge = " +
                     record.string() + " lfs\n\tprocess = " + record.string() +
                     " lfs-process\n\trequired = true\n"
                     "[core]\n\thooksPath = " +
                     hooks.string() +
                     "\n[submodule]\n\trecurse = true\n[fetch]\n\trecurseSubmodules = true\n"
                     "[protocol \"file\"]\n\tallow = always\n");

  Repo inner(dir_ / "inner");
  write(inner.work() / "skills/hidden/SKILL.md", skill_md("hidden", "From a submodule."));
  const std::string inner_head = inner.commit("inner");
  Repo repo(dir_ / "repo");
  write(repo.work() / "skills/pdf-export/SKILL.md", skill_md("pdf-export", "Export PDF files."));
  write(repo.work() / ".gitattributes", "*.md filter=evil\n*.json filter=lfs\n");
  write(repo.work() / "mcp-servers/docs.json",
        R"({"name": "docs", "description": "Docs.", "url": "https://docs.example.com/mcp"})");
  write(repo.work() / ".gitmodules",
        "[submodule \"sub\"]\n\tpath = sub\n\turl = " + inner.url() + "\n");
  git({"-C", repo.work().string(), "update-index", "--add", "--cacheinfo",
       "160000," + inner_head + ",sub"});
  repo.commit("hostile");

  const SourceUpdate added = add_source(state_, "upstream", git_origin(repo));
  EXPECT_FALSE(fs::exists(marker)) << "something from the source or the user's config ran";
  // The files are the committed bytes (no smudge), and the submodule was not fetched.
  const auto catalog = ImportedCatalog::open(state_);
  ASSERT_NE(catalog->find("skill:pdf-export"), nullptr);
  EXPECT_EQ(catalog->read_object(catalog->find("skill:pdf-export")->primary.sha256),
            skill_md("pdf-export", "Export PDF files."));
  EXPECT_EQ(catalog->find("skill:hidden"), nullptr);
  EXPECT_THAT(added.added, ::testing::Contains("skill:pdf-export"));
  update_source(state_, "upstream");
  EXPECT_FALSE(fs::exists(marker));
  // No scratch checkout is left behind.
  for (const auto& entry : fs::directory_iterator(state_ / "catalog" / "git")) {
    EXPECT_EQ(entry.path().filename(), "upstream.git");
  }
}

}  // namespace
}  // namespace ctx::runtime
