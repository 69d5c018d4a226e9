// import_catalog, the source records and ImportedCatalog: the state-dir half of the catalog
// (layout in catalog.hpp, sources in catalog_sources.hpp). Validation finishes before the first
// byte is written; objects are content-addressed (a second write of one object is a no-op); a
// source's record is written next; the snapshot of every source's entries together is staged and
// renamed; CURRENT moves last.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>

#include "host/core/crypto.hpp"
#include "host/core/state_fs.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/runtime/catalog/catalog_sources.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using core::Json;

constexpr std::chrono::milliseconds kImportLockTimeout{60'000};

Json file_json(const CatalogFile& file) {
  return Json{{"bytes", file.bytes}, {"path", file.path}, {"sha256", file.sha256}};
}

Json strings_json(const std::vector<std::string>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(v);
  return out;
}

std::vector<std::string> json_strings(const Json& value) {
  std::vector<std::string> out;
  for (const auto& item : value) out.push_back(item.get<std::string>());
  return out;
}

CatalogFile file_from(const Json& value) {
  return CatalogFile{value.at("path").get<std::string>(), value.at("sha256").get<std::string>(),
                     value.at("bytes").get<std::int64_t>()};
}

// Runs one StateFs step; its failure is told in the catalog store's words (the same
// core::StateFsError: step, errno and code kept).
template <typename Step>
void step(std::string_view message, Step&& run) {
  try {
    run();
  } catch (const core::StateFsError& error) {
    throw core::StateFsError(error, std::string(message));
  }
}

// Makes the entries of `dir` durable. Errors: core::StateFsError.
void sync_dir(core::StateFs& state_fs, const fs::path& dir) {
  step("catalog store: fsync failed", [&] { state_fs.sync_dir(dir, support::Follow::kSymlinks); });
}

// Writes `bytes` to `path` (which must not exist) with `mode`; fsyncs it when `sync` (callers
// that write many files pass false and sync the file system once). Errors: core::StateFsError.
void write_new_file(core::StateFs& state_fs, const fs::path& path, std::string_view bytes,
                    mode_t mode, bool sync = true) {
  try {
    state_fs.create_file(path, bytes, core::NewFile{mode, /*umask=*/false, sync});
  } catch (const core::StateFsError& error) {
    throw core::StateFsError(
        error, error.step() == core::StateFsStep::kCreate  ? "catalog store: cannot create a file"
               : error.step() == core::StateFsStep::kWrite ? "catalog store: write failed"
                                                           : "catalog store: cannot finish a file");
  }
}

// A private directory (created 0700 if missing); symlinks and foreign owners refused.
void ensure_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SystemError("catalog store: cannot create a directory");
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    throw FailedPrecondition("catalog store directory must be a private (0700) directory");
  }
}

std::string read_small(const fs::path& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw NotFound("no catalog has been imported");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > limit) {
    ::close(fd);
    throw DataLoss("catalog store file is not a bounded regular file");
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != out.size()) throw DataLoss("catalog store file is truncated");
  return out;
}

void require_private_state(const fs::path& state_dir) {
  struct stat st {};
  if (!state_dir.is_absolute()) throw FailedPrecondition("state directory must be absolute");
  if (::lstat(state_dir.c_str(), &st) != 0) {
    throw FailedPrecondition("state directory does not exist (run ctx init)");
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw FailedPrecondition("state directory must be a private (0700) directory of this user");
  }
}

// Removes a staged directory (its files may be read-only).
void remove_staging(const fs::path& dir) {
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(dir, ec);
}

// Removes what an interrupted import left behind: entries of `dir` whose names start with
// `prefix` (staged snapshots, object and CURRENT temporaries). Caller holds the import lock.
void sweep(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) remove_staging(it->path());
  }
}

// One manifest entry back into a CatalogEntry (the "source" key absent = kLocalSource).
// Errors: DataLoss; json exceptions (callers turn them into DataLoss).
CatalogEntry entry_from(const Json& item) {
  CatalogEntry e;
  const auto kind = engine::find_enum<engine::CapabilityKind>(item.at("kind").get<std::string>());
  if (!kind) throw DataLoss("catalog manifest names an invalid capability");
  e.kind = *kind;
  e.name = item.at("name").get<std::string>();
  e.description = item.at("description").get<std::string>();
  e.label = item.value("label", e.name);
  e.folder = item.value("folder", e.name);
  e.when_to_use = item.value("when_to_use", std::string());
  e.source = item.value("source", std::string(kLocalSource));
  e.tags = json_strings(item.at("tags"));
  e.terms = json_strings(item.at("terms"));
  for (const auto& f : item.at("files")) e.files.push_back(file_from(f));
  e.primary = file_from(item.at("primary"));
  e.tools = json_strings(item.at("tools"));
  if (!item.at("command").is_null()) e.command = item.at("command").get<std::string>();
  e.args = json_strings(item.at("args"));
  e.env_names = json_strings(item.at("env_names"));
  if (!item.at("url").is_null()) e.url = item.at("url").get<std::string>();
  if (const auto tree = item.find("tree"); tree != item.end()) {
    e.tree = file_from(*tree);
    const bool agent_tree = e.kind == engine::CapabilityKind::kAgent && e.files.size() == 1;
    if ((e.kind != engine::CapabilityKind::kSkill && !agent_tree) ||
        !engine::is_digest(e.tree->sha256)) {
      throw DataLoss("catalog manifest names an invalid skill tree");
    }
  }
  if (!engine::is_capability_identity(e.capability_id(), engine::to_string(e.kind)) ||
      item.at("capability_id") != e.capability_id() || !is_source_name(e.source)) {
    throw DataLoss("catalog manifest names an invalid capability");
  }
  return e;
}

// ---- source records: <state>/catalog/sources/<name>.json ----

// Whether `path` names anything (a link is not followed).
bool present(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

constexpr std::string_view kSourceRecordSchema = "ctx.catalog-source-v1";
constexpr std::uint64_t kMaxRecordBytes = 1ull << 30;

// Writes `bytes` as dir/name unless it holds exactly them already (temporary file, fsync,
// rename, directory fsync).
void write_if_changed(core::StateFs& state_fs, const fs::path& dir, const std::string& name,
                      const std::string& bytes) {
  const fs::path target = dir / name;
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) == bytes.size()) {
    try {
      if (read_small(target, bytes.size()) == bytes) return;
    } catch (const Error&) {
    }
  }
  const fs::path temp = dir / (".tmp-" + name + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove(temp, ec);
  write_new_file(state_fs, temp, bytes, 0400);
  step("catalog store: cannot place a source record", [&] { state_fs.rename(temp, target); });
  sync_dir(state_fs, dir);
}

Json problems_json(const std::vector<CatalogProblem>& problems) {
  Json out = Json::array();
  for (const auto& p : problems) out.push_back(Json{{"file", p.file}, {"rule", p.rule}});
  return out;
}

std::string record_text(const CatalogSource& s) {
  std::vector<CatalogEntry> entries = s.entries;
  for (auto& e : entries) e.source.clear();
  const Json value{
      {"commit", s.commit},
      {"content", catalog_content_json(entries)},
      {"name", s.name},
      {"origin", Json{{"kind", s.origin.kind == SourceOrigin::Kind::kGit ? "git" : "directory"},
                      {"location", s.origin.location},
                      {"ref", s.origin.ref},
                      {"subpath", s.origin.subpath}}},
      {"schema", std::string(kSourceRecordSchema)},
      {"skipped", problems_json(s.skipped)},
      {"tree_digest", s.tree_digest}};
  return core::canonical_json(value, core::Encoding::kAscii);
}

CatalogSource source_from(const std::string& text, std::string_view expected_name) {
  try {
    const Json value = core::parse_canonical_json(text, core::Encoding::kAscii);
    if (value.at("schema") != kSourceRecordSchema) {
      throw DataLoss("a catalog source record has another schema");
    }
    CatalogSource s;
    s.name = value.at("name").get<std::string>();
    if (s.name != expected_name || !is_source_name(s.name)) {
      throw DataLoss("a catalog source record names another source");
    }
    const Json& origin = value.at("origin");
    const std::string kind = origin.at("kind").get<std::string>();
    if (kind != "git" && kind != "directory") {
      throw DataLoss("a catalog source record names an unknown kind");
    }
    s.origin.kind = kind == "git" ? SourceOrigin::Kind::kGit : SourceOrigin::Kind::kDirectory;
    s.origin.location = origin.at("location").get<std::string>();
    s.origin.ref = origin.at("ref").get<std::string>();
    s.origin.subpath = origin.at("subpath").get<std::string>();
    s.commit = value.at("commit").get<std::string>();
    s.tree_digest = value.at("tree_digest").get<std::string>();
    for (const auto& item : value.at("content").at("entries")) {
      CatalogEntry e = entry_from(item);
      e.source = s.name;
      s.entries.push_back(std::move(e));
    }
    for (const auto& p : value.at("skipped")) {
      s.skipped.push_back({p.at("file").get<std::string>(), p.at("rule").get<std::string>()});
    }
    return s;
  } catch (const DataLoss&) {
    throw;
  } catch (const std::exception&) {
    throw DataLoss("a catalog source record is malformed");
  }
}

// A catalog imported before sources were recorded has no sources/ folder: its entries are the
// source "local" (whose directory is not known).
// A writer (`for_write`) replaces a damaged current import instead of adopting it.
std::optional<CatalogSource> unrecorded_catalog(const fs::path& state_dir, bool for_write) {
  const fs::path root = state_dir / "catalog";
  if (present(root / "sources") || !present(root / "CURRENT")) {
    return std::nullopt;
  }
  CatalogSource local;
  local.name = std::string(kLocalSource);
  try {
    local.entries = ImportedCatalog::open(state_dir)->entries();
  } catch (const Error&) {
    if (for_write) return std::nullopt;
    throw;
  }
  for (auto& e : local.entries) e.source = local.name;
  local.tree_digest =
      core::canonical_digest(catalog_content_json(local.entries), core::Encoding::kAscii);
  return local;
}

// Every record, sorted by source name.
std::vector<CatalogSource> load_sources(const fs::path& state_dir) {
  if (auto local = unrecorded_catalog(state_dir, /*for_write=*/false)) return {std::move(*local)};
  const fs::path dir = state_dir / "catalog" / "sources";
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0 && file[0] != '.') {
      names.push_back(file.substr(0, file.size() - 5));
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<CatalogSource> out;
  for (const auto& name : names) {
    out.push_back(source_from(read_small(dir / (name + ".json"), kMaxRecordBytes), name));
  }
  return out;
}

// The entries of all sources, one per capability id: the source first by name keeps it; each
// other is a skipped "SOURCE:PATH" naming the one kept.
std::vector<CatalogEntry> merge_sources(const std::vector<CatalogSource>& sources,
                                        std::vector<CatalogProblem>& duplicates) {
  std::map<std::string, const CatalogEntry*> kept;
  for (const auto& source : sources) {
    for (const auto& e : source.entries) {
      const auto [it, fresh] = kept.emplace(e.capability_id(), &e);
      if (fresh) continue;
      duplicates.push_back({source.name + ":" + entry_location(e),
                            "duplicate " + e.capability_id() + " (kept " + it->second->source +
                                ":" + entry_location(*it->second) + ")"});
    }
  }
  std::vector<CatalogEntry> out;
  out.reserve(kept.size());
  for (const auto& [id, e] : kept) out.push_back(*e);
  return out;
}

}  // namespace

// The snapshot half of an import (a friend of ImportedCatalog): imports every recorded source's
// entries together. The caller holds the import lock and has written their objects.
struct CatalogStoreAccess {
  static CatalogImportResult publish(const fs::path& state_dir, const CatalogProgress& progress,
                                     core::StateFs& state_fs);
};

Json catalog_content_json(const std::vector<CatalogEntry>& entries) {
  Json list = Json::array();
  for (const auto& e : entries) {
    Json files = Json::array();
    for (const auto& f : e.files) files.push_back(file_json(f));
    Json item{{"args", strings_json(e.args)},
              {"capability_id", e.capability_id()},
              {"command", e.command ? Json(*e.command) : Json(nullptr)},
              {"description", e.description},
              {"env_names", strings_json(e.env_names)},
              {"files", files},
              {"kind", e.kind},
              {"name", e.name},
              {"primary", file_json(e.primary)},
              {"tags", strings_json(e.tags)},
              {"terms", strings_json(e.terms)},
              {"tools", strings_json(e.tools)},
              {"url", e.url ? Json(*e.url) : Json(nullptr)}};
    // Only tree skills carry the key, so a catalog of SKILL.md-only skills keeps its digest; the
    // same for a label or folder other than the name, a when_to_use, and a source other than
    // "local" (the source of `ctx catalog import`).
    if (e.tree) item["tree"] = file_json(*e.tree);
    if (e.label != e.name) item["label"] = e.label;
    if (e.folder != e.name) item["folder"] = e.folder;
    if (!e.when_to_use.empty()) item["when_to_use"] = e.when_to_use;
    if (!e.source.empty() && e.source != kLocalSource) item["source"] = e.source;
    list.push_back(std::move(item));
  }
  return Json{{"entries", list}, {"schema", std::string(kCatalogManifestSchema)}};
}

CatalogImportResult import_catalog(const std::filesystem::path& catalog_dir,
                                   const std::filesystem::path& state_dir,
                                   const CatalogProgress& progress,
                                   const CatalogImportOptions& options) {
  require_private_state(state_dir);
  const CatalogContents contents = read_catalog(catalog_dir, progress);
  CatalogSource local;
  local.name = std::string(kLocalSource);
  local.origin.kind = SourceOrigin::Kind::kDirectory;
  local.origin.location = fs::absolute(catalog_dir).lexically_normal().string();
  local.tree_digest =
      core::canonical_digest(catalog_content_json(contents.entries), core::Encoding::kAscii);
  local.entries = contents.entries;
  for (auto& e : local.entries) e.source = local.name;
  local.skipped = contents.skipped;
  return store_source(state_dir, local, contents, options, /*must_be_new=*/false, progress);
}

fs::path catalog_root(const fs::path& state_dir) {
  require_private_state(state_dir);
  const fs::path root = state_dir / "catalog";
  ensure_private_dir(root);
  return root;
}

std::optional<CatalogSource> find_source(const fs::path& state_dir, std::string_view name) {
  if (!is_source_name(name)) return std::nullopt;
  if (auto local = unrecorded_catalog(state_dir, /*for_write=*/false)) {
    if (name == kLocalSource) return local;
    return std::nullopt;
  }
  const fs::path record = state_dir / "catalog" / "sources" / (std::string(name) + ".json");
  if (!present(record)) return std::nullopt;
  return source_from(read_small(record, kMaxRecordBytes), name);
}

std::vector<CatalogSource> list_sources(const fs::path& state_dir) {
  return load_sources(state_dir);
}

CatalogImportResult store_source(const fs::path& state_dir, const CatalogSource& source,
                                 const CatalogContents& contents,
                                 const CatalogImportOptions& options, bool must_be_new,
                                 const CatalogProgress& progress) {
  const auto report = [&](std::string_view phase, std::size_t done, std::size_t total) {
    if (progress) progress(phase, done, total);
  };
  core::StateFs& state_fs = options.state_fs ? *options.state_fs : store::default_state_fs();
  require_private_state(state_dir);
  if (!is_source_name(source.name)) throw InvalidArgument("catalog source name is invalid");
  if (!contents.skipped.empty() && (options.strict || contents.entries.empty())) {
    throw CatalogImportError(contents.skipped);
  }
  const fs::path root = catalog_root(state_dir);
  ExclusiveFileLock lock(root / ".lock", kImportLockTimeout);
  const fs::path objects = root / "objects";
  const fs::path records = root / "sources";
  ensure_private_dir(objects);
  ensure_private_dir(root / "snapshots");
  sweep(root, ".CURRENT-");
  sweep(objects, ".tmp-");
  sweep(root / "snapshots", ".staging-");
  // A catalog imported before sources were recorded becomes the source "local" first.
  if (auto local = unrecorded_catalog(state_dir, /*for_write=*/true)) {
    ensure_private_dir(records);
    write_if_changed(state_fs, records, local->name + ".json", record_text(*local));
  }
  ensure_private_dir(records);
  sweep(records, ".tmp-");
  struct stat st {};
  if (must_be_new && ::lstat((records / (source.name + ".json")).c_str(), &st) == 0) {
    throw FailedPrecondition("a catalog source named " + source.name + " exists");
  }

  // Objects first: each is verified in place (rewritten when missing or altered), so a
  // re-import also repairs the object store; writing an object that is intact is a no-op.
  std::error_code ec;
  std::size_t done = 0;
  bool wrote_object = false;
  for (const auto& [sha, bytes] : contents.blobs) {
    const fs::path object = objects / sha;
    if (::lstat(object.c_str(), &st) == 0) {
      if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) == bytes.size()) {
        try {
          if (read_small(object, bytes.size()) == bytes) {
            report("objects", ++done, contents.blobs.size());
            continue;
          }
        } catch (const Error&) {
        }
      }
      ::chmod(object.c_str(), 0600);
      fs::remove(object, ec);
    }
    const fs::path temp = objects / (".tmp-" + sha + "-" + std::to_string(::getpid()));
    fs::remove(temp, ec);
    write_new_file(state_fs, temp, bytes, 0444, /*sync=*/false);
    step("catalog store: cannot place an object", [&] { state_fs.rename(temp, object); });
    wrote_object = true;
    report("objects", ++done, contents.blobs.size());
  }
  if (wrote_object) {
    // One filesystem sync makes every object durable before anything can name it.
    step("catalog store: syncfs failed", [&] { state_fs.sync_file_system(objects); });
    sync_dir(state_fs, objects);
  }
  crash_point("catalog.import.objects-written");

  write_if_changed(state_fs, records, source.name + ".json", record_text(source));
  CatalogImportResult result = CatalogStoreAccess::publish(state_dir, progress, state_fs);
  result.object_count = contents.blobs.size();
  std::vector<CatalogProblem> skipped = source.skipped;
  skipped.insert(skipped.end(), result.skipped.begin(), result.skipped.end());
  result.skipped = std::move(skipped);
  return result;
}

CatalogImportResult remove_source(const fs::path& state_dir, const std::string& name) {
  core::StateFs& state_fs = store::default_state_fs();
  const fs::path root = catalog_root(state_dir);
  ExclusiveFileLock lock(root / ".lock", kImportLockTimeout);
  const fs::path records = root / "sources";
  if (auto local = unrecorded_catalog(state_dir, /*for_write=*/true)) {
    ensure_private_dir(records);
    write_if_changed(state_fs, records, local->name + ".json", record_text(*local));
  }
  const fs::path record = records / (name + ".json");
  struct stat st {};
  if (!is_source_name(name) || ::lstat(record.c_str(), &st) != 0) {
    throw NotFound("no catalog source is named " + name);
  }
  if (::unlink(record.c_str()) != 0) throw SystemError("catalog store: cannot remove a source");
  sync_dir(state_fs, records);
  remove_staging(root / "git" / (name + ".git"));
  return CatalogStoreAccess::publish(state_dir, {}, state_fs);
}

CatalogImportResult CatalogStoreAccess::publish(const fs::path& state_dir,
                                                const CatalogProgress& progress,
                                                core::StateFs& state_fs) {
  const auto report = [&](std::string_view phase, std::size_t done, std::size_t total) {
    if (progress) progress(phase, done, total);
  };
  const fs::path root = state_dir / "catalog";
  const fs::path snapshots = root / "snapshots";
  CatalogImportResult result;
  const std::vector<CatalogEntry> entries = merge_sources(load_sources(state_dir), result.skipped);
  const Json content = catalog_content_json(entries);
  result.catalog_digest = core::canonical_digest(content, core::Encoding::kAscii);
  result.entry_count = entries.size();
  const fs::path snapshot = snapshots / result.catalog_digest;
  std::error_code ec;

  // Already current: nothing else changes.
  if (fs::exists(root / "CURRENT", ec)) {
    try {
      auto current = ImportedCatalog::open(state_dir);
      if (current->catalog_digest() == result.catalog_digest) {
        result.graph_sha256 = current->graph_sha256();
        result.changed = false;
        return result;
      }
    } catch (const Error&) {
      // A damaged current import is replaced below.
    }
  }
  if (fs::exists(snapshot, ec)) {
    try {
      ImportedCatalog::open_snapshot(root, result.catalog_digest);
    } catch (const Error&) {
      remove_staging(snapshot);  // damaged: rebuilt below
    }
  }
  if (!fs::exists(snapshot, ec)) {
    std::string pattern = (snapshots / ".staging-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw SystemError("catalog store: cannot stage");
    const fs::path staging = pattern;
    try {
      report("graph", 0, 1);
      std::vector<store::GraphNode> nodes;
      nodes.reserve(entries.size());
      for (const auto& e : entries) {
        store::GraphNode node;
        node.id = e.capability_id();
        node.type = engine::to_string(e.kind);
        node.label = e.name;
        node.tags = e.terms;
        nodes.push_back(std::move(node));
      }
      const fs::path graph = staging / "graph.sqlite3";
      store::build_graph_store(graph, nodes);
      if (::chmod(graph.c_str(), 0444) != 0) throw SystemError("catalog store: cannot pin graph");
      const std::string graph_sha = core::sha256_hex(read_small(graph, 1ull << 32));
      Json manifest{{"catalog_digest", result.catalog_digest},
                    {"content", content},
                    {"graph_sha256", graph_sha},
                    {"schema", std::string(kCatalogManifestSchema)}};
      write_new_file(state_fs, staging / "manifest.json",
                     core::canonical_json(manifest, core::Encoding::kAscii), 0444);
      sync_dir(state_fs, staging);
      ::chmod(staging.c_str(), 0500);
      crash_point("catalog.import.snapshot-staged");
      step("catalog store: cannot place the snapshot", [&] { state_fs.rename(staging, snapshot); });
      sync_dir(state_fs, snapshots);
      report("graph", 1, 1);
    } catch (const SimulatedCrash&) {
      throw;  // a dead process cleans nothing; the next import sweeps the staging dir
    } catch (...) {
      remove_staging(staging);
      throw;
    }
  }

  const fs::path current_temp = root / (".CURRENT-" + std::to_string(::getpid()));
  fs::remove(current_temp, ec);
  crash_point("catalog.import.snapshot-placed");
  write_new_file(state_fs, current_temp, result.catalog_digest + "\n", 0444);
  crash_point("catalog.import.current-staged");
  step("catalog store: cannot switch CURRENT",
       [&] { state_fs.rename(current_temp, root / "CURRENT"); });
  sync_dir(state_fs, root);
  const auto opened = ImportedCatalog::open(state_dir);
  result.graph_sha256 = opened->graph_sha256();
  result.changed = true;
  return result;
}

std::shared_ptr<const ImportedCatalog> ImportedCatalog::open(
    const std::filesystem::path& state_dir) {
  const fs::path root = state_dir / "catalog";
  std::string current = read_small(root / "CURRENT", 128);
  if (!current.empty() && current.back() == '\n') current.pop_back();
  if (!engine::is_digest(current)) throw DataLoss("catalog CURRENT does not name a digest");
  return open_snapshot(root, current);
}

std::shared_ptr<const ImportedCatalog> ImportedCatalog::open_snapshot(
    const std::filesystem::path& root, const std::string& current) {
  const fs::path snapshot = root / "snapshots" / current;
  std::string text;
  try {
    text = read_small(snapshot / "manifest.json", 1ull << 30);
  } catch (const NotFound&) {
    throw DataLoss("catalog snapshot is missing");
  }
  std::shared_ptr<ImportedCatalog> out(new ImportedCatalog());
  try {
    const Json manifest = core::parse_canonical_json(text, core::Encoding::kAscii);
    if (manifest.at("schema") != kCatalogManifestSchema ||
        manifest.at("catalog_digest") != current ||
        core::canonical_digest(manifest.at("content"), core::Encoding::kAscii) != current) {
      throw DataLoss("catalog manifest does not match its digest");
    }
    out->catalog_digest_ = current;
    out->graph_sha256_ = manifest.at("graph_sha256").get<std::string>();
    if (!engine::is_digest(out->graph_sha256_)) throw DataLoss("catalog graph digest is invalid");
    for (const auto& item : manifest.at("content").at("entries")) {
      CatalogEntry e = entry_from(item);
      out->by_id_.emplace(e.capability_id(), out->entries_.size());
      out->entries_.push_back(std::move(e));
    }
  } catch (const DataLoss&) {
    throw;
  } catch (const std::exception&) {
    throw DataLoss("catalog manifest is malformed");
  }
  out->graph_path_ = snapshot / "graph.sqlite3";
  out->objects_dir_ = root / "objects";
  std::string graph;
  try {
    graph = read_small(out->graph_path_, 1ull << 32);
  } catch (const NotFound&) {
    throw DataLoss("catalog graph artifact is missing");
  }
  if (core::sha256_hex(graph) != out->graph_sha256_) {
    throw DataLoss("catalog graph artifact does not match its pin");
  }
  return out;
}

const CatalogEntry* ImportedCatalog::find(std::string_view capability_id) const {
  const auto it = by_id_.find(capability_id);
  return it == by_id_.end() ? nullptr : &entries_[it->second];
}

std::string ImportedCatalog::read_object(std::string_view sha256) const {
  std::string bytes = read_object_unverified(sha256);
  if (core::sha256_hex(bytes) != sha256) throw DataLoss("catalog object does not match its digest");
  return bytes;
}

std::string ImportedCatalog::read_object_unverified(std::string_view sha256,
                                                    std::size_t limit) const {
  if (!engine::is_digest(sha256)) throw DataLoss("catalog object name is not a digest");
  try {
    return read_small(objects_dir_ / std::string(sha256), limit);
  } catch (const NotFound&) {
    throw DataLoss("catalog object is missing");
  }
}

}  // namespace ctx::runtime
