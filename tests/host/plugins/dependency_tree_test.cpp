// Dependencies of dependencies, and the host program's own search path: real crafted libraries
// placed in the system library directory (root only), a library with DT_RUNPATH, and a program
// linked with DT_RPATH (ctx_loader_rpath_probe). Markers prove which constructors ran.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <filesystem>
#include <string>

#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

namespace fs = std::filesystem;
using ctx::testing::copy_plugin;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;

constexpr uid_t kNobody = 65534;
#if defined(__x86_64__)
constexpr const char* kLibDir = "/usr/lib/x86_64-linux-gnu";
#else
constexpr const char* kLibDir = "/usr/lib/aarch64-linux-gnu";
#endif
// Baked into the probe's DT_RPATH and the runpath fixture's DT_RUNPATH (CMakeLists.txt).
constexpr const char* kProbeRpath = "/tmp/ctx-probe-rpath";
constexpr const char* kAttackLibs = "/tmp/ctx-attack-libs";

// Removes a file or directory tree on destruction.
struct Removed {
  fs::path path;
  ~Removed() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

class DependencyTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "not root: needs root to place libraries in " << kLibDir;
    marker_ = (marker_dir_ / "marker").string();
    ::setenv("CTX_TEST_MARKER", marker_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("CTX_TEST_MARKER"); }

  std::string marks() const { return fs::exists(marker_) ? read_bytes(marker_) : ""; }
  // Places `fixture` in the system library directory as `soname` (root, 0644).
  Removed place(const char* fixture, const std::string& soname) {
    const fs::path lib = fs::path(kLibDir) / soname;
    EXPECT_FALSE(fs::exists(lib)) << lib << " left over from another run";
    copy_plugin(fixture, lib);
    ::chmod(lib.c_str(), 0644);
    return Removed{lib};
  }

  TempDir files_, state_, marker_dir_;
  std::string marker_;
  PluginLoader loader_{state_.path()};
};

TEST_F(DependencyTreeTest, NeededOfANeededLibraryIsResolvedAndTrustCheckedLikeTheFirst) {
  const Removed a = place(CTX_ATTACK_TRANS_A, "libctx_attack_trans_a.so");
  const fs::path plugin = copy_plugin(CTX_ATTACK_TRANS_NEEDED, files_ / "trans.so");
  const std::string chain = "needs \"libctx_attack_trans_a.so\" → \"libctx_attack_trans_b.so\": ";

  // The second level does not resolve: the plugin was never mapped.
  CTX_EXPECT_THROW(loader_.inspect_for_pin(plugin), UnsafeDependency,
                   chain + "it does not resolve");
  EXPECT_EQ(marks(), "");

  const Removed b = place(CTX_ATTACK_TRANS_B, "libctx_attack_trans_b.so");
  ASSERT_EQ(::chown(b.path.c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(
      loader_.inspect_for_pin(plugin), UnsafeDependency,
      " is not trusted: library " + b.path.string() + " has the wrong owner (uid 65534");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(plugin), UnsafeDependency, chain);
  EXPECT_EQ(marks(), "");

  ASSERT_EQ(::chown(b.path.c_str(), 0, 0), 0);
  const LockEntry pinned = loader_.inspect_for_pin(plugin);
  // The lock records the plugin's own sonames; the levels below are re-checked each time.
  ASSERT_FALSE(pinned.needed.empty());
  EXPECT_EQ(pinned.needed.front(), "libctx_attack_trans_a.so");
  EXPECT_EQ(std::count(pinned.needed.begin(), pinned.needed.end(), "libctx_attack_trans_b.so"), 0);
  // verify and load re-check the whole tree: a writable second level is refused again.
  ASSERT_EQ(::chmod(b.path.c_str(), 0666), 0);
  CTX_EXPECT_THROW(loader_.check(pinned), UnsafeDependency, chain);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafeDependency, "group- or world-writable");
  EXPECT_EQ(marks(), "");

  ASSERT_EQ(::chmod(b.path.c_str(), 0644), 0);
  loader_.load(pinned);
  EXPECT_EQ(marks(), "transitive\ndependency\ntrans-needed\n");
}

// ld.so takes a DT_NEEDED this process has loaded from the loaded object, without a search: the
// loader checks no file for it then (its copy on disk may change; nothing maps it again), and
// checks it again once the process has unloaded it.
TEST_F(DependencyTreeTest, ALibraryThisProcessHasLoadedIsReusedAndNotLookedUp) {
  const Removed a = place(CTX_ATTACK_TRANS_A, "libctx_attack_trans_a.so");
  const Removed b = place(CTX_ATTACK_TRANS_B, "libctx_attack_trans_b.so");
  const fs::path plugin = copy_plugin(CTX_ATTACK_TRANS_NEEDED, files_ / "trans.so");
  const LockEntry pinned = loader_.inspect_for_pin(plugin);
  void* resident = ::dlopen("libctx_attack_trans_a.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(resident, nullptr) << ::dlerror();
  EXPECT_EQ(marks(), "transitive\ndependency\n");

  // Both files on disk are now ones others could have written: no file of them is loaded again.
  ASSERT_EQ(::chmod(a.path.c_str(), 0666), 0);
  ASSERT_EQ(::chown(b.path.c_str(), kNobody, kNobody), 0);
  {
    const auto loaded = loader_.load(pinned);
    EXPECT_EQ(marks(), "transitive\ndependency\ntrans-needed\n");  // no constructor ran twice
  }
  ASSERT_EQ(::dlclose(resident), 0);
  ASSERT_EQ(::dlopen("libctx_attack_trans_a.so", RTLD_LAZY | RTLD_NOLOAD), nullptr);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafeDependency,
                   a.path.string() + " is group- or world-writable");
  ASSERT_EQ(::chmod(a.path.c_str(), 0644), 0);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafeDependency,
                   b.path.string() + " has the wrong owner (uid 65534");
  EXPECT_EQ(marks(), "transitive\ndependency\ntrans-needed\n");
}

TEST_F(DependencyTreeTest, LibraryWithARunpathOthersCanPlantInIsRefused) {
  std::error_code ignored;
  fs::remove_all(kAttackLibs, ignored);
  const Removed r = place(CTX_ATTACK_TRANS_R, "libctx_attack_trans_r.so");
  const Removed b = place(CTX_ATTACK_TRANS_B, "libctx_attack_trans_b.so");
  const fs::path plugin = copy_plugin(CTX_ATTACK_TRANS_RUNPATH, files_ / "trans-runpath.so");
  // ld.so would look for libctx_attack_trans_b.so in /tmp/ctx-attack-libs first, which anyone
  // may create in /tmp.
  CTX_EXPECT_THROW(loader_.inspect_for_pin(plugin), UnsafeDependency,
                   "needs \"libctx_attack_trans_r.so\": " + r.path.string() + " searches " +
                       kAttackLibs +
                       " for its own dependencies, and it does not exist and /tmp "
                       "lets others create it");
  const Removed libs{kAttackLibs};
  fs::create_directory(kAttackLibs);
  ::chmod(kAttackLibs, 0777);
  CTX_EXPECT_THROW(loader_.inspect_for_pin(plugin), UnsafeDependency,
                   "writable by group or other and not sticky");
  EXPECT_EQ(marks(), "");
  // Only root can add files to it now: it is searched first, and what it holds is checked.
  ::chmod(kAttackLibs, 0755);
  copy_plugin(CTX_ATTACK_TRANS_B, fs::path(kAttackLibs) / "libctx_attack_trans_b.so");
  ASSERT_EQ(::chown((fs::path(kAttackLibs) / "libctx_attack_trans_b.so").c_str(), kNobody, 0), 0);
  CTX_EXPECT_THROW(loader_.inspect_for_pin(plugin), UnsafeDependency,
                   "→ \"libctx_attack_trans_b.so\": "
                   "/tmp/ctx-attack-libs/libctx_attack_trans_b.so is not trusted");
  EXPECT_EQ(marks(), "");
}

// Runs the probe (a program with DT_RPATH kProbeRpath) on `plugin`; returns its output.
std::string probe(const fs::path& plugin, const fs::path& state, int* status) {
  const std::string command = std::string(CTX_LOADER_RPATH_PROBE) + " '" + plugin.string() + "' '" +
                              state.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "<popen failed>";
  std::string out;
  char buffer[512];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  *status = ::pclose(pipe);
  return out;
}

TEST_F(DependencyTreeTest, HostProgramRpathIsSearchedAndMustBeTrusted) {
  std::error_code ignored;
  fs::remove_all(kProbeRpath, ignored);
  const Removed dir{kProbeRpath};
  const fs::path plugin = copy_plugin(CTX_ATTACK_BARE_NEEDED, files_ / "bare.so");
  int status = 0;

  std::string out = probe(plugin, state_.path(), &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("was built with DT_RPATH \"/tmp/ctx-probe-rpath\", which the dynamic loader "
                     "searches for the dependencies of every plugin, and /tmp/ctx-probe-rpath: it "
                     "does not exist and /tmp lets others create it"),
            std::string::npos)
      << out;
  fs::create_directory(kProbeRpath);
  ::chmod(kProbeRpath, 0777);
  out = probe(plugin, state_.path(), &status);
  EXPECT_NE(out.find("writable by group or other and not sticky"), std::string::npos) << out;
  EXPECT_EQ(marks(), "");

  // Trusted, it is searched before the system directories (which do not hold the library).
  ::chmod(kProbeRpath, 0755);
  const fs::path dep = fs::path(kProbeRpath) / "libctx_attack_dep2.so";
  copy_plugin(CTX_ATTACK_DEP2, dep);
  ::chmod(dep.c_str(), 0644);
  ASSERT_EQ(::chown(dep.c_str(), kNobody, kNobody), 0);
  out = probe(plugin, state_.path(), &status);
  EXPECT_NE(out.find("/tmp/ctx-probe-rpath/libctx_attack_dep2.so is not trusted"),
            std::string::npos)
      << out;
  EXPECT_EQ(marks(), "");
  ASSERT_EQ(::chown(dep.c_str(), 0, 0), 0);
  out = probe(plugin, state_.path(), &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "ok attack-bare-needed\n");
  EXPECT_EQ(marks(), "dependency\nbare-needed\n");
}

}  // namespace
}  // namespace ctx::plugins
