// ManagedArtifactRegistry: ingestion pins a private read-only copy and a canonical manifest;
// handles of another registry are not issued; corrupt manifests and unsafe sources are refused.
#include "host/runtime/service/artifact_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

TEST(ManagedArtifactRegistry, IngestPinsAPrivateCopyAndReusesIdenticalInputs) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto& handle = *setup.artifact;
  const auto copy = setup.registry->graph_artifact_path(handle);
  struct stat info {};
  ASSERT_EQ(::stat(copy.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0400u);
  EXPECT_EQ(core::sha256_hex(file_bytes(copy)), handle.graph_artifact_digest());
  const auto manifest =
      tmp.path() / "registry" / "manifests" / (handle.manifest_digest() + ".json");
  EXPECT_EQ(core::sha256_hex(file_bytes(manifest)), handle.manifest_digest());
  EXPECT_EQ(handle.observation_reference().opaque_id, "manifest-" + handle.manifest_digest());
  EXPECT_EQ(handle.observation_reference().provider_id, kManagedObservationProvider);
  const auto again = setup.registry->ingest_graph_store(reingest(setup, surrogate(5)));
  EXPECT_EQ(again->manifest_digest(), handle.manifest_digest());
  const auto reopened =
      setup.registry->reopen(handle.manifest_digest(), handle.planning_environment_digest());
  EXPECT_EQ(reopened->catalog_retrieval_digest(), handle.catalog_retrieval_digest());
  EXPECT_EQ(reopened->normalize(handle.observation_reference()).value_digest(),
            handle.observation_reference().content_digest);
  CTX_EXPECT_THROW(reopened->normalize({"other", "x", digest("x")}), InvalidArgument,
                   "does not name");
  std::ostringstream out;
  out << handle;
  EXPECT_THAT(out.str(), ::testing::Not(::testing::HasSubstr(tmp.path().string())));
}

TEST(ManagedArtifactRegistry, HandlesFromAnotherRegistryAreNotIssued) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  auto other = open_managed_artifact_registry(tmp.path() / "registry-two");
  CTX_EXPECT_THROW(other->require_issued(*setup.artifact), ManagedArtifactRegistryError,
                   "not issued");
  CTX_EXPECT_THROW(other->graph_artifact_path(*setup.artifact), ManagedArtifactRegistryError,
                   "not issued");
  // Even a second registry instance on the same root issues its own handles.
  auto same_root = open_managed_artifact_registry(tmp.path() / "registry");
  CTX_EXPECT_THROW(same_root->require_issued(*setup.artifact), ManagedArtifactRegistryError,
                   "not issued");
  const auto own = same_root->reopen(setup.artifact->manifest_digest(),
                                     setup.artifact->planning_environment_digest());
  EXPECT_NO_THROW(same_root->require_issued(*own));
}

// A graph file that is not a graph store is refused when it would first be published, and is
// not left published: the next ingest of it is checked (and refused) again.
TEST(ManagedArtifactRegistry, AnInvalidGraphStoreIsRefusedAndNotLeftPublished) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto bogus = tmp.path() / "bogus-graph.sqlite3";
  const std::string bytes(4096, 'x');
  { std::ofstream(bogus, std::ios::binary) << bytes; }
  std::filesystem::permissions(bogus, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  auto ingest = reingest(setup, surrogate(5));
  ingest.graph_store_path = bogus;
  ingest.expected_graph_artifact_digest = core::sha256_hex(bytes);
  const auto published =
      tmp.path() / "registry" / "artifacts" / (core::sha256_hex(bytes) + ".sqlite3");
  for (int attempt = 0; attempt < 2; ++attempt) {
    CTX_EXPECT_THROW(setup.registry->ingest_graph_store(ingest), ManagedArtifactRegistryError,
                     "not a valid graph store");
    EXPECT_FALSE(std::filesystem::exists(published)) << "attempt " << attempt;
  }
}

TEST(ManagedArtifactRegistry, CorruptManifestsAndUnsafeSourcesAreRefused) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto& handle = *setup.artifact;
  const auto manifest =
      tmp.path() / "registry" / "manifests" / (handle.manifest_digest() + ".json");
  std::filesystem::permissions(manifest, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  { std::ofstream(manifest, std::ios::app) << " "; }
  std::filesystem::permissions(manifest, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  CTX_EXPECT_THROW(
      setup.registry->reopen(handle.manifest_digest(), handle.planning_environment_digest()),
      ManagedArtifactRegistryError, "corrupt");
  CTX_EXPECT_THROW(setup.registry->reopen(digest("absent"), handle.planning_environment_digest()),
                   ManagedArtifactRegistryError, "unavailable");
  // A writable source, a digest that does not match, a surrogate with extra fields.
  auto ingest = reingest(setup, surrogate(5));
  std::filesystem::permissions(ingest.graph_store_path, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  CTX_EXPECT_THROW(setup.registry->ingest_graph_store(ingest), InvalidArgument, "non-writable");
  std::filesystem::permissions(ingest.graph_store_path, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  auto wrong = reingest(setup, surrogate(5));
  wrong.expected_graph_artifact_digest = digest("other-graph");
  EXPECT_THROW(setup.registry->ingest_graph_store(wrong), DataLoss);
  auto extra = reingest(
      setup, engine::StructuredSurrogate::create("ctx.observation.current-work", 1,
                                                 {{"signals", {"python"}}, {"prompt", "secret"}}));
  EXPECT_THROW(setup.registry->ingest_graph_store(extra), InvalidArgument);
  auto secret = surrogate(5);
  auto leaky = reingest(
      setup, engine::StructuredSurrogate::create("ctx.observation.current-work", 1,
                                                 {{"signals", {"sk-live-abcdef"}},
                                                  {"languages", core::Json::array()},
                                                  {"baseline_capability_ids", core::Json::array()},
                                                  {"active_capability_ids", core::Json::array()},
                                                  {"rejected_capability_ids", core::Json::array()},
                                                  {"requested_limit", 1}}));
  CTX_EXPECT_THROW(setup.registry->ingest_graph_store(leaky), InvalidArgument, "credential");
  (void)secret;
}

}  // namespace
}  // namespace ctx::runtime
