// ManagedArtifactRegistry: a private directory of pinned, read-only graph artifacts and their
// manifests (runtime spec §7). ingest_graph_store copies a graph store in (checking its sha256
// and that it is a valid graph store), writes a canonical 13-field manifest named by its
// digest, and returns a handle; reopen re-authenticates a manifest by digest. Each registry
// instance holds a private random token: handles it did not issue, in this process, are
// refused ("not issued"). POSIX only. Thread-safe; publication is serialised across processes
// by a lock file in the root.
#ifndef CTX_HOST_RUNTIME_SERVICE_ARTIFACT_REGISTRY_HPP_
#define CTX_HOST_RUNTIME_SERVICE_ARTIFACT_REGISTRY_HPP_

#include <sys/types.h>

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/state_fs.hpp"
#include "host/engine/replay.hpp"
#include "host/runtime/service/errors.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {

class ManagedArtifactRegistry;

inline constexpr std::string_view kManagedObservationProvider =
    "ctx-managed-artifact-observation-v1";

// Does `text` look like a credential (a key prefix such as "sk-" or "ghp_", "password",
// "secret", a PEM header; case-insensitive)? The current-work surrogate refuses such strings, so
// whoever builds one from a host's words drops them first.
bool credential_like(std::string_view text);

// Inputs of ingest_graph_store. Absent material/installation digests become fixed "no
// material" / "no installation" constants.
struct ManagedArtifactIngest {
  std::filesystem::path graph_store_path;  // regular, single-link, non-writable, no sidecars
  std::string expected_graph_artifact_digest;
  std::string planning_environment_digest;
  std::string catalog_namespace_digest;
  std::string catalog_retrieval_digest;
  std::string benefit_facts_snapshot_digest;
  std::string benefit_policy_snapshot_digest;
  std::optional<std::string> material_snapshot_digest;
  std::optional<std::string> installation_snapshot_digest;
  std::optional<engine::StructuredSurrogate> observation_surrogate;  // required
  std::string planning_schema_version;
};

// One ingested artifact as its manifest describes it. Registry-issued, immutable, not copyable;
// shared through std::shared_ptr<const ManagedArtifactHandle>. Exposes digests only.
class ManagedArtifactHandle final {
 public:
  ManagedArtifactHandle(const ManagedArtifactHandle&) = delete;
  ManagedArtifactHandle& operator=(const ManagedArtifactHandle&) = delete;

  const std::string& manifest_digest() const noexcept { return manifest_digest_; }
  const std::string& graph_artifact_digest() const noexcept { return graph_artifact_digest_; }
  const std::string& planning_environment_digest() const noexcept { return environment_digest_; }
  const std::string& catalog_namespace_digest() const noexcept { return namespace_digest_; }
  const std::string& catalog_retrieval_digest() const noexcept { return retrieval_digest_; }
  const std::string& benefit_facts_snapshot_digest() const noexcept { return facts_digest_; }
  const std::string& benefit_policy_snapshot_digest() const noexcept { return policy_digest_; }
  const std::string& material_snapshot_digest() const noexcept { return material_digest_; }
  const std::string& installation_snapshot_digest() const noexcept { return installation_digest_; }
  const std::string& observation_surrogate_digest() const noexcept { return surrogate_digest_; }
  const std::string& planning_schema_version() const noexcept { return planning_schema_version_; }
  // {provider "ctx-managed-artifact-observation-v1", "manifest-<manifest digest>", value digest}.
  const engine::ObservationReference& observation_reference() const noexcept { return reference_; }

  // The observation normaliser: exactly this handle's reference yields its stored surrogate.
  // Errors: InvalidArgument for any other reference.
  engine::StructuredSurrogate normalize(const engine::ObservationReference& reference) const;

  // Prints the manifest digest only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedArtifactHandle& value);

 private:
  friend class ManagedArtifactRegistry;
  explicit ManagedArtifactHandle(engine::StructuredSurrogate surrogate)
      : surrogate_(std::move(surrogate)) {}

  std::string manifest_digest_;
  std::string graph_artifact_digest_;
  std::string environment_digest_;
  std::string namespace_digest_;
  std::string retrieval_digest_;
  std::string facts_digest_;
  std::string policy_digest_;
  std::string material_digest_;
  std::string installation_digest_;
  std::string surrogate_digest_;
  std::string planning_schema_version_;
  engine::ObservationReference reference_;
  engine::StructuredSurrogate surrogate_;
  std::string registry_token_;
  pid_t pid_ = 0;
};

class ManagedArtifactRegistry final {
 public:
  ManagedArtifactRegistry(const ManagedArtifactRegistry&) = delete;
  ManagedArtifactRegistry& operator=(const ManagedArtifactRegistry&) = delete;

  // Copies the graph store in and publishes its manifest (identical inputs reuse both files).
  // Errors: InvalidArgument (digests, surrogate, unsafe source file), DataLoss (bytes do not
  // match the expected digest), ManagedArtifactRegistryError (not a valid graph store).
  std::shared_ptr<const ManagedArtifactHandle> ingest_graph_store(
      const ManagedArtifactIngest& ingest);

  // The handle of a published manifest. Errors: InvalidArgument (malformed digests),
  // ManagedArtifactRegistryError ("manifest is unavailable", "corrupt", environment mismatch).
  std::shared_ptr<const ManagedArtifactHandle> reopen(
      const std::string& manifest_digest, const std::string& planning_environment_digest);

  // Errors: ManagedArtifactRegistryError "managed artifact handle was not issued by this
  // registry" (another instance, another process).
  void require_issued(const ManagedArtifactHandle& handle) const;

  // The pinned graph artifact of an issued handle (registry-private path; never shown to hosts).
  std::filesystem::path graph_artifact_path(const ManagedArtifactHandle& handle) const;

  // Prints "ManagedArtifactRegistry()" only.
  friend std::ostream& operator<<(std::ostream& out, const ManagedArtifactRegistry& value);

 private:
  friend std::shared_ptr<ManagedArtifactRegistry> open_managed_artifact_registry(
      const std::filesystem::path& root, core::StateFs& state_fs);
  ManagedArtifactRegistry(std::filesystem::path root, std::string token, core::StateFs& state_fs);

  void require_process() const;

  std::filesystem::path root_;
  std::string token_;
  pid_t pid_;
  core::StateFs& state_fs_;
};

// Opens (creating 0700 when missing) the registry at absolute `root`, which must be a directory
// owned by this user and not accessible to others. Errors: InvalidArgument (relative root),
// ManagedArtifactRegistryError (unsafe root). `state_fs` (which must outlive the registry) writes
// its files.
std::shared_ptr<ManagedArtifactRegistry> open_managed_artifact_registry(
    const std::filesystem::path& root, core::StateFs& state_fs = store::default_state_fs());

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_ARTIFACT_REGISTRY_HPP_
