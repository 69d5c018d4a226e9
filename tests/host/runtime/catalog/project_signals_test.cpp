// The terms a project's manifest files declare: one case per manifest kind, the bounds (bytes per
// file, total bytes, directory entries, terms), links never followed, and nothing read from below
// the project's top folder.
#include "host/runtime/catalog/project_signals.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ::ctx::testing::TempDir;
using ::testing::Contains;
using ::testing::IsSupersetOf;
using ::testing::Not;

class ProjectSignalsTest : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    fs::create_directories((temp_ / "project" / name).parent_path());
    std::ofstream(temp_ / "project" / name, std::ios::binary) << text;
  }
  std::vector<std::string> signals(const ProjectSignalLimits& limits = {}) const {
    return project_signals(temp_ / "project", limits);
  }
  TempDir temp_;
};

TEST_F(ProjectSignalsTest, PackageJsonDeclaresJavascriptAndItsDependencies) {
  write("package.json", R"({"name": "web", "dependencies": {"react": "^18", "@angular/core": "17"},
    "devDependencies": {"typescript": "5", "jest": "29"}, "scripts": {"vitest": "x"}})");
  const auto terms = signals();
  EXPECT_THAT(terms, IsSupersetOf({"javascript", "nodejs", "react", "angular", "core", "typescript",
                                   "jest"}));
  EXPECT_THAT(terms, Not(Contains("vitest")));  // a script name is no dependency
  EXPECT_THAT(terms, Not(Contains("web")));
  EXPECT_TRUE(std::is_sorted(terms.begin(), terms.end()));
}

TEST_F(ProjectSignalsTest, PythonManifests) {
  write("requirements.txt",
        "# pinned\nDjango>=4.2 ; python_version > '3.8'\r\n-r other.txt\n  celery[redis]==5\n");
  write("pyproject.toml", R"([project]
name = "svc"
dependencies = ["fastapi>=0.100", "pydantic"]
[tool.poetry.dependencies]
python = "^3.11"
sqlalchemy = "2"
)");
  const auto terms = signals();
  EXPECT_THAT(terms,
              IsSupersetOf({"python", "django", "celery", "fastapi", "pydantic", "sqlalchemy"}));
  EXPECT_THAT(terms, Not(Contains("other")));
  EXPECT_THAT(terms, Not(Contains("svc")));
}

TEST_F(ProjectSignalsTest, GoRustJavaRubyPhpDotnetAndCmakeManifests) {
  write("go.mod",
        "module example.com/app\n\ngo 1.22\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1\n"
        "\tgithub.com/jackc/pgx/v5 v5.5.0\n)\nrequire github.com/spf13/cobra v1.8.0\n");
  write("Cargo.toml",
        "[package]\nname = \"tool\"\n[dependencies]\ntokio = \"1\"\n"
        "serde = { version = \"1\" }\n[dev-dependencies]\ncriterion = \"0.5\"\n");
  write("pom.xml",
        "<project><dependencies><dependency><groupId>org.springframework.boot</groupId>"
        "<artifactId>spring-boot-starter-web</artifactId></dependency></dependencies></project>");
  write("build.gradle.kts", "dependencies { implementation(\"io.ktor:ktor-server-core:2.3.0\") }");
  write("Gemfile", "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\n  gem \"rspec\"\n");
  write("composer.json",
        R"({"require": {"php": ">=8.1", "ext-json": "*", "laravel/framework": "^10"}})");
  write(
      "Api.csproj",
      R"(<Project><ItemGroup><PackageReference Include="Microsoft.EntityFrameworkCore" Version="8" /></ItemGroup></Project>)");
  write("CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.20)\nfind_package(Boost REQUIRED)\n"
        "FIND_PACKAGE( GTest )\n");
  const auto terms = signals();
  EXPECT_THAT(terms, IsSupersetOf({"go", "golang", "gin", "pgx", "cobra"}));
  EXPECT_THAT(terms, IsSupersetOf({"rust", "tokio", "serde", "criterion"}));
  EXPECT_THAT(terms, IsSupersetOf({"java", "maven", "spring-boot-starter-web", "spring"}));
  EXPECT_THAT(terms, IsSupersetOf({"kotlin", "gradle", "ktor"}));
  EXPECT_THAT(terms, IsSupersetOf({"ruby", "rails", "rspec"}));
  EXPECT_THAT(terms, IsSupersetOf({"php", "laravel", "framework"}));
  EXPECT_THAT(terms, IsSupersetOf({"csharp", "dotnet", "microsoft.entityframeworkcore",
                                   "entityframeworkcore"}));
  EXPECT_THAT(terms, IsSupersetOf({"cpp", "cmake", "boost", "gtest"}));
  for (const char* never : {"json", "tool", "app", "v5", "example"}) {
    EXPECT_THAT(terms, Not(Contains(never))) << never;
  }
}

TEST_F(ProjectSignalsTest, AFileThatDoesNotParseYieldsItsLanguageOnly) {
  write("package.json", "{ not json");
  write("Cargo.toml", "[dependencies\ntokio = ");
  EXPECT_EQ(signals(), (std::vector<std::string>{"javascript", "nodejs", "rust"}));
}

TEST_F(ProjectSignalsTest, OnlyTheTopFolderIsReadAndLinksAreNotFollowed) {
  write("sub/package.json", R"({"dependencies": {"react": "1"}})");
  fs::create_directories(temp_ / "elsewhere");
  std::ofstream(temp_ / "elsewhere" / "Gemfile") << "gem 'rails'\n";
  fs::create_symlink(temp_ / "elsewhere" / "Gemfile", temp_ / "project" / "Gemfile");
  EXPECT_EQ(signals(), std::vector<std::string>{});
  EXPECT_EQ(project_signals(temp_ / "missing"), std::vector<std::string>{});
  EXPECT_EQ(project_signals(temp_ / "elsewhere" / "Gemfile"), std::vector<std::string>{});
}

TEST_F(ProjectSignalsTest, ReadsAreBounded) {
  // A dependency past the per-file bound is not seen; the file's start still is.
  std::string big = "flask\n" + std::string(300 * 1024, '#') + "\nnumpy\n";
  write("requirements.txt", big);
  EXPECT_THAT(signals(), Contains("flask"));
  EXPECT_THAT(signals(), Not(Contains("numpy")));
  // The total: a second manifest past it is not read.
  ProjectSignalLimits total;
  total.max_total_bytes = 1024;
  write("package.json", R"({"dependencies": {"react": "1"}})");  // read before requirements.txt
  write("requirements.txt", std::string(2000, '#') + "\nnumpy\n");
  EXPECT_THAT(signals(total), Contains("javascript"));
  EXPECT_THAT(signals(total), Not(Contains("numpy")));
  // The number of terms.
  ProjectSignalLimits few;
  few.max_terms = 3;
  std::string many = R"({"dependencies": {)";
  for (int i = 0; i < 50; ++i)
    many += (i ? "," : "") + std::string("\"dep") + std::to_string(i) + "\": \"1\"";
  write("package.json", many + "}}");
  EXPECT_LE(signals(few).size(), 3u);
  // The directory entries looked at.
  ProjectSignalLimits narrow;
  narrow.max_directory_entries = 0;
  EXPECT_EQ(signals(narrow), std::vector<std::string>{});
}

}  // namespace
}  // namespace ctx::runtime
