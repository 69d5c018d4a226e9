#include "host/runtime/catalog/project_signals.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>  // header-only (no link dependency)
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "host/core/canonical_json.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// The terms the project's manifests declare, within the limits.
class Collector {
 public:
  explicit Collector(const ProjectSignalLimits& limits)
      : limits_(limits), deadline_(Clock::now() + limits.deadline) {}

  bool out_of_budget() const {
    return terms_.size() >= limits_.max_terms || bytes_ >= limits_.max_total_bytes ||
           Clock::now() >= deadline_;
  }

  // A language or tool name, as is.
  void term(std::string_view word) {
    if (terms_.size() >= limits_.max_terms) return;
    std::string t = lower(word);
    if (!t.empty() && t.size() <= 64) terms_.insert(std::move(t));
  }

  // A dependency name: itself (lower-cased, when it is one token of [a-z0-9._-]) and its words.
  void dependency(std::string_view name) {
    const std::string l = lower(name);
    std::string whole;
    for (char c : l) {
      if (is_word_char(c) || c == '-' || c == '_' || c == '.')
        whole.push_back(c);
      else if (c == '@' && whole.empty())
        continue;
      else {
        whole.clear();
        break;
      }
    }
    if (!whole.empty()) term(whole);
    std::string word;
    for (char c : l) {
      if (is_word_char(c)) {
        word.push_back(c);
      } else if (!word.empty()) {
        term(word);
        word.clear();
      }
    }
    if (!word.empty()) term(word);
  }

  // The bytes of the regular file `name` in the open directory `dir` (not followed when a link),
  // at most max_file_bytes and what is left of the total; nullopt when it cannot be read.
  std::optional<std::string> read(int dir, const std::string& name) {
    if (out_of_budget()) return std::nullopt;
    const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    std::optional<std::string> bytes;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const std::size_t room = std::min(limits_.max_file_bytes, limits_.max_total_bytes - bytes_);
      std::string data(std::min<std::size_t>(room, static_cast<std::size_t>(st.st_size)), '\0');
      std::size_t done = 0;
      while (done < data.size()) {
        const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      data.resize(done);
      bytes_ += done;
      bytes = std::move(data);
    }
    ::close(fd);
    return bytes;
  }

  std::vector<std::string> terms() const { return {terms_.begin(), terms_.end()}; }

 private:
  const ProjectSignalLimits& limits_;
  const Clock::time_point deadline_;
  std::set<std::string> terms_;
  std::size_t bytes_ = 0;
};

// The name part of a requirement ("Django>=4.2 ; python_version>'3'": "Django").
std::string requirement_name(std::string_view line) {
  std::size_t start = 0;
  while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
  std::size_t end = start;
  while (end < line.size()) {
    const char c = line[end];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) break;
    ++end;
  }
  return std::string(line.substr(start, end - start));
}

void each_line(std::string_view text, const auto& visit) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    visit(line);
    at = end + 1;
  }
}

void json_keys(const core::Json& object, Collector& out) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items()) out.dependency(key);
}

void package_json(std::string_view text, Collector& out) {
  out.term("javascript");
  out.term("nodejs");  // the runtime a package.json is for, as catalogs spell it ("Node.js")
  const core::Json json = core::Json::parse(text, nullptr, false);
  if (!json.is_object()) return;
  for (const char* field : {"dependencies", "devDependencies", "peerDependencies"}) {
    if (json.contains(field)) json_keys(json.at(field), out);
  }
}

void composer_json(std::string_view text, Collector& out) {
  out.term("php");
  const core::Json json = core::Json::parse(text, nullptr, false);
  if (!json.is_object()) return;
  for (const char* field : {"require", "require-dev"}) {
    if (!json.contains(field) || !json.at(field).is_object()) continue;
    for (const auto& [key, value] : json.at(field).items()) {
      if (key == "php" || key.rfind("ext-", 0) == 0) continue;
      out.dependency(key);
    }
  }
}

void toml_keys(const toml::node* table, Collector& out) {
  if (table == nullptr || !table->is_table()) return;
  for (const auto& [key, value] : *table->as_table()) {
    if (key.str() != "python") out.dependency(key.str());
  }
}

void pyproject(std::string_view text, Collector& out) {
  out.term("python");
  toml::table table;
  try {
    table = toml::parse(text);
  } catch (const toml::parse_error&) {
    return;
  }
  if (const auto* deps = table["project"]["dependencies"].as_array()) {
    for (const auto& dep : *deps) {
      if (const auto* s = dep.as_string()) out.dependency(requirement_name(s->get()));
    }
  }
  toml_keys(table["tool"]["poetry"]["dependencies"].node(), out);
  toml_keys(table["tool"]["poetry"]["group"]["dev"]["dependencies"].node(), out);
}

void cargo(std::string_view text, Collector& out) {
  out.term("rust");
  toml::table table;
  try {
    table = toml::parse(text);
  } catch (const toml::parse_error&) {
    return;
  }
  for (const char* section : {"dependencies", "dev-dependencies", "build-dependencies"}) {
    toml_keys(table[section].node(), out);
  }
}

void requirements(std::string_view text, Collector& out) {
  out.term("python");
  each_line(text, [&](std::string_view line) {
    const std::string name = requirement_name(line);
    if (!name.empty() && line.find_first_not_of(" \t") != std::string_view::npos &&
        line[line.find_first_not_of(" \t")] != '-' && line[line.find_first_not_of(" \t")] != '#') {
      out.dependency(name);
    }
  });
}

void go_mod(std::string_view text, Collector& out) {
  out.term("go");
  out.term("golang");  // the name catalogs use where "go" is too short or too common a word
  bool in_block = false;
  each_line(text, [&](std::string_view line) {
    std::string_view rest = line;
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (rest.rfind("require (", 0) == 0) {
      in_block = true;
      return;
    }
    if (in_block && rest.rfind(")", 0) == 0) {
      in_block = false;
      return;
    }
    if (rest.rfind("require ", 0) == 0) {
      rest.remove_prefix(8);
    } else if (!in_block) {
      return;
    }
    const std::string_view path = rest.substr(0, rest.find_first_of(" \t"));
    std::string_view last =
        path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
    // A major-version suffix ("/v2") names the module before it.
    if (last.size() >= 2 && last[0] == 'v' &&
        last.find_first_not_of("0123456789", 1) == std::string_view::npos) {
      const std::string_view before = path.substr(0, path.rfind('/'));
      last = before.substr(before.rfind('/') == std::string_view::npos ? 0 : before.rfind('/') + 1);
    }
    if (!last.empty()) out.dependency(last);
  });
}

void each_match(std::string_view text, const std::regex& pattern, Collector& out) {
  const std::string copy(text);
  for (auto it = std::sregex_iterator(copy.begin(), copy.end(), pattern);
       it != std::sregex_iterator() && !out.out_of_budget(); ++it) {
    out.dependency((*it)[1].str());
  }
}

void pom(std::string_view text, Collector& out) {
  out.term("java");
  out.term("maven");
  static const std::regex artifact(R"(<artifactId>\s*([A-Za-z0-9._-]+)\s*</artifactId>)");
  each_match(text, artifact, out);
}

void gradle(std::string_view text, bool kotlin, Collector& out) {
  out.term(kotlin ? "kotlin" : "java");
  out.term("gradle");
  static const std::regex coordinate(R"(["'][A-Za-z0-9._-]+:([A-Za-z0-9._-]+)(:[^"']*)?["'])");
  each_match(text, coordinate, out);
}

void gemfile(std::string_view text, Collector& out) {
  out.term("ruby");
  static const std::regex gem(R"(^\s*gem\s+["']([A-Za-z0-9._-]+)["'])", std::regex::multiline);
  each_match(text, gem, out);
}

void csproj(std::string_view text, Collector& out) {
  out.term("csharp");
  out.term("dotnet");
  static const std::regex reference(R"re(<PackageReference\s+Include\s*=\s*"([A-Za-z0-9._-]+)")re",
                                    std::regex::icase);
  each_match(text, reference, out);
}

void cmake(std::string_view text, Collector& out) {
  out.term("cpp");
  out.term("cmake");
  static const std::regex found(R"(find_package\s*\(\s*([A-Za-z0-9_.+-]+))", std::regex::icase);
  each_match(text, found, out);
}

}  // namespace

std::vector<std::string> project_signals(const std::filesystem::path& project_dir,
                                         const ProjectSignalLimits& limits) {
  const int dir = ::open(project_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return {};
  Collector out(limits);
  // The manifest names present, in a fixed order (the directory's own order is not).
  std::vector<std::string> names;
  {
    const int listing = ::dup(dir);
    DIR* stream = listing < 0 ? nullptr : ::fdopendir(listing);
    if (stream == nullptr && listing >= 0) ::close(listing);
    static const std::set<std::string> kManifests = {
        "package.json", "pyproject.toml", "requirements.txt", "go.mod",
        "Cargo.toml",   "pom.xml",        "build.gradle",     "build.gradle.kts",
        "Gemfile",      "composer.json",  "CMakeLists.txt"};
    std::size_t seen = 0;
    while (stream != nullptr && seen < limits.max_directory_entries) {
      const dirent* entry = ::readdir(stream);
      if (entry == nullptr) break;
      ++seen;
      const std::string name = entry->d_name;
      const bool project_file = name.size() > 7 && name.compare(name.size() - 7, 7, ".csproj") == 0;
      if (kManifests.count(name) || project_file) names.push_back(name);
    }
    if (stream != nullptr) ::closedir(stream);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    if (out.out_of_budget()) break;
    const auto bytes = out.read(dir, name);
    if (!bytes) continue;
    if (name == "package.json") {
      package_json(*bytes, out);
    } else if (name == "composer.json") {
      composer_json(*bytes, out);
    } else if (name == "pyproject.toml") {
      pyproject(*bytes, out);
    } else if (name == "Cargo.toml") {
      cargo(*bytes, out);
    } else if (name == "requirements.txt") {
      requirements(*bytes, out);
    } else if (name == "go.mod") {
      go_mod(*bytes, out);
    } else if (name == "pom.xml") {
      pom(*bytes, out);
    } else if (name == "build.gradle" || name == "build.gradle.kts") {
      gradle(*bytes, name == "build.gradle.kts", out);
    } else if (name == "Gemfile") {
      gemfile(*bytes, out);
    } else if (name == "CMakeLists.txt") {
      cmake(*bytes, out);
    } else {
      csproj(*bytes, out);
    }
  }
  ::close(dir);
  return out.terms();
}

}  // namespace ctx::runtime
