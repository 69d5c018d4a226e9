// The languages and frameworks a project declares in its manifest files (issue 34 item 4): the
// raw terms behind a session's project signals. Only the project's top folder is read: files named
// package.json, pyproject.toml, requirements.txt, go.mod, Cargo.toml, pom.xml, build.gradle,
// build.gradle.kts, Gemfile, composer.json, CMakeLists.txt and *.csproj; each a regular file
// opened without following links, read up to a byte bound; the whole read stops at a byte total
// and a deadline. What a file yields:
//   package.json    javascript, nodejs (+ typescript when it is a dependency), dependency names
//   pyproject.toml  python, [project] dependencies and [tool.poetry] dependency names
//   requirements.txt python, requirement names
//   go.mod          go, golang, the last part of each required module path
//   Cargo.toml      rust, [dependencies] / [dev-dependencies] / [build-dependencies] names
//   pom.xml         java, maven, dependency artifactIds
//   build.gradle(.kts) java (kotlin for .kts), gradle, "group:artifact" dependency artifacts
//   Gemfile         ruby, gem names
//   composer.json   php, require / require-dev package names (vendor and package)
//   *.csproj        csharp, dotnet, PackageReference names (whole, and their dotted parts)
//   CMakeLists.txt  cpp, cmake, find_package names
// A dependency name yields itself lower-cased and the words of it ("@angular/core": "angular",
// "core"; "react-dom": "react-dom", "react", "dom"). A file that does not parse yields its
// language only. The caller keeps only catalog terms (CatalogVocabulary). Thread-safe (no state).
#ifndef CTX_HOST_RUNTIME_CATALOG_PROJECT_SIGNALS_HPP_
#define CTX_HOST_RUNTIME_CATALOG_PROJECT_SIGNALS_HPP_

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace ctx::runtime {

struct ProjectSignalLimits {
  std::size_t max_file_bytes = 256 * 1024;    // a manifest is read up to this many bytes
  std::size_t max_total_bytes = 1024 * 1024;  // all manifests together
  std::size_t max_directory_entries = 4096;   // entries of the top folder looked at
  std::size_t max_terms = 512;                // terms returned
  std::chrono::milliseconds deadline{250};    // the whole read
};

// The sorted, unique, lower-cased terms of the manifests in `project_dir`; empty when it is not a
// readable directory. Never throws for what the files hold or for I/O errors (a file that cannot
// be read is skipped); a bound that is reached ends the read with what was found so far.
std::vector<std::string> project_signals(const std::filesystem::path& project_dir,
                                         const ProjectSignalLimits& limits = {});

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_PROJECT_SIGNALS_HPP_
