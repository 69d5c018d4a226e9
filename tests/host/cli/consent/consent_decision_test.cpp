// `ctx consent show|approve|deny|resolve|recover` as real processes on a real state dir (ctx
// init, the example catalog, a real Ed25519 key made by the openssl binary and trusted with
// ctx consent trust, a plan and its consent challenge through ctx query prepare / ctx desired
// set). A grant installs and activates the skill once (<state>/skills/active/pdf-export/SKILL.md
// holds the catalog's bytes), a second decision is refused, a denial installs nothing, and every
// bad assertion — a tampered byte, a replay, another audience, an unknown principal, a
// non-canonical payload — is a typed refusal (exit 1, one stderr line) that leaves the consent
// store and the journal byte-identical.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctx/sdk/skill_tree.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/app/installation.hpp"
#include "host/app/state_service.hpp"
#include "host/cli/consent_key.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/json_reader.hpp"
#include "host/engine/identities.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/consent_resolution_crash_points.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::read_database;
using ctx::testing::read_file;
using ::testing::HasSubstr;
using ::testing::Not;

std::size_t entries_in(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

// Forks: the child opens the state dir's StateService (with `clock`, else the system's), arms
// crash point `point` to kill the process (SIGKILL: no destructor, no unwinding) and runs
// `step`; the parent expects the child to die of that signal.
void kill_child_at(const fs::path& state, std::string_view point,
                   const std::function<void(runtime::StateService&)>& step,
                   std::shared_ptr<const core::Clock> clock = nullptr) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      auto service = runtime::StateService::open(state, std::move(clock));
      const runtime::CrashPointArmed crash(point, 0, runtime::CrashMode::kKill);
      step(*service);
    } catch (...) {
    }
    ::_exit(3);  // the crash point was not reached
  }
  int status = 0;
  ASSERT_GE(child, 0);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << point << ": the child was not killed there (status " << status << ")";
}

// A clock an hour past `at`.
class LateClock final : public core::Clock {
 public:
  explicit LateClock(const std::string& at) : at_(core::parse_rfc3339(at)) {}
  core::Timestamp now() const override { return core::Timestamp{at_.micros + 3'600'000'000}; }

 private:
  core::Timestamp at_;
};

class ConsentDecisionTest : public ctx::testing::TrustedStateTest {
 protected:
  // The trusted state dir, and the pdf-export install chosen for the example work: one current
  // challenge under the default ask-each-time policy.
  void SetUp() override {
    TrustedStateTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string s = state_.string();
    const CtxRun prepared = ctx_run({"query", "prepare", "--work", work_, "--json", "--state", s});
    ASSERT_EQ(prepared.code, 0) << prepared.err;
    const Json plan = Json::parse(prepared.out);
    const CtxRun desired = ctx_run({"desired", "set", plan.at("query_ref").get<std::string>(),
                                    capability_, "--json", "--state", s});
    ASSERT_EQ(desired.code, 0) << desired.err;
    const Json result = Json::parse(desired.out);
    // The default policy (ask-each-time) asks for the catalog skill's install.
    ASSERT_EQ(result.at("status"), "consent-required") << desired.out;
    challenge_ = result.at("challenge").at("challenge_digest");
    expires_at_ = result.at("challenge").at("expires_at");
  }

  // The pdf-export challenge a Claude Code session running in `cwd` is asked for (its
  // UserPromptSubmit hook; the fixture's own challenge excluded); empty when there is none.
  std::string hooked_challenge(const fs::path& cwd) const {
    fs::create_directories(cwd);
    const Json payload = {{"session_id", "session-in-" + cwd.filename().string()},
                          {"transcript_path", "/home/u/t.jsonl"},
                          {"cwd", cwd.string()},
                          {"permission_mode", "default"},
                          {"hook_event_name", "UserPromptSubmit"},
                          {"prompt", "please add a PDF export of the quarterly report"}};
    const CtxRun hooked = ctx_run(with_state({"hook", "claude-code"}), payload.dump());
    EXPECT_EQ(hooked.code, 0) << hooked.err;
    const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
    EXPECT_EQ(shown.code, 0) << shown.err;
    const Json listed = Json::parse(shown.out);
    for (const Json& c : listed.at("challenges")) {
      if (c.at("challenge_digest") != challenge_) return c.at("challenge_digest");
    }
    ADD_FAILURE() << "no challenge for a session in " << cwd << ": the hook replied " << hooked.out
                  << "; consent show: " << shown.out;
    return {};
  }

  // A signed assertion of `decision` for the challenge, as `ctx consent approve` builds it,
  // optionally for another audience or principal than the trusted registration's.
  std::string assertion(engine::Decision decision, const std::string& audience = "ctx-local",
                        const std::string& principal = "") const {
    const UserDecisionKey key = UserDecisionKey::load(key_);
    const ::ctx::app::LoadedPlugins none;
    const runtime::TrustedVerifierRegistry trusted(state_, none);
    runtime::VerifierRegistration registration =
        registration_for(trusted.registrations(), "ctx-local", key);
    registration.key.audience = audience;
    if (!principal.empty()) registration.key.principal_digest = principal;
    const core::SystemClock clock;
    return runtime::encode_signed_assertion(sign_decision(
        key, registration, challenge_, decision, clock.now(), core::parse_rfc3339(expires_at_)));
  }

  fs::path write(const std::string& name, const std::string& bytes) const {
    const fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  // The durable consent and journal bytes (database files and any WAL).
  std::string durable_bytes() const {
    std::string bytes;
    for (const char* name :
         {"consent.sqlite3", "consent.sqlite3-wal", "journal.sqlite3", "journal.sqlite3-wal"}) {
      bytes +=
          std::string(name) + "=" + core::sha256_hex(read_file(state_ / "service" / name)) + "\n";
    }
    return bytes;
  }

  fs::path active_skill() const { return state_ / "skills" / "active" / "pdf-export" / "SKILL.md"; }
  // A forked StateService resolves a signed grant of challenge_ and dies (SIGKILL) at crash
  // point `point`; then `ctx consent recover` runs in a new process. Its JSON result.
  Json kill_at_then_recover(std::string_view point) {
    const std::string payload = assertion(engine::Decision::kGranted);
    kill_child_at(state_, point,
                  [&](runtime::StateService& service) { service.resolve_consent(payload); });
    const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
    EXPECT_EQ(recovered.code, 0) << recovered.err;
    return Json::parse(recovered.out, nullptr, false);
  }
  // A second recovery finds everything finished: no journal record, no install, no activation;
  // the journal verifies.
  void expect_a_second_recovery_changes_nothing() {
    const std::string journal = read_database(state_ / "service" / "journal.sqlite3");
    const CtxRun again = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_TRUE(Json::parse(again.out)["activation"].is_null()) << again.out;
    EXPECT_EQ(read_database(state_ / "service" / "journal.sqlite3"), journal);
    EXPECT_EQ(ctx_run(with_state({"journal", "verify"})).code, 0);
  }

  // The work prepared and the capability chosen for it (a subclass sets others before SetUp).
  std::string work_ = std::string(CTX_SOURCE_DIR) + "/examples/work/pdf-export.json";
  std::string capability_ = "skill:pdf-export";
  std::string challenge_;
  std::string expires_at_;
};

TEST_F(ConsentDecisionTest, ShowListsTheCurrentChallengeWithTheExactCommands) {
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  ASSERT_EQ(shown.code, 0) << shown.err;
  const Json json = Json::parse(shown.out);
  ASSERT_EQ(json.at("challenges").size(), 1u) << shown.out;
  const Json& c = json["challenges"][0];
  EXPECT_EQ(c.at("challenge_digest"), challenge_);
  EXPECT_EQ(c.at("capability_id"), "skill:pdf-export");
  EXPECT_EQ(c.at("kind"), "skill");
  EXPECT_EQ(c.at("audience"), "ctx-local");
  EXPECT_EQ(c.at("expires_at"), expires_at_);
  // The state dir is not the default one: the commands name it, so they work as pasted.
  const std::string state_arg = " --state " + state_.string();
  EXPECT_EQ(c.at("approve"), "ctx consent approve " + challenge_ + " --key FILE" + state_arg);
  EXPECT_EQ(c.at("deny"), "ctx consent deny " + challenge_ + " --key FILE" + state_arg);
  // No other paths, no secrets or bodies.
  std::string without_commands = shown.out;
  for (std::size_t at; (at = without_commands.find(state_arg)) != std::string::npos;) {
    without_commands.erase(at, state_arg.size());
  }
  EXPECT_THAT(without_commands, Not(HasSubstr(state_.string())));
  EXPECT_THAT(shown.out, Not(HasSubstr("PDF export")));
  const CtxRun text = ctx_run(with_state({"consent", "show"}));
  ASSERT_EQ(text.code, 0);
  EXPECT_THAT(text.out,
              HasSubstr("ctx consent approve " + challenge_ + " --key FILE" + state_arg + "\n"));
  // Nothing was installed by looking.
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
}

TEST_F(ConsentDecisionTest, ApproveInstallsAndActivatesOnceAndASecondApproveIsRefused) {
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  const Json result = Json::parse(approved.out);
  EXPECT_EQ(result["resolution"]["outcome"], "installed-inactive") << approved.out;
  EXPECT_EQ(result["resolution"]["reason_code"], "physical-install-applied");
  EXPECT_EQ(result["resolution"]["capability_id"], "skill:pdf-export");
  EXPECT_EQ(result["activation"]["outcome"], "applied") << approved.out;
  EXPECT_EQ(result["activation"]["settled"], true);
  for (const char* hidden : {"principal", "proof", "binding", "scope", "challenge_id"}) {
    EXPECT_FALSE(result["resolution"].contains(hidden)) << hidden;
  }
  EXPECT_THAT(approved.out, Not(HasSubstr(state_.string())));
  // Installed content-addressed once, active in the state dir's default place (no hooks name a
  // project here): the line says no host loads it there, and how to name one, as a command that
  // works when pasted (it names this non-default state dir).
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  EXPECT_TRUE(fs::is_symlink(state_ / "skills" / "active" / "pdf-export"));
  EXPECT_FALSE(result["activation"].contains("place")) << approved.out;

  // The challenge is decided: nothing is pending, a second approve is refused and changes
  // nothing, and recovery finishes without installing again.
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  EXPECT_EQ(Json::parse(shown.out)["challenges"].size(), 0u) << shown.out;
  const std::string before = durable_bytes();
  const CtxRun again =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string()}));
  EXPECT_EQ(again.code, 1) << again.out;
  EXPECT_THAT(again.err, HasSubstr("not awaiting fresh authentication"));
  EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1);
  EXPECT_EQ(durable_bytes(), before);
  const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
  ASSERT_EQ(recovered.code, 0) << recovered.err;
  EXPECT_NE(Json::parse(recovered.out)["resolution"]["outcome"], "install-failed");
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
}

TEST_F(ConsentDecisionTest, ApproveWithoutHooksSaysNoHostLoadsItAndHowToNameAProject) {
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string()}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  EXPECT_THAT(approved.out,
              HasSubstr("activation applied (in the state dir only, where no host loads it: ctx "
                        "hooks install claude-code --project DIR --state " +
                        state_.string() + " (or codex)"));
  EXPECT_THAT(approved.out, Not(HasSubstr("active in")));
}

// The example pdf-export skill holds a resource (scripts/export.py): the grant installs the whole
// tree content-addressed under its tree digest, activation exposes every file, and the engine's
// durable install outcome names the tree MaterialIdentity (content digest = the tree digest: the
// sha256 of the tree root over the catalog folder's manifest, content bytes = the root length).
TEST_F(ConsentDecisionTest, ApproveInstallsTheWholeSkillTreeUnderItsTreeMaterialIdentity) {
  const fs::path folder = fs::path(CTX_SOURCE_DIR) / "examples/catalog/skills/pdf-export";
  const std::string script = read_file(folder / "scripts/export.py");
  const std::vector<sdk::TreeFile> files = {
      {"SKILL.md", catalog_skill().size(), core::sha256_hex(catalog_skill())},
      {"scripts/export.py", script.size(), core::sha256_hex(script)}};
  const std::string root =
      sdk::tree_root_text(files, core::sha256_hex(sdk::tree_manifest_text(files)));
  const std::string tree_digest = core::sha256_hex(root);

  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(Json::parse(approved.out)["resolution"]["outcome"], "installed-inactive")
      << approved.out;
  const fs::path object = state_ / "skills" / "objects" / tree_digest;
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  EXPECT_EQ(read_file(object / "SKILL.md"), catalog_skill());
  EXPECT_EQ(read_file(object / "scripts" / "export.py"), script);
  EXPECT_EQ(entries_in(object), 2u);  // SKILL.md and scripts/
  const fs::path active = state_ / "skills" / "active" / "pdf-export";
  EXPECT_EQ(read_file(active / "scripts" / "export.py"), script);
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  // The staged copy the installer read from is gone.
  EXPECT_EQ(entries_in(state_ / "service" / "install-staging"), 0u);

  const std::string expected =
      engine::MaterialIdentity::create("skill:pdf-export", engine::CapabilityKind::kSkill,
                                       tree_digest, static_cast<std::int64_t>(root.size()))
          .identity_digest();
  expect_one_applied_install_outcome(expected);
}

// A resource edited in the catalog's object store after the import (same name, other bytes):
// the install fails closed — the tree does not match its manifest, so the installer is never sent
// it and the claimed install is indeterminate with nothing installed or active — and recovery
// (the installer's reconcile: absent) settles it as failed.
TEST_F(ConsentDecisionTest, AResourceEditedInTheCatalogStoreFailsTheInstallClosed) {
  const std::string script =
      read_file(fs::path(CTX_SOURCE_DIR) / "examples/catalog/skills/pdf-export/scripts/export.py");
  const fs::path object = state_ / "catalog" / "objects" / core::sha256_hex(script);
  ASSERT_TRUE(fs::exists(object));
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::binary | std::ios::trunc) << "import os; os.system('evil')\n";

  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(Json::parse(approved.out)["resolution"]["outcome"], "install-indeterminate")
      << approved.out;
  EXPECT_THAT(approved.out, Not(HasSubstr(state_.string())));
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  EXPECT_FALSE(fs::exists(state_ / "skills" / "active" / "pdf-export"));
  EXPECT_EQ(entries_in(state_ / "service" / "install-staging"), 0u);
  const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
  ASSERT_EQ(recovered.code, 0) << recovered.err;
  EXPECT_EQ(Json::parse(recovered.out)["resolution"]["outcome"], "install-failed") << recovered.out;
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  EXPECT_FALSE(fs::exists(state_ / "skills" / "active" / "pdf-export"));
  EXPECT_EQ(ctx_run(with_state({"journal", "verify"})).code, 0);
}

// Issue 36 item 5: with one challenge pending, `approve` needs no digest, and a capability name
// (bare or with its kind) names it.
TEST_F(ConsentDecisionTest, ApproveWithoutADigestOrByNameDecidesTheOnePendingChallenge) {
  const CtxRun unknown =
      ctx_run(with_state({"consent", "approve", "xlsx-export", "--key", key_.string()}));
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no install consent is pending for xlsx-export"));
  const CtxRun bad =
      ctx_run(with_state({"consent", "approve", "Not A Name", "--key", key_.string()}));
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("CHALLENGE must be"));

  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  const Json result = Json::parse(approved.out);
  EXPECT_EQ(result["resolution"]["challenge_digest"], challenge_);
  EXPECT_EQ(result["resolution"]["outcome"], "installed-inactive");
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  // Nothing is pending any more: a bare approve says so.
  const CtxRun again = ctx_run(with_state({"consent", "approve", "--key", key_.string()}));
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("no install consent is pending"));
}

// Two sessions each wait on the pdf-export install: a name or no digest is ambiguous, refused
// with both listed and nothing decided; each digest still decides its own challenge.
TEST_F(ConsentDecisionTest, ApproveByANameTwoChallengesShareIsRefusedAndChangesNothing) {
  Json work = Json::parse(read_file(fs::path(CTX_SOURCE_DIR) / "examples/work/pdf-export.json"));
  work["session"]["session"] = "session-2";
  const fs::path second_work = write("second-work.json", work.dump());
  const CtxRun prepared =
      ctx_run(with_state({"query", "prepare", "--work", second_work.string(), "--json"}));
  ASSERT_EQ(prepared.code, 0) << prepared.err;
  const CtxRun desired = ctx_run(with_state(
      {"desired", "set", Json::parse(prepared.out).at("query_ref"), "skill:pdf-export", "--json"}));
  ASSERT_EQ(desired.code, 0) << desired.err;
  const std::string second = Json::parse(desired.out).at("challenge").at("challenge_digest");
  ASSERT_NE(second, challenge_);

  const std::string before = durable_bytes();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"consent", "approve", "pdf-export", "--key", key_.string()},
        std::vector<std::string>{"consent", "approve", "skill:pdf-export", "--key", key_.string()},
        std::vector<std::string>{"consent", "deny", "--key", key_.string()}}) {
    const CtxRun refused = ctx_run(with_state(args));
    EXPECT_EQ(refused.code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("2 install consents are pending"));
    EXPECT_THAT(refused.err, HasSubstr(challenge_));
    EXPECT_THAT(refused.err, HasSubstr(second));
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1);
  }
  EXPECT_EQ(durable_bytes(), before) << "a refused selection decides nothing";
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", second, "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(Json::parse(approved.out)["resolution"]["challenge_digest"], second);
}

TEST_F(ConsentDecisionTest, DenyNeverInstalls) {
  const CtxRun denied =
      ctx_run(with_state({"consent", "deny", challenge_, "--key", key_.string(), "--json"}));
  ASSERT_EQ(denied.code, 0) << denied.err;
  const Json result = Json::parse(denied.out);
  EXPECT_EQ(result["resolution"]["outcome"], "denied") << denied.out;
  EXPECT_EQ(result["resolution"]["reason_code"], "human-denied-install");
  EXPECT_TRUE(result["activation"].is_null());
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  EXPECT_FALSE(fs::exists(active_skill()));
  const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
  ASSERT_EQ(recovered.code, 0) << recovered.err;
  EXPECT_EQ(Json::parse(recovered.out)["resolution"]["outcome"], "denied");
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
}

TEST_F(ConsentDecisionTest, BadAssertionsAreTypedRefusalsThatChangeNothing) {
  const std::string valid = assertion(engine::Decision::kGranted);
  std::string tampered = valid;
  const auto nonce = tampered.find("\"nonce\":\"") + 9;
  tampered[nonce] = tampered[nonce] == '0' ? '1' : '0';
  std::string spaced = valid;
  spaced.insert(1, " ");
  const struct {
    std::string name, payload, message;
  } cases[] = {
      {"tampered byte", tampered, "signature"},
      {"wrong audience", assertion(engine::Decision::kGranted, "another-audience"), "audience"},
      {"unknown principal",
       assertion(engine::Decision::kGranted, "ctx-local", std::string(64, 'b')), "verifier"},
      {"non-canonical", spaced, "assertion"},
      {"not json", "not a signed assertion", "assertion"},
  };
  const std::string before = durable_bytes();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const CtxRun run = ctx_run(
        with_state({"consent", "resolve", "--assertion", write("bad.json", c.payload).string()}));
    EXPECT_EQ(run.code, 1) << run.out;
    EXPECT_THAT(run.err, HasSubstr(c.message));
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(durable_bytes(), before);
    EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  }
  // The challenge is still pending, and the valid assertion (from stdin) installs; replaying
  // the same bytes is refused and changes nothing.
  EXPECT_EQ(
      Json::parse(ctx_run(with_state({"consent", "show", "--json"})).out)["challenges"].size(), 1u);
  const CtxRun resolved =
      ctx_run(with_state({"consent", "resolve", "--assertion", "-", "--json"}), valid);
  ASSERT_EQ(resolved.code, 0) << resolved.err;
  EXPECT_EQ(Json::parse(resolved.out)["resolution"]["outcome"], "installed-inactive");
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  const std::string installed = durable_bytes();
  const CtxRun replayed = ctx_run(with_state({"consent", "resolve", "--assertion", "-"}), valid);
  EXPECT_EQ(replayed.code, 1) << replayed.out;
  EXPECT_EQ(std::count(replayed.err.begin(), replayed.err.end(), '\n'), 1) << replayed.err;
  EXPECT_EQ(durable_bytes(), installed);
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
}

TEST_F(ConsentDecisionTest, RecoverOfAPendingChallengeAsksForADecisionAndUsageErrorsExitTwo) {
  const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
  ASSERT_EQ(recovered.code, 0) << recovered.err;
  const Json result = Json::parse(recovered.out);
  EXPECT_EQ(result["resolution"]["outcome"], "consent-required");
  EXPECT_EQ(result["resolution"]["reason_code"], "fresh-human-decision-required");
  EXPECT_EQ(result["resolution"]["next_challenge"]["challenge_digest"], challenge_);
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  const CtxRun unknown = ctx_run(with_state({"consent", "recover", std::string(64, 'c')}));
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(ctx_run(with_state({"consent", "approve", challenge_})).code, 2);  // no --key
  EXPECT_EQ(ctx_run(with_state({"consent", "recover"})).code, 2);
  EXPECT_EQ(ctx_run(with_state({"consent", "resolve"})).code, 2);
  EXPECT_EQ(ctx_run(with_state({"consent", "approve", "nothex", "--key", key_.string()})).code, 1);
}

TEST_F(ConsentDecisionTest, HooksInstalledForAProjectMakeApprovedSkillsActiveWhereClaudeCodeLooks) {
  // Installing the hooks for a project records the adapter's skills location for it; the
  // decision of a session running in it (here in a subdirectory) installs and activates there (the
  // challenge binds the installer's root, not the activation directory, so the pending challenge
  // stays valid).
  const fs::path project = dir_ / "project";
  fs::create_directory(project);
  const CtxRun hooked = ctx_run({"hooks", "install", "claude-code", "--project", project.string(),
                                 "--state", state_.string(), "--json"});
  ASSERT_EQ(hooked.code, 0) << hooked.err;
  EXPECT_EQ(Json::parse(hooked.out).at("skills_activate_in"),
            (project / ".claude" / "skills").string());
  const std::string challenge = hooked_challenge(project / "src");
  ASSERT_FALSE(challenge.empty());
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge, "--key", key_.string()}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("installed-inactive"));
  // The line says where: the project's skills directory that Claude Code reads.
  EXPECT_THAT(approved.out, HasSubstr("activation applied (active in " +
                                      (project / ".claude" / "skills").string() + ")"));
  const fs::path skill = project / ".claude" / "skills" / "pdf-export" / "SKILL.md";
  EXPECT_EQ(read_file(skill), catalog_skill());
  EXPECT_FALSE(fs::exists(active_skill()));
  EXPECT_TRUE(fs::exists(project / ".claude" / "settings.json"));
}

TEST_F(ConsentDecisionTest, HooksInstalledForTheUserMakeApprovedSkillsActiveInTheUsersSkills) {
  // --user: the adapter's user-scope skills location (under $HOME) is the activation target.
  const fs::path home = dir_ / "home";
  fs::create_directory(home);
  const char* previous = std::getenv("HOME");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("HOME", home.c_str(), 1);
  const CtxRun hooked =
      ctx_run({"hooks", "install", "claude-code", "--user", "--state", state_.string(), "--json"});
  previous != nullptr ? ::setenv("HOME", saved.c_str(), 1) : ::unsetenv("HOME");
  ASSERT_EQ(hooked.code, 0) << hooked.err;
  EXPECT_EQ(Json::parse(hooked.out).at("skills_activate_in"),
            (home / ".claude" / "skills").string());
  // A session outside every project of the state dir activates in the user's skills.
  const std::string challenge = hooked_challenge(dir_ / "elsewhere");
  ASSERT_FALSE(challenge.empty());
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge, "--key", key_.string()}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("activation applied (active in " +
                                      (home / ".claude" / "skills").string() + ")"));
  EXPECT_EQ(read_file(home / ".claude" / "skills" / "pdf-export" / "SKILL.md"), catalog_skill());
  EXPECT_FALSE(fs::exists(active_skill()));
  EXPECT_TRUE(fs::exists(home / ".claude" / "settings.json"));
}

// kill -9 of a real process at each install and activation step of a signed grant: the
// process (forked, StateService in process) dies at the armed crash point; `ctx consent
// recover` (a new process) finishes exactly once — a claim the dead process never acted on is
// reconciled, never re-applied (install-failed, nothing on disk); any later step ends with the
// skill installed once and active — and a second recovery changes no durable byte.
// Every install and activation step of a signed grant, and a test name for each.
const auto kGrantCrashPoints = ::testing::Values(
    runtime::crash_points::kAfterInstallClaim, runtime::crash_points::kAfterInstallOutcome,
    runtime::crash_points::kAfterInstallReceipt, runtime::crash_points::kBeforeDecisionSettlement,
    runtime::crash_points::kAfterActivationClaim, runtime::crash_points::kAfterActivationOutcome,
    runtime::crash_points::kAfterActivationReceipt);
std::string crash_point_name(const ::testing::TestParamInfo<std::string_view>& info) {
  std::string name;
  for (const char c : info.param) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class ConsentCrashTest : public ConsentDecisionTest,
                         public ::testing::WithParamInterface<std::string_view> {};

TEST_P(ConsentCrashTest, KilledGrantRecoversExactlyOnce) {
  const Json result = kill_at_then_recover(GetParam());
  ASSERT_FALSE(result.is_discarded());
  const std::string outcome = result["resolution"]["outcome"];
  if (GetParam() == runtime::crash_points::kAfterInstallClaim) {
    EXPECT_EQ(outcome, "install-failed") << result.dump();
    EXPECT_FALSE(fs::exists(active_skill()));
  } else {
    EXPECT_TRUE(outcome == "installed-inactive" || outcome == "quarantined") << result.dump();
    EXPECT_EQ(read_file(active_skill()), catalog_skill());
    EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  }
  EXPECT_LE(entries_in(state_ / "skills" / "objects"), 1u);
  expect_a_second_recovery_changes_nothing();
}

INSTANTIATE_TEST_SUITE_P(EveryStep, ConsentCrashTest, kGrantCrashPoints, crash_point_name);

// The same real process death at each install and activation step of a signed grant of an MCP
// server (its installer edits a host configuration file; here the state dir's default,
// <state>/mcp-servers/active.json, as no project target is recorded): recovery ends with exactly
// one outcome and at most one entry of the server in the file (none when the install claim's
// driver never ran), and a second recovery changes nothing.
class McpConsentCrashTest : public ConsentDecisionTest,
                            public ::testing::WithParamInterface<std::string_view> {
 protected:
  void SetUp() override {
    work_ = (dir_ / "docs-work.json").string();
    std::ofstream(work_) << Json{
        {"session",
         {{"tenant", "local"},
          {"workspace", "home"},
          {"repository", "docs"},
          {"session", "session-1"}}},
        {"signals", {"search", "the", "library", "and", "framework", "documentation", "pages"}},
        {"languages", Json::array()},
        {"requested_limit", 3}}.dump();
    capability_ = "mcp-server:docs-search";
    ConsentDecisionTest::SetUp();
  }
  // How many times docs-search is in the MCP config file (0 when there is no file).
  int entries_in_config() const {
    const fs::path config = state_ / "mcp-servers" / "active.json";
    if (!fs::exists(config)) return 0;
    const Json parsed = core::parse_json(read_file(config));  // a repeated key fails here
    const Json servers = parsed.value("mcpServers", Json::object());
    EXPECT_TRUE(servers.size() <= 1) << parsed.dump();
    if (!servers.contains("docs-search")) return 0;
    EXPECT_EQ(servers["docs-search"].value("url", ""), "https://docs-search.example.com/mcp");
    return 1;
  }
};

TEST_P(McpConsentCrashTest, KilledGrantRecoversExactlyOnceWithOneEntryInTheHostFile) {
  const Json result = kill_at_then_recover(GetParam());
  ASSERT_FALSE(result.is_discarded());
  const std::string outcome = result["resolution"]["outcome"];
  const std::string recovered = result.dump();
  if (GetParam() == runtime::crash_points::kAfterInstallClaim) {
    EXPECT_EQ(outcome, "install-failed") << recovered;
    EXPECT_EQ(entries_in_config(), 0);
  } else {
    EXPECT_TRUE(outcome == "installed-inactive" || outcome == "quarantined") << recovered;
    EXPECT_EQ(entries_in_config(), 1);
  }
  expect_a_second_recovery_changes_nothing();
}

INSTANTIATE_TEST_SUITE_P(EveryStep, McpConsentCrashTest, kGrantCrashPoints, crash_point_name);

// Issue 36: the consent steps of a signed decision under a real kill -9. Killed after the broker
// authenticated the decision but before its journal event: recovery never mints the decision
// (reauthentication-required, nothing installed) and approving again installs exactly once.
// Killed after the decision commit: recovery installs and activates exactly once.
class ConsentStepKillTest : public ConsentDecisionTest,
                            public ::testing::WithParamInterface<std::string_view> {};

TEST_P(ConsentStepKillTest, KilledDecisionEndsWithOneOutcome) {
  const Json result = kill_at_then_recover(GetParam());
  ASSERT_FALSE(result.is_discarded());
  const std::string outcome = result["resolution"]["outcome"];
  if (GetParam() == runtime::consent_crash_points::kAfterAuthentication) {
    EXPECT_EQ(outcome, "reauthentication-required") << result.dump();
    EXPECT_FALSE(fs::exists(active_skill()));
    EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
    const CtxRun again =
        ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string()}));
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_THAT(again.out, HasSubstr("activation applied"));
  } else {
    EXPECT_TRUE(outcome == "installed-inactive" || outcome == "quarantined") << result.dump();
  }
  EXPECT_EQ(read_file(active_skill()), catalog_skill());
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  expect_a_second_recovery_changes_nothing();
}

INSTANTIATE_TEST_SUITE_P(EveryStep, ConsentStepKillTest,
                         ::testing::Values(runtime::consent_crash_points::kAfterAuthentication,
                                           runtime::consent_crash_points::kAfterDecisionCommit),
                         crash_point_name);

// Killed right after a recovery past the challenge's expiry committed the expiry: the next
// recovery (at the real time, before the expiry) reports it expired, nothing is installed, and
// an approval of the expired challenge is refused.
TEST_F(ConsentDecisionTest, KilledAfterTheExpiryCommitRecoversAsExpired) {
  kill_child_at(
      state_, runtime::consent_crash_points::kAfterExpiryCommit,
      [&](runtime::StateService& service) { service.recover_consent(challenge_); },
      std::make_shared<LateClock>(expires_at_));
  const CtxRun recovered = ctx_run(with_state({"consent", "recover", challenge_, "--json"}));
  ASSERT_EQ(recovered.code, 0) << recovered.err;
  EXPECT_EQ(Json::parse(recovered.out)["resolution"]["outcome"], "expired") << recovered.out;
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string()}));
  EXPECT_EQ(approved.code, 1) << approved.out;
  EXPECT_FALSE(fs::exists(active_skill()));
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 0u);
  expect_a_second_recovery_changes_nothing();
}

// The choice's steps under a real kill -9 (a hook's set_desired: the desired set reserved, its
// event committed, the reservation marked, the consent challenge published): the retry in a new
// process ends with exactly one challenge for the choice, the journal verifies, and approving it
// installs exactly once.
class ChoiceKillTest : public ctx::testing::TrustedStateTest,
                       public ::testing::WithParamInterface<std::string_view> {
 protected:
  void SetUp() override {
    TrustedStateTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string work = std::string(CTX_SOURCE_DIR) + "/examples/work/pdf-export.json";
    const CtxRun prepared = ctx_run(with_state({"query", "prepare", "--work", work, "--json"}));
    ASSERT_EQ(prepared.code, 0) << prepared.err;
    query_ref_ = Json::parse(prepared.out).at("query_ref");
  }
  std::string query_ref_;
};

TEST_P(ChoiceKillTest, KilledChoiceRetriesToOneChallenge) {
  kill_child_at(state_, GetParam(), [&](runtime::StateService& service) {
    service.set_desired(query_ref_, {"skill:pdf-export"});
  });
  const CtxRun retried =
      ctx_run(with_state({"desired", "set", query_ref_, "skill:pdf-export", "--json"}));
  ASSERT_EQ(retried.code, 0) << retried.err;
  const Json result = Json::parse(retried.out);
  ASSERT_EQ(result.at("status"), "consent-required") << retried.out;
  const std::string challenge = result.at("challenge").at("challenge_digest");
  const CtxRun shown = ctx_run(with_state({"consent", "show", "--json"}));
  ASSERT_EQ(shown.code, 0) << shown.err;
  const Json listed = Json::parse(shown.out).at("challenges");
  ASSERT_EQ(listed.size(), 1u) << shown.out;
  EXPECT_EQ(listed[0].at("challenge_digest"), challenge);
  EXPECT_EQ(ctx_run(with_state({"journal", "verify"})).code, 0);
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge, "--key", key_.string()}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("activation applied"));
  EXPECT_EQ(entries_in(state_ / "skills" / "objects"), 1u);
  EXPECT_EQ(ctx_run(with_state({"journal", "verify"})).code, 0);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, ChoiceKillTest,
    ::testing::Values(runtime::service_crash_points::kAfterDesiredReservation,
                      runtime::service_crash_points::kAfterDesiredCommit,
                      runtime::service_crash_points::kAfterDesiredMark,
                      runtime::service_crash_points::kAfterChallengePublication),
    crash_point_name);

}  // namespace
}  // namespace ctx::cli
