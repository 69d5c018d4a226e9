// Catalog sources (docs/catalog.md "Sources"): the catalog is the entries of every recorded source
// together, a source being a local directory or a git repository. A git source is fetched with the
// user's own `git` into <state>/catalog/git/<name>.git and read from a scratch checkout made with
// no hook, submodule, filter or LFS smudge; each source's record (name, origin, commit, tree
// digest, entries) is <state>/catalog/sources/<name>.json. `ctx catalog import DIR` is the source
// named "local". Thread-compatible; processes serialise on the catalog's import lock.
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_SOURCES_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_SOURCES_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/catalog/catalog.hpp"

namespace ctx::runtime {

// Where a source's files come from.
struct SourceOrigin {
  enum class Kind { kDirectory, kGit };
  Kind kind = Kind::kDirectory;
  std::string location;  // an absolute directory, or the URL git fetches
  std::string ref;       // git: the branch, tag or commit asked for; empty = the remote's HEAD
  std::string subpath;   // git: the folder of the tree the catalog is; empty = the whole tree
  friend bool operator==(const SourceOrigin&, const SourceOrigin&) = default;
};

// SOURCE as `ctx catalog add` takes it: an existing local directory (absolute, or relative to
// `cwd`; "./x", "../x" and "/x" are always directories); a git URL (https://, http://, ssh://,
// git://, file:// or user@host:path, without a password in it); or owner/repo[@ref][/subpath]
// for GitHub. Errors: InvalidArgument naming what is wrong, NotFound (a directory that is not).
SourceOrigin parse_source(std::string_view text, const std::filesystem::path& cwd);

// A source name from its origin: the directory's or repository's name, lower-cased, other
// characters as '-'; "source" when nothing is left.
std::string default_source_name(const SourceOrigin& origin);

// Source names: 1-64 of [a-z0-9-] without leading, trailing or double '-'.
bool is_source_name(std::string_view name);

// One recorded source and what it held when last read.
struct CatalogSource {
  std::string name;
  SourceOrigin origin;
  std::string commit;       // git: the commit read; empty for a directory
  std::string tree_digest;  // git: the tree id of commit[:subpath]; a directory: the sha256 of
                            // its entries (canon-A catalog_content_json)
  std::vector<CatalogEntry> entries;  // source = name
  std::vector<CatalogProblem> skipped;
};

// What an add or update read: capability ids added, changed (other bytes or metadata) and
// removed against the source's previous record, each sorted; and the import that followed.
struct SourceUpdate {
  std::string name;
  std::string previous_commit;
  std::string commit;
  std::vector<std::string> added;
  std::vector<std::string> changed;
  std::vector<std::string> removed;
  CatalogImportResult import;
};

// The recorded sources, sorted by name. Errors: DataLoss (a record does not parse).
std::vector<CatalogSource> list_sources(const std::filesystem::path& state_dir);

// The record of source `name`, or nullopt. Errors: DataLoss.
std::optional<CatalogSource> find_source(const std::filesystem::path& state_dir,
                                         std::string_view name);

// Records a new source `name`, reads it (fetching a git one) and imports the catalog of every
// source. Errors: InvalidArgument (name), FailedPrecondition (a source of that name exists; the
// state dir), NotFound (a subpath that the commit does not have), SystemError (git failed; its own
// messages went to stderr), CatalogImportError (strict, or nothing in it imports). On any error
// the recorded sources and the current catalog are as before.
// `progress` is told how the read and the import go (catalog.hpp).
SourceUpdate add_source(const std::filesystem::path& state_dir, const std::string& name,
                        const SourceOrigin& origin, const CatalogImportOptions& options = {},
                        const CatalogProgress& progress = {});

// Reads source `name` again (git: fetches its recorded ref) and imports. Errors: NotFound (no
// source of that name), and as add_source.
SourceUpdate update_source(const std::filesystem::path& state_dir, const std::string& name,
                           const CatalogImportOptions& options = {},
                           const CatalogProgress& progress = {});

// Forgets source `name` (its record and git directory) and imports the others' entries. What is
// installed keeps its bytes (installs are copies). Errors: NotFound, FailedPrecondition.
CatalogImportResult remove_source(const std::filesystem::path& state_dir, const std::string& name);

// --- the store half (catalog_store.cpp) ---

// The source `import_catalog` records.
inline constexpr std::string_view kLocalSource = "local";

// Writes `contents`' objects, then `source`'s record, then imports every source's entries (the
// first source by name keeps a kind and name; each other is a skipped "SOURCE:PATH" in the
// result). With must_be_new, a recorded source of that name fails it (FailedPrecondition) and
// nothing is written. Errors: as import_catalog.
CatalogImportResult store_source(const std::filesystem::path& state_dir,
                                 const CatalogSource& source, const CatalogContents& contents,
                                 const CatalogImportOptions& options, bool must_be_new,
                                 const CatalogProgress& progress = {});

// <state>/catalog, created private when missing. Errors: FailedPrecondition (the state dir).
std::filesystem::path catalog_root(const std::filesystem::path& state_dir);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_SOURCES_HPP_
