// ManagedArtifactRegistry: ingestion pins a private read-only copy and a canonical manifest;
// handles of another registry are not issued; corrupt manifests and unsafe sources are refused.
#include "host/runtime/service/artifact_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "host/store/verified_files.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/fs/faulty_state_fs.hpp"
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

// A published copy changed on disk after publication (its bytes, its mode, a second link to it,
// a symlink in its place) is never used as it is: the next ingest, whose source matches the
// expected digest, puts a fresh read-only copy under the name, and the old inode is detached.
TEST(ManagedArtifactRegistry, APublishedCopyChangedOnDiskIsReplacedByTheNextIngest) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto& handle = *setup.artifact;
  const fs::path copy = setup.registry->graph_artifact_path(handle);
  const std::string good = file_bytes(copy);
  const auto make_writable = [&] {
    fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);
  };
  const auto expect_restored = [&](const char* what) {
    const auto again = setup.registry->ingest_graph_store(reingest(setup, surrogate(5)));
    EXPECT_EQ(again->manifest_digest(), handle.manifest_digest()) << what;
    struct stat info {};
    ASSERT_EQ(::lstat(copy.c_str(), &info), 0) << what;
    EXPECT_TRUE(S_ISREG(info.st_mode)) << what;
    EXPECT_EQ(info.st_mode & 07777, 0400u) << what;
    EXPECT_EQ(info.st_nlink, 1u) << what;
    EXPECT_EQ(file_bytes(copy), good) << what;
    EXPECT_NO_THROW(setup.registry->graph_artifact_path(*again)) << what;
  };

  // One byte flipped (as `sqlite3 FILE 'PRAGMA journal_mode=WAL'` does to the header).
  make_writable();
  {
    std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(18);
    file.put(static_cast<char>(good[18] ^ 0x03));
  }
  fs::permissions(copy, fs::perms::owner_read, fs::perm_options::replace);
  ASSERT_NE(file_bytes(copy), good);
  expect_restored("flipped byte");

  // The same bytes, but writable.
  make_writable();
  expect_restored("writable");

  // A second name for the same inode: after the ingest the other name keeps the old inode and
  // a write through it no longer reaches the published copy.
  const fs::path other = tmp.path() / "registry" / "second-link";
  fs::create_hard_link(copy, other);
  expect_restored("second link");
  fs::permissions(other, fs::perms::owner_write, fs::perm_options::add);
  { std::ofstream(other, std::ios::binary | std::ios::trunc) << "changed"; }
  EXPECT_EQ(file_bytes(copy), good);

  // A symlink in its place (to a file holding the right bytes): replaced, the target untouched.
  const fs::path target = tmp.path() / "elsewhere.sqlite3";
  { std::ofstream(target, std::ios::binary) << good; }
  fs::permissions(target, fs::perms::owner_read, fs::perm_options::replace);
  fs::remove(copy);
  fs::create_symlink(target, copy);
  expect_restored("symlink");
  EXPECT_EQ(file_bytes(target), good);
  EXPECT_TRUE(fs::exists(target));

  // Nothing is left staged.
  for (const auto& entry : fs::directory_iterator(copy.parent_path())) {
    EXPECT_FALSE(entry.path().filename().string().ends_with(".stage")) << entry.path();
  }
}

// The file system refuses to publish (FaultyStateFs): a new manifest's link, or the rename over a
// changed graph copy. A typed error, nothing published or half-written, no stage left; the bad
// copy is still not trusted, and the next ingest publishes both.
TEST(ManagedArtifactRegistry, AFailedLinkOrRenamePublishesNothingAndLeavesNoStage) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  ::ctx::testing::FaultyStateFs faulty(store::default_state_fs());
  auto registry = open_managed_artifact_registry(tmp.path() / "registry", faulty);
  const fs::path root = tmp.path() / "registry";
  const auto staged = [&] {
    std::vector<std::string> out;
    for (const char* dir : {"artifacts", "manifests"}) {
      for (const auto& entry : fs::directory_iterator(root / dir)) {
        if (entry.path().filename().string().ends_with(".stage")) out.push_back(entry.path());
      }
    }
    return out;
  };
  const auto manifests = [&] {
    return std::distance(fs::directory_iterator(root / "manifests"), fs::directory_iterator());
  };
  const auto before = manifests();
  faulty.fail(core::StateFsStep::kLink, EIO);
  CTX_EXPECT_THROW(registry->ingest_graph_store(reingest(setup, surrogate(4))),
                   ManagedArtifactRegistryError, "managed artifact file cannot be published");
  EXPECT_EQ(faulty.pending(), 0u);
  EXPECT_EQ(manifests(), before);
  EXPECT_THAT(staged(), ::testing::IsEmpty());

  const fs::path copy = setup.registry->graph_artifact_path(*setup.artifact);
  const std::string good = file_bytes(copy);
  fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);  // no longer pinned
  faulty.fail(core::StateFsStep::kRename, EIO);
  CTX_EXPECT_THROW(registry->ingest_graph_store(reingest(setup, surrogate(4))),
                   ManagedArtifactRegistryError, "managed artifact file cannot be published");
  EXPECT_EQ(file_bytes(copy), good);
  EXPECT_THAT(staged(), ::testing::IsEmpty());

  const auto published = registry->ingest_graph_store(reingest(setup, surrogate(4)));
  EXPECT_EQ(manifests(), before + 1);
  struct stat info {};
  ASSERT_EQ(::lstat(copy.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0400u);
  EXPECT_EQ(file_bytes(copy), good);
  EXPECT_NO_THROW(registry->graph_artifact_path(*published));
}

// Files this process hashed and that are unchanged since are not read again: the source only when
// the published copy must be written from it, the copy not at all; a changed copy is read again.
TEST(ManagedArtifactRegistry, AnIngestReadsNoFileThisProcessHashedAndThatIsUnchanged) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto& handle = *setup.artifact;
  const fs::path copy = setup.registry->graph_artifact_path(handle);
  const std::string digest = handle.graph_artifact_digest();
  // A source whose bytes are not the graph, remembered (as if read and settled) as the graph's.
  auto ingest = reingest(setup, surrogate(5));
  ingest.graph_store_path = tmp.path() / "remembered.sqlite3";
  { std::ofstream(ingest.graph_store_path, std::ios::binary) << "not the graph"; }
  fs::permissions(ingest.graph_store_path, fs::perms::owner_read, fs::perm_options::replace);
  struct timespec settled = store::realtime_now();
  settled.tv_sec += 5;
  const auto remember = [&](const fs::path& path) {
    struct stat info {};
    ASSERT_EQ(::lstat(path.c_str(), &info), 0);
    store::remember_sha256(info, digest, settled);
  };
  remember(ingest.graph_store_path);
  // The copy is not known: it is compared with the source's bytes, which are read and refused.
  EXPECT_THROW(setup.registry->ingest_graph_store(ingest), DataLoss);
  // Both known: nothing is read.
  remember(copy);
  EXPECT_EQ(setup.registry->ingest_graph_store(ingest)->manifest_digest(),
            handle.manifest_digest());
  // A copy changed since is not known any more: read, found bad, and replaced from a real source.
  fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);
  const std::string good = file_bytes(copy);
  {
    std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(18);
    file.put(static_cast<char>(good[18] ^ 0x03));
  }
  fs::permissions(copy, fs::perms::owner_read, fs::perm_options::replace);
  EXPECT_THROW(setup.registry->ingest_graph_store(ingest), DataLoss);
  EXPECT_EQ(setup.registry->ingest_graph_store(reingest(setup, surrogate(5)))->manifest_digest(),
            handle.manifest_digest());
  EXPECT_EQ(file_bytes(copy), good);
}

// A source that does not match its expected digest is never published over a bad copy.
TEST(ManagedArtifactRegistry, ABadCopyIsNotReplacedFromASourceThatDoesNotMatch) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const fs::path copy = setup.registry->graph_artifact_path(*setup.artifact);
  fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);
  { std::ofstream(copy, std::ios::binary | std::ios::app) << "x"; }
  fs::permissions(copy, fs::perms::owner_read, fs::perm_options::replace);
  const std::string bad = file_bytes(copy);
  auto ingest = reingest(setup, surrogate(5));
  fs::permissions(ingest.graph_store_path, fs::perms::owner_write, fs::perm_options::add);
  { std::ofstream(ingest.graph_store_path, std::ios::binary | std::ios::app) << "y"; }
  fs::permissions(ingest.graph_store_path, fs::perms::owner_read, fs::perm_options::replace);
  EXPECT_THROW(setup.registry->ingest_graph_store(ingest), DataLoss);
  EXPECT_EQ(file_bytes(copy), bad);
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
