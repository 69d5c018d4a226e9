#include "plugins/skill-installer/core/skill_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctx/sdk/error.hpp>
#include <ctx/sdk/skill_tree.hpp>

#include "tests/plugins/skill-installer/skill_store_fixture.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::skill_installer {
namespace {

using plugin_common::material_identity_digest;
using plugin_common::sha256_hex;
using sdk::is_tree_path;
using sdk::tree_manifest_text;
using sdk::TreeFile;
using namespace ctx::skill_installer::testing;

const std::string kBodySha = sha256_hex(kBody);

Json file_request(const std::string& body = kBody) {
  return Json{{"capability_id", "skill:pdf"}, {"content", body},
              {"content_sha256", sha256_hex(body)}};
}

ErrorCode code_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kOk;
}

TEST_F(SkillStoreTest, CreatesTheRootPrivatelyAndReportsItsIdentity) {
  SkillStore store(config());
  struct stat st {};
  ASSERT_EQ(::lstat(root_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const Json identity = store.target_identity();
  EXPECT_EQ(identity.at("device"), static_cast<std::uint64_t>(st.st_dev));
  EXPECT_EQ(identity.at("inode"), static_cast<std::uint64_t>(st.st_ino));
  EXPECT_EQ(identity.at("owner"), static_cast<std::uint64_t>(::getuid()));
  EXPECT_EQ(identity.at("mode"), static_cast<std::uint64_t>(st.st_mode));
  EXPECT_EQ(identity.at("path"), root_.string());
  EXPECT_TRUE(fs::is_directory(skills_)) << "the activation root is created";
  EXPECT_EQ(listing(root_), (std::set<std::string>{"objects", "tmp"}));
}

TEST_F(SkillStoreTest, RejectsBadConfigs) {
  CTX_EXPECT_THROW(SkillStore(""), InvalidArgument, "config is not valid json");
  CTX_EXPECT_THROW(SkillStore("{}"), InvalidArgument, "needs a string \"root\"");
  CTX_EXPECT_THROW(SkillStore(R"({"root":"relative/dir"})"), InvalidArgument, "absolute");
  CTX_EXPECT_THROW(SkillStore(config({{"activation_root", "rel"}})), InvalidArgument, "absolute");
  CTX_EXPECT_THROW(SkillStore(config({{"max_file_bytes", 0}})), InvalidArgument, "positive");
  CTX_EXPECT_THROW(SkillStore(config({{"surprise", 1}})), InvalidArgument, "unknown field");
  fs::create_directories(base_ / "real");
  fs::create_directory_symlink(base_ / "real", base_ / "link");
  CTX_EXPECT_THROW(SkillStore(Json{{"root", (base_ / "link").string()}}.dump()), InvalidArgument,
                   "symlinks are refused");
  std::ofstream(base_ / "file") << "x";
  CTX_EXPECT_THROW(SkillStore(Json{{"root", (base_ / "file").string()}}.dump()), InvalidArgument,
                   "not a directory");
}

TEST_F(SkillStoreTest, RefusesARootOwnedByAnotherUserOrWritableByOthers) {
  fs::create_directories(root_);
  for (const mode_t mode : {0770, 0702, 0722}) {
    ASSERT_EQ(::chmod(root_.c_str(), mode), 0);
    EXPECT_EQ(code_of([&] { SkillStore store(config()); }), ErrorCode::kPermissionDenied);
    CTX_EXPECT_THROW(SkillStore{config()}, Error, "root is writable by group or others");
  }
  ASSERT_EQ(::chmod(root_.c_str(), 0700), 0);
  const uid_t other = ::geteuid() == 0 ? 65534 : 0;
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(root_.c_str(), other, static_cast<gid_t>(-1)), 0);
    CTX_EXPECT_THROW(SkillStore{config()}, Error, "root is owned by another user");
    ASSERT_EQ(::chown(root_.c_str(), 0, static_cast<gid_t>(-1)), 0);
  } else {
    CTX_EXPECT_THROW(SkillStore(Json{{"root", "/usr"}}.dump()), Error,
                     "root is owned by another user");
  }
  // The activation root obeys the same rules.
  fs::create_directories(skills_);
  ASSERT_EQ(::chmod(skills_.c_str(), 0777), 0);
  CTX_EXPECT_THROW(SkillStore{config()}, Error, "activation root is writable by group or others");
  ASSERT_EQ(::chmod(skills_.c_str(), 0755), 0);
  SkillStore store(config());
  // Loosened after start: the next mutation refuses.
  ASSERT_EQ(::chmod(root_.c_str(), 0770), 0);
  EXPECT_EQ(code_of([&] { store.install(file_request().dump()); }), ErrorCode::kPermissionDenied);
  EXPECT_FALSE(fs::exists(root_ / "objects" / kBodySha));
}

// The MaterialIdentity digest of plugin_abi.h, against a vector computed outside ctx (Python's
// json.dumps(sort_keys=True, separators=(",", ":")) and hashlib.sha256).
TEST(MaterialIdentityDigest, MatchesTheSdkSchema) {
  EXPECT_EQ(material_identity_digest("skill:pdf", sha256_hex("hello"), 5),
            "aafb0c19bbca8d6ac359e5eda66f942753ad195d7969411e859580df8bb0283c");
}

// The tree manifest against the spelled-out text (and a digest computed with Python's hashlib
// over that exact text).
TEST(SkillTree, ManifestIsTheCanonicalSortedFileList) {
  const std::string text = tree_manifest_text(
      {TreeFile{"b/x.txt", 1, std::string(64, 'b')}, TreeFile{"SKILL.md", 5, sha256_hex("hello")}});
  EXPECT_EQ(text,
            "{\"files\":[{\"bytes\":5,\"path\":\"SKILL.md\",\"sha256\":\"" + sha256_hex("hello") +
                "\"},{\"bytes\":1,\"path\":\"b/x.txt\",\"sha256\":\"" + std::string(64, 'b') +
                "\"}],\"schema\":\"ctx.skill-tree-v1\"}");
  // Python: json.dumps(manifest, sort_keys=True, separators=(",", ":")), hashlib.sha256.
  const std::string one =
      tree_manifest_text({TreeFile{"SKILL.md", 5, sha256_hex("hello")}});
  EXPECT_EQ(sha256_hex(one), "f1fb0ee931f6c63afc6633517d15ba64cdce6b4f4c4bd7886b48d085fb7ef8b9");
  EXPECT_EQ(material_identity_digest("skill:pdf", sha256_hex(one), one.size()),
            "0161cee8203f07e3437de051ee6256d048c367048b09362c4cdc4614a410c240");
  EXPECT_EQ(one, manifest_of({{"SKILL.md", "hello"}}));
  CTX_EXPECT_THROW(tree_manifest_text({TreeFile{"README.md", 1, std::string(64, 'a')}}),
                   InvalidArgument, "SKILL.md");
  CTX_EXPECT_THROW(tree_manifest_text({TreeFile{"SKILL.md", 1, std::string(64, 'a')},
                                       TreeFile{"SKILL.md", 1, std::string(64, 'a')}}),
                   InvalidArgument, "twice");
  CTX_EXPECT_THROW(tree_manifest_text({TreeFile{"SKILL.md", 1, std::string(64, 'A')}}),
                   InvalidArgument, "digest");
  for (const char* bad : {"", ".hidden", "a/../b", "a//b", "/abs", "a/", "sp ace", "a\\b"}) {
    EXPECT_FALSE(is_tree_path(bad)) << bad;
  }
  for (const char* good : {"SKILL.md", "scripts/run.sh", "_x/Y-1.2", "a/b/c/d/e/f/g/h"}) {
    EXPECT_TRUE(is_tree_path(good)) << good;
  }
  EXPECT_FALSE(is_tree_path("a/b/c/d/e/f/g/h/i"));
}

// The tree root against the spelled-out text and a digest computed with Python's json.dumps
// (sort_keys, compact) and hashlib over it; its length stays within kMaxTreeRootChars at the
// largest counts, and only a SKILL.md-only tree of 1..6000 bytes is plain.
TEST(SkillTree, RootIsTheFixedSizeTextOverTheManifestDigest) {
  const std::vector<TreeFile> one = {TreeFile{"SKILL.md", 5, sha256_hex("hello")}};
  const std::string root = sdk::tree_root_text(one, sha256_hex(tree_manifest_text(one)));
  EXPECT_EQ(root,
            "{\"bytes\":5,\"files\":1,\"manifest_sha256\":"
            "\"f1fb0ee931f6c63afc6633517d15ba64cdce6b4f4c4bd7886b48d085fb7ef8b9\","
            "\"schema\":\"ctx.skill-tree-root-v1\"}");
  EXPECT_EQ(sha256_hex(root), "92ded1f2b8d77c801ecd76e1296daaef65a2a13d439d0fb02a663301ac1fc8ff");
  EXPECT_EQ(material_identity_digest("skill:pdf", sha256_hex(root), root.size()),
            "970cc00e1a3fe906cc8f9b7ca57e9a1efa9eabaf3694879147c847dca1426ca1");
  EXPECT_EQ(root, root_of({{"SKILL.md", "hello"}}));
  const std::string widest = sdk::tree_root_text(UINT64_MAX, UINT64_MAX, std::string(64, 'f'));
  EXPECT_EQ(widest.size(), sdk::kMaxTreeRootChars);
  CTX_EXPECT_THROW(sdk::tree_root_text(1, 0, std::string(64, 'a')), InvalidArgument, "one file");
  CTX_EXPECT_THROW(sdk::tree_root_text(1, 1, std::string(64, 'A')), InvalidArgument, "digest");

  EXPECT_TRUE(sdk::is_plain_skill({TreeFile{"SKILL.md", 6000, std::string(64, 'a')}}));
  EXPECT_FALSE(sdk::is_plain_skill({TreeFile{"SKILL.md", 6001, std::string(64, 'a')}}));
  EXPECT_FALSE(sdk::is_plain_skill({TreeFile{"SKILL.md", 0, std::string(64, 'a')}}));
  EXPECT_FALSE(sdk::is_plain_skill(
      {TreeFile{"SKILL.md", 5, std::string(64, 'a')}, TreeFile{"a.md", 1, std::string(64, 'b')}}));
}

TEST_F(SkillStoreTest, InstallWritesTheContentAddressedObjectOnce) {
  SkillStore store(config());
  const Json reply = store.install(file_request().dump());
  EXPECT_EQ(reply.at("outcome"), "applied");
  EXPECT_EQ(reply.at("form"), "file");
  EXPECT_EQ(reply.at("rewritten"), true);
  EXPECT_EQ(reply.at("observed_material_identity_digest"),
            material_identity_digest("skill:pdf", kBodySha, std::strlen(kBody)));
  EXPECT_EQ(reply.at("verification_digest").get<std::string>().size(), 64u);
  const fs::path object = root_ / "objects" / kBodySha;
  EXPECT_EQ(read(object / "SKILL.md"), kBody);
  EXPECT_EQ(fs::status(object / "SKILL.md").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(fs::status(object).permissions() & fs::perms::owner_write, fs::perms::none);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));

  // Idempotent: the same install again is applied without rewriting anything.
  struct stat before {};
  ASSERT_EQ(::stat((object / "SKILL.md").c_str(), &before), 0);
  Json again = store.install(file_request().dump());
  EXPECT_EQ(again.at("rewritten"), false);
  again["rewritten"] = true;
  EXPECT_EQ(again, reply);
  struct stat after {};
  ASSERT_EQ(::stat((object / "SKILL.md").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
}

TEST_F(SkillStoreTest, InstallAcceptsBase64ContentAndAFileSource) {
  SkillStore store(config());
  const std::string sha = "252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111";  // f
  const Json reply = store.install(Json{
      {"capability_id", "skill:f"}, {"content_base64", "Zg=="}, {"content_sha256", sha}}.dump());
  EXPECT_EQ(reply.at("outcome"), "applied");
  EXPECT_EQ(read(root_ / "objects" / sha / "SKILL.md"), "f");

  const std::string body(200000, 'z');  // several streamed chunks
  write(base_ / "body" / "SKILL.md", body);
  const Json streamed =
      store.install(Json{{"capability_id", "skill:zed"},
                         {"content_sha256", sha256_hex(body)},
                         {"source", {{"file", (base_ / "body/SKILL.md").string()}}}}
                        .dump());
  EXPECT_EQ(streamed.at("outcome"), "applied");
  EXPECT_EQ(streamed.at("observed_material_identity_digest"),
            material_identity_digest("skill:zed", sha256_hex(body), body.size()));
  EXPECT_EQ(read(root_ / "objects" / sha256_hex(body) / "SKILL.md"), body);
}

TEST_F(SkillStoreTest, DigestMismatchFailsWithoutWriting) {
  SkillStore store(config());
  Json request = file_request();
  request["content_sha256"] = std::string(64, 'a');
  const Json reply = store.install(request.dump());
  EXPECT_EQ(reply.at("outcome"), "failed");
  EXPECT_EQ(reply.at("reason"), "content digest mismatch");
  EXPECT_EQ(reply.at("observed_material_identity_digest"),
            material_identity_digest("skill:pdf", kBodySha, std::strlen(kBody)));
  EXPECT_FALSE(reply.contains("verification_digest"));
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(SkillStoreTest, InstallsADirectoryTreeContentAddressed) {
  SkillStore store(config());
  const auto files = sample_tree(150000);
  const fs::path source = source_tree("src", files);
  const Json request = tree_request("skill:pdf", source, files);
  const std::string tree = request.at("content_sha256");
  const std::string root = root_of(files);
  EXPECT_EQ(tree, sha256_hex(root));

  const Json reply = store.install(request.dump());
  EXPECT_EQ(reply.at("outcome"), "applied") << reply.dump();
  EXPECT_EQ(reply.at("form"), "tree");
  EXPECT_EQ(reply.at("observed_material_identity_digest"),
            material_identity_digest("skill:pdf", tree, root.size()));
  const fs::path object = root_ / "objects" / tree;
  EXPECT_EQ(listing(object),
            (std::set<std::string>{"SKILL.md", "reference.md", "scripts", "scripts/run.sh"}));
  for (const auto& [path, bytes] : files) EXPECT_EQ(read(object / path), bytes) << path;
  EXPECT_EQ(fs::status(object / "scripts").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));

  // Idempotent: applied again without even reading the body source.
  fs::remove_all(source);
  const Json again = store.install(request.dump());
  EXPECT_EQ(again.at("outcome"), "applied");
  EXPECT_EQ(again.at("rewritten"), false);
  EXPECT_EQ(again.at("verification_digest"), reply.at("verification_digest"));
  const Json state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "applied");
  EXPECT_TRUE(state.at("installed"));
}

TEST_F(SkillStoreTest, RefusesAMismatchedMaterialIdentityOrSize) {
  SkillStore store(config());
  const auto files = sample_tree();
  Json request = tree_request("skill:pdf", source_tree("src", files), files);
  Json wrong_identity = request;
  wrong_identity["material_identity_digest"] = material_identity_digest(
      "skill:other", request.at("content_sha256").get<std::string>(),
      request.at("content_bytes").get<std::uint64_t>());
  Json reply = store.install(wrong_identity.dump());
  EXPECT_EQ(reply.at("outcome"), "failed");
  EXPECT_EQ(reply.at("reason"), "material identity digest mismatch");
  Json wrong_size = request;
  wrong_size["content_bytes"] = request.at("content_bytes").get<std::uint64_t>() + 1;
  EXPECT_EQ(store.install(wrong_size.dump()).at("reason"), "content size mismatch");
  Json wrong_tree = request;
  wrong_tree["content_sha256"] = sha256_hex("another tree");
  EXPECT_EQ(store.install(wrong_tree.dump()).at("reason"),
            "manifest does not match the authorised tree root");
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));

  request["material_identity_digest"] = material_identity_digest(
      "skill:pdf", request.at("content_sha256").get<std::string>(),
      request.at("content_bytes").get<std::uint64_t>());
  EXPECT_EQ(store.install(request.dump()).at("outcome"), "applied");
  // Installed now; a mismatched expectation is still refused (no "applied" for other material).
  EXPECT_EQ(store.install(wrong_identity.dump()).at("reason"), "material identity digest mismatch");
}

// Every file must be its manifest entry, the manifest the one the authorised root names, and
// the root the authorised one: anything else fails before publication, nothing left behind.
TEST_F(SkillStoreTest, ATreeMustMatchItsManifestAndTheManifestItsRoot) {
  SkillStore store(config());
  const auto files = sample_tree(100000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const auto refused = [&](const Json& bad, const std::string& reason) {
    const Json reply = store.install(bad.dump());
    EXPECT_EQ(reply.at("outcome"), "failed") << reply.dump();
    EXPECT_EQ(reply.value("reason", ""), reason);
    EXPECT_FALSE(reply.contains("verification_digest"));
    EXPECT_TRUE(fs::is_empty(root_ / "objects"));
    EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  };
  // One altered resource byte (same size) under the original manifest and root.
  auto altered = files;
  altered["reference.md"][50000] = 'X';
  Json bad = request;
  bad["source"]["directory"] = source_tree("altered", altered).string();
  refused(bad, "material file does not match its manifest entry");
  // A resource grown past its entry: stopped while streaming.
  auto grown = files;
  grown["reference.md"] += "more";
  bad["source"]["directory"] = source_tree("grown", grown).string();
  refused(bad, "material file does not match its manifest entry");
  // A file the manifest does not list.
  auto extra = files;
  extra["scripts/extra.sh"] = "echo extra\n";
  bad["source"]["directory"] = source_tree("extra", extra).string();
  refused(bad, "material source holds a file its manifest does not list");
  // The altered tree's own manifest under the original root (its files match it; the root
  // names another manifest).
  bad = request;
  bad["source"]["directory"] = source_tree("altered-2", altered).string();
  bad["manifest"] = manifest_of(altered);
  refused(bad, "manifest does not match the authorised tree root");
  // A root whose manifest_sha256 is not the manifest's: size and identity consistent with it.
  const std::string other_root = root_of(files, manifest_of(altered));
  bad = request;
  bad["content_sha256"] = sha256_hex(other_root);
  bad["content_bytes"] = other_root.size();
  bad["material_identity_digest"] =
      material_identity_digest("skill:pdf", sha256_hex(other_root), other_root.size());
  refused(bad, "manifest does not match the authorised tree root");

  // Malformed manifests are request errors.
  bad = request;
  bad.erase("manifest");
  CTX_EXPECT_THROW(store.install(bad.dump()), InvalidArgument, "manifest");
  bad["manifest"] = " " + manifest_of(files);
  CTX_EXPECT_THROW(store.install(bad.dump()), InvalidArgument, "manifest");
  bad["manifest"] = "{\"files\":[],\"schema\":\"ctx.skill-tree-v1\"}";
  CTX_EXPECT_THROW(store.install(bad.dump()), InvalidArgument, "manifest");
  Json inline_body = file_request();
  inline_body["manifest"] = manifest_of(files);
  CTX_EXPECT_THROW(store.install(inline_body.dump()), InvalidArgument, "manifest");
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));

  EXPECT_EQ(store.install(request.dump()).at("outcome"), "applied");
}

// A tree of 200 files: its manifest is far over the engine's 6000-byte material bound, its root
// (the material) is not; it installs, reconciles and activates under the root's identity.
TEST_F(SkillStoreTest, InstallsATwoHundredFileTreeUnderItsRoot) {
  SkillStore store(config());
  std::map<std::string, std::string> files = {{"SKILL.md", kBody}};
  for (int i = 1; i < 200; ++i) {
    files["references/part-" + std::to_string(i) + ".md"] = "part " + std::to_string(i) + "\n";
  }
  ASSERT_GT(manifest_of(files).size(), 6000u);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");
  const std::string root = root_of(files);
  ASSERT_LE(root.size(), 6000u);
  const std::string material = material_identity_digest("skill:pdf", tree, root.size());
  const Json reply = store.install(request.dump());
  ASSERT_EQ(reply.at("outcome"), "applied") << reply.dump();
  EXPECT_EQ(reply.at("observed_material_identity_digest"), material);
  EXPECT_EQ(listing(root_ / "objects" / tree).size(), 201u);  // 200 files and references/
  const Json entry = {{"capability_id", "skill:pdf"}, {"content_sha256", tree}};
  EXPECT_EQ(store.activate(entry.dump()).at("observed_material_identity_digest"), material);
  const Json state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "applied");
  EXPECT_EQ(state.at("active_material_identity_digest"), material);
}

// A SKILL.md over the plain bound, sent as a one-file tree: installed under the root's digest
// (not the SKILL.md's), and reported with the root's identity.
TEST_F(SkillStoreTest, InstallsALargeSkillMdAsAOneFileTree) {
  SkillStore store(config());
  const std::map<std::string, std::string> files = {
      {"SKILL.md", std::string(kBody) + std::string(12000, 'x')}};
  const Json request = tree_request("skill:big", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");
  ASSERT_NE(tree, sha256_hex(files.at("SKILL.md")));
  const Json reply = store.install(request.dump());
  ASSERT_EQ(reply.at("outcome"), "applied") << reply.dump();
  EXPECT_EQ(reply.at("form"), "tree");
  const std::string material = material_identity_digest("skill:big", tree, root_of(files).size());
  EXPECT_EQ(reply.at("observed_material_identity_digest"), material);
  EXPECT_EQ(read(root_ / "objects" / tree / "SKILL.md"), files.at("SKILL.md"));
  EXPECT_EQ(reconcile_of(store, "skill:big", tree).at("install_state"), "applied");
  EXPECT_EQ(store.activate(Json{{"capability_id", "skill:big"}, {"content_sha256", tree}}.dump())
                .at("observed_material_identity_digest"),
            material);
}

TEST_F(SkillStoreTest, SizeCapsRefuseWhileStreaming) {
  const auto files = sample_tree(5000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  for (const Json& caps : {Json{{"max_file_bytes", 4096}}, Json{{"max_tree_bytes", 5000}},
                           Json{{"max_files", 2}}}) {
    SkillStore store(config(caps));
    const Json reply = store.install(request.dump());
    EXPECT_EQ(reply.at("outcome"), "failed") << caps.dump();
    EXPECT_THAT(reply.at("reason").get<std::string>(),
                ::testing::AnyOf(::testing::HasSubstr("size cap"),
                                 ::testing::HasSubstr("too many files")));
    EXPECT_FALSE(reply.contains("observed_material_identity_digest"));
    EXPECT_TRUE(fs::is_empty(root_ / "objects"));
    EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  }
  SkillStore small(config({{"max_file_bytes", 8}}));
  EXPECT_EQ(small.install(file_request().dump()).at("reason"), "material exceeds the size cap");
}

// The default caps are the shared tree bounds the host's catalog imports under
// (CatalogImport.AResourceAtTheSharedTreeFileCapImports): a resource of exactly
// sdk::kMaxTreeFileBytes installs under a default config, one byte more is refused.
TEST_F(SkillStoreTest, DefaultCapsAcceptATreeAtTheSharedBounds) {
  SkillStore store(config());
  auto files = sample_tree();
  files["references/big.bin"] = std::string(sdk::kMaxTreeFileBytes, 'b');
  const Json applied =
      store.install(tree_request("skill:pdf", source_tree("at-cap", files), files).dump());
  ASSERT_EQ(applied.at("outcome"), "applied") << applied.dump();
  const fs::path object = root_ / "objects" / sha256_hex(root_of(files));
  EXPECT_EQ(fs::file_size(object / "references" / "big.bin"), sdk::kMaxTreeFileBytes);

  files["references/big.bin"].push_back('b');
  const Json refused =
      store.install(tree_request("skill:pdf", source_tree("over-cap", files), files).dump());
  EXPECT_EQ(refused.at("outcome"), "failed");
  EXPECT_THAT(refused.at("reason").get<std::string>(), ::testing::HasSubstr("size cap"));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(SkillStoreTest, RefusesSourcesThatAreNotPlainTrees) {
  SkillStore store(config());
  auto files = sample_tree();
  const fs::path source = source_tree("src", files);
  const Json request = tree_request("skill:pdf", source, files);
  fs::create_symlink("/etc/passwd", source / "leak");
  EXPECT_EQ(store.install(request.dump()).at("reason"),
            "material source holds something other than files and directories");
  fs::remove(source / "leak");
  ASSERT_EQ(::mkfifo((source / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(store.install(request.dump()).at("reason"),
            "material source holds something other than files and directories");
  fs::remove(source / "fifo");
  write(source / ".git" / "config", "x");
  EXPECT_EQ(store.install(request.dump()).at("reason"),
            "material source holds a name the store does not accept");
  fs::remove_all(source / ".git");
  fs::remove(source / "SKILL.md");
  EXPECT_EQ(store.install(request.dump()).at("reason"),
            "material source lacks a file its manifest lists");
  Json missing = request;
  missing["source"]["directory"] = (base_ / "nowhere").string();
  EXPECT_EQ(store.install(missing.dump()).at("reason"), "material source could not be opened");
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(SkillStoreTest, TamperedOrPartialTreesAreIndeterminateAndRepaired) {
  SkillStore store(config());
  const auto files = sample_tree();
  const fs::path source = source_tree("src", files);
  const Json request = tree_request("skill:pdf", source, files);
  const std::string tree = request.at("content_sha256");
  ASSERT_EQ(store.install(request.dump()).at("outcome"), "applied");
  const fs::path object = root_ / "objects" / tree;

  fs::permissions(object / "scripts", fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(object / "scripts/run.sh", fs::perms::owner_write, fs::perm_options::add);
  write(object / "scripts/run.sh", "#!/bin/sh\nrm -rf ~\n");
  Json state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "indeterminate");
  EXPECT_EQ(state.at("reason"), "installed material does not verify");
  EXPECT_FALSE(state.at("installed"));
  EXPECT_EQ(store.activate(Json{{"capability_id", "skill:pdf"}, {"content_sha256", tree}}.dump())
                .at("reason"),
            "installed material does not verify");

  const Json repaired = store.install(request.dump());
  EXPECT_EQ(repaired.at("outcome"), "applied");
  EXPECT_EQ(repaired.at("rewritten"), true);
  EXPECT_EQ(read(object / "scripts/run.sh"), files.at("scripts/run.sh"));
  EXPECT_EQ(reconcile_of(store, "skill:pdf", tree).at("install_state"), "applied");
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));

  // A partial tree (a resource gone) is not "applied" either.
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  fs::remove(object / "reference.md");
  state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "indeterminate");
  EXPECT_FALSE(state.at("installed"));
}

TEST_F(SkillStoreTest, ActivationExposesTheTreeWhereTheHostLooks) {
  SkillStore store(config());
  const auto files = sample_tree();
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  const std::string tree = request.at("content_sha256");
  const Json entry = {{"capability_id", "skill:pdf"}, {"content_sha256", tree}};

  Json state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_EQ(state.at("install_state"), "absent");
  EXPECT_EQ(state.at("activation_state"), "absent");
  EXPECT_EQ(store.activate(entry.dump()).at("reason"), "material is not installed");

  ASSERT_EQ(store.install(request.dump()).at("outcome"), "applied");
  const std::string material =
      material_identity_digest("skill:pdf", tree, root_of(files).size());
  const Json activated = store.activate(entry.dump());
  EXPECT_EQ(activated.at("outcome"), "applied");
  EXPECT_EQ(activated.at("active_sha256"), tree);
  EXPECT_EQ(activated.at("observed_material_identity_digest"), material);
  const fs::path slot = skills_ / "pdf";
  EXPECT_TRUE(fs::is_symlink(slot));
  EXPECT_EQ(read(slot / "SKILL.md"), kBody);
  EXPECT_EQ(read(slot / "scripts/run.sh"), files.at("scripts/run.sh"));
  EXPECT_EQ(listing(skills_).count("pdf"), 1u);
  EXPECT_EQ(fs::directory_iterator(skills_)->path().filename(), "pdf") << "no staging left";

  state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_TRUE(state.at("active"));
  EXPECT_EQ(state.at("activation_state"), "applied");
  EXPECT_EQ(state.at("active_material_identity_digest"), material);
  EXPECT_EQ(state.at("verification_digest"), activated.at("verification_digest"));
  EXPECT_EQ(store.activate(entry.dump()), activated) << "re-activation is idempotent";

  // Another material of the same skill replaces the link; this one is then verifiably inactive.
  ASSERT_EQ(store.install(file_request().dump()).at("outcome"), "applied");
  store.activate(Json{{"capability_id", "skill:pdf"}, {"content_sha256", kBodySha}}.dump());
  state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_FALSE(state.at("active"));
  EXPECT_EQ(state.at("activation_state"), "absent");
  EXPECT_EQ(state.at("active_sha256"), kBodySha);
  EXPECT_TRUE(state.at("verification_digest").is_null());

  EXPECT_EQ(store.deactivate(entry.dump()).at("was_active"), true);
  EXPECT_FALSE(fs::exists(fs::symlink_status(slot)));
  EXPECT_EQ(store.deactivate(entry.dump()).at("was_active"), false);
  state = reconcile_of(store, "skill:pdf", tree);
  EXPECT_TRUE(state.at("installed"));
  EXPECT_EQ(state.at("activation_state"), "absent");
}

TEST_F(SkillStoreTest, NeverTouchesASkillCtxDidNotCreate) {
  SkillStore store(config());
  ASSERT_EQ(store.install(file_request().dump()).at("outcome"), "applied");
  write(skills_ / "pdf" / "SKILL.md", "the user's own skill");
  const Json entry = {{"capability_id", "skill:pdf"}, {"content_sha256", kBodySha}};
  EXPECT_EQ(store.activate(entry.dump()).at("reason"),
            "activation slot holds something ctx did not create");
  EXPECT_EQ(store.deactivate(entry.dump()).at("outcome"), "failed");
  const Json state = reconcile_of(store, "skill:pdf", kBodySha);
  EXPECT_EQ(state.at("activation_state"), "indeterminate");
  EXPECT_FALSE(state.at("active"));
  EXPECT_EQ(read(skills_ / "pdf" / "SKILL.md"), "the user's own skill");
  fs::remove_all(skills_ / "pdf");
  fs::create_symlink("/etc", skills_ / "pdf");
  EXPECT_EQ(store.activate(entry.dump()).at("outcome"), "failed");
  EXPECT_EQ(fs::read_symlink(skills_ / "pdf"), "/etc");
}

TEST_F(SkillStoreTest, DefaultActivationRootLivesUnderTheRoot) {
  SkillStore store(Json{{"root", root_.string()}}.dump());
  ASSERT_EQ(store.install(file_request().dump()).at("outcome"), "applied");
  store.activate(Json{{"capability_id", "skill:pdf"}, {"content_sha256", kBodySha}}.dump());
  EXPECT_EQ(read(root_ / "active" / "pdf" / "SKILL.md"), kBody);
}

TEST_F(SkillStoreTest, FailsClosedWhenTheRootIsReplaced) {
  SkillStore store(config());
  fs::rename(root_, base_ / "moved");
  fs::create_directory(root_);
  ::chmod(root_.c_str(), 0700);
  CTX_EXPECT_THROW(store.install(file_request().dump()), Error, "root changed");
  CTX_EXPECT_THROW(reconcile_of(store, "skill:pdf", kBodySha), Error, "root changed");
  EXPECT_TRUE(fs::is_empty(root_));
}

TEST_F(SkillStoreTest, CancelledInstallLeavesNothing) {
  int polls = 0;
  SkillStore store(config(), [&] { return ++polls >= 2; });
  const auto files = sample_tree(200000);
  const Json request = tree_request("skill:pdf", source_tree("src", files), files);
  EXPECT_EQ(code_of([&] { store.install(request.dump()); }), ErrorCode::kCancelled);
  EXPECT_GE(polls, 2);
  EXPECT_TRUE(fs::is_empty(root_ / "objects"));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(SkillStoreTest, StartSweepsStaleActivationLinks) {
  { SkillStore store(config()); }
  fs::create_symlink(root_ / "objects" / kBodySha, skills_ / ".ctx-pdf.999999999.0.link");
  fs::create_symlink(root_ / "objects" / kBodySha,
                     skills_ / (".ctx-pdf." + std::to_string(::getpid()) + ".0.link"));
  SkillStore store(config());
  EXPECT_EQ(listing(skills_),
            (std::set<std::string>{".ctx-pdf." + std::to_string(::getpid()) + ".0.link"}))
      << "only the dead writer's link is swept";
}

TEST(SkillName, AcceptsOnlySafeNames) {
  EXPECT_EQ(skill_name("skill:pdf"), "pdf");
  EXPECT_EQ(skill_name("skill:a.b_c@d-e"), "a.b_c@d-e");
  EXPECT_EQ(skill_name("skill:" + std::string(128, 'a')), std::string(128, 'a'));
  for (const std::string& bad : std::vector<std::string>{
           "pdf", "agent:pdf", "skill:", "skill:..", "skill:.hidden", "skill:a/b", "skill:../x",
           "skill:Pdf", "skill:-x", "skill:a b", "skill:" + std::string(129, 'a')}) {
    CTX_EXPECT_THROW(skill_name(bad), InvalidArgument, "capability_id");
  }
}

TEST_F(SkillStoreTest, RejectsMalformedRequestsWithoutEchoingContent) {
  SkillStore store(config());
  CTX_EXPECT_THROW(store.install("{}"), InvalidArgument, "capability_id");
  CTX_EXPECT_THROW(store.install(R"({"capability_id":"skill:../etc","content":"x",)"
                                 R"("content_sha256":"00"})"),
                   InvalidArgument, "invalid skill name");
  CTX_EXPECT_THROW(
      store.install(R"({"capability_id":"skill:a","content":"x","content_sha256":"00"})"),
      InvalidArgument, "content_sha256");
  const std::string zero(64, '0');
  CTX_EXPECT_THROW(
      store.install(Json{{"capability_id", "skill:a"}, {"content_sha256", zero}}.dump()),
      InvalidArgument, "exactly one of content");
  CTX_EXPECT_THROW(store.install(Json{{"capability_id", "skill:a"},
                                      {"content", "secret-body"},
                                      {"content_base64", "Zg=="},
                                      {"content_sha256", zero}}
                                     .dump()),
                   InvalidArgument, "exactly one of content");
  CTX_EXPECT_THROW(store.install(Json{{"capability_id", "skill:a"},
                                      {"source", {{"file", "/x"}, {"directory", "/y"}}},
                                      {"content_sha256", zero}}
                                     .dump()),
                   InvalidArgument, "exactly one of file, directory");
  CTX_EXPECT_THROW(store.install(Json{{"capability_id", "skill:a"},
                                      {"content", "x"},
                                      {"content_bytes", -1},
                                      {"content_sha256", zero}}
                                     .dump()),
                   InvalidArgument, "content_bytes");
  CTX_EXPECT_THROW(store.reconcile("{}"), InvalidArgument, "capabilities");
  CTX_EXPECT_THROW(store.reconcile(R"({"capabilities":[1]})"), InvalidArgument, "objects");
  try {
    store.install(Json{
        {"capability_id", "skill:a"}, {"content_base64", "secret-body!"}, {"content_sha256", zero}}
                      .dump());
    FAIL() << "expected a base64 error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("secret-body")));
    EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr(root_.string())));
  }
}

}  // namespace
}  // namespace ctx::skill_installer
