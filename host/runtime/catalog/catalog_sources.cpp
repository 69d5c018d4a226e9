// Catalog sources: SOURCE parsing, fetching and checking out a git source with the user's `git`
// (argv exec, never a shell) so that nothing from the source runs, and the add / update / remove
// flows (the records and the import they end with are catalog_store.cpp's).
#include "host/runtime/catalog/catalog_sources.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "host/core/canonical_json.hpp"

extern char** environ;

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using core::Json;

constexpr std::size_t kMaxGitOutputBytes = 1u << 16;  // rev-parse prints one object id

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

constexpr std::string_view kUrlSchemes[] = {"https://", "http://", "ssh://", "git://", "file://"};

bool has_scheme(std::string_view text) {
  return std::any_of(std::begin(kUrlSchemes), std::end(kUrlSchemes),
                     [&](std::string_view scheme) { return starts_with(text, scheme); });
}

// scp-like "user@host:path": an '@' before the first ':', and no '/' before that ':'.
bool is_scp_like(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon + 1 >= text.size()) return false;
  const auto at = text.find('@');
  const auto slash = text.find('/');
  return at != std::string_view::npos && at > 0 && at + 1 < colon &&
         (slash == std::string_view::npos || slash > colon);
}

// GitHub owner and repository names: [A-Za-z0-9._-], not "." or "..".
bool is_github_part(std::string_view part) {
  if (part.empty() || part.size() > 100 || part == "." || part == "..") return false;
  return std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// A ref git could name: no control bytes, spaces or the characters git refuses in ref names,
// no "..", no leading '-' (it would read as an option).
bool is_ref_text(std::string_view ref) {
  if (ref.empty() || ref.size() > 255 || ref.front() == '-' || ref.front() == '/' ||
      ref.back() == '/' || ref.back() == '.' || ref.find("..") != std::string_view::npos ||
      ref.find("@{") != std::string_view::npos) {
    return false;
  }
  return std::none_of(ref.begin(), ref.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f || c == ' ' || c == ':' || c == '~' || c == '^' || c == '?' ||
           c == '*' || c == '[' || c == '\\';
  });
}

// A folder inside a tree: '/'-separated parts, none empty-after-cleanup, ".", ".." or control
// bytes; a leading '-' is refused so it never reads as an option.
std::string clean_subpath(std::string_view text) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto next = text.find('/', pos);
    const std::string_view part =
        text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    if (!part.empty()) {
      const bool control = std::any_of(part.begin(), part.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      });
      if (part == "." || part == ".." || part.front() == '-' || control) {
        throw InvalidArgument("source subpath must name a folder inside the repository");
      }
      if (!out.empty()) out += "/";
      out += part;
    }
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return out;
}

// The URL's "user:password@" part would be recorded and printed: credentials belong to git's
// credential helper.
void refuse_password(std::string_view url) {
  const auto start = url.find("://") + 3;
  const auto end = url.find('/', start);
  const std::string_view authority =
      url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  const auto at = authority.rfind('@');
  if (at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos) {
    throw InvalidArgument(
        "source URL must not hold a password (git's credential helper supplies it)");
  }
}

// ---- the user's git ----

struct GitRun {
  int status = -1;
  std::string out;  // stdout, at most kMaxGitOutputBytes
};

// Runs the user's git (found on PATH) with `args` and no shell: stdin /dev/null, stdout captured,
// stderr the user's. Always: no hooks (core.hooksPath=/dev/null), no fsmonitor, no submodules,
// no LFS smudge, no template. `isolated` also leaves out the user's and the system's git config
// (the checkout: no filter or other program defined there can run on the source's files).
// Errors: FailedPrecondition (no git), SystemError (cannot start it).
GitRun run_git(const std::vector<std::string>& args, bool isolated,
               const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> argv = {"git",
                                   "-c",
                                   "core.hooksPath=/dev/null",
                                   "-c",
                                   "core.fsmonitor=false",
                                   "-c",
                                   "submodule.recurse=false",
                                   "-c",
                                   "fetch.recurseSubmodules=false",
                                   "-c",
                                   "filter.lfs.smudge=",
                                   "-c",
                                   "filter.lfs.process=",
                                   "-c",
                                   "filter.lfs.required=false",
                                   "-c",
                                   "init.templateDir="};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view item(*e);
    // ctx names the repository, work tree and index itself; an isolated run has no config but
    // its own (GIT_CONFIG_PARAMETERS / _COUNT carry `git -c` settings from a parent git).
    const bool drop =
        starts_with(item, "GIT_DIR=") || starts_with(item, "GIT_WORK_TREE=") ||
        starts_with(item, "GIT_INDEX_FILE=") || starts_with(item, "GIT_OBJECT_DIRECTORY=") ||
        starts_with(item, "GIT_ALTERNATE_OBJECT_DIRECTORIES=") ||
        starts_with(item, "GIT_COMMON_DIR=") || starts_with(item, "GIT_LFS_SKIP_SMUDGE=") ||
        (isolated && (starts_with(item, "GIT_CONFIG") || starts_with(item, "GIT_ATTR_")));
    if (!drop) env.emplace_back(item);
  }
  env.emplace_back("GIT_LFS_SKIP_SMUDGE=1");
  if (isolated) {
    env.emplace_back("GIT_CONFIG_GLOBAL=/dev/null");
    env.emplace_back("GIT_CONFIG_NOSYSTEM=1");
    env.emplace_back("GIT_ATTR_NOSYSTEM=1");
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argp;
  for (auto& a : argv) argp.push_back(a.data());
  argp.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("cannot create a pipe for git");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw SystemError("cannot start git");
  }
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(fds[1], STDOUT_FILENO) < 0) {
      ::_exit(126);
    }
    ::execvpe(argp[0], argp.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  GitRun run;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (run.out.size() < kMaxGitOutputBytes) run.out.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("cannot wait for git");
  }
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (run.status == 127) {
    throw FailedPrecondition("git is not installed (ctx fetches catalog sources with git)");
  }
  return run;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A hex object id (SHA-1 or SHA-256 repositories).
bool is_object_id(std::string_view text) {
  return (text.size() == 40 || text.size() == 64) &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string rev_parse(const fs::path& git_dir, const std::string& spec) {
  const GitRun run = run_git({"--git-dir=" + git_dir.string(), "rev-parse", "--verify", "--quiet",
                              "--end-of-options", spec},
                             /*isolated=*/true);
  const std::string id = first_line(run.out);
  return run.status == 0 && is_object_id(id) ? id : std::string();
}

// A private scratch directory under `parent`, removed with everything in it on destruction.
class Scratch {
 public:
  explicit Scratch(const fs::path& parent) {
    std::string pattern = (parent / ".checkout-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw SystemError("catalog store: cannot create a checkout directory");
    }
    path_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

void ensure_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError("catalog store: cannot create a directory");
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    throw FailedPrecondition("catalog store directory must be a directory of this user");
  }
}

struct Fetched {
  std::string commit;
  std::string tree;
};

// Fetches the origin's ref (the remote's HEAD when none) into the bare repository `git_dir`
// (made when missing) as refs/ctx/fetched; returns its commit and the tree id of
// commit[:subpath]. The fetch uses the user's git config: their credentials, proxies and
// insteadOf rules.
Fetched fetch_git(const fs::path& git_dir, const SourceOrigin& origin) {
  struct stat st {};
  if (::lstat(git_dir.c_str(), &st) != 0) {
    if (run_git({"init", "--quiet", "--bare", "--", git_dir.string()}, /*isolated=*/true).status !=
        0) {
      throw SystemError("git could not create the repository of a catalog source");
    }
    ::chmod(git_dir.c_str(), 0700);
  } else if (!S_ISDIR(st.st_mode)) {
    throw FailedPrecondition("a catalog source's git directory is not a directory");
  }
  const std::string ref = origin.ref.empty() ? "HEAD" : origin.ref;
  const GitRun fetch =
      run_git({"--git-dir=" + git_dir.string(), "fetch", "--quiet", "--no-tags",
               "--no-recurse-submodules", "--", origin.location, "+" + ref + ":refs/ctx/fetched"},
              /*isolated=*/false);
  if (fetch.status != 0) {
    throw SystemError("git could not fetch " + ref + " of the catalog source (git exited " +
                      std::to_string(fetch.status) + ")");
  }
  Fetched out;
  out.commit = rev_parse(git_dir, "refs/ctx/fetched^{commit}");
  if (out.commit.empty()) throw SystemError("the fetched ref of the catalog source is no commit");
  // "COMMIT:PATH" takes everything after ':' as the path, so the type is asked separately.
  out.tree = rev_parse(
      git_dir, origin.subpath.empty() ? out.commit + "^{tree}" : out.commit + ":" + origin.subpath);
  if (!out.tree.empty() && !origin.subpath.empty()) {
    const GitRun type = run_git({"--git-dir=" + git_dir.string(), "cat-file", "-t", out.tree},
                                /*isolated=*/true);
    if (type.status != 0 || first_line(type.out) != "tree") out.tree.clear();
  }
  if (out.tree.empty()) {
    throw NotFound("the catalog source has no folder " + origin.subpath + " at " + out.commit);
  }
  return out;
}

// Writes the files of commit[:subpath] into `work`: isolated config (no filter, fsmonitor or
// LFS smudge the user's config defines), no hooks, a scratch index, HEAD untouched.
void checkout_git(const fs::path& git_dir, const std::string& commit, const std::string& subpath,
                  const fs::path& work, const fs::path& index) {
  const GitRun run = run_git(
      {"--git-dir=" + git_dir.string(), "--work-tree=" + work.string(), "-c", "core.symlinks=true",
       "-c", "core.autocrlf=false", "checkout", "--quiet", "--force", "--no-recurse-submodules",
       commit, "--", subpath.empty() ? std::string(".") : subpath},
      /*isolated=*/true, {"GIT_INDEX_FILE=" + index.string()});
  if (run.status != 0) throw SystemError("git could not check out the catalog source");
}

// Each entry as canon-A JSON, by capability id (what "changed" compares).
std::map<std::string, std::string> by_id(const std::vector<CatalogEntry>& entries) {
  std::map<std::string, std::string> out;
  for (const auto& e : entries) {
    CatalogEntry copy = e;
    copy.source.clear();
    out[e.capability_id()] =
        core::canonical_json(catalog_content_json({copy}), core::Encoding::kAscii);
  }
  return out;
}

// Reads the origin (fetching a git one) and stores it as source `name`; `before` is its previous
// record (nullopt for an add).
SourceUpdate fetch_and_store(const fs::path& state_dir, const std::string& name,
                             const SourceOrigin& origin, const std::optional<CatalogSource>& before,
                             const CatalogImportOptions& options, const CatalogProgress& progress) {
  const fs::path root = catalog_root(state_dir);
  CatalogSource source;
  source.name = name;
  source.origin = origin;
  CatalogContents contents;
  if (origin.kind == SourceOrigin::Kind::kGit) {
    ensure_private_dir(root / "git");
    const fs::path git_dir = root / "git" / (name + ".git");
    struct stat st {};
    const bool made = ::lstat(git_dir.c_str(), &st) != 0;
    try {
      const Fetched fetched = fetch_git(git_dir, origin);
      source.commit = fetched.commit;
      source.tree_digest = fetched.tree;
      Scratch scratch(root / "git");
      const fs::path work = scratch.path() / "tree";
      ensure_private_dir(work);
      checkout_git(git_dir, fetched.commit, origin.subpath, work, scratch.path() / "index");
      contents = read_catalog(origin.subpath.empty() ? work : work / origin.subpath, progress);
    } catch (...) {
      if (made && !before) {
        std::error_code ec;
        fs::remove_all(git_dir, ec);
      }
      throw;
    }
  } else {
    if (origin.location.empty()) {
      throw FailedPrecondition("catalog source " + name +
                               " has no directory recorded (import it again with ctx catalog "
                               "import DIR)");
    }
    contents = read_catalog(origin.location, progress);
    source.tree_digest =
        core::canonical_digest(catalog_content_json(contents.entries), core::Encoding::kAscii);
  }
  source.entries = contents.entries;
  for (auto& e : source.entries) e.source = name;
  source.skipped = contents.skipped;

  SourceUpdate update;
  update.name = name;
  update.commit = source.commit;
  const auto now = by_id(source.entries);
  std::map<std::string, std::string> then;
  if (before) {
    update.previous_commit = before->commit;
    then = by_id(before->entries);
  }
  for (const auto& [id, text] : now) {
    const auto it = then.find(id);
    if (it == then.end()) {
      update.added.push_back(id);
    } else if (it->second != text) {
      update.changed.push_back(id);
    }
  }
  for (const auto& [id, text] : then) {
    if (now.count(id) == 0) update.removed.push_back(id);
  }
  update.import =
      store_source(state_dir, source, contents, options, /*must_be_new=*/!before, progress);
  return update;
}

}  // namespace

bool is_source_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-' && name.find("--") == std::string_view::npos;
}

SourceOrigin parse_source(std::string_view text, const fs::path& cwd) {
  constexpr std::string_view kForms =
      "source must be a directory, a git URL (https://, ssh://, git://, file://, user@host:path) "
      "or owner/repo[@ref][/subpath]";
  if (text.empty()) throw InvalidArgument("source must not be empty");
  if (std::any_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    throw InvalidArgument("source must not hold control characters");
  }
  if (text.front() == '-') throw InvalidArgument("source must not start with '-'");
  SourceOrigin origin;
  if (has_scheme(text)) {
    refuse_password(text);
    origin.kind = SourceOrigin::Kind::kGit;
    origin.location = std::string(text);
    return origin;
  }
  const std::string path_text(text);
  const fs::path path = fs::path(path_text).is_absolute() ? fs::path(path_text) : cwd / path_text;
  const bool path_form = text.front() == '/' || starts_with(text, "./") ||
                         starts_with(text, "../") || text == "." || text == "..";
  std::error_code ec;
  if (path_form || fs::is_directory(path, ec)) {
    if (!fs::is_directory(path, ec)) throw NotFound("source directory does not exist");
    origin.kind = SourceOrigin::Kind::kDirectory;
    origin.location = fs::weakly_canonical(path, ec).string();
    if (ec) origin.location = fs::absolute(path).lexically_normal().string();
    return origin;
  }
  if (is_scp_like(text)) {
    origin.kind = SourceOrigin::Kind::kGit;
    origin.location = path_text;
    return origin;
  }
  // owner/repo[@ref][/subpath]
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) throw InvalidArgument(std::string(kForms));
  const std::string_view owner = text.substr(0, slash);
  const std::string_view rest = text.substr(slash + 1);
  const auto next = rest.find('/');
  std::string_view repo = rest.substr(0, next);
  const std::string_view subpath =
      next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  if (const auto at = repo.find('@'); at != std::string_view::npos) {
    origin.ref = std::string(repo.substr(at + 1));
    repo = repo.substr(0, at);
    if (!is_ref_text(origin.ref)) {
      throw InvalidArgument("source ref must be a branch, tag or commit name");
    }
  }
  if (!is_github_part(owner) || !is_github_part(repo)) throw InvalidArgument(std::string(kForms));
  origin.kind = SourceOrigin::Kind::kGit;
  origin.location = "https://github.com/" + std::string(owner) + "/" + std::string(repo) + ".git";
  origin.subpath = clean_subpath(subpath);
  return origin;
}

std::string default_source_name(const SourceOrigin& origin) {
  std::string base = origin.location;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const auto cut = base.find_last_of("/:");
  if (cut != std::string::npos) base = base.substr(cut + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".git") == 0)
    base.resize(base.size() - 4);
  std::string out;
  for (char c : base) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > kMaxNameChars) out.resize(kMaxNameChars);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "source" : out;
}

SourceUpdate add_source(const fs::path& state_dir, const std::string& name,
                        const SourceOrigin& origin, const CatalogImportOptions& options,
                        const CatalogProgress& progress) {
  if (!is_source_name(name)) {
    throw InvalidArgument(
        "source name must be 1-64 of [a-z0-9-] without leading, trailing or double '-'");
  }
  if (find_source(state_dir, name)) {
    throw FailedPrecondition("a catalog source named " + name + " exists");
  }
  return fetch_and_store(state_dir, name, origin, std::nullopt, options, progress);
}

SourceUpdate update_source(const fs::path& state_dir, const std::string& name,
                           const CatalogImportOptions& options, const CatalogProgress& progress) {
  const auto before = is_source_name(name) ? find_source(state_dir, name) : std::nullopt;
  if (!before) throw NotFound("no catalog source is named " + name);
  return fetch_and_store(state_dir, name, before->origin, before, options, progress);
}

}  // namespace ctx::runtime
