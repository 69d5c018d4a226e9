#include "host/cli/cli.hpp"

#include <ctx/abi/plugin_abi.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <ctx/loader/lock_file.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::copy_plugin;
using ctx::testing::flip_byte;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

// Quotes `arg` for /bin/sh.
std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (const char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

class CliTest : public ::testing::Test {
 protected:
  // Runs the real `ctx` binary with `args` (and `env_prefix`, e.g. "HOME=/x "), capturing output.
  Result run_binary(const std::vector<std::string>& args, const std::string& env_prefix = "") {
    std::string command = env_prefix + shell_quote(CTX_BINARY);
    for (const std::string& arg : args) command += " " + shell_quote(arg);
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    command += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
    const int status = std::system(command.c_str());
    Result result;
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_bytes(out);
    result.err = read_bytes(err);
    return result;
  }
  // Runs the CLI library in process.
  Result run_in_process(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    Result result;
    result.code = run(args, out, err, env_);
    result.out = out.str();
    result.err = err.str();
    return result;
  }
  std::string lock() const { return (dir_ / "plugins.lock.json").string(); }
  std::string state() const { return (dir_ / "state").string(); }

  TempDir dir_;
  Environment env_{.home = dir_.path().string()};
};

// Number of lines in `text`.
std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(CliTest, VersionAndHelp) {
  for (const Result& r : {run_binary({"--version"}), run_in_process({"--version"})}) {
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, std::string("ctx ") + CTX_EXPECTED_VERSION + "\n");
    EXPECT_EQ(r.err, "");
  }
  const Result help = run_binary({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out,
              HasSubstr("ctx plugin pin --lock FILE [--state DIR] [--replace] PLUGIN.so..."));
  EXPECT_THAT(
      help.out,
      HasSubstr("ctx plugin verify --lock FILE [--state DIR] [--load [--timeout SECONDS]]"));
  EXPECT_THAT(help.out, HasSubstr("ctx plugin list --lock FILE [--json]"));
  EXPECT_EQ(help.out, usage());
}

TEST_F(CliTest, UsageErrorsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"plugin"},
      {"plugin", "remove", "--lock", lock()},
      {"plugin", "pin", CTX_FIXTURE_VALID_VERIFIER},
      {"plugin", "pin", "--lock", lock()},
      {"plugin", "pin", "--lock"},
      {"plugin", "verify", "--lock", lock(), "extra.so"},
      {"plugin", "list", "--lock", lock(), "--state", state()},
      {"plugin", "verify", "--lock", lock(), "--json"},
      {"plugin", "list", "--lock", lock(), "--bogus"},
      {"--version", "extra"},
  };
  for (const auto& args : cases) {
    const Result r = run_binary(args);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(lines(r.err), 1u);
    EXPECT_THAT(r.err, HasSubstr("see ctx --help"));
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(lock()));
}

TEST_F(CliTest, PinListVerifyRoundTrip) {
  const Result pin = run_binary({"plugin", "pin", "--lock", lock(), "--state", state(),
                                 CTX_FIXTURE_VALID_VERIFIER, CTX_FIXTURE_VALID_INSTALLER});
  ASSERT_EQ(pin.code, 0) << pin.err;
  EXPECT_THAT(pin.out, HasSubstr("pinned verifier:fixture-verifier 1.0.0 sha256:" +
                                 core::sha256_hex(read_bytes(CTX_FIXTURE_VALID_VERIFIER))));
  EXPECT_THAT(pin.out, HasSubstr("pinned installer:fixture-installer 2.1.0"));

  const plugins::LockFile lock_file = plugins::LockFile::load(lock());
  ASSERT_EQ(lock_file.entries().size(), 2u);
  EXPECT_EQ(read_bytes(lock()), core::canonical_json(lock_file.to_json()) + "\n");
  EXPECT_FALSE(fs::exists(state()));  // pinning writes no cache copy

  const Result list = run_binary({"plugin", "list", "--lock", lock()});
  EXPECT_EQ(list.code, 0);
  EXPECT_EQ(lines(list.out), 2u);
  EXPECT_THAT(list.out, HasSubstr("verifier fixture-verifier 1.0.0 abi 1.0"));
  const Result json = run_binary({"plugin", "list", "--lock", lock(), "--json"});
  EXPECT_EQ(json.code, 0);
  EXPECT_EQ(json.out, read_bytes(lock()));

  const Result verify = run_binary({"plugin", "verify", "--lock", lock(), "--state", state()});
  EXPECT_EQ(verify.code, 0) << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("ok verifier:fixture-verifier 1.0.0 identity " +
                                    lock_file.entries()[1].identity().digest()));
  EXPECT_EQ(verify.err, "");
}

TEST_F(CliTest, RePinUpdatesTheEntry) {
  ASSERT_EQ(run_in_process({"plugin", "pin", "--lock", lock(), "--state", state(),
                            CTX_FIXTURE_VALID_VERIFIER})
                .code,
            0);
  const fs::path moved = copy_plugin(CTX_FIXTURE_VALID_VERIFIER, dir_ / "moved.so");
  const Result again =
      run_in_process({"plugin", "pin", "--lock", lock(), "--state", state(), moved.string()});
  ASSERT_EQ(again.code, 0) << again.err;
  const plugins::LockFile lock_file = plugins::LockFile::load(lock());
  ASSERT_EQ(lock_file.entries().size(), 1u);
  EXPECT_EQ(lock_file.entries()[0].path, moved.string());
}

TEST_F(CliTest, VerifyReportsEachFailingEntryAndExitsOne) {
  const fs::path verifier = copy_plugin(CTX_FIXTURE_VALID_VERIFIER, dir_ / "verifier.so");
  const fs::path host = copy_plugin(CTX_FIXTURE_VALID_HOST_ADAPTER, dir_ / "host.so");
  ASSERT_EQ(run_binary({"plugin", "pin", "--lock", lock(), "--state", state(),
                        verifier.string(), host.string(), CTX_FIXTURE_VALID_INSTALLER})
                .code,
            0);
  const std::string lock_before = read_bytes(lock());
  flip_byte(verifier, 4096);
  fs::remove(host);

  const Result r = run_binary({"plugin", "verify", "--lock", lock(), "--state", state()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 2u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("verify failed for verifier:fixture-verifier: digest mismatch"));
  EXPECT_THAT(r.err, HasSubstr("verify failed for host-adapter:fixture-host: plugin file"));
  EXPECT_THAT(r.err, HasSubstr("not found"));
  EXPECT_THAT(r.out, HasSubstr("ok installer:fixture-installer"));
  EXPECT_EQ(read_bytes(lock()), lock_before);
}

TEST_F(CliTest, PinIsAllOrNothing) {
  const Result r = run_binary({"plugin", "pin", "--lock", lock(), "--state", state(),
                               CTX_FIXTURE_VALID_VERIFIER, CTX_FIXTURE_WRONG_MAJOR,
                               CTX_FIXTURE_MISSING_ENTRY});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("major"));
  EXPECT_THAT(r.err, HasSubstr("entry symbol"));
  EXPECT_THAT(r.err, HasSubstr("left unchanged"));
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(lock()));
}

TEST_F(CliTest, BrokenFixturesCannotBePinned) {
  // The fixture requires the minor after the newest this host implements (CTX_ABI_MINOR).
  const std::string too_new = "requires plugin ABI 1." + std::to_string(CTX_ABI_MINOR + 1) +
                              "; this host provides 1." + std::to_string(CTX_ABI_MINOR);
  const std::vector<std::pair<const char*, std::string>> cases = {
      {CTX_FIXTURE_WRONG_MAJOR, "major"},
      {CTX_FIXTURE_MINOR_TOO_NEW, too_new},
      {CTX_FIXTURE_MISSING_ENTRY, "entry symbol"},
  };
  for (const auto& [file, keyword] : cases) {
    const Result r = run_in_process({"plugin", "pin", "--lock", lock(), "--state", state(), file});
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.err, HasSubstr(keyword));
  }
  EXPECT_FALSE(fs::exists(lock()));
  // A null op is only visible by running the entry, which pin and verify never do: it pins, and
  // the supervised trial load of verify --load refuses it.
  ASSERT_EQ(run_in_process({"plugin", "pin", "--lock", lock(), "--state", state(),
                            CTX_FIXTURE_NULL_OP})
                .code,
            0);
  EXPECT_EQ(run_in_process({"plugin", "verify", "--lock", lock(), "--state", state()}).code, 0);
  const Result load =
      run_in_process({"plugin", "verify", "--lock", lock(), "--state", state(), "--load"});
  EXPECT_EQ(load.code, 1);
  EXPECT_THAT(load.err, HasSubstr("required op activate is null"));
}

// Each usage error's one line names what is wrong: the word, option or value given, or what is
// missing (and, for a command group, the commands it has).
TEST_F(CliTest, UsageErrorsNameWhatIsWrong) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{}, {"missing command"}},
      {{"frobnicate"}, {"frobnicate"}},
      {{"plugin"}, {"ctx plugin needs a command", "pin", "verify", "list"}},
      {{"plugin", "remove", "--lock", lock()}, {"unknown command \"remove\"", "pin"}},
      {{"plugin", "pin", CTX_FIXTURE_VALID_VERIFIER}, {"--lock"}},
      {{"plugin", "pin", "--lock", lock()}, {"PLUGIN.so"}},
      {{"plugin", "list", "--lock", lock(), "--bogus"}, {"--bogus"}},
      {{"init", "a", "--bogus", "b"}, {"not expected: a --bogus b"}},
      {{"one", "two"}, {"not expected: one two"}},
      {{"plugin", "list", "--lock", ""}, {"--lock", "needs a value"}},
      {{"plugin", "list", "--lock", lock(), "--lock", lock()}, {"--lock"}},
      {{"plugin", "verify", "--lock", lock(), "--load", "--timeout", "86401"}, {"--timeout"}},
      {{"plugin", "verify", "--lock", lock(), "--load", "--timeout", "soon"}, {"--timeout"}},
      {{"consent", "approve", std::string(64, 'a')}, {"--key"}},
      {{"desired", "set", "mqr_x", "skill:a", "--choice", "ABC"}, {"--choice", "SHA-256"}},
      {{"policy", "set", "harness", "ask-each-time"}, {"KIND", "harness"}},
      {{"hooks", "install", "codex", "--user", "--project", "."}, {"--project", "--user"}},
      {{"--version", "extra"}, {"extra"}},
      {{"--version", "init"}, {"init"}},
      {{"init", "--version"}, {"--version"}},
  };
  for (const auto& [args, words] : cases) {
    const Result r = run_in_process(args);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_EQ(lines(r.err), 1u);
    EXPECT_EQ(r.err.rfind("ctx: ", 0), 0u);
    EXPECT_THAT(r.err, HasSubstr(" (see ctx --help)\n"));
    for (const std::string& word : words) EXPECT_THAT(r.err, HasSubstr(word));
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(lock()));
}

// `ctx hook`'s own command-line errors are the non-blocking exit 1 ("ctx hook: ..."), never 2.
TEST_F(CliTest, HookCommandLineErrorsExitOneNamingTheProblem) {
  for (const auto& [args, word] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"hook"}, "ADAPTER"},
           {{"hook", "claude-code", "--bogus"}, "--bogus"},
           {{"hook", "claude-code", "extra"}, "extra"},
           {{"hook", "claude-code", "--state"}, "--state"},
           {{"hook", "claude-code", "--state", ""}, "--state"},
           {{"hook", "claude-code", "--version"}, "--version"}}) {
    const Result r = run_in_process(args);
    EXPECT_EQ(r.code, kExitFailure) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("ctx hook: ", 0), 0u) << r.err;
    EXPECT_THAT(r.err, HasSubstr(word));
    EXPECT_EQ(r.out, "");
  }
}

// --help anywhere on a command line, and `ctx help`, print the help and exit 0; options take
// their value as the next argument or after "=", and "--" ends the options.
TEST_F(CliTest, HelpAnywhereAndOptionValueForms) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"help"}, {"-h"}, {"--help"}}) {
    const Result r = run_in_process(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, usage());
  }
  const Result pin_help = run_in_process({"plugin", "pin", "--help"});
  EXPECT_EQ(pin_help.code, kExitOk) << pin_help.err;
  EXPECT_THAT(pin_help.out, HasSubstr("Usage: ctx plugin pin [OPTIONS] PLUGIN.so..."));
  EXPECT_THAT(pin_help.out, HasSubstr("--lock FILE REQUIRED        the plugin lock file"));
  EXPECT_THAT(pin_help.out,
              HasSubstr("\n  ctx plugin pin --lock FILE [--state DIR] [--replace] PLUGIN.so...\n"));
  // The help of the command reached, wherever -h stands and with its arguments before it.
  const Result hooks = run_in_process({"hooks", "install", "codex", "-h"});
  EXPECT_EQ(hooks.code, kExitOk) << hooks.err;
  EXPECT_THAT(hooks.out, HasSubstr("Usage: ctx hooks install [OPTIONS] HOST"));
  EXPECT_THAT(hooks.out, HasSubstr("HOST TEXT:{claude-code,codex} REQUIRED"));
  EXPECT_THAT(hooks.out, Not(HasSubstr("ctx hooks uninstall")));
  const Result consent = run_in_process({"consent", "--help"});
  EXPECT_EQ(consent.code, kExitOk) << consent.err;
  EXPECT_THAT(consent.out, HasSubstr("Subcommands:"));
  EXPECT_THAT(consent.out, HasSubstr("trust a verifier for a decision key"));
  const Result pin = run_in_process({"plugin", "pin", "--lock=" + lock(), "--state", state(), "--",
                                     CTX_FIXTURE_VALID_VERIFIER});
  ASSERT_EQ(pin.code, kExitOk) << pin.err;
  const Result list = run_in_process({"plugin", "list", "--json", "--lock=" + lock()});
  ASSERT_EQ(list.code, kExitOk) << list.err;
  EXPECT_THAT(list.out, HasSubstr("fixture-verifier"));
}

// Every command the parser defines has its lines in the overview, and they name each of its
// options and positionals; its --help shows them after the parser's own option list. A command,
// option or positional added to the parser but not to the overview fails here.
TEST_F(CliTest, EveryCommandsHelpIsTheParsersAndItsOverviewLinesNameEachOption) {
  // Positionals the overview spells as their choices.
  const std::map<std::string, std::string> shown_as = {
      {"HOST", "claude-code|codex"}, {"MODE", "ask-each-time|preapproved-auto"}};
  const std::vector<CommandSpec> specs = command_specs();
  ASSERT_GE(specs.size(), 20u);
  for (const CommandSpec& spec : specs) {
    SCOPED_TRACE(spec.path);
    std::vector<std::string> args;
    std::istringstream words(spec.path);
    for (std::string word; words >> word;) args.push_back(word);
    args.push_back("--help");
    const Result r = run_in_process(args);
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_THAT(r.out, HasSubstr("Usage: ctx " + spec.path));
    const std::size_t overview = r.out.find("\n  ctx ");
    ASSERT_NE(overview, std::string::npos) << r.out;
    std::string lines = r.out.substr(overview);
    while (lines.ends_with("\n\n")) lines.pop_back();
    EXPECT_THAT(usage(), HasSubstr(lines.substr(1)));
    for (const std::string& option : spec.options) {
      EXPECT_THAT(r.out.substr(0, overview), HasSubstr(option));
      EXPECT_THAT(lines, HasSubstr(option));
    }
    for (const std::string& positional : spec.positionals) {
      const auto alias = shown_as.find(positional);
      EXPECT_THAT(lines, HasSubstr(alias == shown_as.end() ? positional : alias->second));
    }
  }
}

TEST_F(CliTest, MalformedLockFileIsReportedAndLeftAlone) {
  const std::string truncated = R"({"entries":[{"abi":{"major":1,)";
  write_bytes(lock(), truncated);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"plugin", "verify", "--lock", lock(), "--state", state()},
           {"plugin", "list", "--lock", lock()},
           {"plugin", "pin", "--lock", lock(), "--state", state(), CTX_FIXTURE_VALID_VERIFIER}}) {
    const Result r = run_binary(args);
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(lines(r.err), 1u);
    EXPECT_THAT(r.err, HasSubstr("malformed lock file"));
    EXPECT_EQ(read_bytes(lock()), truncated);
  }
}

TEST_F(CliTest, MissingLockFileFailsForVerifyAndList) {
  for (const char* command : {"verify", "list"}) {
    const Result r = run_binary({"plugin", command, "--lock", lock()});
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.err, HasSubstr("not found"));
  }
}

TEST_F(CliTest, DefaultStateDirFollowsXdgThenHome) {
  EXPECT_EQ(default_state_dir({.xdg_state_home = "/xdg", .home = "/home/u"}), fs::path("/xdg/ctx"));
  EXPECT_EQ(default_state_dir({.home = "/home/u"}), fs::path("/home/u/.local/state/ctx"));
  EXPECT_EQ(default_state_dir({.xdg_state_home = "relative", .home = "/home/u"}),
            fs::path("/home/u/.local/state/ctx"));
  CTX_EXPECT_THROW(default_state_dir({}), InvalidArgument, "no state directory");

  // The default state directory is the one checked: an unsafe one fails the pin.
  const fs::path xdg = dir_ / "xdg";
  fs::create_directories(xdg / "ctx");
  ASSERT_EQ(::chmod((xdg / "ctx").c_str(), 0777), 0);
  const Result r = run_binary({"plugin", "pin", "--lock", lock(), CTX_FIXTURE_VALID_VERIFIER},
                              "XDG_STATE_HOME=" + shell_quote(xdg.string()) + " ");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("state directory: directory " + (xdg / "ctx").string() +
                               " is writable by group or other"));
  ASSERT_EQ(::chmod((xdg / "ctx").c_str(), 0700), 0);
  const Result ok = run_binary({"plugin", "pin", "--lock", lock(), CTX_FIXTURE_VALID_VERIFIER},
                               "XDG_STATE_HOME=" + shell_quote(xdg.string()) + " ");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
}  // namespace ctx::cli
