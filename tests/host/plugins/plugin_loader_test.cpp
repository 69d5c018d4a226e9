#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <string>

#include "host/core/crypto.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

namespace fs = std::filesystem;
using ctx::testing::copy_plugin;
using ctx::testing::flip_byte;
using ctx::testing::list_dir;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;

std::string abi(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// A lock entry for `file` as `ctx plugin pin` would write it, built without loading it.
LockEntry entry_for(const fs::path& file, PluginKind kind, const std::string& id,
                    const std::string& version = "1.0.0") {
  LockEntry e;
  e.kind = kind;
  e.id = id;
  e.version = version;
  const std::string bytes = read_bytes(file);
  e.sha256 = core::sha256_hex(bytes);
  e.size = bytes.size();
  e.abi_major = CTX_ABI_MAJOR;
  e.abi_minor = 0;
  try {
    e.needed = detail::read_elf_plugin(
                   std::as_bytes(std::span(bytes.data(), bytes.size())), "ctx_plugin_entry")
                   .needed;
  } catch (const MalformedElf&) {
  }
  e.platform = current_platform();
  e.path = fs::absolute(file).lexically_normal().string();
  return e;
}

class PluginLoaderTest : public ::testing::Test {
 protected:
  // Names in the state directory: the loader never writes there.
  std::vector<std::string> cache_names() const { return list_dir(state_.path()); }
  fs::path copy_fixture(const char* fixture, const std::string& name) {
    return copy_plugin(fixture, files_ / name);
  }

  TempDir files_;
  TempDir state_;
  PluginLoader loader_{state_.path()};
};

TEST_F(PluginLoaderTest, PinsThenLoadsEachKind) {
  struct Case {
    const char* file;
    PluginKind kind;
    const char* id;
    const char* version;
  };
  for (const Case& c : {Case{CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier,
                             "fixture-verifier", "1.0.0"},
                        Case{CTX_FIXTURE_VALID_INSTALLER, PluginKind::kInstaller,
                             "fixture-installer", "2.1.0"},
                        Case{CTX_FIXTURE_VALID_HOST_ADAPTER, PluginKind::kHostAdapter,
                             "fixture-host", "0.3.1"}}) {
    SCOPED_TRACE(c.id);
    const LockEntry pinned = loader_.inspect_for_pin(c.file);
    EXPECT_EQ(pinned.kind, c.kind);
    EXPECT_EQ(pinned.id, c.id);
    EXPECT_EQ(pinned.version, c.version);
    EXPECT_EQ(pinned.abi_major, CTX_ABI_MAJOR);
    EXPECT_EQ(pinned.abi_minor, 0u);
    EXPECT_EQ(pinned.size, fs::file_size(c.file));
    EXPECT_FALSE(pinned.needed.empty());
    EXPECT_EQ(pinned.platform, current_platform());
    EXPECT_EQ(pinned.path, fs::absolute(c.file).lexically_normal().string());
    EXPECT_EQ(pinned.sha256, core::sha256_hex(read_bytes(c.file)));

    const auto plugin = loader_.load(pinned);
    EXPECT_EQ(plugin->identity(), pinned.identity());
    EXPECT_EQ(plugin->kind(), c.kind);
    EXPECT_EQ(plugin->library_path().rfind("/proc/self/fd/", 0), 0u);
    EXPECT_EQ(std::string(plugin->descriptor().id), c.id);
    EXPECT_EQ(plugin->verifier_ops() != nullptr, c.kind == PluginKind::kVerifier);
    EXPECT_EQ(plugin->installer_ops() != nullptr, c.kind == PluginKind::kInstaller);
    EXPECT_EQ(plugin->host_adapter_ops() != nullptr, c.kind == PluginKind::kHostAdapter);
    // What is mapped is the sealed copy: its bytes equal the file's.
    EXPECT_EQ(read_bytes(plugin->library_path()), read_bytes(c.file));
  }
  EXPECT_TRUE(cache_names().empty());  // nothing written to disk
}

TEST_F(PluginLoaderTest, IdentityAndDigestAreStableAcrossLoadersAndRuns) {
  const LockEntry pinned = loader_.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER);
  const std::string first = loader_.load(pinned)->identity().digest();
  TempDir other_state;
  const PluginLoader other(other_state.path());
  EXPECT_EQ(other.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER), pinned);
  EXPECT_EQ(other.load(pinned)->identity().digest(), first);
  EXPECT_EQ(first, pinned.identity().digest());
  EXPECT_EQ(first, core::canonical_digest(pinned.identity().to_json()));
}

TEST_F(PluginLoaderTest, FlippedByteIsRefusedBeforeAnyCodeOfTheFileRuns) {
  const fs::path marker = files_ / "constructor-ran";
  ASSERT_EQ(::setenv("CTX_TEST_MARKER", marker.c_str(), 1), 0);
  const fs::path file = copy_fixture(CTX_FIXTURE_CTOR_MARKER, "marker.so");

  // Control: loading the pinned bytes runs the static constructor, which writes the marker.
  const LockEntry pinned = loader_.inspect_for_pin(file);
  fs::remove(marker);
  loader_.load(pinned);
  ASSERT_TRUE(fs::exists(marker));
  fs::remove(marker);
  const auto cache_before = cache_names();

  flip_byte(file, fs::file_size(file) / 2);
  const std::string flipped_sha = core::sha256_hex(read_bytes(file));
  CTX_EXPECT_THROW(loader_.load(pinned), PluginDigestMismatch,
                   "digest mismatch for plugin verifier:fixture-marker: expected " +
                       pinned.sha256 + " got " + flipped_sha);
  EXPECT_FALSE(fs::exists(marker)) << "code of a mismatched file ran";
  EXPECT_EQ(cache_names(), cache_before);
  try {
    loader_.load(pinned);
    ADD_FAILURE() << "a mismatched file loaded";
  } catch (const PluginDigestMismatch& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(e.expected(), pinned.sha256);
    EXPECT_EQ(e.actual(), flipped_sha);
  }
  ::unsetenv("CTX_TEST_MARKER");
}

TEST_F(PluginLoaderTest, ReplacedFileAfterVerificationKeepsTheVerifiedBytesRunning) {
  const fs::path file = copy_fixture(CTX_FIXTURE_VALID_VERIFIER, "verifier.so");
  const LockEntry pinned = loader_.inspect_for_pin(file);
  const auto plugin = loader_.load(pinned);

  // Overwrite the pinned file in place with other code: a loader that mapped the original path
  // would now run (or crash on) the new bytes.
  write_bytes(file, read_bytes(CTX_FIXTURE_VALID_INSTALLER));

  AbiVerifier verifier(plugin, "the-key");
  EXPECT_EQ(verifier.verify(R"({"proof":"x"})", "the-key"), engine::Verdict::kAccepted);
  EXPECT_EQ(verifier.verify(R"({"proof":"x"})", "other"), engine::Verdict::kRejected);
  EXPECT_EQ(plugin->identity(), pinned.identity());
  EXPECT_EQ(read_bytes(plugin->library_path()), read_bytes(CTX_FIXTURE_VALID_VERIFIER));

  // The next verification sees the new bytes and refuses them (here from their size alone).
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafePluginFile, "its bytes changed");
}

TEST_F(PluginLoaderTest, SymlinkIsRefused) {
  const fs::path target = copy_fixture(CTX_FIXTURE_VALID_VERIFIER, "real.so");
  const fs::path link = files_ / "link.so";
  fs::create_symlink(target, link);
  LockEntry e = entry_for(target, PluginKind::kVerifier, "fixture-verifier");
  e.path = link.string();
  CTX_EXPECT_THROW(loader_.load(e), UnsafePluginFile, "symlink");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(link), UnsafePluginFile, "symlink");
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, GroupOrWorldWritableFileIsRefused) {
  const fs::path file = copy_fixture(CTX_FIXTURE_VALID_VERIFIER, "writable.so");
  const LockEntry e = entry_for(file, PluginKind::kVerifier, "fixture-verifier");
  for (const mode_t mode : {0775, 0757, 0666}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(file.c_str(), mode), 0);
    CTX_EXPECT_THROW(loader_.load(e), UnsafePluginFile, "writable");
  }
  ASSERT_EQ(::chmod(file.c_str(), 0755), 0);
  EXPECT_NO_THROW(loader_.load(e));
}

TEST_F(PluginLoaderTest, DirectoryIsRefused) {
  const fs::path dir = files_ / "dir.so";
  fs::create_directory(dir);
  LockEntry e = entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier, "fixture-verifier");
  e.path = dir.string();
  CTX_EXPECT_THROW(loader_.load(e), UnsafePluginFile, "not a regular file");
}

TEST_F(PluginLoaderTest, MissingFileIsNotFound) {
  LockEntry e = entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier, "fixture-verifier");
  e.path = (files_ / "absent.so").string();
  CTX_EXPECT_THROW(loader_.load(e), PluginFileNotFound, "not found");
  CTX_EXPECT_THROW(loader_.load(e), NotFound, "absent.so");
}

TEST_F(PluginLoaderTest, FileOfAnotherOwnerIsRefused) {
  const fs::path file = copy_fixture(CTX_FIXTURE_VALID_VERIFIER, "owned.so");
  const LockEntry e = entry_for(file, PluginKind::kVerifier, "fixture-verifier");
  if (::geteuid() != 0) {
    // Only root can hand a file to another user; an unprivileged run checks the accepted case.
    EXPECT_NO_THROW(loader_.load(e));
    return;
  }
  ASSERT_EQ(::chown(file.c_str(), 4242, 4242), 0);
  CTX_EXPECT_THROW(loader_.load(e), UnsafePluginFile, "owner");
  ASSERT_EQ(::chown(file.c_str(), 0, 0), 0);  // root is always an accepted owner
  EXPECT_NO_THROW(loader_.load(e));
}

TEST_F(PluginLoaderTest, WrongMajorIsRefused) {
  LockEntry e = entry_for(CTX_FIXTURE_WRONG_MAJOR, PluginKind::kVerifier, "fixture-wrong-major");
  e.abi_major = CTX_ABI_MAJOR + 1;  // as its note says: refused from the note, before mapping
  CTX_EXPECT_THROW(loader_.load(e), PluginAbiMismatch,
                   "plugin \"fixture-wrong-major\" (verifier:fixture-wrong-major) is built for "
                   "plugin ABI major " +
                       std::to_string(CTX_ABI_MAJOR + 1) + "; this host provides major " +
                       std::to_string(CTX_ABI_MAJOR));
  CTX_EXPECT_THROW(loader_.inspect_for_pin(CTX_FIXTURE_WRONG_MAJOR), PluginAbiMismatch,
                   "plugin \"fixture-wrong-major\" (" + fs::path(CTX_FIXTURE_WRONG_MAJOR).string() +
                       ") is built for plugin ABI major " + std::to_string(CTX_ABI_MAJOR + 1));
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, TooNewMinorIsRefusedNamingBothVersions) {
  LockEntry e = entry_for(CTX_FIXTURE_MINOR_TOO_NEW, PluginKind::kVerifier,
                          "fixture-minor-too-new");
  e.abi_minor = CTX_ABI_MINOR + 1;
  CTX_EXPECT_THROW(loader_.load(e), PluginAbiMismatch,
                   "plugin \"fixture-minor-too-new\" (verifier:fixture-minor-too-new) requires "
                   "plugin ABI " +
                       abi(CTX_ABI_MAJOR, CTX_ABI_MINOR + 1) + "; this host provides " +
                       abi(CTX_ABI_MAJOR, CTX_ABI_MINOR));
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, HostNegotiationDecidesTheVersionRule) {
  ctx_host_negotiation newer = host_negotiation();
  EXPECT_EQ(newer.struct_size, sizeof(ctx_host_negotiation));
  EXPECT_EQ(newer.abi_major, CTX_ABI_MAJOR);
  EXPECT_EQ(newer.abi_minor_min, 0u);
  EXPECT_EQ(newer.abi_minor_max, CTX_ABI_MINOR);

  // A host that no longer accepts plugins built against this minor.
  newer.abi_minor_min = CTX_ABI_MINOR + 1;
  newer.abi_minor_max = CTX_ABI_MINOR + 1;
  const PluginLoader picky(state_.path(), newer);
  const LockEntry verifier =
      entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier, "fixture-verifier");
  LockEntry too_new =
      entry_for(CTX_FIXTURE_MINOR_TOO_NEW, PluginKind::kVerifier, "fixture-minor-too-new");
  too_new.abi_minor = CTX_ABI_MINOR + 1;
  LockEntry wrong_major =
      entry_for(CTX_FIXTURE_WRONG_MAJOR, PluginKind::kVerifier, "fixture-wrong-major");
  wrong_major.abi_major = CTX_ABI_MAJOR + 1;
  CTX_EXPECT_THROW(picky.load(verifier), PluginAbiMismatch,
                   "plugin \"fixture-verifier\" was built against plugin ABI " +
                       abi(CTX_ABI_MAJOR, CTX_ABI_MINOR) + "; this host requires at least " +
                       abi(CTX_ABI_MAJOR, CTX_ABI_MINOR + 1));
  // The same host accepts a plugin that requires the newer minor.
  EXPECT_EQ(picky.load(too_new)->identity().id, "fixture-minor-too-new");

  ctx_host_negotiation next_major = host_negotiation();
  next_major.abi_major = CTX_ABI_MAJOR + 1;
  const PluginLoader next(state_.path(), next_major);
  CTX_EXPECT_THROW(next.load(verifier), PluginAbiMismatch, "major");
  EXPECT_EQ(next.load(wrong_major)->identity().id, "fixture-wrong-major");
}

TEST_F(PluginLoaderTest, MissingEntrySymbolIsRefusedWithoutLoading) {
  const LockEntry e = entry_for(CTX_FIXTURE_MISSING_ENTRY, PluginKind::kVerifier,
                                "fixture-missing-entry");
  CTX_EXPECT_THROW(loader_.load(e), MissingEntrySymbol, "entry symbol ctx_plugin_entry");
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, NullRequiredOpIsRefusedNamingTheOp) {
  const LockEntry e = entry_for(CTX_FIXTURE_NULL_OP, PluginKind::kInstaller, "fixture-null-op");
  CTX_EXPECT_THROW(loader_.load(e), BrokenPluginTable, "required op activate is null");
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, NonElfFileIsRefused) {
  const fs::path file = files_ / "text.so";
  write_bytes(file, "#!/bin/sh\necho not a plugin\n");
  const LockEntry e = entry_for(file, PluginKind::kVerifier, "text");
  CTX_EXPECT_THROW(loader_.load(e), MalformedElf,
                   "is not a loadable elf plugin: shorter than an ELF header");
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, DeclaredIdentityMustEqualTheLockEntry) {
  LockEntry e = entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier, "fixture-verifier");
  EXPECT_NO_THROW(loader_.load(e));
  const auto cache_before = cache_names();

  LockEntry other_version = e;
  other_version.version = "9.9.9";
  CTX_EXPECT_THROW(loader_.load(other_version), PluginNoteMismatch,
                   "declares verifier:fixture-verifier 1.0.0");
  LockEntry other_id = e;
  other_id.id = "someone-else";
  CTX_EXPECT_THROW(loader_.load(other_id), PluginNoteMismatch, "the lock pins");
  LockEntry other_kind = e;
  other_kind.kind = PluginKind::kInstaller;
  CTX_EXPECT_THROW(loader_.load(other_kind), PluginNoteMismatch, "declares verifier:");
  LockEntry other_abi = e;
  other_abi.abi_minor = CTX_ABI_MINOR + 1;
  CTX_EXPECT_THROW(loader_.load(other_abi), PluginNoteMismatch, "abi");
  LockEntry other_platform = e;
  other_platform.platform = "plan9-mips";
  CTX_EXPECT_THROW(loader_.load(other_platform), PluginIdentityMismatch, "platform");
  EXPECT_EQ(cache_names(), cache_before);
}

TEST_F(PluginLoaderTest, FailedFirstLoadLeavesNoCacheFile) {
  LockEntry e = entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier, "fixture-verifier");
  e.version = "2.0.0";
  CTX_EXPECT_THROW(loader_.load(e), PluginNoteMismatch, "declares");
  EXPECT_TRUE(cache_names().empty());
}

TEST_F(PluginLoaderTest, FailedLoadsCreateNoDirectories) {
  const fs::path state = state_.path() / "a" / "b" / "state";
  const PluginLoader loader(state);
  LockEntry missing = entry_for(CTX_FIXTURE_VALID_VERIFIER, PluginKind::kVerifier,
                                "fixture-verifier");
  missing.path = (files_ / "absent.so").string();
  CTX_EXPECT_THROW(loader.load(missing), PluginFileNotFound, "not found");
  const fs::path file = copy_fixture(CTX_FIXTURE_VALID_VERIFIER, "flipped.so");
  const LockEntry pinned = entry_for(file, PluginKind::kVerifier, "fixture-verifier");
  flip_byte(file, 64);
  CTX_EXPECT_THROW(loader.load(pinned), PluginDigestMismatch, "digest");
  CTX_EXPECT_THROW(loader.inspect_for_pin(CTX_FIXTURE_WRONG_MAJOR), PluginAbiMismatch, "major");
  EXPECT_TRUE(list_dir(state_.path()).empty());

  // Nor does a successful one: the loader keeps nothing on disk.
  EXPECT_NO_THROW(loader.load(loader.inspect_for_pin(CTX_FIXTURE_VALID_VERIFIER)));
  EXPECT_TRUE(list_dir(state_.path()).empty());
}

TEST_F(PluginLoaderTest, LoadedPluginOutlivesItsLoader) {
  std::shared_ptr<const LoadedPlugin> plugin;
  {
    TempDir state;
    const PluginLoader loader(state.path());
    plugin = loader.load(loader.inspect_for_pin(CTX_FIXTURE_VALID_HOST_ADAPTER));
  }  // the loader is gone; the memfd and the mapping stay
  AbiHostAdapter adapter(plugin, "");
  EXPECT_EQ(adapter.render_reply(engine::ReplyRequest{}), R"({"reply":{"actions":[]}})");
}

}  // namespace
}  // namespace ctx::plugins
