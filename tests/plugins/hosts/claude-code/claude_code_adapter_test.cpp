#include "plugins/hosts/claude-code/core/claude_code_adapter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::claude_code_host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kConfig[] =
    R"({"installation_key":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})";
constexpr char kMarker[] = "Zqxmarkerword";  // a prompt word no output may carry, but signals
const std::string kDigest(64, 'c');

// The common fields of spec §1.4 plus fields no version of Claude Code sends.
Json base(const char* event) {
  return {{"session_id", "abc123"},
          {"transcript_path", "/home/u/.claude/projects/p/abc123.jsonl"},
          {"cwd", "/home/u/proj"},
          {"permission_mode", "default"},
          {"hook_event_name", event},
          {"prompt_id", "prm_01"},
          {"effort", {{"level", "high"}}},
          {"future_field", {{"nested", {1, 2, 3}}}},
          {"another_unknown", nullptr}};
}

// One payload per documented event, built from spec §1.4.
std::vector<Json> documented_payloads() {
  std::vector<Json> out;
  Json start = base("SessionStart");
  start["source"] = "startup";
  start["model"] = "claude-sonnet-5";
  start["session_title"] = "Fix the build";
  out.push_back(start);
  Json prompt = base("UserPromptSubmit");
  prompt["prompt"] = std::string("add a PDF export please ") + kMarker;
  out.push_back(prompt);
  Json pre = base("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_input"] = {{"command", "npm test"}, {"description", "Run tests"}, {"timeout", 120000}};
  pre["tool_use_id"] = "toolu_01X";
  out.push_back(pre);
  Json post = base("PostToolUse");
  post["tool_name"] = "Write";
  post["tool_input"] = {{"file_path", "/home/u/proj/src/report.py"}, {"content", kMarker}};
  post["tool_response"] = {{"success", true}, {"filePath", "/home/u/proj/src/report.py"}};
  post["tool_use_id"] = "toolu_02Y";
  post["duration_ms"] = 12;
  out.push_back(post);
  Json stop = base("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = std::string("Done: ") + kMarker;
  stop["background_tasks"] = Json::array();
  stop["session_crons"] = Json::array();
  out.push_back(stop);
  Json sub = base("SubagentStop");
  sub["stop_hook_active"] = true;
  sub["agent_id"] = "agent-7";
  sub["agent_type"] = "Explore";
  sub["last_assistant_message"] = kMarker;
  out.push_back(sub);
  Json compact = base("PreCompact");
  compact["trigger"] = "manual";
  compact["custom_instructions"] = std::string("keep ") + kMarker;
  out.push_back(compact);
  Json end = base("SessionEnd");
  end["reason"] = "prompt_input_exit";
  out.push_back(end);
  return out;
}

std::vector<std::string> signals_of(const Json& parsed) {
  return parsed.at("signals").get<std::vector<std::string>>();
}

TEST(ClaudeCodeAdapter, ParsesEveryDocumentedEvent) {
  const ClaudeCodeAdapter adapter(kConfig);
  const std::vector<Json> payloads = documented_payloads();
  ASSERT_EQ(payloads.size(), documented_events().size());
  std::set<std::string> seen;
  std::set<std::string> refs;
  for (const Json& payload : payloads) {
    const std::string event = payload.at("hook_event_name");
    SCOPED_TRACE(event);
    const Json parsed = adapter.parse_hook(payload.dump());
    EXPECT_EQ(parsed.at("event"), event);
    EXPECT_EQ(parsed.at("adapter"), "claude-code");
    const Json& scope = parsed.at("scope");
    EXPECT_EQ(scope.at("session_id"), "abc123");
    EXPECT_EQ(scope.at("tenant_id"), "local");
    EXPECT_EQ(scope.at("exposure_id"), "claude-code");
    EXPECT_THAT(scope.at("workspace_id").get<std::string>(), ::testing::StartsWith("ws-"));
    EXPECT_EQ(scope.at("repository_id"), scope.at("workspace_id"));
    const std::string ref = parsed.at("work_ref").at("id");
    EXPECT_THAT(ref, ::testing::MatchesRegex("wrk_[0-9a-f]{64}"));
    refs.insert(ref);
    seen.insert(event);
  }
  EXPECT_EQ(seen, documented_events());
  EXPECT_EQ(refs.size(), payloads.size()) << "each event has its own work reference";
}

TEST(ClaudeCodeAdapter, ExtractsEventSignalsAndContext) {
  const ClaudeCodeAdapter adapter(kConfig);
  const std::vector<Json> payloads = documented_payloads();
  const auto parsed = [&](std::size_t i) { return adapter.parse_hook(payloads[i].dump()); };
  EXPECT_THAT(signals_of(parsed(1)),
              ElementsAre("a", "add", "export", "pdf", "please", "zqxmarkerword"));
  EXPECT_THAT(signals_of(parsed(2)), ElementsAre("bash", "npm", "test"));
  EXPECT_THAT(signals_of(parsed(3)), ElementsAre("py", "python", "write"));
  for (std::size_t i : {0u, 4u, 5u, 6u, 7u}) EXPECT_THAT(signals_of(parsed(i)), IsEmpty());
  EXPECT_EQ(parsed(0).at("context"), (Json{{"source", "startup"}}));
  EXPECT_EQ(parsed(5).at("context"), (Json{{"subagent", true}}));
  EXPECT_EQ(parsed(6).at("context"), (Json{{"trigger", "manual"}}));
  EXPECT_EQ(parsed(7).at("context"), (Json{{"reason", "prompt_input_exit"}}));
  Json odd = payloads[7];
  odd["reason"] = "Some New Reason!";
  EXPECT_EQ(adapter.parse_hook(odd.dump()).at("context"), (Json{{"reason", "other"}}));
}

TEST(ClaudeCodeAdapter, LaterAndUnknownEventsAreIgnored) {
  const ClaudeCodeAdapter adapter(kConfig);
  for (const char* event :
       {"Setup", "Notification", "PermissionRequest", "PostToolBatch", "UserPromptExpansion",
        "PostCompact", "SubagentStart", "CwdChanged", "SomethingFrom2030"}) {
    SCOPED_TRACE(event);
    Json payload = base(event);
    payload["prompt"] = std::string("anything ") + kMarker;
    payload["tool_name"] = "Bash";
    payload["message"] = kMarker;
    const Json parsed = adapter.parse_hook(payload.dump());
    EXPECT_EQ(parsed.at("event"), "ignored");
    EXPECT_THAT(signals_of(parsed), IsEmpty());
    EXPECT_EQ(parsed.at("context"), Json::object());
    EXPECT_THAT(parsed.dump(), Not(HasSubstr("arker")));
    EXPECT_EQ(adapter.render_reply(R"({"event":"ignored","actions":[{"kind":"PresentBundle",)"
                                   R"("entity_id":"skill:pdf"}]})"),
              Json::object());
  }
}

TEST(ClaudeCodeAdapter, NoPromptTextLeavesTheAdapterOutsideSignalTokens) {
  const ClaudeCodeAdapter adapter(kConfig);
  for (const Json& payload : documented_payloads()) {
    SCOPED_TRACE(payload.at("hook_event_name").get<std::string>());
    Json parsed = adapter.parse_hook(payload.dump());
    parsed.erase("signals");
    const std::string rest = parsed.dump();
    EXPECT_THAT(rest, Not(HasSubstr("arker")));
    EXPECT_THAT(rest, Not(HasSubstr("PDF")));
    EXPECT_THAT(rest, Not(HasSubstr("proj")));    // the cwd
    EXPECT_THAT(rest, Not(HasSubstr("npm")));     // the tool input
    EXPECT_THAT(rest, Not(HasSubstr(".jsonl")));  // the transcript path
  }
  // A marker that is not a word token never appears at all, not even among the signals.
  Json payload = base("UserPromptSubmit");
  const std::string secret = "ghp_" + std::string(70, 'Q');
  payload["prompt"] = "deploy with token " + secret + " and marker-Zqx-42 now";
  const std::string out = adapter.parse_hook(payload.dump()).dump();
  EXPECT_THAT(out, Not(HasSubstr("marker-Zqx-42")));
  EXPECT_THAT(out, Not(HasSubstr("QQQQ")));
  EXPECT_THAT(out, Not(HasSubstr("deploy with")));
}

TEST(ClaudeCodeAdapter, MalformedPayloadsAreTypedErrors) {
  const ClaudeCodeAdapter adapter(kConfig);
  Json prompt = base("UserPromptSubmit");
  prompt["prompt"] = std::string("x ") + kMarker;
  const std::string good = prompt.dump();
  std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "not valid json"},
      {"", "empty"},
      {R"(["UserPromptSubmit"])", "not a json object"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"a","prompt":"b"})",
       "duplicate key"},
      {std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":")") +
           std::string(10u << 20, 'a') + "\"}",
       "larger than 1 MiB"},
      {"{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"s\",\"prompt\":\"\xC3\x28\"}",
       "UTF-8"},
      {std::string(R"({"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash",)"
                   R"("tool_input":)") +
           std::string(5000, '[') + std::string(5000, ']') + "}",
       "nested too deeply"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s"})", "prompt"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":["a"]})", "prompt"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":5,"prompt":"a"})", "session_id"},
      {R"({"session_id":"s","prompt":"a"})", "hook_event_name"},
      {R"({"hook_event_name":7,"session_id":"s"})", "hook_event_name"},
      {R"({"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":"ls"})",
       "tool_input"},
      {R"({"hook_event_name":"PreToolUse","session_id":"s","tool_input":{}})", "tool_name"},
      {R"({"hook_event_name":"Stop","session_id":"s","stop_hook_active":"no"})",
       "stop_hook_active"},
      {R"({"hook_event_name":"SessionStart","session_id":"s","cwd":["/"]})", "cwd"},
  };
  for (const auto& [payload, keyword] : cases) {
    SCOPED_TRACE(keyword);
    try {
      adapter.parse_hook(payload);
      ADD_FAILURE() << "accepted a malformed payload";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr(keyword));
      EXPECT_THAT(e.what(), Not(HasSubstr("arker")));
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(ClaudeCodeAdapter, WithoutAnInstallationKeyParsingFailsClosed) {
  const ClaudeCodeAdapter adapter("");
  try {
    adapter.parse_hook(documented_payloads()[1].dump());
    FAIL() << "parsed without a key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_EQ(adapter.render_reply(R"({"actions":[]})"), Json::object());
}

TEST(ClaudeCodeAdapter, TheWorkReferenceDependsOnTheKeyAndIsDeterministic) {
  const ClaudeCodeAdapter adapter(kConfig);
  const ClaudeCodeAdapter same(kConfig);
  const ClaudeCodeAdapter other(
      R"({"installation_key":"ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})");
  const std::string payload = documented_payloads()[1].dump();
  EXPECT_EQ(adapter.parse_hook(payload), same.parse_hook(payload));
  EXPECT_NE(adapter.parse_hook(payload).at("work_ref"), other.parse_hook(payload).at("work_ref"));
  EXPECT_NE(adapter.parse_hook(payload).at("scope").at("workspace_id"),
            other.parse_hook(payload).at("scope").at("workspace_id"));
}

Json reply_request(const char* event) {
  return {{"event", event},
          {"actions",
           {{{"kind", "PresentBundle"},
             {"payload", {{"capabilities", {{{"capability_id", "skill:pdf-export"}}}}}}},
            {{"kind", "RequestConsent"}, {"entity_id", "skill:pdf-export"}}}},
          {"challenge", {{"challenge_digest", kDigest}, {"capability_id", "skill:pdf-export"}}}};
}

TEST(ClaudeCodeAdapter, RendersHookSpecificOutputForContextEvents) {
  const ClaudeCodeAdapter adapter(kConfig);
  for (const char* event : {"UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionStart"}) {
    SCOPED_TRACE(event);
    const Json reply = adapter.render_reply(reply_request(event).dump());
    const std::string context = reply.at("hookSpecificOutput").at("additionalContext");
    EXPECT_EQ(reply.at("hookSpecificOutput").at("hookEventName"), event);
    EXPECT_THAT(context, HasSubstr("ctx recommends: pdf-export (skill)."));
    EXPECT_THAT(context, HasSubstr("ctx consent approve " + kDigest + " --key FILE"));
    EXPECT_THAT(context, HasSubstr("ctx consent deny " + kDigest + " --key FILE"));
    EXPECT_EQ(reply.at("systemMessage"), context);
    EXPECT_FALSE(reply.at("hookSpecificOutput").contains("reloadSkills"));
    for (const char* never : {"decision", "continue", "permissionDecision", "reason"}) {
      EXPECT_FALSE(reply.contains(never)) << never;
      EXPECT_FALSE(reply.at("hookSpecificOutput").contains(never)) << never;
    }
  }
}

TEST(ClaudeCodeAdapter, SessionStartAfterAnInstallReloadsSkills) {
  const ClaudeCodeAdapter adapter(kConfig);
  const Json reply = adapter.render_reply(
      R"({"event":"SessionStart","actions":[],"installed":["skill:pdf","skill:xlsx"]})");
  EXPECT_EQ(reply, (Json{{"hookSpecificOutput",
                          {{"hookEventName", "SessionStart"},
                           {"additionalContext", "ctx installed: pdf (skill), xlsx (skill)."},
                           {"reloadSkills", true}}},
                         {"systemMessage", "ctx installed: pdf (skill), xlsx (skill)."}}));
  // Only SessionStart carries reloadSkills.
  const Json prompt = adapter.render_reply(
      R"({"event":"UserPromptSubmit","actions":[],"installed":["skill:pdf"]})");
  EXPECT_FALSE(prompt.at("hookSpecificOutput").contains("reloadSkills"));
}

TEST(ClaudeCodeAdapter, OtherEventsGetAMessageOrNothing) {
  const ClaudeCodeAdapter adapter(kConfig);
  for (const char* event : {"Stop", "SubagentStop", "PreCompact"}) {
    SCOPED_TRACE(event);
    const Json reply = adapter.render_reply(reply_request(event).dump());
    ASSERT_EQ(reply.size(), 1u) << reply.dump();
    EXPECT_THAT(reply.at("systemMessage").get<std::string>(), HasSubstr("ctx consent approve"));
    EXPECT_EQ(adapter.render_reply((Json{{"event", event}, {"actions", Json::array()}}).dump()),
              Json::object());
  }
  EXPECT_EQ(adapter.render_reply(reply_request("SessionEnd").dump()), Json::object());
  EXPECT_EQ(adapter.render_reply(R"({"event":"UserPromptSubmit","actions":[]})"), Json::object());
  const Json no_event = adapter.render_reply(
      R"({"actions":[{"kind":"SuggestCapability","capability_id":"skill:pdf"}]})");
  EXPECT_EQ(no_event, (Json{{"systemMessage", "ctx recommends: pdf (skill)."}}));
}

TEST(ClaudeCodeAdapter, AdditionalContextIsAtMostTenThousandCharacters) {
  const ClaudeCodeAdapter adapter(kConfig);
  Json request = {{"event", "UserPromptSubmit"}, {"actions", Json::array()}};
  Json challenges = Json::array();
  for (int i = 0; i < 64; ++i) {
    const std::string id = "skill:" + std::string(115, 'z') + std::to_string(100 + i);
    request["actions"].push_back({{"kind", "RequestConsent"}, {"entity_id", id}});
    challenges.push_back({{"challenge_digest", kDigest}, {"capability_id", id}});
  }
  request["challenges"] = challenges;
  const Json reply = adapter.render_reply(request.dump());
  EXPECT_LE(reply.at("hookSpecificOutput").at("additionalContext").get<std::string>().size(),
            10000u);
  EXPECT_LE(reply.at("systemMessage").get<std::string>().size(), 10000u);
}

TEST(ClaudeCodeAdapter, MalformedReplyRequestsAreTypedErrors) {
  const ClaudeCodeAdapter adapter(kConfig);
  CTX_EXPECT_THROW(adapter.render_reply("{}"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[],"challenge":{"challenge_digest":"x"}})"),
                   InvalidArgument, "challenge_digest");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[],"event":5})"), InvalidArgument, "event");
}

TEST(ClaudeCodeAdapter, InstallLocations) {
  EXPECT_EQ(
      ClaudeCodeAdapter(kConfig).install_locations(),
      (Json{{"scope", "project"},
            {"skills", ".claude/skills"},
            {"agents", ".claude/agents"},
            {"mcp", ".mcp.json"},
            {"mcp_format", "json"},
            {"user",
             {{"skills", "~/.claude/skills"},
              {"agents", "~/.claude/agents"},
              {"mcp", "~/.claude.json"}}},
            {"project",
             {{"skills", ".claude/skills"}, {"agents", ".claude/agents"}, {"mcp", ".mcp.json"}}}}));
  const Json user = ClaudeCodeAdapter(R"({"scope":"user","home":"/home/u","project_dir":"/w/p"})")
                        .install_locations();
  EXPECT_EQ(user.at("skills"), "/home/u/.claude/skills");
  EXPECT_EQ(user.at("agents"), "/home/u/.claude/agents");
  EXPECT_EQ(user.at("project").at("skills"), "/w/p/.claude/skills");
  EXPECT_EQ(user.at("project").at("mcp"), "/w/p/.mcp.json");
}

TEST(ClaudeCodeAdapter, RejectsBadConfigs) {
  CTX_EXPECT_THROW(ClaudeCodeAdapter("[]"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(ClaudeCodeAdapter(R"({"skills_dir":"x"})"), InvalidArgument, "unknown member");
  CTX_EXPECT_THROW(ClaudeCodeAdapter(R"({"installation_key":"00"})"), InvalidArgument, "64 hex");
}

}  // namespace
}  // namespace ctx::claude_code_host

namespace ctx::claude_code_host {
namespace {

// Every prefix of every documented payload and every single-byte corruption of one: the adapter
// either parses it or throws InvalidArgument — never another exception, never a crash.
TEST(ClaudeCodeAdapter, TruncatedAndCorruptedPayloadsOnlyEverFailTyped) {
  const ClaudeCodeAdapter adapter(kConfig);
  std::size_t refused = 0;
  const auto feed = [&](const std::string& bytes) {
    try {
      const Json parsed = adapter.parse_hook(bytes);
      EXPECT_TRUE(parsed.at("work_ref").is_object());
    } catch (const InvalidArgument&) {
      ++refused;
    }
  };
  for (const Json& payload : documented_payloads()) {
    const std::string text = payload.dump();
    for (std::size_t n = 0; n < text.size(); ++n) feed(text.substr(0, n));
  }
  const std::string text = documented_payloads()[3].dump();
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (const char replacement : {'\0', '"', '{', ']', '\xC3', '\xFF', '9'}) {
      std::string corrupted = text;
      corrupted[i] = replacement;
      feed(corrupted);
    }
  }
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace ctx::claude_code_host
