// `ctx plugin pin/verify` against misbehaving plugins (issue 9 items 4-5): pin executes nothing,
// re-pinning other bytes needs --replace, verify executes nothing, and verify --load runs each
// entry in a supervised child whose exits, crashes, hangs and writes fail that entry with a
// reason naming the plugin, never reaching ctx's stdout. Real binary, real processes.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctx/loader/lock_file.hpp>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::copy_plugin;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string quote(const std::string& arg) {
  std::string q = "'";
  for (const char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class CliPluginTrustTest : public ::testing::Test {
 protected:
  Result ctx(const std::vector<std::string>& args) {
    std::string command = "CTX_TEST_MARKER=" + quote(marker()) + " " + quote(CTX_BINARY);
    for (const std::string& arg : args) command += " " + quote(arg);
    command += " >" + quote((dir_ / "out").string()) + " 2>" + quote((dir_ / "err").string());
    const int status = std::system(command.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_bytes(dir_ / "out");
    r.err = read_bytes(dir_ / "err");
    return r;
  }
  std::string lock() const { return (dir_ / "plugins.lock.json").string(); }
  std::string state() const { return (dir_ / "state").string(); }
  std::string marker() const { return (dir_ / "marker").string(); }
  std::string marks() const { return fs::exists(marker()) ? read_bytes(marker()) : ""; }
  std::string plugin(const char* fixture, const std::string& name) {
    return copy_plugin(fixture, dir_ / name).string();
  }
  Result pin(const std::vector<std::string>& files, bool replace = false) {
    std::vector<std::string> args = {"plugin", "pin", "--lock", lock(), "--state", state()};
    if (replace) args.push_back("--replace");
    args.insert(args.end(), files.begin(), files.end());
    return ctx(args);
  }

  TempDir dir_;
};

TEST_F(CliPluginTrustTest, PinAndVerifyExecuteNothingVerifyLoadDoes) {
  const Result p = pin({plugin(CTX_ATTACK_PINNED, "p.so"), plugin(CTX_ATTACK_ENTRY_EXIT, "e.so")});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("pinned verifier:attack-pinned 1.0.0"));
  EXPECT_THAT(p.out, HasSubstr("pinned verifier:attack-exit 1.0.0"));
  const Result v = ctx({"plugin", "verify", "--lock", lock(), "--state", state()});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_THAT(v.out, HasSubstr("ok verifier:attack-pinned 1.0.0 identity "));
  EXPECT_EQ(marks(), "") << "pin or verify ran a constructor";
  const Result l = ctx({"plugin", "verify", "--lock", lock(), "--state", state(), "--load"});
  EXPECT_EQ(l.code, 1);
  EXPECT_THAT(l.out, HasSubstr("ok verifier:attack-pinned 1.0.0 identity "));
  EXPECT_THAT(l.out, HasSubstr(" loaded\n"));
  EXPECT_THAT(marks(), HasSubstr("pinned\n"));
}

TEST_F(CliPluginTrustTest, RePinningOtherBytesNeedsReplaceAndPrintsOldToNew) {
  const std::string file = plugin(CTX_ATTACK_PINNED, "p.so");
  ASSERT_EQ(pin({file}).code, 0);
  const std::string old_sha = core::sha256_hex(read_bytes(file));
  const std::string before = read_bytes(lock());
  ASSERT_EQ(pin({file}).code, 0);  // the same bytes again: nothing to replace
  EXPECT_EQ(read_bytes(lock()), before);

  copy_plugin(CTX_ATTACK_FOREIGN, file);  // same note (attack-pinned), other bytes
  const std::string new_sha = core::sha256_hex(read_bytes(file));
  const Result refused = pin({file});
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err,
              HasSubstr("plugin verifier:attack-pinned is already pinned to sha256:" + old_sha));
  EXPECT_THAT(refused.err, HasSubstr("pass --replace to re-pin it"));
  EXPECT_EQ(read_bytes(lock()), before);

  const Result replaced = pin({file}, /*replace=*/true);
  EXPECT_EQ(replaced.code, 0) << replaced.err;
  EXPECT_THAT(replaced.out, HasSubstr("replaced verifier:attack-pinned sha256:" + old_sha +
                                      " \u2192 sha256:" + new_sha));
  EXPECT_EQ(plugins::LockFile::load(lock()).entries().front().sha256, new_sha);
  EXPECT_EQ(marks(), "");
}

TEST_F(CliPluginTrustTest, VerifyLoadFailsMisbehavingEntriesWithAReasonNamingThePlugin) {
  ASSERT_EQ(
      pin({plugin(CTX_ATTACK_ENTRY_EXIT, "exit.so"), plugin(CTX_ATTACK_ENTRY_LOOP, "loop.so"),
           plugin(CTX_ATTACK_ENTRY_PRINT, "print.so"), plugin(CTX_ATTACK_ENTRY_SEGV, "segv.so"),
           plugin(CTX_ATTACK_ENTRY_STDERR, "stderr.so"), plugin(CTX_ATTACK_PINNED, "pinned.so")})
          .code,
      0);
  const auto start = std::chrono::steady_clock::now();
  const Result r =
      ctx({"plugin", "verify", "--lock", lock(), "--state", state(), "--load", "--timeout", "2"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:attack-exit: plugin "
                               "verifier:attack-exit exited with status 0 before answering"));
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:attack-loop: plugin "
                               "verifier:attack-loop gave no answer within 2 s"));
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:attack-segv: plugin "
                               "verifier:attack-segv was killed by SIGSEGV"));
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:attack-print: plugin "
                               "verifier:attack-print wrote to stdout/stderr"));
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:attack-stderr: plugin "
                               "verifier:attack-stderr wrote to stdout/stderr"));
  // The plugin's own "ok ..." line never reaches ctx's stdout; only the good entry is ok.
  EXPECT_THAT(r.out, Not(HasSubstr("identity 0000")));
  EXPECT_EQ(r.out.find("ok verifier:attack-pinned"), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  EXPECT_LT(took, std::chrono::seconds(30));  // the hang was cut at its deadline
  // Without --load the same lock verifies: nothing was executed.
  const Result quiet = ctx({"plugin", "verify", "--lock", lock(), "--state", state()});
  EXPECT_EQ(quiet.code, 0) << quiet.err;
}

TEST_F(CliPluginTrustTest, TimeoutNeedsLoadAndAWholeNumber) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plugin", "verify", "--lock", lock(), "--timeout", "3"},
        std::vector<std::string>{"plugin", "verify", "--lock", lock(), "--load", "--timeout", "0"},
        std::vector<std::string>{"plugin", "verify", "--lock", lock(), "--load", "--timeout",
                                 "1.5"}}) {
    const Result r = ctx(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--timeout"));
  }
}

}  // namespace
}  // namespace ctx::cli
