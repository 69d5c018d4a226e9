// `ctx init` and `ctx catalog import` in process (cli::run) on real temp directories.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "host/cli/cli.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome ctx(const std::vector<std::string>& args, const Environment& env = {}) {
  std::ostringstream out, err;
  const int code = run(args, out, err, env);
  return {code, out.str(), err.str()};
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void write_catalog(const fs::path& root) {
  write(root / "skills/pdf-export/SKILL.md",
        "---\nname: pdf-export\ndescription: Export reports to PDF.\n---\nBody\n");
  write(root / "harnesses/python-runner.json",
        R"({"name":"python-runner","description":"Runs python."})");
}

TEST(CatalogCommand, InitCreatesThePrivateStateDirAndIsIdempotent) {
  testing::TempDir temp;
  const fs::path state = temp / "state";
  const auto first = ctx({"init", "--state", state.string()});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, HasSubstr("initialized"));
  struct stat st {};
  ASSERT_EQ(::stat((state / "installation.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  std::ifstream in(state / "installation.key", std::ios::binary);
  const std::string key((std::istreambuf_iterator<char>(in)), {});
  const auto second = ctx({"init", "--state", state.string()});
  ASSERT_EQ(second.code, kExitOk);
  EXPECT_THAT(second.out, HasSubstr("already initialized"));
  std::ifstream again(state / "installation.key", std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), {}), key);
  // The default state dir comes from XDG_STATE_HOME.
  Environment env;
  env.xdg_state_home = (temp / "xdg").string();
  ASSERT_EQ(ctx({"init"}, env).code, kExitOk);
  EXPECT_TRUE(fs::exists(temp / "xdg/ctx/installation.key"));
  EXPECT_EQ(ctx({"init", "extra"}).code, kExitUsage);
  EXPECT_EQ(ctx({"init", "--state"}).code, kExitUsage);
}

TEST(CatalogCommand, ImportPrintsTheCatalogDigestAndIsIdempotent) {
  testing::TempDir temp;
  write_catalog(temp / "catalog");
  const std::string state = (temp / "state").string();
  ASSERT_EQ(ctx({"init", "--state", state}).code, kExitOk);
  const auto first =
      ctx({"catalog", "import", (temp / "catalog").string(), "--state", state, "--json"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  const auto json = nlohmann::json::parse(first.out);
  EXPECT_EQ(json["entries"], 2);
  EXPECT_EQ(json["changed"], true);
  EXPECT_EQ(json["catalog_digest"].get<std::string>().size(), 64u);
  const auto second =
      ctx({"catalog", "import", (temp / "catalog").string(), "--state", state, "--json"});
  ASSERT_EQ(second.code, kExitOk);
  EXPECT_EQ(nlohmann::json::parse(second.out)["changed"], false);
  EXPECT_EQ(nlohmann::json::parse(second.out)["catalog_digest"], json["catalog_digest"]);
  const auto plain = ctx({"catalog", "import", (temp / "catalog").string(), "--state", state});
  EXPECT_THAT(plain.out, HasSubstr("imported 2, skipped 0 (catalog " +
                                   json["catalog_digest"].get<std::string>() + ", unchanged)"));
}

TEST(CatalogCommand, SkippedFilesAreOneLineEachAndStrictImportsNothing) {
  testing::TempDir temp;
  write_catalog(temp / "catalog");
  write(temp / "catalog/agents/bad.md", "no frontmatter\n");
  write(temp / "catalog/mcp-servers/x.json", "{\"name\":\"x\",\"description\":\"d\"}");
  const std::string state = (temp / "state").string();
  ASSERT_EQ(ctx({"init", "--state", state}).code, kExitOk);
  const auto strict =
      ctx({"catalog", "import", (temp / "catalog").string(), "--strict", "--state", state});
  EXPECT_EQ(strict.code, kExitFailure);
  EXPECT_THAT(strict.err, HasSubstr("ctx: error: catalog entry agents/bad.md: "));
  EXPECT_THAT(strict.err, HasSubstr("ctx: error: catalog entry mcp-servers/x.json: "));
  EXPECT_THAT(strict.err, HasSubstr("nothing was imported (2 invalid files)"));
  EXPECT_FALSE(fs::exists(temp / "state/catalog"));
  const auto outcome = ctx({"catalog", "import", (temp / "catalog").string(), "--state", state});
  ASSERT_EQ(outcome.code, kExitOk) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("ctx: skipped agents/bad.md: file must start with a ---"));
  EXPECT_THAT(outcome.err, HasSubstr("ctx: skipped mcp-servers/x.json: an mcp server needs"));
  EXPECT_THAT(outcome.out, HasSubstr("imported 2, skipped 2 (catalog "));
  const auto json =
      ctx({"catalog", "import", (temp / "catalog").string(), "--state", state, "--json"});
  ASSERT_EQ(json.code, kExitOk);
  EXPECT_EQ(nlohmann::json::parse(json.out)["skipped"].size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(json.out)["changed"], false);
  // Without ctx init the import refuses.
  const auto uninitialised =
      ctx({"catalog", "import", (temp / "catalog").string(), "--state", (temp / "none").string()});
  EXPECT_EQ(uninitialised.code, kExitFailure);
  EXPECT_THAT(uninitialised.err, HasSubstr("ctx init"));
}

TEST(CatalogCommand, UsageErrors) {
  EXPECT_EQ(ctx({"catalog"}).code, kExitUsage);
  EXPECT_EQ(ctx({"catalog", "export"}).code, kExitUsage);
  EXPECT_EQ(ctx({"catalog", "import"}).code, kExitUsage);
  EXPECT_EQ(ctx({"catalog", "import", "a", "b"}).code, kExitUsage);
  EXPECT_EQ(ctx({"catalog", "import", "a", "--bogus"}).code, kExitUsage);
  EXPECT_THAT(ctx({"--help"}).out,
              HasSubstr("ctx catalog import DIR [--strict] [--state DIR] [--json]"));
  EXPECT_THAT(ctx({"--help"}).out, HasSubstr("ctx init [--state DIR]"));
}

}  // namespace
}  // namespace ctx::cli
