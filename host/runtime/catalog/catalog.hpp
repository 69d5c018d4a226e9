// The capability catalog: read_catalog() walks a catalog tree for what the hosts load (folders
// holding SKILL.md, agents/*.md and *.toml, mcp-servers/*.json, .mcp.json, Claude Code plugin
// manifests, harnesses/*.json; docs/catalog.md) into
// entries, skipping what no host would load with one problem per file; import_catalog() writes
// the planner's SQLite graph store and a content-addressed object store into the state dir
// atomically; ImportedCatalog opens the current import.
// Layout under <state>/catalog/: objects/<sha256> (0444 blobs: every file, and the tree root
// of each tree skill), snapshots/<catalog_digest>/
// {manifest.json, graph.sqlite3} (0444), CURRENT (the current catalog digest), .lock (flock),
// sources/<name>.json (each source's record) and git/<name>.git (catalog_sources.hpp).
// Values are immutable; ImportedCatalog is thread-safe (read-only after open).
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_HPP_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctx/sdk/skill_tree.hpp>

#include "host/engine/vocabulary.hpp"

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/runtime/catalog/catalog_terms.hpp"

namespace ctx::core {
class StateFs;
}  // namespace ctx::core

namespace ctx::runtime {

// Bounds of one catalog tree: capabilities (valid or not), directory entries visited and folder
// depth. Past any, the tree is refused as a whole.
inline constexpr std::size_t kMaxCatalogEntries = 100'000;
inline constexpr std::size_t kMaxCatalogFiles = 1'000'000;
inline constexpr std::size_t kMaxCatalogDepth = 24;
inline constexpr std::size_t kMaxSkillMdBytes = 1u << 20;        // SKILL.md
inline constexpr std::size_t kMaxAgentFileBytes = 1u << 20;      // agents/<name>.md
inline constexpr std::size_t kMaxJsonEntryBytes = 256u << 10;    // mcp-servers / harnesses
inline constexpr std::size_t kMaxMcpConfigBytes = 1u << 20;      // .mcp.json, plugin manifests
inline constexpr std::size_t kMaxMcpArgsBytes = 64u << 10;       // one mcp server's args together
// One skill resource file, files of one skill folder, and all of a skill's files together: the
// tree bounds the skill-installer's default caps are (ctx/sdk/skill_tree.hpp), so a skill that
// imports installs.
inline constexpr std::size_t kMaxResourceFileBytes = sdk::kMaxTreeFileBytes;
inline constexpr std::size_t kMaxSkillFiles = sdk::kMaxTreeFiles;
inline constexpr std::uint64_t kMaxSkillTreeBytes = sdk::kMaxTreeBytes;
inline constexpr std::size_t kMaxSkillDepth = 6;                 // directory levels in a skill
inline constexpr std::uint64_t kMaxCatalogBytes = 512ull << 20;  // every file together
inline constexpr std::size_t kMaxNameChars = 64;
// A description imports whatever its length (and is planned on whole); ctx shows at most this many
// characters of it.
inline constexpr std::size_t kMaxDescriptionChars = 1024;
inline constexpr std::size_t kMaxExplicitTags = 32;
inline constexpr std::size_t kMaxNodeTags = 100;  // the planner's safe-tags bound
inline constexpr std::string_view kCatalogManifestSchema = "ctx.catalog-manifest-v1";

// One rule broken by one catalog file. `file` is relative to the catalog root (never absolute).
struct CatalogProblem {
  std::string file;
  std::string rule;
  friend bool operator==(const CatalogProblem&, const CatalogProblem&) = default;
};

// The catalog directory breaks its rules: one problem per bad file (sorted by file). Nothing was
// written. what() names the first file and rule and how many files are bad.
class CatalogImportError : public InvalidArgument {
 public:
  explicit CatalogImportError(std::vector<CatalogProblem> problems);
  const std::vector<CatalogProblem>& problems() const noexcept { return problems_; }

 private:
  std::vector<CatalogProblem> problems_;
};

// One file of an entry: path relative to the catalog root, its sha256 and size.
struct CatalogFile {
  std::string path;
  std::string sha256;
  std::int64_t bytes = 0;
  friend bool operator==(const CatalogFile&, const CatalogFile&) = default;
};

// One validated catalog entry. `files` are sorted by path; `primary` is the file whose bytes are
// the entry's material (SKILL.md, the agent file, the JSON file). `terms` are the graph tags:
// explicit tags, name tokens and description tokens (see catalog_terms), sorted unique, ≤ 100.
// `name` is the identity (a skill's folder, an agent's frontmatter name); `label` is the name the
// file itself gives, `folder` the skill folder or the file name without its extension.
// `description` and `when_to_use` are whole, whatever their length.
struct CatalogEntry {
  engine::CapabilityKind kind = engine::CapabilityKind::kSkill;
  std::string name;
  std::string label;
  std::string folder;
  std::string description;
  std::string when_to_use;
  std::vector<std::string> tags;  // explicit tags (metadata.tags / "tags"), sorted unique
  std::vector<std::string> terms;
  std::vector<CatalogFile> files;
  CatalogFile primary;
  // A skill whose folder holds resources besides SKILL.md, or whose SKILL.md is over
  // sdk::kMaxPlainSkillBytes: its tree root text (plugin_abi.h "Tree material",
  // ctx/sdk/skill_tree.hpp: the totals and manifest digest of `files`, paths relative to the skill
  // folder), stored as the object `tree->sha256`; `tree->path` is the skill folder. Its digest and
  // length are the skill's material identity. Absent for a plain skill (one SKILL.md of at most
  // 6000 bytes: its material is `primary`) and for the other kinds.
  // An agent file (agents/<name>.md) over 6000 bytes is a one-file tree too: its root over the
  // manifest of the one file "AGENT.md" (sdk::kAgentFile), `tree->path` the agent file's path;
  // an agent of at most 6000 bytes, and a Codex agent (TOML, which the agent installer does not
  // install), has none.
  std::optional<CatalogFile> tree;
  std::vector<std::string> tools;  // agent `tools`, in file order
  // mcp-server only.
  std::optional<std::string> command;
  std::vector<std::string> args;
  std::vector<std::string> env_names;  // sorted; values are kept only in the stored bytes
  std::optional<std::string> url;
  // The catalog source it came from (catalog_sources.hpp): "local" for `ctx catalog import`;
  // empty as read_catalog reads it.
  std::string source;

  std::string capability_id() const {
    return std::string(engine::to_string(kind)) + ":" + name;
  }
  friend bool operator==(const CatalogEntry&, const CatalogEntry&) = default;
};

// Where an entry was found: a skill's folder, else its file ("PATH#NAME" for one server of a
// .mcp.json-shaped file).
std::string entry_location(const CatalogEntry& entry);

// The path each of a tree entry's `files` has in its tree manifest, in the same order: a skill's
// files relative to its folder, an agent's one file "AGENT.md". Empty when `entry` has no tree.
std::vector<std::string> tree_paths(const CatalogEntry& entry);

// Entries sorted by capability id, plus the bytes of every file by sha256, and one problem per
// file skipped (sorted by file).
struct CatalogContents {
  std::vector<CatalogEntry> entries;
  std::map<std::string, std::string> blobs;  // sha256 -> bytes
  std::vector<CatalogProblem> skipped;
};

// Progress callback: (phase, done, total); phases "read" (entries seen so far, total 0: not
// known), "objects" (written or verified of all), "graph" (0 of 1, then 1 of 1).
using CatalogProgress =
    std::function<void(std::string_view phase, std::size_t done, std::size_t total)>;

// Reads every capability file under `catalog_dir` (a real directory; links are never followed);
// what no host would load is in `skipped`; `progress` is told each entry seen ("read", n, 0).
// Errors: CatalogImportError with one catalog-wide problem (file ".") when the tree as a whole
// cannot be read or is over a bound.
CatalogContents read_catalog(const std::filesystem::path& catalog_dir,
                             const CatalogProgress& progress = {});

// canon-A JSON of the entries (no bytes): the manifest's "content"; its digest is the catalog
// digest, a function of the catalog's bytes and layout only.
core::Json catalog_content_json(const std::vector<CatalogEntry>& entries);

struct CatalogImportOptions {
  bool strict = false;  // any skipped file fails the import (all or nothing)
  // Writes the catalog's files; may be null: store::default_state_fs(). Must outlive the call.
  core::StateFs* state_fs = nullptr;
};

struct CatalogImportResult {
  std::string catalog_digest;
  std::string graph_sha256;
  std::size_t entry_count = 0;
  std::size_t object_count = 0;
  bool changed = false;  // false when this exact catalog was already the current import
  std::vector<CatalogProblem> skipped;
};

// Validates `catalog_dir` completely, then (under <state>/catalog/.lock) sweeps what an
// interrupted import left, writes the objects, records `catalog_dir` as the source "local"
// (catalog_sources.hpp) and imports every source's entries: a staged snapshot renamed into place
// and finally CURRENT; entry_count counts them all. Crash points:
// catalog.import.objects-written, .snapshot-staged, .snapshot-placed, .current-staged; a crash at
// any leaves the previous import current and the next import finishes the work. `state_dir` must
// be an existing private (0700, owned, non-symlink) directory. Re-importing the same catalog
// changes nothing.
// Skipped files are in the result; with options.strict, or when files were skipped and nothing is
// left to import, the import fails with them instead.
// Errors: CatalogImportError (nothing written), FailedPrecondition (state dir), SystemError.
CatalogImportResult import_catalog(const std::filesystem::path& catalog_dir,
                                   const std::filesystem::path& state_dir,
                                   const CatalogProgress& progress = {},
                                   const CatalogImportOptions& options = {});

// The current imported catalog of a state dir: manifest entries, the pinned graph artifact and
// verified object reads.
class ImportedCatalog {
 public:
  // Errors: NotFound (no catalog imported), DataLoss (manifest or snapshot does not verify).
  static std::shared_ptr<const ImportedCatalog> open(const std::filesystem::path& state_dir);

  const std::string& catalog_digest() const noexcept { return catalog_digest_; }
  const std::string& graph_sha256() const noexcept { return graph_sha256_; }
  const std::filesystem::path& graph_path() const noexcept { return graph_path_; }
  const std::vector<CatalogEntry>& entries() const noexcept { return entries_; }
  // The entry of `capability_id`, or null.
  const CatalogEntry* find(std::string_view capability_id) const;
  // The stored bytes of `sha256`, re-hashed. Errors: DataLoss (missing or altered object).
  std::string read_object(std::string_view sha256) const;
  // The stored bytes of `sha256`, not re-hashed: for a caller that verifies them itself (install
  // execution checks every file of a tree against its manifest, once). At most `limit` bytes.
  // Errors: DataLoss (missing, not a bounded regular file, or name not a digest).
  std::string read_object_unverified(std::string_view sha256,
                                     std::size_t limit = kMaxResourceFileBytes) const;

 private:
  ImportedCatalog() = default;
  friend struct CatalogStoreAccess;  // catalog_store.cpp: imports verify a snapshot in place
  // Opens snapshots/<digest> under the catalog root. Errors: as open().
  static std::shared_ptr<const ImportedCatalog> open_snapshot(const std::filesystem::path& root,
                                                              const std::string& digest);
  std::string catalog_digest_;
  std::string graph_sha256_;
  std::filesystem::path graph_path_;
  std::filesystem::path objects_dir_;
  std::vector<CatalogEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> by_id_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_HPP_
