#include "host/runtime/service/artifact_registry.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <ctx/support/unique_fd.hpp>
#include <ostream>
#include <set>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/state_fs.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/store/graph_store.hpp"
#include "host/store/posix_state_fs.hpp"
#include "host/store/verified_files.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

constexpr std::int64_t kMaxGraphBytes = 1LL << 30;
constexpr std::int64_t kMaxManifestBytes = 64 * 1024;
constexpr std::chrono::milliseconds kPublicationLockTimeout{30'000};
constexpr std::string_view kManifestSchema = "ctx.managed-query-artifact-manifest";

const std::string& no_material_digest() {
  static const std::string digest = core::sha256_hex("ctx.managed-artifact.no-material-v1");
  return digest;
}
const std::string& no_installation_digest() {
  static const std::string digest = core::sha256_hex("ctx.managed-artifact.no-installation-v1");
  return digest;
}

using Fd = support::UniqueFd;

void require_sha(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

void make_private_dir(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw ManagedArtifactRegistryError("managed artifact registry directory cannot be created");
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & 077) != 0) {
    throw ManagedArtifactRegistryError(
        "managed artifact registry directories must be private and owned by this user");
  }
}

// How a pinned file was read: its status through the descriptor read, and when the read began
// (what store::remember_sha256 takes).
struct PinnedRead {
  struct stat status {};
  struct timespec read_at {};
};

// Reads a whole regular, single-link file opened without following links.
std::string read_pinned_file(const std::filesystem::path& path, std::int64_t limit,
                             bool require_read_only, PinnedRead* how = nullptr) {
  const struct timespec read_at = store::realtime_now();
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) throw ManagedArtifactRegistryError("managed artifact file is unavailable");
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 1 ||
      info.st_size > limit || (require_read_only && (info.st_mode & 0222) != 0)) {
    throw ManagedArtifactRegistryError("managed artifact file is not a pinned regular file");
  }
  std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n <= 0) throw ManagedArtifactRegistryError("managed artifact file cannot be read");
    done += static_cast<std::size_t>(n);
  }
  if (how != nullptr) *how = PinnedRead{info, read_at};
  return bytes;
}

// Is `path` a pinned (regular, single-link, non-writable) file whose bytes this process hashed
// to `sha256`, unchanged since (store::known_sha256)?
bool known_pinned_file(const std::filesystem::path& path, const std::string& sha256) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 1 ||
      (info.st_mode & 0222) != 0) {
    return false;
  }
  const auto known = store::known_sha256(info);
  return known && *known == sha256;
}

// Publishes `bytes` as `final_path` (0400): O_EXCL stage, fsync, then a hard link (a new name) or
// a rename (over a bad copy), unlink stage, fsync the directory; true. An existing file that holds
// exactly these bytes (a pinned, read-only, single-link regular file) is kept: false. One that
// does not is a copy changed on disk since it was published (its bytes, mode or links): it is
// never read as trusted, and is replaced. The caller has verified `bytes`.
// `sha256`, when given, is that of `bytes`: a kept file is remembered with it.
bool publish(core::StateFs& state_fs, const std::filesystem::path& final_path,
             const std::string& stage_prefix, const std::string& bytes,
             const std::string* sha256 = nullptr) {
  bool replace = false;
  if (std::filesystem::exists(std::filesystem::symlink_status(final_path))) {
    try {
      PinnedRead how;
      if (read_pinned_file(final_path, static_cast<std::int64_t>(bytes.size()), true, &how) ==
          bytes) {
        if (sha256 != nullptr) store::remember_sha256(how.status, *sha256, how.read_at);
        return false;
      }
    } catch (const ManagedArtifactRegistryError&) {
      // Not a pinned regular file any more (a symlink, writable, linked elsewhere): replaced too.
    }
    replace = true;
  }
  const auto dir = final_path.parent_path();
  const auto stage = dir / (stage_prefix + "-" + core::random_hex(16) + ".stage");
  try {
    state_fs.create_file(stage, bytes, core::NewFile{0400, /*umask=*/false, /*sync=*/true});
  } catch (const core::StateFsError& error) {
    throw ManagedArtifactRegistryError(
        error.step() == core::StateFsStep::kCreate  ? "managed artifact stage cannot be made"
        : error.step() == core::StateFsStep::kWrite ? "managed artifact stage cannot be written"
                                                    : "managed artifact stage cannot be sealed");
  }
  // rename replaces the name itself (never follows a symlink there) in one step: a reader opens
  // the bad copy or the good one, never neither.
  try {
    if (replace) {
      state_fs.rename(stage, final_path);
    } else {
      state_fs.link(stage, final_path);
    }
  } catch (const core::StateFsError&) {
    state_fs.remove(stage);
    throw ManagedArtifactRegistryError("managed artifact file cannot be published");
  }
  state_fs.remove(stage);
  try {
    state_fs.sync_dir(dir, support::Follow::kSymlinks);
  } catch (const core::StateFsError&) {
    throw ManagedArtifactRegistryError("managed artifact registry directory cannot be synced");
  }
  return true;
}

// Stages left by an interrupted publication are removed on every use.
void reconcile_stages(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if ((name.starts_with(".artifact-") || name.starts_with(".manifest-")) &&
        name.ends_with(".stage")) {
      ::unlink(entry.path().c_str());
    }
  }
}

// The current-work surrogate schema (§7): exactly six keys, credential-like text refused.
void validate_surrogate(const engine::StructuredSurrogate& surrogate) {
  if (surrogate.schema_id() != "ctx.observation.current-work" || surrogate.schema_version() != 1) {
    throw InvalidArgument("managed observation surrogate must be ctx.observation.current-work v1");
  }
  static const std::set<std::string> keys = {
      "active_capability_ids",   "baseline_capability_ids", "languages",
      "rejected_capability_ids", "requested_limit",         "signals"};
  const Json& value = surrogate.value();
  if (!value.is_object() || value.size() != keys.size()) {
    throw InvalidArgument("managed observation surrogate must have exactly its six fields");
  }
  for (const auto& name : keys) {
    if (!value.contains(name)) {
      throw InvalidArgument("managed observation surrogate is missing " + name);
    }
  }
  if (!value["requested_limit"].is_number_integer()) {
    throw InvalidArgument("managed observation surrogate requested_limit must be an integer");
  }
  for (const auto& name : keys) {
    if (name == "requested_limit") continue;
    if (!value[name].is_array()) {
      throw InvalidArgument("managed observation surrogate " + name + " must be a list");
    }
    for (const auto& item : value[name]) {
      if (!item.is_string() || credential_like(item.get<std::string>())) {
        throw InvalidArgument("managed observation surrogate " + name +
                              " must hold credential-free strings");
      }
    }
  }
}

}  // namespace

bool credential_like(std::string_view text) {
  static const char* kMarkers[] = {"sk-",   "ghp_",       "github_pat_", "akia",   "xoxb-",
                                   "xoxp-", "-----begin", "password",    "secret", "bearer "};
  std::string lowered(text);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* marker : kMarkers) {
    if (lowered.find(marker) != std::string::npos) return true;
  }
  return false;
}

engine::StructuredSurrogate ManagedArtifactHandle::normalize(
    const engine::ObservationReference& reference) const {
  if (reference.provider_id != reference_.provider_id ||
      reference.opaque_id != reference_.opaque_id ||
      reference.content_digest != reference_.content_digest) {
    throw InvalidArgument("observation reference does not name this managed artifact");
  }
  return surrogate_;
}

std::ostream& operator<<(std::ostream& out, const ManagedArtifactHandle& value) {
  return out << "ManagedArtifactHandle(manifest_digest='" << value.manifest_digest_ << "')";
}
std::ostream& operator<<(std::ostream& out, const ManagedArtifactRegistry&) {
  return out << "ManagedArtifactRegistry()";
}

ManagedArtifactRegistry::ManagedArtifactRegistry(std::filesystem::path root, std::string token,
                                                 core::StateFs& state_fs)
    : root_(std::move(root)), token_(std::move(token)), pid_(::getpid()), state_fs_(state_fs) {}

std::shared_ptr<ManagedArtifactRegistry> open_managed_artifact_registry(
    const std::filesystem::path& root, core::StateFs& state_fs) {
  if (!root.is_absolute()) throw InvalidArgument("managed artifact registry root must be absolute");
  const auto normal = root.lexically_normal();
  make_private_dir(normal);
  make_private_dir(normal / "artifacts");
  make_private_dir(normal / "manifests");
  return std::shared_ptr<ManagedArtifactRegistry>(
      new ManagedArtifactRegistry(normal, core::random_hex(32), state_fs));
}

void ManagedArtifactRegistry::require_process() const {
  if (::getpid() != pid_) {
    throw ManagedArtifactRegistryError(
        "managed artifact registry is unavailable outside its issuing process");
  }
}

void ManagedArtifactRegistry::require_issued(const ManagedArtifactHandle& handle) const {
  require_process();
  if (handle.pid_ != pid_ || !core::constant_time_equal(handle.registry_token_, token_)) {
    throw ManagedArtifactRegistryError("managed artifact handle was not issued by this registry");
  }
}

std::filesystem::path ManagedArtifactRegistry::graph_artifact_path(
    const ManagedArtifactHandle& handle) const {
  require_issued(handle);
  return root_ / "artifacts" / (handle.graph_artifact_digest_ + ".sqlite3");
}

std::shared_ptr<const ManagedArtifactHandle> ManagedArtifactRegistry::ingest_graph_store(
    const ManagedArtifactIngest& ingest) {
  require_process();
  require_sha(ingest.expected_graph_artifact_digest, "expected_graph_artifact_digest");
  require_sha(ingest.planning_environment_digest, "planning_environment_digest");
  require_sha(ingest.catalog_namespace_digest, "catalog_namespace_digest");
  require_sha(ingest.catalog_retrieval_digest, "catalog_retrieval_digest");
  require_sha(ingest.benefit_facts_snapshot_digest, "benefit_facts_snapshot_digest");
  require_sha(ingest.benefit_policy_snapshot_digest, "benefit_policy_snapshot_digest");
  const std::string material = ingest.material_snapshot_digest.value_or(no_material_digest());
  const std::string installation =
      ingest.installation_snapshot_digest.value_or(no_installation_digest());
  require_sha(material, "material_snapshot_digest");
  require_sha(installation, "installation_snapshot_digest");
  if (!ingest.observation_surrogate) {
    throw InvalidArgument("managed artifact requires an observation surrogate");
  }
  validate_surrogate(*ingest.observation_surrogate);
  if (ingest.planning_schema_version.empty() || ingest.planning_schema_version.size() > 128) {
    throw InvalidArgument("planning_schema_version must be an opaque token");
  }
  if (!ingest.graph_store_path.is_absolute()) {
    throw InvalidArgument("graph_store_path must be absolute");
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (std::filesystem::exists(ingest.graph_store_path.string() + suffix)) {
      throw InvalidArgument("graph store must not have SQLite sidecars");
    }
  }
  const std::string& graph_digest = ingest.expected_graph_artifact_digest;
  // The source's bytes, read and checked against the expected digest (once).
  std::optional<std::string> graph;
  const auto read_graph = [&]() -> const std::string& {
    if (graph) return *graph;
    PinnedRead how;
    try {
      graph = read_pinned_file(ingest.graph_store_path, kMaxGraphBytes, true, &how);
    } catch (const ManagedArtifactRegistryError&) {
      throw InvalidArgument(
          "graph store must be a regular, single-link, non-writable file of at most 1 GiB");
    }
    const std::string sha = core::sha256_hex(*graph);
    store::remember_sha256(how.status, sha, how.read_at);
    if (sha != graph_digest) {
      throw DataLoss("graph store does not match its expected artifact digest");
    }
    return *graph;
  };
  // A source this process hashed to the expected digest, unchanged since, is not read again
  // unless the published copy must be (re)written from it.
  if (!known_pinned_file(ingest.graph_store_path, graph_digest)) read_graph();
  const auto& surrogate = *ingest.observation_surrogate;
  const Json manifest = {
      {"benefit_facts_snapshot_digest", ingest.benefit_facts_snapshot_digest},
      {"benefit_policy_snapshot_digest", ingest.benefit_policy_snapshot_digest},
      {"catalog_namespace_digest", ingest.catalog_namespace_digest},
      {"catalog_retrieval_digest", ingest.catalog_retrieval_digest},
      {"graph_artifact_digest", ingest.expected_graph_artifact_digest},
      {"installation_snapshot_digest", installation},
      {"material_snapshot_digest", material},
      {"observation_surrogate", surrogate.to_json()},
      {"observation_surrogate_digest", core::canonical_digest(surrogate.to_json())},
      {"planning_environment_digest", ingest.planning_environment_digest},
      {"planning_schema_version", ingest.planning_schema_version},
      {"registry_version", 1},
      {"schema", kManifestSchema}};
  const std::string manifest_bytes = core::canonical_json(manifest, core::Encoding::kAscii);
  const std::string manifest_digest = core::sha256_hex(manifest_bytes);
  {
    ExclusiveFileLock lock(root_ / "registry-publication", kPublicationLockTimeout);
    reconcile_stages(root_ / "artifacts");
    reconcile_stages(root_ / "manifests");
    const auto artifact_path = root_ / "artifacts" / (graph_digest + ".sqlite3");
    // Checked as a graph store when (re)published; an artifact already published holds the same
    // bytes (compared in publish, or hashed by this process and unchanged since) and is opened,
    // pin and schema checked, by every composition.
    if (!known_pinned_file(artifact_path, graph_digest) &&
        publish(state_fs_, artifact_path, ".artifact-" + graph_digest, read_graph(),
                &graph_digest)) {
      try {
        store::GraphStore::open(artifact_path, ingest.expected_graph_artifact_digest);
      } catch (const Error&) {
        ::unlink(artifact_path.c_str());
        throw ManagedArtifactRegistryError("ingested artifact is not a valid graph store");
      }
    }
    publish(state_fs_, root_ / "manifests" / (manifest_digest + ".json"),
            ".manifest-" + manifest_digest, manifest_bytes);
  }
  return reopen(manifest_digest, ingest.planning_environment_digest);
}

std::shared_ptr<const ManagedArtifactHandle> ManagedArtifactRegistry::reopen(
    const std::string& manifest_digest, const std::string& planning_environment_digest) {
  require_process();
  require_sha(manifest_digest, "manifest_digest");
  require_sha(planning_environment_digest, "planning_environment_digest");
  const auto path = root_ / "manifests" / (manifest_digest + ".json");
  if (!std::filesystem::exists(std::filesystem::symlink_status(path))) {
    throw ManagedArtifactRegistryError("managed artifact manifest is unavailable");
  }
  const std::string bytes = read_pinned_file(path, kMaxManifestBytes, true);
  const auto corrupt = [] {
    return ManagedArtifactRegistryError("managed artifact manifest is corrupt");
  };
  if (core::sha256_hex(bytes) != manifest_digest) throw corrupt();
  Json manifest;
  std::optional<engine::StructuredSurrogate> surrogate;
  try {
    manifest = core::parse_canonical_json(bytes, core::Encoding::kAscii);
    if (!manifest.is_object() || manifest.size() != 13 ||
        manifest.value("schema", "") != kManifestSchema ||
        manifest.value("registry_version", 0) != 1) {
      throw corrupt();
    }
    surrogate.emplace(engine::StructuredSurrogate::from_json(manifest.at("observation_surrogate")));
    validate_surrogate(*surrogate);
    if (manifest.at("observation_surrogate_digest") !=
        core::canonical_digest(surrogate->to_json())) {
      throw corrupt();
    }
  } catch (const ManagedArtifactRegistryError&) {
    throw;
  } catch (const Error&) {
    throw corrupt();
  } catch (const Json::exception&) {
    throw corrupt();
  }
  std::shared_ptr<ManagedArtifactHandle> handle(new ManagedArtifactHandle(*surrogate));
  try {
    const auto text = [&](const char* key) {
      const std::string value = manifest.at(key).get<std::string>();
      if (std::string_view(key) != "planning_schema_version" && !core::is_sha256_hex(value)) {
        throw corrupt();
      }
      return value;
    };
    handle->manifest_digest_ = manifest_digest;
    handle->graph_artifact_digest_ = text("graph_artifact_digest");
    handle->environment_digest_ = text("planning_environment_digest");
    handle->namespace_digest_ = text("catalog_namespace_digest");
    handle->retrieval_digest_ = text("catalog_retrieval_digest");
    handle->facts_digest_ = text("benefit_facts_snapshot_digest");
    handle->policy_digest_ = text("benefit_policy_snapshot_digest");
    handle->material_digest_ = text("material_snapshot_digest");
    handle->installation_digest_ = text("installation_snapshot_digest");
    handle->surrogate_digest_ = text("observation_surrogate_digest");
    handle->planning_schema_version_ = text("planning_schema_version");
  } catch (const Json::exception&) {
    throw corrupt();
  }
  if (handle->environment_digest_ != planning_environment_digest) {
    throw ManagedArtifactRegistryError(
        "managed artifact manifest does not match the planning environment");
  }
  if (!std::filesystem::exists(std::filesystem::symlink_status(
          root_ / "artifacts" / (handle->graph_artifact_digest_ + ".sqlite3")))) {
    throw ManagedArtifactRegistryError("managed artifact graph is unavailable");
  }
  handle->reference_ = {std::string(kManagedObservationProvider), "manifest-" + manifest_digest,
                        surrogate->value_digest()};
  handle->registry_token_ = token_;
  handle->pid_ = pid_;
  return handle;
}

}  // namespace ctx::runtime
