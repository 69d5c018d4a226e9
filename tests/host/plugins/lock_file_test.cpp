#include <ctx/loader/errors.hpp>
#include <ctx/loader/lock_file.hpp>

#include "host/core/canonical_json.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;

LockEntry entry(PluginKind kind, std::string id, char hex = 'a') {
  LockEntry e;
  e.kind = kind;
  e.id = std::move(id);
  e.version = "1.0.0";
  e.sha256 = std::string(64, hex);
  e.abi_major = 1;
  e.abi_minor = 0;
  e.size = 4096;
  e.needed = {"libc.so.6"};
  e.platform = "linux-x86_64";
  e.path = "/opt/plugins/" + e.id + ".so";
  return e;
}

LockFile sample_lock() {
  LockFile lock;
  lock.upsert(entry(PluginKind::kVerifier, "hmac-sha256"));
  lock.upsert(entry(PluginKind::kInstaller, "skill-installer", 'b'));
  lock.upsert(entry(PluginKind::kHostAdapter, "generic", 'c'));
  return lock;
}

TEST(LockFile, UpsertKeepsEntriesSortedAndUniqueByKindAndId) {
  LockFile lock = sample_lock();
  ASSERT_EQ(lock.entries().size(), 3u);
  EXPECT_EQ(lock.entries()[0].kind, PluginKind::kInstaller);
  EXPECT_EQ(lock.entries()[1].kind, PluginKind::kVerifier);
  EXPECT_EQ(lock.entries()[2].kind, PluginKind::kHostAdapter);

  LockEntry updated = entry(PluginKind::kVerifier, "hmac-sha256", 'd');
  updated.version = "1.1.0";
  lock.upsert(updated);
  ASSERT_EQ(lock.entries().size(), 3u);
  const LockEntry* found = lock.find(PluginKind::kVerifier, "hmac-sha256");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(*found, updated);
  EXPECT_EQ(lock.find(PluginKind::kInstaller, "hmac-sha256"), nullptr);
}

TEST(LockFile, UpsertRejectsInvalidEntries) {
  LockFile lock;
  LockEntry bad = entry(PluginKind::kVerifier, "Bad Id");
  CTX_EXPECT_THROW(lock.upsert(bad), InvalidArgument, "invalid plugin id");
  bad = entry(PluginKind::kVerifier, "ok");
  bad.sha256 = "ABC";
  CTX_EXPECT_THROW(lock.upsert(bad), InvalidArgument, "sha256");
  bad = entry(PluginKind::kVerifier, "ok");
  bad.path = "relative.so";
  CTX_EXPECT_THROW(lock.upsert(bad), InvalidArgument, "absolute");
  bad = entry(PluginKind::kVerifier, "ok");
  bad.version = "1";
  CTX_EXPECT_THROW(lock.upsert(bad), InvalidArgument, "invalid version");
  EXPECT_TRUE(lock.entries().empty());
}

TEST(LockFile, SavesCanonicalJsonAndLoadsItBack) {
  TempDir dir;
  const auto path = dir / "plugins.lock.json";
  const LockFile lock = sample_lock();
  lock.save(path);
  const std::string text = read_bytes(path);
  EXPECT_EQ(text, core::canonical_json(lock.to_json()) + "\n");
  EXPECT_NE(text.find(R"("schema":"ctx.plugins-lock.v2")"), std::string::npos);
  EXPECT_NE(text.find(R"("abi":{"major":1,"minor":0})"), std::string::npos);
  const LockFile loaded = LockFile::load(path);
  EXPECT_EQ(loaded.entries(), lock.entries());
  EXPECT_EQ(loaded.digest(), lock.digest());
  // No temporary files are left beside it.
  EXPECT_EQ(ctx::testing::list_dir(dir.path()).size(), 1u);
}

TEST(LockFile, MissingFileIsNotFoundUnlessEmptyIsAllowed) {
  TempDir dir;
  CTX_EXPECT_THROW(LockFile::load(dir / "absent.json"), PluginFileNotFound, "not found");
  EXPECT_TRUE(LockFile::load_or_empty(dir / "absent.json").entries().empty());
}

TEST(LockFile, MalformedContentIsRefusedAndLeftUntouched) {
  const std::string valid = core::canonical_json(sample_lock().to_json());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {valid.substr(0, valid.size() / 2), "parse"},  // truncated
      {"", "parse"},
      {"not json", "parse"},
      {"[]", "top level must be an object"},
      {R"({"entries":[],"schema":"other"})", "schema"},
      {R"({"schema":"ctx.plugins-lock.v2"})", "missing \"entries\""},
      {R"({"entries":{},"schema":"ctx.plugins-lock.v2"})", "must be an array"},
      {R"({"entries":[],"schema":"ctx.plugins-lock.v2","extra":1})", "unknown field"},
      {R"({"entries":[],"entries":[],"schema":"ctx.plugins-lock.v2"})", "duplicate"},
      {R"({"entries":[{"abi":{"major":1,"minor":0},"id":"x","kind":"driver",)"
       R"("needed":[],"path":"/x.so",)"
       R"("platform":"linux-x86_64","sha256":")" +
           std::string(64, 'a') +
           R"(","size":1,"version":"1.0.0"}],"schema":"ctx.plugins-lock.v2"})",
       "unknown plugin kind"},
      {R"({"entries":[{"abi":{"major":-1,"minor":0},"id":"x","kind":"verifier",)"
       R"("needed":[],"path":"/x.so",)"
       R"("platform":"linux-x86_64","sha256":")" +
           std::string(64, 'a') +
           R"(","size":1,"version":"1.0.0"}],"schema":"ctx.plugins-lock.v2"})",
       "unsigned"},
      {R"({"entries":[{"abi":{"major":1,"minor":0},"id":"x","kind":"verifier",)"
       R"("needed":[],"path":"/x.so",)"
       R"("platform":"linux-x86_64","sha256":"abc","size":1,"version":"1.0.0"}],)"
       R"("schema":"ctx.plugins-lock.v2"})",
       "sha256"},
  };
  TempDir dir;
  const auto path = dir / "plugins.lock.json";
  for (const auto& [text, keyword] : cases) {
    SCOPED_TRACE(text);
    write_bytes(path, text + "\n");
    CTX_EXPECT_THROW(LockFile::load(path), MalformedLockFile, "malformed lock file");
    CTX_EXPECT_THROW(LockFile::load_or_empty(path), MalformedLockFile, keyword);
    EXPECT_EQ(read_bytes(path), text + "\n");
  }
}

TEST(LockFile, DuplicateKindAndIdInTheFileIsMalformed) {
  LockFile lock;
  lock.upsert(entry(PluginKind::kVerifier, "x"));
  core::Json json = lock.to_json();
  json["entries"].push_back(json["entries"][0]);
  CTX_EXPECT_THROW(LockFile::parse(core::canonical_json(json) + "\n", "test"), MalformedLockFile,
                   "duplicate entry verifier:x");
}

TEST(LockFile, DirectoryIsNotALockFile) {
  TempDir dir;
  CTX_EXPECT_THROW(LockFile::load(dir.path()), UnsafePluginFile, "not a regular file");
}

}  // namespace
}  // namespace ctx::plugins
