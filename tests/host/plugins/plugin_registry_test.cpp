#include "host/plugins/plugin_registry.hpp"

#include <ctx/loader/errors.hpp>

#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

using ctx::testing::copy_plugin;
using ctx::testing::TempDir;

class PluginRegistryTest : public ::testing::Test {
 protected:
  TempDir files_;
  TempDir state_;
  PluginLoader loader_{state_.path()};
};

TEST_F(PluginRegistryTest, FindsByIdentityDigestAndByKindAndId) {
  PluginRegistry registry;
  const auto verifier = loader_.load(loader_.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER));
  const auto installer = loader_.load(loader_.inspect_for_pin(CTX_FIXTURE_VALID_INSTALLER));
  EXPECT_EQ(registry.add(verifier), verifier->identity().digest());
  EXPECT_EQ(registry.add(installer), installer->identity().digest());
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_EQ(registry.find_by_digest(verifier->identity().digest()), verifier);
  EXPECT_EQ(registry.find(PluginKind::kInstaller, "fixture-installer"), installer);
  EXPECT_EQ(registry.find(PluginKind::kVerifier, "fixture-installer"), nullptr);
  EXPECT_EQ(registry.find_by_digest(std::string(64, '0')), nullptr);
  EXPECT_EQ(registry.get(PluginKind::kVerifier, "fixture-verifier"), verifier);
  CTX_EXPECT_THROW(registry.get(PluginKind::kVerifier, "absent"), PluginNotPinned, "not pinned");
  EXPECT_EQ(registry.all().size(), 2u);
}

TEST_F(PluginRegistryTest, SecondPluginWithTheSameKindAndIdIsADuplicate) {
  PluginRegistry registry;
  registry.add(loader_.load(loader_.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER)));
  // Same kind and id from another file (here: another copy in another cache).
  TempDir other_state;
  const PluginLoader other(other_state.path());
  const auto copy = copy_plugin(CTX_FIXTURE_VALID_VERIFIER, files_ / "copy.so");
  CTX_EXPECT_THROW(registry.add(other.load(other.inspect_for_pin(copy))), DuplicatePlugin,
                   "duplicate plugin verifier:fixture-verifier");
  EXPECT_EQ(registry.size(), 1u);
}

TEST_F(PluginRegistryTest, LoadsAWholeLockOrNothing) {
  LockFile lock;
  lock.upsert(loader_.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER));
  lock.upsert(loader_.inspect_for_pin(CTX_FIXTURE_VALID_HOST_ADAPTER));
  PluginRegistry registry;
  registry.load_all(lock, loader_);
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_NE(registry.find(PluginKind::kHostAdapter, "fixture-host"), nullptr);

  PluginRegistry again;
  const auto file = copy_plugin(CTX_FIXTURE_VALID_INSTALLER, files_ / "installer.so");
  lock.upsert(loader_.inspect_for_pin(file));
  ctx::testing::flip_byte(file, 100);
  CTX_EXPECT_THROW(again.load_all(lock, loader_), PluginDigestMismatch, "digest");
  EXPECT_EQ(again.size(), 0u);
  CTX_EXPECT_THROW(registry.load_all(lock, loader_), PluginDigestMismatch, "digest");
  EXPECT_EQ(registry.size(), 2u);
}

}  // namespace
}  // namespace ctx::plugins
