// `ctx hook ADAPTER` as a real process: every documented Claude Code and Codex event (host-formats
// §1.4 and §3.1, with unknown fields added) gets a valid reply or nothing; malformed payloads get
// the documented non-blocking error (exit 1, one stderr line); never exit 2, never a signal,
// never a hang; no prompt word outside the catalog vocabulary reaches any file or output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <barrier>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/core/crypto.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/journal/raw_sqlite.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using ctx::testing::ProcessResult;
using ctx::testing::read_file;
using ctx::testing::run_process;
using ctx::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

const fs::path kSource = fs::path(CTX_SOURCE_DIR);
constexpr const char* kMarker = "quokkazebramarker";

ProcessResult ctx_process(std::vector<std::string> args, const fs::path& state,
                          const std::string& input) {
  args.insert(args.begin(), CTX_BINARY);
  args.push_back("--state");
  args.push_back(state.string());
  return run_process(args, input, std::chrono::seconds(120));
}

void init_state(const fs::path& state) {
  ASSERT_EQ(ctx_process({"init"}, state, "").code, 0);
  const auto import =
      ctx_process({"catalog", "import", (kSource / "examples/catalog").string()}, state, "");
  ASSERT_EQ(import.code, 0) << import.err;
}

// An initialised state dir whose skills activate in `project` (ctx hooks install claude-code
// --project) under a preapproved-auto skill policy.
void init_preapproved_project(const fs::path& state, const fs::path& project) {
  init_state(state);
  fs::create_directories(project);
  const auto hooks = ctx_process({"hooks", "install", "claude-code", "--project", project.string()},
                                 state, "");
  ASSERT_EQ(hooks.code, 0) << hooks.err;
  ASSERT_EQ(ctx_process({"policy", "set", "skill", "preapproved-auto"}, state, "").code, 0);
}

void expect_journal_verifies(const fs::path& state) {
  const auto r = ctx_process({"journal", "verify"}, state, "");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// Unknown fields every payload carries (hosts add fields; adapters must ignore them).
Json with_unknown_fields(Json payload) {
  payload["future_field"] = {{"nested", {1, 2.5, "x"}}};
  payload["another_unknown"] = nullptr;
  return payload;
}

Json claude_common(const std::string& event) {
  return {{"session_id", "abc123"},
          {"transcript_path", "/home/u/.claude/projects/p/abc123.jsonl"},
          {"cwd", "/home/u/proj"},
          {"permission_mode", "default"},
          {"hook_event_name", event}};
}

// A UserPromptSubmit in `session` saying `text`.
Json claude_prompt(const std::string& session, const std::string& text) {
  Json prompt = claude_common("UserPromptSubmit");
  prompt["session_id"] = session;
  prompt["prompt"] = text;
  return prompt;
}

Json codex_common(const std::string& event) {
  return {{"session_id", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},
          {"turn_id", "0199a1b2-0000-7e5f-8a9b-0c1d2e3f4a5b"},
          {"transcript_path", nullptr},
          {"cwd", "/home/u/proj"},
          {"hook_event_name", event},
          {"model", "gpt-5.4"},
          {"permission_mode", "default"}};
}

const char* kPdfPrompt = "please add a PDF export of the quarterly report";

// Every documented Claude Code event (§1.4), plus later events that are ignored.
std::vector<Json> claude_code_events() {
  std::vector<Json> out;
  Json start = claude_common("SessionStart");
  start["source"] = "startup";
  start["model"] = "claude-sonnet-5";
  out.push_back(start);
  Json prompt = claude_common("UserPromptSubmit");
  prompt["prompt"] = kPdfPrompt;
  prompt["prompt_id"] = "prompt-1";
  out.push_back(prompt);
  Json pre = claude_common("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_input"] = {{"command", "npm test"}, {"description", "Run tests"}};
  pre["tool_use_id"] = "toolu_01X";
  pre["effort"] = {{"level", "high"}};
  out.push_back(pre);
  Json post = claude_common("PostToolUse");
  post["tool_name"] = "Write";
  post["tool_input"] = {{"file_path", "/home/u/proj/report.md"}, {"content", "# Report"}};
  post["tool_response"] = {{"success", true}};
  post["tool_use_id"] = "toolu_02Y";
  post["duration_ms"] = 12;
  out.push_back(post);
  Json stop = claude_common("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = "done";
  stop["background_tasks"] = Json::array();
  out.push_back(stop);
  Json subagent = claude_common("SubagentStop");
  subagent["stop_hook_active"] = true;
  subagent["last_assistant_message"] = nullptr;
  subagent["agent_id"] = "agent-1";
  subagent["agent_type"] = "code-reviewer";
  out.push_back(subagent);
  Json compact = claude_common("PreCompact");
  compact["trigger"] = "manual";
  compact["custom_instructions"] = "keep the report";
  out.push_back(compact);
  Json end = claude_common("SessionEnd");
  end["reason"] = "prompt_input_exit";
  out.push_back(end);
  for (const char* later : {"Notification", "PermissionRequest", "PostCompact", "CwdChanged"}) {
    out.push_back(claude_common(later));
  }
  for (auto& payload : out) payload = with_unknown_fields(payload);
  return out;
}

// Every documented Codex event (§3.1).
std::vector<Json> codex_events() {
  std::vector<Json> out;
  Json start = codex_common("SessionStart");
  start["source"] = "startup";
  out.push_back(start);
  Json prompt = codex_common("UserPromptSubmit");
  prompt["prompt"] = kPdfPrompt;
  out.push_back(prompt);
  Json pre = codex_common("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_use_id"] = "call_1";
  pre["tool_input"] = {{"command", "pytest -q"}};
  out.push_back(pre);
  Json post = codex_common("PostToolUse");
  post["tool_name"] = "apply_patch";
  post["tool_use_id"] = "call_2";
  post["tool_input"] = {{"command", "*** Begin Patch"}};
  post["tool_response"] = "ok";
  out.push_back(post);
  Json stop = codex_common("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = "done";
  out.push_back(stop);
  Json subagent = codex_common("SubagentStop");
  subagent["stop_hook_active"] = false;
  subagent["agent_id"] = "a-1";
  subagent["agent_type"] = "worker";
  out.push_back(subagent);
  Json pre_compact = codex_common("PreCompact");
  pre_compact["trigger"] = "auto";
  out.push_back(pre_compact);
  Json post_compact = codex_common("PostCompact");
  post_compact["trigger"] = "auto";
  out.push_back(post_compact);
  out.push_back(codex_common("SubagentStart"));
  for (auto& payload : out) payload = with_unknown_fields(payload);
  return out;
}

class HookCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared_dir_ = new TempDir();
    init_state(shared_state());
  }
  static void TearDownTestSuite() {
    delete shared_dir_;
    shared_dir_ = nullptr;
  }
  static fs::path shared_state() { return shared_dir_->path() / "state"; }
  static ProcessResult hook(const std::string& adapter, const std::string& payload,
                            const fs::path& state = shared_state()) {
    return ctx_process({"hook", adapter}, state, payload);
  }
  // `payload` through `ctx hook claude-code` on `state`: exit 0, nothing on stderr; the reply.
  static std::string quiet_reply(const Json& payload, const fs::path& state) {
    const auto r = hook("claude-code", payload.dump(), state);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return r.out;
  }

  static TempDir* shared_dir_;
};

TempDir* HookCommandTest::shared_dir_ = nullptr;

// Exit 0 with nothing, or one line holding the host's JSON reply object.
void expect_valid_reply(const ProcessResult& r, const std::string& adapter, const Json& payload) {
  const std::string event = payload["hook_event_name"];
  SCOPED_TRACE(adapter + " " + event);
  ASSERT_FALSE(r.timed_out);
  ASSERT_TRUE(r.exited) << "signal " << r.signal;
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  if (r.out.empty()) return;
  ASSERT_EQ(r.out.back(), '\n');
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  const Json reply = Json::parse(r.out);
  ASSERT_TRUE(reply.is_object());
  EXPECT_FALSE(reply.contains("decision"));
  EXPECT_FALSE(reply.contains("continue"));
  if (reply.contains("hookSpecificOutput")) {
    EXPECT_EQ(reply["hookSpecificOutput"]["hookEventName"], event);
    EXPECT_LE(reply["hookSpecificOutput"]["additionalContext"].get<std::string>().size(), 10000u);
  }
}

TEST_F(HookCommandTest, EveryDocumentedClaudeCodeEventGetsAValidReply) {
  for (const Json& payload : claude_code_events()) {
    const auto r = hook("claude-code", payload.dump());
    expect_valid_reply(r, "claude-code", payload);
    const std::string event = payload["hook_event_name"];
    if (event == "UserPromptSubmit") {
      EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
      const Json reply = Json::parse(r.out);
      EXPECT_THAT(reply["hookSpecificOutput"]["additionalContext"].get<std::string>(),
                  HasSubstr("pdf-export (skill)"));
    }
    // Undocumented events are ignored (no reply); documented ones with nothing to plan get the
    // host's empty reply object.
    if (event == "Notification" || event == "PermissionRequest" || event == "CwdChanged") {
      EXPECT_EQ(r.out, "") << event;
    }
    if (event == "SessionEnd" || event == "Stop" || event == "SubagentStop") {
      EXPECT_EQ(r.out, "{}\n") << event;
    }
  }
}

TEST_F(HookCommandTest, EveryDocumentedCodexEventGetsAValidReply) {
  for (const Json& payload : codex_events()) {
    const auto r = hook("codex", payload.dump());
    expect_valid_reply(r, "codex", payload);
    const std::string event = payload["hook_event_name"];
    if (event == "UserPromptSubmit") {
      EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
    }
    // Codex requires JSON on Stop and SubagentStop when exiting 0.
    if (event == "Stop" || event == "SubagentStop") {
      EXPECT_EQ(r.out, "{}\n") << event;
    }
  }
}

TEST_F(HookCommandTest, ThePdfPromptSurfacesTheSkillThroughEveryAdapter) {
  Json prompt = claude_common("UserPromptSubmit");
  prompt["prompt"] = "Export this document to PDF please";
  for (const char* adapter : {"claude-code", "codex", "generic"}) {
    const auto r = hook(adapter, prompt.dump());
    ASSERT_EQ(r.code, 0) << adapter << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)")) << adapter;
  }
}

// A server that has stopped taking connections (hung, or frozen with its listen queue full) is
// not waited for: its socket's connect would block until the server accepted, so `ctx hook`
// connects without blocking and, refused for a full queue, serves the hook in process.
TEST_F(HookCommandTest, AServerWhoseListenQueueIsFullIsNotWaitedFor) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  const fs::path socket_path = state / "ctx.sock";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.native().size(), sizeof(address.sun_path));
  std::strcpy(address.sun_path, socket_path.c_str());
  const auto connect_to = [&](int fd) {
    return ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  };
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);  // and never accepts
  std::vector<int> queued;
  for (;;) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    if (connect_to(fd) != 0) {
      ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
      ::close(fd);
      break;
    }
    queued.push_back(fd);
    ASSERT_LT(queued.size(), 64u);
  }
  Json prompt = claude_common("UserPromptSubmit");
  prompt["prompt"] = "Export this document to PDF please";
  const auto r = run_process({CTX_BINARY, "hook", "claude-code", "--state", state.string()},
                             prompt.dump(), std::chrono::seconds(30));
  EXPECT_FALSE(r.timed_out) << "ctx hook waited on a server that accepts nothing";
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
  for (const int fd : queued) ::close(fd);
  ::close(listener);
}

TEST_F(HookCommandTest, MalformedPayloadsGetTheNonBlockingError) {
  const std::string valid = claude_code_events()[1].dump();
  std::string deep(200000, '[');
  deep += std::string(200000, ']');
  std::string deep_object = "{\"session_id\":\"s\",\"hook_event_name\":\"UserPromptSubmit\",\"x\":";
  deep_object += std::string(100, '[') + std::string(100, ']') + "}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"truncated", valid.substr(0, valid.size() / 2)},
      {"10 MiB", "{\"prompt\":\"" + std::string(10u << 20, 'a') + "\"}"},
      {"just over 1 MiB", std::string((1u << 20) + 1, ' ')},
      {"invalid UTF-8",
       "{\"session_id\":\"abc\",\"hook_event_name\":\"UserPromptSubmit\","
       "\"prompt\":\"pdf \xff\xfe export\"}"},
      {"overlong UTF-8",
       "{\"session_id\":\"abc\",\"hook_event_name\":\"Stop\",\"x\":\"\xc0\xaf\"}"},
      {"deep nesting", deep},
      {"deep nesting in an object", deep_object},
      {"not an object", "[1,2,3]"},
      {"a string", "\"UserPromptSubmit\""},
      {"duplicate key", "{\"session_id\":\"a\",\"session_id\":\"b\",\"hook_event_name\":\"Stop\"}"},
      {"wrong type: session_id", "{\"session_id\":5,\"hook_event_name\":\"Stop\"}"},
      {"wrong type: prompt",
       "{\"session_id\":\"a\",\"hook_event_name\":\"UserPromptSubmit\","
       "\"prompt\":[\"pdf\"]}"},
      {"wrong type: tool_input",
       "{\"session_id\":\"a\",\"hook_event_name\":\"PreToolUse\","
       "\"tool_name\":\"Bash\",\"tool_input\":\"rm\"}"},
      {"wrong type: hook_event_name", "{\"session_id\":\"a\",\"hook_event_name\":7}"},
      {"missing prompt", "{\"session_id\":\"a\",\"hook_event_name\":\"UserPromptSubmit\"}"},
      {"binary", std::string("\x00\x01\x02{", 4)},
      {"a NUL byte, then more JSON", valid + std::string(1, '\0') + "{\"decision\":\"block\"}"},
      {"a byte order mark", "\xEF\xBB\xBF" + valid},
  };
  for (const char* adapter : {"claude-code", "codex"}) {
    for (const auto& [name, payload] : cases) {
      SCOPED_TRACE(std::string(adapter) + ": " + name);
      const auto r = hook(adapter, payload);
      ASSERT_FALSE(r.timed_out);
      ASSERT_TRUE(r.exited) << "signal " << r.signal;
      EXPECT_EQ(r.code, 1);
      EXPECT_EQ(r.out, "");
      EXPECT_THAT(r.err, StartsWith("ctx hook: "));
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_LT(r.err.size(), 300u);
      EXPECT_EQ(r.err.find("pdf"), std::string::npos) << r.err;
    }
  }
}

TEST_F(HookCommandTest, CommandLineAndStateProblemsNeverExitTwo) {
  const std::string valid = claude_code_events()[1].dump();
  TempDir empty;
  const std::vector<std::vector<std::string>> cases = {
      {CTX_BINARY, "hook"},
      {CTX_BINARY, "hook", "claude-code", "extra"},
      {CTX_BINARY, "hook", "claude-code", "--bogus"},
      {CTX_BINARY, "hook", "no-such-adapter", "--state", shared_state().string()},
      {CTX_BINARY, "hook", "Bad Adapter", "--state", shared_state().string()},
      {CTX_BINARY, "hook", "claude-code", "--state", (empty.path() / "none").string()},
  };
  for (const auto& args : cases) {
    const auto r = run_process(args, valid, std::chrono::seconds(60));
    ASSERT_TRUE(r.exited);
    EXPECT_EQ(r.code, 1) << args.back() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("ctx hook: ", 0), 0u) << r.err;
  }
}

// A marker word of the prompt (and of a tool command and a file path) is not catalog vocabulary:
// it must appear in no file of the state dir and in no output.
TEST_F(HookCommandTest, APromptMarkerWordNeverReachesAFileOrAnOutput) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  std::vector<Json> payloads;
  Json claude = claude_common("UserPromptSubmit");
  claude["prompt"] = std::string("export the ") + kMarker + " report as a pdf";
  payloads.push_back(claude);
  Json codex = codex_common("UserPromptSubmit");
  codex["prompt"] = std::string(kMarker) + " please make a PDF export";
  payloads.push_back(codex);
  Json tool = claude_common("PreToolUse");
  tool["tool_name"] = "Bash";
  tool["tool_input"] = {{"command", std::string("pdf export ") + kMarker}};
  payloads.push_back(tool);
  Json write = claude_common("PostToolUse");
  write["tool_name"] = "Write";
  write["tool_input"] = {{"file_path", std::string("/home/u/") + kMarker + ".py"},
                         {"content", kMarker}};
  payloads.push_back(write);
  std::string outputs;
  for (const auto& payload : payloads) {
    const std::string adapter = payload.contains("turn_id") ? "codex" : "claude-code";
    const auto r = hook(adapter, payload.dump(), state);
    ASSERT_EQ(r.code, 0) << r.err;
    outputs += r.out + r.err;
  }
  // A malformed payload's error does not quote it either.
  const auto bad = hook("claude-code", std::string("{\"prompt\":\"") + kMarker + "\xff\"}", state);
  EXPECT_EQ(bad.code, 1);
  outputs += bad.out + bad.err;
  EXPECT_THAT(outputs, HasSubstr("pdf-export"));
  EXPECT_EQ(outputs.find(kMarker), std::string::npos);
  std::size_t files = 0;
  for (const auto& item : fs::recursive_directory_iterator(state)) {
    if (!item.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(read_file(item.path()).find(kMarker), std::string::npos) << item.path();
  }
  EXPECT_GT(files, 5u);
  EXPECT_TRUE(fs::exists(state / "service/journal.sqlite3"));
}

// Two prompts in one session: the second either replans or shows the session's current plan.
TEST_F(HookCommandTest, ASecondPromptInTheSameSessionStillReplies) {
  Json first = codex_common("UserPromptSubmit");
  first["session_id"] = "session-two-prompts";
  first["prompt"] = "export the report as pdf";
  Json second = first;
  second["turn_id"] = "turn-2";
  second["prompt"] = "now convert the markdown notes to a pdf document";
  for (const auto& payload : {first, second, first}) {
    const auto r = hook("codex", payload.dump());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
  }
}

// Tool events never re-plan a session that has a plan (issue 36: a command's words are not the
// work, and a new plan would drop skills in use): after the prompt that brought a plan (and how
// to approve its skill), tool events get the empty reply; a session's first plan may come from a
// tool event (a recommendation), and later ones, whatever their words, get the empty reply.
TEST_F(HookCommandTest, AToolCallNeverReplansASessionThatHasAPlan) {
  Json prompt = claude_common("UserPromptSubmit");
  prompt["session_id"] = "session-tools-after-prompt";
  prompt["prompt"] = kPdfPrompt;
  const auto told = hook("claude-code", prompt.dump());
  ASSERT_EQ(told.code, 0) << told.err;
  EXPECT_THAT(told.out, HasSubstr("pdf-export (skill)"));
  EXPECT_THAT(told.out, HasSubstr("ctx consent approve"));
  Json pre = claude_common("PreToolUse");
  pre["session_id"] = "session-tools-after-prompt";
  pre["tool_name"] = "Bash";
  pre["tool_input"] = {{"command", "psql -f migrations/001_create_users.sql"}};
  for (int i = 0; i < 2; ++i) {
    const auto quiet = hook("claude-code", pre.dump());
    ASSERT_EQ(quiet.code, 0) << quiet.err;
    EXPECT_EQ(quiet.out, "{}\n");
  }

  const auto write = [](const std::string& file) {
    Json post = claude_common("PostToolUse");
    post["session_id"] = "session-tools-only";
    post["tool_name"] = "Write";
    post["tool_input"] = {{"file_path", "/home/u/proj/" + file}, {"content", "x"}};
    post["tool_response"] = {{"success", true}};
    return post.dump();
  };
  const auto first = hook("claude-code", write("tests/test_report.py"));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("python-testing (skill)"));
  EXPECT_EQ(hook("claude-code", write("tests/test_report.py")).out, "{}\n");
  EXPECT_EQ(hook("claude-code", write("migrations/001_create_users.sql")).out, "{}\n");
  EXPECT_EQ(hook("claude-code", write("tests/test_report.py")).out, "{}\n");
  expect_journal_verifies(shared_state());
}

// A state dir copied (as `cp -a` or a backup restore would) while a session awaits consent: the
// session's next prompt in the copy still replies, naming its plan but no approval to give, since
// the challenge it was offered names the original place.
TEST_F(HookCommandTest, APendingSessionInACopiedStateDirStillReplies) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  Json prompt = claude_prompt("session-before-copy", "export the report as pdf");
  const auto before = hook("claude-code", prompt.dump(), state);
  ASSERT_EQ(before.code, 0) << before.err;
  ASSERT_THAT(before.out, HasSubstr("ctx consent approve"));
  const fs::path copy = dir.path() / "copy";
  fs::copy(state, copy, fs::copy_options::recursive);
  fs::permissions(copy, fs::perms::owner_all, fs::perm_options::replace);
  const auto after = hook("claude-code", prompt.dump(), copy);
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("pdf-export (skill)"));
  EXPECT_THAT(after.out, Not(HasSubstr("ctx consent approve")));
  EXPECT_EQ(hook("claude-code", prompt.dump(), state).out, before.out);  // the original still asks
}

// A published graph copy changed on disk (here its header's two format bytes set to WAL, as
// `sqlite3 FILE 'PRAGMA journal_mode=WAL'` does to any file it opens): the next prompt still
// replies with its plan, and the copy under registry/artifacts/ holds its digest's bytes again.
TEST_F(HookCommandTest, APublishedGraphCopyChangedOnDiskIsRestoredAndHooksStillReply) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  Json prompt = claude_prompt("session-before-change", "export the report as pdf");
  ASSERT_EQ(hook("claude-code", prompt.dump(), state).code, 0);
  std::vector<fs::path> copies;
  for (const auto& entry : fs::directory_iterator(state / "registry" / "artifacts")) {
    copies.push_back(entry.path());
  }
  ASSERT_EQ(copies.size(), 1u);
  const fs::path copy = copies.front();
  const std::string digest = copy.stem().string();
  fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(18);
    file.write("\x02\x02", 2);
  }
  fs::permissions(copy, fs::perms::owner_read, fs::perm_options::replace);
  ASSERT_NE(core::sha256_hex(read_file(copy)), digest);
  prompt["session_id"] = "session-after-change";
  const auto after = hook("claude-code", prompt.dump(), state);
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("pdf-export (skill)"));
  EXPECT_EQ(core::sha256_hex(read_file(copy)), digest);
}

// The consent a prompt asks for is for its best-ranked installable capability of any kind a
// pinned installer installs (ctx init pins the agent and MCP installers): an agent, under a
// preapproved-auto agent policy, is installed into the project's .claude/agents; an MCP server
// asks for consent even under preapproved-auto (it runs a command) and nothing is written into
// the project's .mcp.json before that consent.
TEST_F(HookCommandTest, AgentsAndMcpServersAreChosenAndAskedForLikeSkills) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  const fs::path project = dir.path() / "project";
  init_state(state);
  fs::create_directories(project);
  ASSERT_EQ(
      ctx_process({"hooks", "install", "claude-code", "--project", project.string()}, state, "")
          .code,
      0);
  ASSERT_EQ(ctx_process({"policy", "set", "agent", "preapproved-auto"}, state, "").code, 0);
  ASSERT_EQ(ctx_process({"policy", "set", "mcp-server", "preapproved-auto"}, state, "").code, 0);
  Json review =
      claude_prompt("session-agent", "review this diff for correctness, security and readability");
  review["cwd"] = project.string();
  const auto reviewed = hook("claude-code", review.dump(), state);
  ASSERT_EQ(reviewed.code, 0) << reviewed.err;
  EXPECT_THAT(reviewed.out, HasSubstr("ctx installed: code-reviewer (agent)"));
  EXPECT_EQ(read_file(project / ".claude/agents/code-reviewer.md"),
            read_file(kSource / "examples/catalog/agents/code-reviewer.md"));

  Json docs = claude_prompt("session-mcp", "search the library and framework documentation pages");
  docs["cwd"] = project.string();
  const auto searched = hook("claude-code", docs.dump(), state);
  ASSERT_EQ(searched.code, 0) << searched.err;
  EXPECT_THAT(searched.out, HasSubstr("consent to install docs-search (mcp-server)"));
  EXPECT_FALSE(fs::exists(project / ".mcp.json"));
  const auto shown = ctx_process({"consent", "show"}, state, "");
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("docs-search (mcp-server) asks for install consent"));
  expect_journal_verifies(state);
}

// `ctx policy set` while a session awaits consent strands that request (it was asked for under
// the old policy): policy set says so on stderr, and the session's prompts still reply (exit 0),
// saying why nothing can be approved and when ctx plans again; set back, it asks again.
TEST_F(HookCommandTest, APolicyChangeUnderAPendingConsentIsExplainedNotAFailure) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  Json prompt = claude_prompt("session-policy-change", "export the report as pdf");
  const auto before = hook("claude-code", prompt.dump(), state);
  ASSERT_EQ(before.code, 0) << before.err;
  ASSERT_THAT(before.out, HasSubstr("ctx consent approve"));

  const auto changed = ctx_process({"policy", "set", "skill", "preapproved-auto"}, state, "");
  ASSERT_EQ(changed.code, 0) << changed.err;
  EXPECT_THAT(changed.err, HasSubstr("1 pending consent request(s) were asked for under the "
                                     "previous policy"));
  // The same work is told why nothing can be approved; other work gets its own plan (issue 36:
  // the plan follows the work), here installed under the new preapproved-auto policy.
  Json other = prompt;
  other["prompt"] = "write the sql migrations";
  for (const Json& payload : {prompt, other, prompt}) {
    const auto r = hook("claude-code", payload.dump(), state);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    if (payload == other) {
      EXPECT_THAT(r.out, HasSubstr("ctx recommends: sql-migrations (skill)"));
      EXPECT_THAT(r.out, Not(HasSubstr("pdf-export")));
    } else {
      EXPECT_THAT(r.out, HasSubstr("cannot ask for approval of pdf-export (skill) now"));
    }
    EXPECT_THAT(r.out, Not(HasSubstr("ctx consent approve")));
    const Json reply = Json::parse(r.out);
    EXPECT_EQ(reply["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
  }
  const auto unchanged = ctx_process({"policy", "set", "agent", "ask-each-time"}, state, "");
  ASSERT_EQ(unchanged.code, 0) << unchanged.err;
  EXPECT_EQ(unchanged.err, "");  // the same policy again strands nothing

  ASSERT_EQ(ctx_process({"policy", "set", "skill", "ask-each-time"}, state, "").code, 0);
  EXPECT_EQ(hook("claude-code", prompt.dump(), state).out, before.out);
  expect_journal_verifies(state);
}

// Under a preapproved-auto policy a prompt's skill is installed and activated where Claude Code
// loads the project's skills; it stays while one of the project's last three prompts planned it
// (issue 36's deactivation rule), and the third prompt without it removes it (and says so); a
// later prompt that wants it brings it back. The journal verifies throughout.
TEST_F(HookCommandTest, APreapprovedSkillIsActivatedAndLeavesByTheProjectsPromptRule) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  const fs::path project = dir.path() / "project";
  init_preapproved_project(state, project);
  const fs::path skill = project / ".claude/skills/pdf-export/SKILL.md";
  Json prompt = claude_common("UserPromptSubmit");
  prompt["session_id"] = "session-preapproved";
  prompt["cwd"] = project.string();
  const auto say = [&](const std::string& text) {
    Json payload = prompt;
    payload["prompt"] = text;
    return quiet_reply(payload, state);
  };
  const auto verify = [&] { expect_journal_verifies(state); };
  EXPECT_THAT(say("export the report as pdf"), HasSubstr("ctx installed: pdf-export (skill)."));
  EXPECT_TRUE(fs::exists(skill));
  verify();
  EXPECT_THAT(say("write the sql migrations"), Not(HasSubstr("deactivated")));
  EXPECT_THAT(say("and a rollback for the sql migrations"), Not(HasSubstr("deactivated")));
  EXPECT_TRUE(fs::exists(skill));
  EXPECT_THAT(say("now test the sql migrations"),
              HasSubstr("ctx deactivated: pdf-export (skill)."));
  EXPECT_FALSE(fs::exists(skill));
  verify();
  EXPECT_THAT(say("export the report as pdf"), HasSubstr("ctx installed: pdf-export (skill)."));
  EXPECT_TRUE(fs::exists(skill));
  verify();
}

// SessionEnd releases what the session holds active, but a skill the project's recent prompts
// planned stays in its skills folder for the project's next session; the stream stays open, so
// the same session resumed brings the skill back with its next prompt. A session that holds
// nothing writes nothing at its end. Three prompts of the project without it retire it.
TEST_F(HookCommandTest, SessionEndKeepsWhatTheProjectsNextSessionWants) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  const fs::path project = dir.path() / "project";
  init_preapproved_project(state, project);
  const fs::path skill = project / ".claude/skills/pdf-export/SKILL.md";
  const auto send = [&](const Json& payload) { return quiet_reply(payload, state); };
  const auto prompt = [&](const std::string& session, const std::string& text) {
    Json payload = claude_prompt(session, text);
    payload["cwd"] = project.string();
    return send(payload);
  };
  const auto end = [&](const std::string& session) {
    Json payload = claude_common("SessionEnd");
    payload["session_id"] = session;
    payload["cwd"] = project.string();
    payload["reason"] = "prompt_input_exit";
    return send(payload);
  };
  const auto verify = [&] { expect_journal_verifies(state); };
  // Each session holding the skill is one file under activation-holders/.
  const auto holders = [&] {
    int count = 0;
    for (const auto& entry : fs::recursive_directory_iterator(state / "activation-holders")) {
      count += entry.is_regular_file() ? 1 : 0;
    }
    return count;
  };
  const auto journal_records = [&] {
    return ctx::testing::journal::raw_count(state / "service/journal.sqlite3", "engine_journal");
  };
  const char* pdf = "export the report as pdf";
  EXPECT_THAT(prompt("session-a", pdf), HasSubstr("ctx installed: pdf-export (skill)."));
  EXPECT_THAT(prompt("session-b", pdf), HasSubstr("ctx installed: pdf-export (skill)."));
  ASSERT_TRUE(fs::exists(skill));
  ASSERT_EQ(holders(), 2);
  end("session-a");
  EXPECT_TRUE(fs::exists(skill));
  EXPECT_EQ(holders(), 1);
  verify();
  end("session-b");
  EXPECT_TRUE(fs::exists(skill)) << "the project's recent prompts want it";
  EXPECT_EQ(holders(), 0);
  verify();
  // Ending again (a retry) and ending a session that never held anything write nothing.
  const auto records = journal_records();
  end("session-b");
  end("session-never-started");
  EXPECT_EQ(journal_records(), records);
  // Resumed, the session's next prompt activates it again (already in place).
  EXPECT_THAT(prompt("session-b", pdf), HasSubstr("ctx installed: pdf-export (skill)."));
  EXPECT_TRUE(fs::exists(skill));
  EXPECT_EQ(holders(), 1);
  end("session-b");
  // Three prompts of the project that do not plan it: it leaves with the third.
  EXPECT_THAT(prompt("session-c", "write the sql migrations"), Not(HasSubstr("deactivated")));
  EXPECT_THAT(prompt("session-c", "a rollback for the sql migrations"),
              Not(HasSubstr("deactivated")));
  EXPECT_TRUE(fs::exists(skill));
  EXPECT_THAT(prompt("session-c", "test the sql migrations"),
              HasSubstr("ctx deactivated: pdf-export (skill)."));
  EXPECT_FALSE(fs::exists(skill));
  verify();
}

// Real races: six `ctx hook` processes released together on a fresh state dir, first with the
// same prompt (one plan, six identical replies), then with six different prompts in one session
// (each replies; the journal verifies afterwards).
TEST_F(HookCommandTest, ConcurrentHooksOnOneSessionAllReplyAndTheJournalVerifies) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  init_state(state);
  constexpr int kProcesses = 6;
  const auto race = [&](const std::vector<std::string>& payloads) {
    std::vector<ProcessResult> results(payloads.size());
    std::barrier start(static_cast<std::ptrdiff_t>(payloads.size()));
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        results[i] = hook("claude-code", payloads[i], state);
      });
    }
    for (auto& t : threads) t.join();
    return results;
  };
  Json same = claude_prompt("race-same", "export the report as pdf");
  const auto first = race(std::vector<std::string>(kProcesses, same.dump()));
  for (const auto& r : first) {
    ASSERT_TRUE(r.exited) << r.signal;
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, first[0].out);
  }
  EXPECT_THAT(first[0].out, HasSubstr("pdf-export (skill)"));
  const char* words[] = {"markdown", "docker", "python", "node", "review", "typescript"};
  std::vector<std::string> distinct;
  for (const char* word : words) {
    Json payload = claude_common("UserPromptSubmit");
    payload["session_id"] = "race-distinct";
    payload["prompt"] = std::string("export the report as pdf ") + word;
    distinct.push_back(payload.dump());
  }
  for (const auto& r : race(distinct)) {
    ASSERT_TRUE(r.exited) << r.signal;
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
  }
  expect_journal_verifies(state);
}

// OpenSSL reads no configuration file in ctx: an $OPENSSL_CONF naming a provider module (a .so
// whose constructor writes a marker file) does load it into the openssl binary (the control), and
// never into ctx, whose hook still replies (HMAC and SHA-256 from the built-in provider).
TEST_F(HookCommandTest, AnOpensslConfigNamingAProviderModuleRunsNoCodeInCtx) {
  const fs::path conf = shared_dir_->path() / "provider.cnf";
  const fs::path marker = shared_dir_->path() / "provider-marker";
  std::ofstream(conf) << "openssl_conf = openssl_init\n[openssl_init]\nproviders = providers\n"
                         "[providers]\ndefault = default_provider\nextra = extra_provider\n"
                         "[default_provider]\nactivate = 1\n"
                         "[extra_provider]\nmodule = "
                      << CTX_FIXTURE_CTOR_MARKER << "\nactivate = 1\n";
  const std::vector<std::string> env = {"OPENSSL_CONF=" + conf.string(),
                                        "CTX_TEST_MARKER=" + marker.string()};
  const auto control =
      run_process({"/usr/bin/openssl", "version"}, "", std::chrono::seconds(60), env);
  ASSERT_TRUE(control.exited);
  ASSERT_TRUE(fs::exists(marker)) << "the configuration does not load its module: no control";
  fs::remove(marker);
  Json prompt = claude_common("UserPromptSubmit");
  prompt["prompt"] = "Export this document to PDF please";
  const auto r =
      run_process({CTX_BINARY, "hook", "claude-code", "--state", shared_state().string()},
                  prompt.dump(), std::chrono::seconds(120), env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pdf-export (skill)"));
  EXPECT_FALSE(fs::exists(marker)) << "ctx ran a module its OpenSSL configuration named";
}

}  // namespace
}  // namespace ctx::cli
