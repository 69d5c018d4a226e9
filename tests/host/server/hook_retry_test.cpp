// HookRunner's remembered exact-retry replies (hook_runner.hpp, state_watch.hpp): an identical
// hook on unchanged state is answered from memory, and the same reply as a fresh runner gives;
// anything another process commits, and a registration file tampered in place (mtime restored),
// is seen before the next remembered reply, so the answer is always what the full path gives
// (its error included); a forked child never uses them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/core/time.hpp"
#include "host/app/hook/hook_runner.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
namespace hooks = runtime::hooks;
using Json = core::Json;

// A Claude Code payload of `event` in `session`, with the members every event has.
Json claude_payload(const std::string& session, const std::string& event) {
  return {{"session_id", session},
          {"transcript_path", "/home/u/t.jsonl"},
          {"cwd", "/home/u/project"},
          {"permission_mode", "default"},
          {"hook_event_name", event}};
}

hooks::HookRequest prompt_request(const std::string& session, const std::string& prompt) {
  Json payload = claude_payload(session, "UserPromptSubmit");
  payload["prompt"] = prompt;
  return hooks::HookRequest{"claude-code", payload.dump()};
}

hooks::HookRequest tool_request(const std::string& session, const std::string& command) {
  Json payload = claude_payload(session, "PreToolUse");
  payload["tool_name"] = "Bash";
  payload["tool_input"] = {{"command", command}};
  payload["tool_use_id"] = "toolu_01";
  return hooks::HookRequest{"claude-code", payload.dump()};
}

// What the state watch vouches for is at least 50 ms old (state_watch.hpp).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(60)); }

// Runs `request` (with a settle after each run) until a run is answered from memory: what a
// host's repeated prompts reach once the first ones' writes have settled. False after 6 runs.
bool run_until_remembered(hooks::HookRunner& runner, const hooks::HookRequest& request) {
  const auto served = runner.exact_retry_replies();
  for (int i = 0; i < 6; ++i) {
    runner.run(request);
    if (runner.exact_retry_replies() > served) return true;
    settle();
  }
  return false;
}

std::string fresh_reply(const fs::path& state, const hooks::HookRequest& request) {
  hooks::HookRunner fresh(state);
  const auto response = fresh.run(request);
  return response.reply.value_or("<none>");
}

// Under the default ask-each-time policy a PDF prompt's hook chooses the skill's install and its
// reply carries a consent challenge, remembered only until shortly before it expires: these tests
// run under `ctx policy set skill preapproved-auto`, where the first hook installs
// the skill without a challenge and its exact retries commit nothing.
class HookRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() / "s";
    ASSERT_TRUE(testing::prepare_state_dir(state_));
    ASSERT_EQ(
        testing::run_ctx("policy set skill preapproved-auto --state " + state_.string()).first,
        0);
  }
  ctx::testing::TempDir dir_;
  fs::path state_;
};

// A clock for the runner's state service that starts at the real time and moves when told.
class ManualClock final : public core::Clock {
 public:
  core::Timestamp now() const override { return core::Timestamp{micros_.load()}; }
  void set(core::Timestamp at) { micros_.store(at.micros); }

 private:
  std::atomic<std::int64_t> micros_{core::SystemClock().now().micros};
};

constexpr std::int64_t kSecond = 1'000'000;

// A state dir (default ask-each-time policy) and a runner on it whose service clock the test
// moves.
class ClockedRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() / "s";
    ASSERT_TRUE(testing::prepare_state_dir(state_));
    runner_.emplace(state_, clock_);
  }
  // The one challenge `ctx consent show` lists for the state dir.
  void only_challenge(Json& challenge) const {
    const auto [status, shown] = testing::run_ctx("consent show --json --state " + state_.string());
    ASSERT_EQ(status, 0);
    const Json challenges = Json::parse(shown).at("challenges");
    ASSERT_EQ(challenges.size(), 1u) << shown;
    challenge = challenges[0];
  }

  ctx::testing::TempDir dir_;
  fs::path state_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::optional<hooks::HookRunner> runner_;
};
using HookRetryChallengeTest = ClockedRunnerTest;
using HookToolCallTest = ClockedRunnerTest;

TEST_F(HookRetryChallengeTest, AReplyWithAConsentChallengeIsRememberedOnlyUntilShortlyBeforeExpiry) {
  const fs::path& state = state_;
  ManualClock& clock = *clock_;
  hooks::HookRunner& runner = *runner_;
  const auto request = prompt_request("retry-challenge", "please add a PDF export of the report");
  const auto first = runner.run(request);
  ASSERT_TRUE(first.reply.has_value());
  ASSERT_NE(first.reply->find("ctx consent approve "), std::string::npos) << *first.reply;
  // Exact retries commit nothing new (the same challenge, no second one): remembered.
  settle();
  ASSERT_TRUE(run_until_remembered(runner, request));
  EXPECT_EQ(runner.run(request).reply, first.reply);
  EXPECT_EQ(fresh_reply(state, request), *first.reply);
  Json challenge;
  ASSERT_NO_FATAL_FAILURE(only_challenge(challenge));
  const core::Timestamp expires = core::parse_rfc3339(challenge.at("expires_at").get<std::string>());
  // 6 s before expiry the reply still holds; 4 s before, the host could show it expired: never
  // again from memory, every run takes the full path.
  clock.set(core::Timestamp{expires.micros - 6 * kSecond});
  settle();
  ASSERT_TRUE(runner.try_remembered(request).has_value());
  clock.set(core::Timestamp{expires.micros - 4 * kSecond});
  const auto served = runner.exact_retry_replies();
  EXPECT_FALSE(runner.try_remembered(request).has_value());
  EXPECT_EQ(runner.run(request).reply, first.reply);
  settle();
  EXPECT_EQ(runner.run(request).reply, first.reply);
  EXPECT_FALSE(runner.try_remembered(request).has_value());
  clock.set(core::Timestamp{expires.micros + kSecond});
  const auto expired = runner.run(request);
  ASSERT_TRUE(expired.reply.has_value());
  EXPECT_NE(expired.reply, first.reply) << "an expired challenge is never offered";
  EXPECT_EQ(runner.exact_retry_replies(), served);
}

// Tool calls keep quiet while the session's plan stands, also once the consent its prompt asked
// for has lapsed (the lapsed approval command is never repeated); the next prompt offers a new
// challenge, and the tool calls after it keep quiet again.
TEST_F(HookToolCallTest, ToolCallsKeepQuietWhileThePlanStandsAPromptReoffersALapsedConsent) {
  hooks::HookRunner& runner = *runner_;
  const auto prompt = prompt_request("tools", "please add a PDF export of the report");
  const auto asked = runner.run(prompt);
  ASSERT_TRUE(asked.reply.has_value());
  ASSERT_NE(asked.reply->find("ctx consent approve "), std::string::npos) << *asked.reply;
  const auto tool = tool_request("tools", "make pdf export");
  const std::optional<std::string> quiet("{}");
  EXPECT_EQ(runner.run(tool).reply, quiet);
  Json challenge;
  ASSERT_NO_FATAL_FAILURE(only_challenge(challenge));
  const std::string lapsed = challenge.at("challenge_digest");
  clock_->set(core::Timestamp{
      core::parse_rfc3339(challenge.at("expires_at").get<std::string>()).micros + kSecond});
  EXPECT_EQ(runner.run(tool).reply, quiet);
  // (Another prompt: the identical one is an exact retry of the lapsed choice.)
  const auto reoffered =
      runner.run(prompt_request("tools", "the PDF export of the report, please"));
  ASSERT_TRUE(reoffered.reply.has_value());
  EXPECT_NE(reoffered.reply->find("ctx consent approve "), std::string::npos) << *reoffered.reply;
  EXPECT_EQ(reoffered.reply->find(lapsed), std::string::npos) << "a lapsed challenge is offered";
  EXPECT_EQ(runner.run(tool).reply, quiet);
}

TEST_F(HookRetryTest, AnIdenticalHookOnUnchangedStateGetsTheFullPathsReplyFromMemory) {
  hooks::HookRunner runner(state_);
  const auto request = prompt_request("retry-1", "please add a PDF export of the report");
  const auto first = runner.run(request);
  ASSERT_TRUE(first.reply.has_value());
  EXPECT_NE(first.reply->find("pdf-export"), std::string::npos) << *first.reply;
  // The first run planned (and wrote): never remembered; nor is the next (it names the files).
  EXPECT_EQ(runner.exact_retry_replies(), 0u);
  settle();
  EXPECT_EQ(runner.run(request).reply, first.reply);
  EXPECT_EQ(runner.exact_retry_replies(), 0u);
  ASSERT_TRUE(run_until_remembered(runner, request));
  // Nothing changes any more: every later run is answered from memory, back to back.
  const auto served = runner.exact_retry_replies();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(runner.run(request).reply, first.reply);
  EXPECT_EQ(runner.exact_retry_replies(), served + 5);
  EXPECT_EQ(fresh_reply(state_, request), *first.reply);
  // Another payload (one more byte) is not that request.
  auto other = request;
  other.payload += " ";
  EXPECT_EQ(runner.run(other).reply, first.reply);
  EXPECT_EQ(runner.exact_retry_replies(), served + 5);
}

TEST_F(HookRetryTest, ACommitByAnotherProcessIsSeenBeforeTheNextRememberedReply) {
  hooks::HookRunner runner(state_);
  const auto request = prompt_request("retry-2", "please add a PDF export of the report");
  ASSERT_TRUE(run_until_remembered(runner, request));
  const auto served = runner.exact_retry_replies();
  // Another process plans work in another session: a commit to the same stores, so the next run
  // takes the full path (this session's plan stands: its consent is pending, and other work in
  // it would be refused without writing anything).
  const auto other = prompt_request("retry-2-other", "write the sql migrations for the schema");
  const auto [status, out] = testing::run_ctx("hook claude-code --state " + state_.string(),
                                              other.payload);
  ASSERT_EQ(status, 0);
  ASSERT_FALSE(out.empty());
  const auto after = runner.run(request);
  EXPECT_EQ(runner.exact_retry_replies(), served);
  EXPECT_EQ(after.reply.value_or("<none>"), fresh_reply(state_, request));
  // Settled again: remembered again, and still the full path's reply.
  ASSERT_TRUE(run_until_remembered(runner, request));
  EXPECT_EQ(runner.run(request).reply, after.reply);
  EXPECT_EQ(fresh_reply(state_, request), after.reply.value_or("<none>"));
}

// A state file rewritten in place with its times put back: the runner replans (never answers
// from what it remembered) and replies as a fresh one does.
TEST_F(HookRetryTest, AnyStateFileRewrittenInPlaceIsSeenEvenWithItsTimesRestored) {
  // Files the reply depends on but the run does not name (the plugin lock, the install policy,
  // the catalog's CURRENT): the state dir's watches see the write itself, whatever stat says.
  for (const fs::path& relative :
       {fs::path("plugins.lock.json"), fs::path("install-policy") / "current.json",
        fs::path("catalog") / "CURRENT"}) {
    hooks::HookRunner runner(state_);
    const auto request = prompt_request("retry-file-" + relative.filename().string(),
                                        "please add a PDF export of the report");
    ASSERT_TRUE(run_until_remembered(runner, request)) << relative;
    const auto served = runner.exact_retry_replies();
    const fs::path file = state_ / relative;
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    const std::string bytes = ctx::testing::read_file(file);
    ASSERT_FALSE(bytes.empty());
    ASSERT_EQ(::chmod(file.c_str(), st.st_mode | S_IWUSR), 0);
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << bytes;  // the same bytes: only the write itself happened
    }
    ASSERT_EQ(::chmod(file.c_str(), st.st_mode & 07777), 0);
    const timespec times[2] = {st.st_atim, st.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
    EXPECT_FALSE(runner.try_remembered(request).has_value()) << relative;
    runner.run(request);
    EXPECT_EQ(runner.exact_retry_replies(), served) << relative;
    ASSERT_TRUE(run_until_remembered(runner, request)) << relative;
  }
}

// A stored registration altered in place: the runner fails exactly as a fresh one does.
TEST_F(HookRetryTest, ARegistrationTamperedInPlaceFailsAsTheFullPathDoes) {
  hooks::HookRunner runner(state_);
  const auto request = prompt_request("retry-3", "please add a PDF export of the report");
  ASSERT_TRUE(run_until_remembered(runner, request));
  const auto served = runner.exact_retry_replies();
  // One byte of each stored registration, altered in the query store's file by another
  // connection (the rows' HMACs no longer hold).
  const fs::path queries = state_ / "service" / "queries.sqlite3";
  const long tampered = ctx::testing::service::sqlite_count(queries, "managed_inputs");
  ctx::testing::service::sqlite_scalar(
      queries,
      "UPDATE managed_inputs SET input_json = "
      "CAST(replace(CAST(input_json AS TEXT), 'managing', 'Managing') AS BLOB)");
  ASSERT_GT(tampered, 0);
  settle();  // the watch sees that commit (its write to the database's log)
  std::string fresh_error;
  try {
    fresh_reply(state_, request);
  } catch (const std::exception& e) {
    fresh_error = e.what();
  }
  ASSERT_NE(fresh_error.find("authentication failed"), std::string::npos) << fresh_error;
  std::string error;
  try {
    runner.run(request);
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_EQ(error, fresh_error);
  EXPECT_EQ(runner.exact_retry_replies(), served);
}

TEST_F(HookRetryTest, EightThreadsRetryingAtOnceAllGetTheSameReply) {
  hooks::HookRunner runner(state_);
  const auto request = prompt_request("retry-4", "please add a PDF export of the report");
  const auto expected = runner.run(request).reply;
  ASSERT_TRUE(expected.has_value());
  ASSERT_TRUE(run_until_remembered(runner, request));
  constexpr int kThreads = 8;
  constexpr int kRuns = 40;
  std::barrier start(kThreads);
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kRuns; ++i) {
        if (runner.run(request).reply != expected) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_GT(runner.exact_retry_replies(), 0u);
}

TEST_F(HookRetryTest, AForkedChildNeverAnswersFromTheParentsMemory) {
  hooks::HookRunner runner(state_);
  const auto request = prompt_request("retry-5", "please add a PDF export of the report");
  ASSERT_TRUE(run_until_remembered(runner, request));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 3;
    try {
      runner.run(request);
      code = 1;  // answered: from memory, or by a service that should refuse a fork
    } catch (const std::exception& e) {
      code = std::string(e.what()).find("forked process") != std::string::npos ? 0 : 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ctx::server
