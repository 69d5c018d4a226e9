// The Claude Code and Codex adapters, one table-driven suite: each host is a HostCase (its real
// hook payloads from host-formats.md §1.4 / §3.1 with unknown fields added, the signals and
// context each must yield, the events it ignores, its reply shape and install locations), and
// every test runs for both.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plugins/hosts/claude-code/core/claude_code_adapter.hpp"
#include "plugins/hosts/codex/core/codex_adapter.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::host_adapters {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kConfig[] =
    R"({"installation_key":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})";
constexpr char kOtherKeyConfig[] =
    R"({"installation_key":"ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})";
constexpr char kMarker[] = "Zqxmarkerword";  // a prompt word no output may carry, but signals
const std::string kDigest(64, 'c');

using AdapterFactory = std::function<std::unique_ptr<NativeHostAdapter>(std::string_view)>;

// One host: how to make its adapter and what its real payloads must give.
struct HostCase {
  std::string name;
  AdapterFactory make;
  std::string session_id;
  std::function<Json(const char* event)> base;  // the common fields plus unknown ones
  std::vector<Json> payloads;                   // one per documented event, in this order
  std::map<std::string, std::vector<std::string>> signals;  // event -> signals (else none)
  std::map<std::string, Json> contexts;                     // event -> context (else {})
  std::vector<std::string> ignored_events;
  bool reloads_skills = false;
  Json default_locations;  // install_locations() with kConfig
  std::string user_config;
  std::map<std::string, std::string> user_locations;  // JSON pointer -> value
};

std::string marker_text(const char* before) { return std::string(before) + kMarker; }

HostCase claude_code_case() {
  HostCase c;
  c.name = "ClaudeCode";
  c.make = [](std::string_view config) {
    return std::make_unique<claude_code_host::ClaudeCodeAdapter>(config);
  };
  c.session_id = "abc123";
  c.base = [](const char* event) {
    return Json{{"session_id", "abc123"},
                {"transcript_path", "/home/u/.claude/projects/p/abc123.jsonl"},
                {"cwd", "/home/u/proj"},
                {"permission_mode", "default"},
                {"hook_event_name", event},
                {"prompt_id", "prm_01"},
                {"effort", {{"level", "high"}}},
                {"future_field", {{"nested", {1, 2, 3}}}},
                {"another_unknown", nullptr}};
  };
  Json start = c.base("SessionStart");
  start["source"] = "startup";
  start["model"] = "claude-sonnet-5";
  start["session_title"] = "Fix the build";
  Json prompt = c.base("UserPromptSubmit");
  prompt["prompt"] = marker_text("add a PDF export please ");
  Json pre = c.base("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_input"] = {{"command", "npm test"}, {"description", "Run tests"}, {"timeout", 120000}};
  pre["tool_use_id"] = "toolu_01X";
  Json post = c.base("PostToolUse");
  post["tool_name"] = "Write";
  post["tool_input"] = {{"file_path", "/home/u/proj/src/report.py"}, {"content", kMarker}};
  post["tool_response"] = {{"success", true}, {"filePath", "/home/u/proj/src/report.py"}};
  post["tool_use_id"] = "toolu_02Y";
  post["duration_ms"] = 12;
  Json stop = c.base("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = marker_text("Done: ");
  stop["background_tasks"] = Json::array();
  stop["session_crons"] = Json::array();
  Json sub = c.base("SubagentStop");
  sub["stop_hook_active"] = true;
  sub["agent_id"] = "agent-7";
  sub["agent_type"] = "Explore";
  sub["last_assistant_message"] = kMarker;
  Json compact = c.base("PreCompact");
  compact["trigger"] = "manual";
  compact["custom_instructions"] = marker_text("keep ");
  Json end = c.base("SessionEnd");
  end["reason"] = "prompt_input_exit";
  c.payloads = {start, prompt, pre, post, stop, sub, compact, end};
  c.signals = {{"UserPromptSubmit", {"a", "add", "export", "pdf", "please", "zqxmarkerword"}},
               {"PreToolUse", {"bash", "npm", "test"}},
               {"PostToolUse", {"py", "python", "write"}}};
  c.contexts = {{"SessionStart", {{"source", "startup"}}},
                {"SubagentStop", {{"subagent", true}}},
                {"PreCompact", {{"trigger", "manual"}}},
                {"SessionEnd", {{"reason", "prompt_input_exit"}}}};
  c.ignored_events = {"Setup",         "Notification",        "PermissionRequest",
                      "PostToolBatch", "UserPromptExpansion", "PostCompact",
                      "SubagentStart", "CwdChanged",          "SomethingFrom2030"};
  c.reloads_skills = true;
  c.default_locations = {
      {"scope", "project"},
      {"skills", ".claude/skills"},
      {"agents", ".claude/agents"},
      {"mcp", ".mcp.json"},
      {"mcp_format", "json"},
      {"user",
       {{"skills", "~/.claude/skills"}, {"agents", "~/.claude/agents"}, {"mcp", "~/.claude.json"}}},
      {"project",
       {{"skills", ".claude/skills"}, {"agents", ".claude/agents"}, {"mcp", ".mcp.json"}}}};
  c.user_config = R"({"scope":"user","home":"/home/u","project_dir":"/w/p"})";
  c.user_locations = {{"/skills", "/home/u/.claude/skills"},
                      {"/agents", "/home/u/.claude/agents"},
                      {"/mcp", "/home/u/.claude.json"},
                      {"/project/skills", "/w/p/.claude/skills"},
                      {"/project/mcp", "/w/p/.mcp.json"}};
  return c;
}

HostCase codex_case() {
  HostCase c;
  c.name = "Codex";
  c.make = [](std::string_view config) {
    return std::make_unique<codex_host::CodexAdapter>(config);
  };
  c.session_id = "0199a5b0-3c1e-7d2f-9e8a-0123456789ab";
  // Codex adds model and turn_id; transcript_path may be null.
  c.base = [](const char* event) {
    return Json{{"session_id", "0199a5b0-3c1e-7d2f-9e8a-0123456789ab"},
                {"turn_id", "0199a5b0-turn-0001"},
                {"transcript_path", nullptr},
                {"cwd", "/home/u/proj"},
                {"hook_event_name", event},
                {"model", "gpt-5.4"},
                {"permission_mode", "default"},
                {"codex_future_field", {{"x", true}}}};
  };
  Json start = c.base("SessionStart");
  start["source"] = "startup";
  Json prompt = c.base("UserPromptSubmit");
  prompt["prompt"] = marker_text("add a PDF export ");
  Json pre = c.base("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_use_id"] = "call_1";
  pre["tool_input"] = {{"command", "cargo test"}};
  Json post = c.base("PostToolUse");
  post["tool_name"] = "apply_patch";
  post["tool_use_id"] = "call_2";
  post["tool_input"] = {{"command", marker_text("*** Begin Patch ")}};
  post["tool_response"] = kMarker;
  Json stop = c.base("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = nullptr;
  Json sub = c.base("SubagentStop");
  sub["stop_hook_active"] = false;
  sub["agent_id"] = "a1";
  sub["agent_type"] = "worker";
  sub["agent_transcript_path"] = nullptr;
  sub["last_assistant_message"] = kMarker;
  Json pre_compact = c.base("PreCompact");
  pre_compact["trigger"] = "auto";
  Json post_compact = c.base("PostCompact");
  post_compact["trigger"] = "manual";
  // Codex 0.169's SessionEnd: no model, no permission_mode, reason "other" (host-formats §7).
  Json end = c.base("SessionEnd");
  end.erase("model");
  end.erase("permission_mode");
  end.erase("turn_id");
  end["reason"] = "other";
  c.payloads = {start, prompt, pre, post, stop, sub, pre_compact, post_compact, end};
  // apply_patch input is file content, not a command line: only the tool name counts.
  c.signals = {{"UserPromptSubmit", {"a", "add", "export", "pdf", "zqxmarkerword"}},
               {"PreToolUse", {"bash", "cargo", "test"}},
               {"PostToolUse", {"apply", "patch"}}};
  c.contexts = {{"SessionStart", {{"source", "startup"}}},
                {"SubagentStop", {{"subagent", true}}},
                {"PreCompact", {{"trigger", "auto"}}},
                {"PostCompact", {{"trigger", "manual"}}},
                {"SessionEnd", {{"reason", "other"}}}};
  c.ignored_events = {"SubagentStart", "PermissionRequest", "Notification", "NextYearsEvent"};
  c.reloads_skills = false;
  c.default_locations = {
      {"scope", "project"},
      {"skills", ".agents/skills"},
      {"agents", ".codex/agents"},
      {"mcp", ".codex/config.toml"},
      {"mcp_format", "toml"},
      {"user",
       {{"skills", "~/.agents/skills"},
        {"agents", "~/.codex/agents"},
        {"mcp", "~/.codex/config.toml"}}},
      {"project",
       {{"skills", ".agents/skills"}, {"agents", ".codex/agents"}, {"mcp", ".codex/config.toml"}}}};
  c.user_config = R"({"scope":"user","home":"/home/u"})";
  c.user_locations = {{"/skills", "/home/u/.agents/skills"},
                      {"/agents", "/home/u/.codex/agents"},
                      {"/mcp", "/home/u/.codex/config.toml"},
                      {"/project/skills", ".agents/skills"}};
  return c;
}

std::vector<std::string> signals_of(const Json& parsed) {
  return parsed.at("signals").get<std::vector<std::string>>();
}

std::set<std::string> members(const Json& object) {
  std::set<std::string> out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

Json reply_request(const char* event) {
  return {{"event", event},
          {"actions",
           {{{"kind", "PresentBundle"},
             {"payload", {{"capabilities", {{{"capability_id", "skill:pdf-export"}}}}}}},
            {{"kind", "RequestConsent"}, {"entity_id", "skill:pdf-export"}}}},
          {"challenge", {{"challenge_digest", kDigest}, {"capability_id", "skill:pdf-export"}}}};
}

class NativeHostAdapterTest : public ::testing::TestWithParam<HostCase> {
 protected:
  const HostCase& host() const { return GetParam(); }
  std::unique_ptr<NativeHostAdapter> adapter(std::string_view config = kConfig) const {
    return host().make(config);
  }
  const Json& payload(const std::string& event) const {
    for (const Json& p : host().payloads) {
      if (p.at("hook_event_name") == event) return p;
    }
    throw std::logic_error("no payload for " + event);
  }
};

// What each documented event means to ctx (the C ABI's CTX_HOOK_KIND_* names).
const std::map<std::string, std::string>& expected_kinds() {
  static const std::map<std::string, std::string> kKinds = {{"SessionStart", "session_start"},
                                                            {"UserPromptSubmit", "prompt"},
                                                            {"PreToolUse", "tool_use"},
                                                            {"PostToolUse", "tool_use"},
                                                            {"Stop", "turn_end"},
                                                            {"SubagentStop", "turn_end"},
                                                            {"PreCompact", "compact"},
                                                            {"PostCompact", "compact"},
                                                            {"SessionEnd", "session_end"}};
  return kKinds;
}

TEST_P(NativeHostAdapterTest, ParsesEveryDocumentedEventIntoScopeSignalsContextAndWorkRef) {
  const auto a = adapter();
  ASSERT_EQ(host().payloads.size(), a->profile().documented_events.size());
  std::set<std::string> seen;
  std::set<std::string> refs;
  for (const Json& p : host().payloads) {
    const std::string event = p.at("hook_event_name");
    SCOPED_TRACE(event);
    const Json parsed = a->parse_hook(p.dump());
    EXPECT_EQ(parsed.at("event"), event);
    EXPECT_EQ(parsed.at("kind"), expected_kinds().at(event));
    EXPECT_EQ(parsed.at("adapter"), a->profile().id);
    const Json& scope = parsed.at("scope");
    EXPECT_EQ(scope.at("session_id"), host().session_id);
    EXPECT_EQ(scope.at("tenant_id"), "local");
    EXPECT_EQ(scope.at("exposure_id"), a->profile().id);
    EXPECT_EQ(scope.at("host_context_id"), a->profile().id);
    EXPECT_THAT(scope.at("workspace_id").get<std::string>(), ::testing::StartsWith("ws-"));
    EXPECT_EQ(scope.at("repository_id"), scope.at("workspace_id"));
    const std::string ref = parsed.at("work_ref").at("id");
    EXPECT_THAT(ref, ::testing::MatchesRegex("wrk_[0-9a-f]{64}"));
    refs.insert(ref);
    const auto signals = host().signals.find(event);
    if (signals == host().signals.end()) {
      EXPECT_THAT(signals_of(parsed), IsEmpty());
    } else {
      EXPECT_THAT(signals_of(parsed), ElementsAreArray(signals->second));
    }
    const auto context = host().contexts.find(event);
    EXPECT_EQ(parsed.at("context"),
              context == host().contexts.end() ? Json::object() : context->second);
    seen.insert(event);
  }
  EXPECT_EQ(seen, a->profile().documented_events);
  EXPECT_EQ(refs.size(), host().payloads.size()) << "each event has its own work reference";
}

TEST_P(NativeHostAdapterTest, OpenHostStringsInTheContextAreReducedToKnownTokens) {
  const auto a = adapter();
  for (const auto& [event, context] : host().contexts) {
    if (!context.is_object() || context.size() != 1 || context.begin()->is_boolean()) continue;
    SCOPED_TRACE(event);
    Json odd = payload(event);
    odd[context.begin().key()] = "Some New Value!";
    EXPECT_EQ(a->parse_hook(odd.dump()).at("context"), (Json{{context.begin().key(), "other"}}));
  }
}

TEST_P(NativeHostAdapterTest, TurnsAndPromptsGiveDistinctWorkReferences) {
  const auto a = adapter();
  const Json first = payload("UserPromptSubmit");
  for (const char* field : {"turn_id", "prompt_id", "prompt"}) {
    if (!first.contains(field)) continue;
    SCOPED_TRACE(field);
    Json second = first;
    second[field] = first.at(field).get<std::string>() + "-2";
    EXPECT_NE(a->parse_hook(first.dump()).at("work_ref"),
              a->parse_hook(second.dump()).at("work_ref"));
  }
}

TEST_P(NativeHostAdapterTest, UndocumentedAndLaterEventsAreIgnored) {
  const auto a = adapter();
  for (const std::string& event : host().ignored_events) {
    SCOPED_TRACE(event);
    Json p = host().base(event.c_str());
    p["prompt"] = marker_text("anything ");
    p["tool_name"] = "Bash";
    p["message"] = kMarker;
    const Json parsed = a->parse_hook(p.dump());
    EXPECT_EQ(parsed.at("event"), "ignored");
    EXPECT_EQ(parsed.at("kind"), "ignored");
    EXPECT_THAT(signals_of(parsed), IsEmpty());
    EXPECT_EQ(parsed.at("context"), Json::object());
    EXPECT_THAT(parsed.dump(), Not(HasSubstr("arker")));
  }
  EXPECT_EQ(a->render_reply(R"({"event":"ignored","actions":[{"kind":"PresentBundle",)"
                            R"("entity_id":"skill:pdf"}]})"),
            Json::object());
}

TEST_P(NativeHostAdapterTest, NoPromptTextLeavesTheAdapterOutsideSignalTokens) {
  const auto a = adapter();
  for (const Json& p : host().payloads) {
    SCOPED_TRACE(p.at("hook_event_name").get<std::string>());
    Json parsed = a->parse_hook(p.dump());
    parsed.erase("signals");
    const std::string rest = parsed.dump();
    for (const char* never : {"arker", "PDF", "proj", "npm", "cargo", ".jsonl", "Patch"}) {
      EXPECT_THAT(rest, Not(HasSubstr(never)));
    }
  }
  // A marker that is not a word token never appears at all, not even among the signals.
  Json p = host().base("UserPromptSubmit");
  const std::string secret = "ghp_" + std::string(70, 'Q');
  p["prompt"] = "deploy with token " + secret + " and marker-Zqx-42 now";
  const std::string out = a->parse_hook(p.dump()).dump();
  EXPECT_THAT(out, Not(HasSubstr("marker-Zqx-42")));
  EXPECT_THAT(out, Not(HasSubstr("QQQQ")));
  EXPECT_THAT(out, Not(HasSubstr("deploy with")));
}

TEST_P(NativeHostAdapterTest, MalformedPayloadsAreTypedOneLineErrorsThatNeverQuoteThePayload) {
  const auto a = adapter();
  Json prompt = host().base("UserPromptSubmit");
  prompt["prompt"] = marker_text("x ");
  const std::string good = prompt.dump();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "not valid json"},
      {good.substr(0, good.size() - 3), "not valid json"},
      {"", "empty"},
      {R"(["UserPromptSubmit"])", "not a json object"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"a","prompt":"b"})",
       "duplicate key"},
      {std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":")") +
           std::string(10u << 20, 'a') + "\"}",
       "larger than 1 MiB"},
      {std::string((1u << 20) + 1, ' '), "larger than 1 MiB"},
      {"{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"s\",\"prompt\":\"\xC3\x28\"}",
       "UTF-8"},
      {"{\"prompt\":\"\xED\xA0\x80\"}", "UTF-8"},
      {std::string(R"({"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash",)"
                   R"("tool_input":)") +
           std::string(5000, '[') + std::string(5000, ']') + "}",
       "nested too deeply"},
      {std::string(40, '{'), ""},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s"})", "prompt"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":["a"]})", "prompt"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":null})", "prompt"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":5,"prompt":"a"})", "session_id"},
      {R"({"hook_event_name":"UserPromptSubmit","session_id":"s","turn_id":1,"prompt":"a"})",
       "turn_id"},
      {R"({"session_id":"s","prompt":"a"})", "hook_event_name"},
      {R"({"hook_event_name":7,"session_id":"s"})", "hook_event_name"},
      {R"({"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":"ls"})",
       "tool_input"},
      {R"({"hook_event_name":"PreToolUse","session_id":"s","tool_input":{}})", "tool_name"},
      {R"({"hook_event_name":"Stop","session_id":"s","stop_hook_active":"no"})",
       "stop_hook_active"},
      {R"({"hook_event_name":"Stop","session_id":"s","transcript_path":3})", "transcript_path"},
      {R"({"hook_event_name":"SessionStart","session_id":"s","cwd":["/"]})", "cwd"},
  };
  for (const auto& [bytes, keyword] : cases) {
    SCOPED_TRACE(keyword + ": " + bytes.substr(0, 60));
    try {
      a->parse_hook(bytes);
      ADD_FAILURE() << "accepted a malformed payload";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr(keyword));
      EXPECT_THAT(e.what(), Not(HasSubstr("arker")));
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// Every prefix of every documented payload and every single-byte corruption of one: the adapter
// either parses it or throws InvalidArgument — never another exception, never a crash.
TEST_P(NativeHostAdapterTest, TruncatedAndCorruptedPayloadsOnlyEverFailTyped) {
  const auto a = adapter();
  std::size_t refused = 0;
  const auto feed = [&](const std::string& bytes) {
    try {
      const Json parsed = a->parse_hook(bytes);
      EXPECT_TRUE(parsed.at("work_ref").is_object());
    } catch (const InvalidArgument&) {
      ++refused;
    }
  };
  for (const Json& p : host().payloads) {
    const std::string text = p.dump();
    for (std::size_t n = 0; n < text.size(); ++n) feed(text.substr(0, n));
  }
  const std::string text = payload("PostToolUse").dump();
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (const char replacement : {'\0', '"', '{', ']', '\xC3', '\xFF', '9'}) {
      std::string corrupted = text;
      corrupted[i] = replacement;
      feed(corrupted);
    }
  }
  EXPECT_GT(refused, 0u);
}

TEST_P(NativeHostAdapterTest, WithoutAnInstallationKeyParsingFailsClosed) {
  const auto a = adapter("");
  try {
    a->parse_hook(payload("UserPromptSubmit").dump());
    FAIL() << "parsed without a key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_EQ(a->render_reply(R"({"actions":[]})"), Json::object());
}

TEST_P(NativeHostAdapterTest, TheWorkReferenceDependsOnTheKeyAndIsDeterministic) {
  const auto a = adapter();
  const auto same = adapter();
  const auto other = adapter(kOtherKeyConfig);
  const std::string p = payload("UserPromptSubmit").dump();
  EXPECT_EQ(a->parse_hook(p), same->parse_hook(p));
  EXPECT_NE(a->parse_hook(p).at("work_ref"), other->parse_hook(p).at("work_ref"));
  EXPECT_NE(a->parse_hook(p).at("scope").at("workspace_id"),
            other->parse_hook(p).at("scope").at("workspace_id"));
}

TEST_P(NativeHostAdapterTest, ContextEventsGetHookSpecificOutputWithTheConsentCommands) {
  const auto a = adapter();
  for (const std::string& event : a->profile().context_events) {
    SCOPED_TRACE(event);
    Json request = reply_request(event.c_str());
    request["installed"] = {"skill:xlsx"};
    const Json reply = a->render_reply(request.dump());
    EXPECT_EQ(members(reply), (std::set<std::string>{"hookSpecificOutput", "systemMessage"}));
    const Json& specific = reply.at("hookSpecificOutput");
    const bool reload = host().reloads_skills && event == "SessionStart";
    std::set<std::string> want{"hookEventName", "additionalContext"};
    if (reload) want.insert("reloadSkills");
    EXPECT_EQ(members(specific), want);
    EXPECT_EQ(specific.at("hookEventName"), event);
    const std::string context = specific.at("additionalContext");
    EXPECT_THAT(context, HasSubstr("ctx recommends: pdf-export (skill)."));
    EXPECT_THAT(context, HasSubstr("ctx consent approve " + kDigest + " --key FILE"));
    EXPECT_THAT(context, HasSubstr("ctx consent deny " + kDigest + " --key FILE"));
    EXPECT_THAT(context, HasSubstr("ctx installed: xlsx (skill)."));
    EXPECT_EQ(reply.at("systemMessage"), context);
    // Without anything installed there is never a reload.
    EXPECT_FALSE(a->render_reply(reply_request(event.c_str()).dump())
                     .at("hookSpecificOutput")
                     .contains("reloadSkills"));
  }
}

TEST_P(NativeHostAdapterTest, SessionStartAfterAnInstallReloadsSkillsWhereTheHostDoes) {
  const auto a = adapter();
  const Json reply = a->render_reply(
      R"({"event":"SessionStart","actions":[],"installed":["skill:pdf","skill:xlsx"]})");
  Json specific = {{"hookEventName", "SessionStart"},
                   {"additionalContext", "ctx installed: pdf (skill), xlsx (skill)."}};
  if (host().reloads_skills) specific["reloadSkills"] = true;
  EXPECT_EQ(reply, (Json{{"hookSpecificOutput", specific},
                         {"systemMessage", "ctx installed: pdf (skill), xlsx (skill)."}}));
  const Json prompt =
      a->render_reply(R"({"event":"UserPromptSubmit","actions":[],"installed":["skill:pdf"]})");
  EXPECT_FALSE(prompt.at("hookSpecificOutput").contains("reloadSkills"));
}

TEST_P(NativeHostAdapterTest, RepliesNeverBlockAndOtherEventsGetAMessageOrNothing) {
  const auto a = adapter();
  for (const std::string& event : a->profile().documented_events) {
    SCOPED_TRACE(event);
    const Json reply = a->render_reply(reply_request(event.c_str()).dump());
    ASSERT_TRUE(reply.is_object());
    for (const char* never : {"decision", "continue", "permissionDecision", "reason"}) {
      EXPECT_FALSE(reply.contains(never)) << never;
      if (reply.contains("hookSpecificOutput")) {
        EXPECT_FALSE(reply.at("hookSpecificOutput").contains(never)) << never;
      }
    }
  }
  for (const std::string& event : a->profile().message_events) {
    SCOPED_TRACE(event);
    const Json reply = a->render_reply(reply_request(event.c_str()).dump());
    EXPECT_EQ(members(reply), (std::set<std::string>{"systemMessage"}));
    EXPECT_THAT(reply.at("systemMessage").get<std::string>(), HasSubstr("ctx consent approve"));
    // Nothing to say is still a JSON object (Stop and SubagentStop take only JSON).
    EXPECT_EQ(a->render_reply((Json{{"event", event}, {"actions", Json::array()}}).dump()),
              Json::object());
  }
  for (const std::string& event : a->profile().documented_events) {
    if (a->profile().context_events.count(event) || a->profile().message_events.count(event)) {
      continue;
    }
    EXPECT_EQ(a->render_reply(reply_request(event.c_str()).dump()), Json::object()) << event;
  }
  EXPECT_EQ(a->render_reply(reply_request("ignored").dump()), Json::object());
  EXPECT_EQ(a->render_reply(R"({"event":"UserPromptSubmit","actions":[]})"), Json::object());
  EXPECT_EQ(
      a->render_reply(R"({"actions":[{"kind":"SuggestCapability","capability_id":"skill:pdf"}]})"),
      (Json{{"systemMessage", "ctx recommends: pdf (skill)."}}));
}

TEST_P(NativeHostAdapterTest, AdditionalContextIsAtMostTenThousandCharacters) {
  const auto a = adapter();
  Json request = {{"event", "UserPromptSubmit"}, {"actions", Json::array()}};
  Json challenges = Json::array();
  for (int i = 0; i < 64; ++i) {
    const std::string id = "skill:" + std::string(115, 'z') + std::to_string(100 + i);
    request["actions"].push_back({{"kind", "RequestConsent"}, {"entity_id", id}});
    challenges.push_back({{"challenge_digest", kDigest}, {"capability_id", id}});
  }
  request["challenges"] = challenges;
  const Json reply = a->render_reply(request.dump());
  EXPECT_LE(reply.at("hookSpecificOutput").at("additionalContext").get<std::string>().size(),
            10000u);
  EXPECT_LE(reply.at("systemMessage").get<std::string>().size(), 10000u);
}

TEST_P(NativeHostAdapterTest, MalformedReplyRequestsAreTypedErrors) {
  const auto a = adapter();
  CTX_EXPECT_THROW(a->render_reply("{}"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(a->render_reply(R"({"actions":[],"challenge":{"challenge_digest":"x"}})"),
                   InvalidArgument, "challenge_digest");
  CTX_EXPECT_THROW(a->render_reply(R"({"actions":[],"event":5})"), InvalidArgument, "event");
}

TEST_P(NativeHostAdapterTest, InstallLocations) {
  EXPECT_EQ(adapter()->install_locations(), host().default_locations);
  const Json user = adapter(host().user_config)->install_locations();
  EXPECT_EQ(user.at("scope"), "user");
  for (const auto& [pointer, value] : host().user_locations) {
    EXPECT_EQ(user.at(Json::json_pointer(pointer)), value) << pointer;
  }
}

TEST_P(NativeHostAdapterTest, RejectsBadConfigs) {
  CTX_EXPECT_THROW(adapter("[]"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(adapter(R"({"skills_dir":"x"})"), InvalidArgument, "unknown member");
  CTX_EXPECT_THROW(adapter(R"({"installation_key":"00"})"), InvalidArgument, "64 hex");
}

// Claude Code run with $CLAUDE_CONFIG_DIR keeps its user skills, agents and .claude.json there;
// Codex run with $CODEX_HOME keeps its config.toml and agents there, its user skills stay in
// ~/.agents/skills; project locations do not move.
TEST(NativeHostConfigDir, ClaudeCodeUserLocationsMoveToItsConfigDirCodexKeepsItsSkillsAtHome) {
  const Json user =
      claude_code_host::ClaudeCodeAdapter(
          R"({"scope":"user","home":"/home/u","project_dir":"/w/p","config_dir":"/cfg/claude"})")
          .install_locations();
  EXPECT_EQ(user.at("skills"), "/cfg/claude/skills");
  EXPECT_EQ(user.at("agents"), "/cfg/claude/agents");
  EXPECT_EQ(user.at("mcp"), "/cfg/claude/.claude.json");
  EXPECT_EQ(user.at("project").at("skills"), "/w/p/.claude/skills");
  CTX_EXPECT_THROW(claude_code_host::ClaudeCodeAdapter(R"({"config_dir":"cfg"})"), InvalidArgument,
                   "absolute");
  // $CODEX_HOME holds Codex's config.toml and agents; its user skills stay in ~/.agents/skills.
  const Json codex =
      codex_host::CodexAdapter(
          R"({"scope":"user","home":"/home/u","project_dir":"/w/p","config_dir":"/cfg/codex/"})")
          .install_locations();
  EXPECT_EQ(codex.at("skills"), "/home/u/.agents/skills");
  EXPECT_EQ(codex.at("agents"), "/cfg/codex/agents");
  EXPECT_EQ(codex.at("mcp"), "/cfg/codex/config.toml");
  EXPECT_EQ(codex.at("project").at("mcp"), "/w/p/.codex/config.toml");
  const Json codex_default =
      codex_host::CodexAdapter(R"({"scope":"user","home":"/home/u"})").install_locations();
  EXPECT_EQ(codex_default.at("mcp"), "/home/u/.codex/config.toml");
  CTX_EXPECT_THROW(codex_host::CodexAdapter(R"({"config_dir":"cfg"})"), InvalidArgument,
                   "absolute");
}

INSTANTIATE_TEST_SUITE_P(Hosts, NativeHostAdapterTest,
                         ::testing::Values(claude_code_case(), codex_case()),
                         [](const ::testing::TestParamInfo<HostCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace ctx::host_adapters
