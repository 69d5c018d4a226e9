#include "plugins/hosts/codex/core/codex_adapter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::codex_host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kConfig[] =
    R"({"installation_key":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"})";
constexpr char kMarker[] = "Wyvernmarker";
const std::string kDigest(64, 'd');

// The common fields of spec §3.1 (Codex adds model and turn_id; transcript_path may be null)
// plus fields no version of Codex sends.
Json base(const char* event) {
  return {{"session_id", "0199a5b0-3c1e-7d2f-9e8a-0123456789ab"},
          {"turn_id", "0199a5b0-turn-0001"},
          {"transcript_path", nullptr},
          {"cwd", "/home/u/proj"},
          {"hook_event_name", event},
          {"model", "gpt-5.4"},
          {"permission_mode", "default"},
          {"codex_future_field", {{"x", true}}}};
}

std::vector<Json> documented_payloads() {
  std::vector<Json> out;
  Json start = base("SessionStart");
  start["source"] = "startup";
  out.push_back(start);
  Json prompt = base("UserPromptSubmit");
  prompt["prompt"] = std::string("add a PDF export ") + kMarker;
  out.push_back(prompt);
  Json pre = base("PreToolUse");
  pre["tool_name"] = "Bash";
  pre["tool_use_id"] = "call_1";
  pre["tool_input"] = {{"command", "cargo test"}};
  out.push_back(pre);
  Json post = base("PostToolUse");
  post["tool_name"] = "apply_patch";
  post["tool_use_id"] = "call_2";
  post["tool_input"] = {{"command", std::string("*** Begin Patch ") + kMarker}};
  post["tool_response"] = kMarker;
  out.push_back(post);
  Json stop = base("Stop");
  stop["stop_hook_active"] = false;
  stop["last_assistant_message"] = nullptr;
  out.push_back(stop);
  Json sub = base("SubagentStop");
  sub["stop_hook_active"] = false;
  sub["agent_id"] = "a1";
  sub["agent_type"] = "worker";
  sub["agent_transcript_path"] = nullptr;
  sub["last_assistant_message"] = kMarker;
  out.push_back(sub);
  Json pre_compact = base("PreCompact");
  pre_compact["trigger"] = "auto";
  out.push_back(pre_compact);
  Json post_compact = base("PostCompact");
  post_compact["trigger"] = "manual";
  out.push_back(post_compact);
  return out;
}

std::vector<std::string> signals_of(const Json& parsed) {
  return parsed.at("signals").get<std::vector<std::string>>();
}

TEST(CodexAdapter, ParsesEveryDocumentedEvent) {
  const CodexAdapter adapter(kConfig);
  const std::vector<Json> payloads = documented_payloads();
  ASSERT_EQ(payloads.size(), documented_events().size());
  std::set<std::string> seen;
  for (const Json& payload : payloads) {
    const std::string event = payload.at("hook_event_name");
    SCOPED_TRACE(event);
    const Json parsed = adapter.parse_hook(payload.dump());
    EXPECT_EQ(parsed.at("event"), event);
    EXPECT_EQ(parsed.at("adapter"), "codex");
    EXPECT_EQ(parsed.at("scope").at("session_id"), "0199a5b0-3c1e-7d2f-9e8a-0123456789ab");
    EXPECT_EQ(parsed.at("scope").at("host_context_id"), "codex");
    EXPECT_THAT(parsed.at("work_ref").at("id").get<std::string>(),
                ::testing::MatchesRegex("wrk_[0-9a-f]{64}"));
    Json rest = parsed;
    rest.erase("signals");
    EXPECT_THAT(rest.dump(), Not(HasSubstr("arker")));
    EXPECT_THAT(rest.dump(), Not(HasSubstr("proj")));
    seen.insert(event);
  }
  EXPECT_EQ(seen, documented_events());
  EXPECT_THAT(signals_of(adapter.parse_hook(payloads[1].dump())),
              ElementsAre("a", "add", "export", "pdf", "wyvernmarker"));
  EXPECT_THAT(signals_of(adapter.parse_hook(payloads[2].dump())),
              ElementsAre("bash", "cargo", "test"));
  // apply_patch input is file content, not a command line: only the tool name counts.
  EXPECT_THAT(signals_of(adapter.parse_hook(payloads[3].dump())), ElementsAre("apply", "patch"));
  EXPECT_EQ(adapter.parse_hook(payloads[6].dump()).at("context"), (Json{{"trigger", "auto"}}));
  EXPECT_EQ(adapter.parse_hook(payloads[5].dump()).at("context"), (Json{{"subagent", true}}));
}

TEST(CodexAdapter, TurnsGiveDistinctWorkReferences) {
  const CodexAdapter adapter(kConfig);
  Json first = documented_payloads()[1];
  Json second = first;
  second["turn_id"] = "0199a5b0-turn-0002";
  EXPECT_NE(adapter.parse_hook(first.dump()).at("work_ref"),
            adapter.parse_hook(second.dump()).at("work_ref"));
}

TEST(CodexAdapter, EventsCodexDoesNotDocumentAreIgnored) {
  const CodexAdapter adapter(kConfig);
  for (const char* event :
       {"SessionEnd", "SubagentStart", "PermissionRequest", "Notification", "NextYearsEvent"}) {
    SCOPED_TRACE(event);
    Json payload = base(event);
    payload["prompt"] = kMarker;
    const Json parsed = adapter.parse_hook(payload.dump());
    EXPECT_EQ(parsed.at("event"), "ignored");
    EXPECT_THAT(signals_of(parsed), IsEmpty());
  }
}

TEST(CodexAdapter, MalformedPayloadsAreTypedErrors) {
  const CodexAdapter adapter(kConfig);
  const std::string good = documented_payloads()[1].dump();
  for (const std::string& payload :
       {good.substr(0, good.size() - 3), std::string("{\"prompt\":\"\xED\xA0\x80\"}"),
        std::string(R"({"hook_event_name":"Stop","session_id":"s","transcript_path":3})"),
        std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":null})"),
        std::string(R"({"hook_event_name":"UserPromptSubmit","session_id":"s","turn_id":1,)"
                    R"("prompt":"a"})"),
        std::string(40, '{'), std::string((1u << 20) + 1, ' ')}) {
    SCOPED_TRACE(payload.substr(0, 60));
    EXPECT_THROW(adapter.parse_hook(payload), InvalidArgument);
  }
}

Json reply_request(const char* event) {
  return {{"event", event},
          {"actions", {{{"kind", "RequestConsent"}, {"entity_id", "skill:pdf-export"}}}},
          {"challenge", {{"challenge_digest", kDigest}, {"capability_id", "skill:pdf-export"}}},
          {"installed", {"skill:xlsx"}}};
}

// The members each Codex output schema allows (codex-rs/hooks/schema/generated/*.output).
std::set<std::string> members(const Json& object) {
  std::set<std::string> out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

TEST(CodexAdapter, RendersOnlyMembersCodexAccepts) {
  const CodexAdapter adapter(kConfig);
  for (const char* event : {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"}) {
    SCOPED_TRACE(event);
    const Json reply = adapter.render_reply(reply_request(event).dump());
    EXPECT_EQ(members(reply), (std::set<std::string>{"hookSpecificOutput", "systemMessage"}));
    const Json& specific = reply.at("hookSpecificOutput");
    EXPECT_EQ(members(specific), (std::set<std::string>{"hookEventName", "additionalContext"}));
    EXPECT_EQ(specific.at("hookEventName"), event);
    const std::string context = specific.at("additionalContext");
    EXPECT_THAT(context, HasSubstr("ctx recommends: pdf-export (skill)."));
    EXPECT_THAT(context, HasSubstr("ctx consent approve " + kDigest + " --key FILE"));
    EXPECT_THAT(context, HasSubstr("ctx consent deny " + kDigest + " --key FILE"));
    EXPECT_THAT(context, HasSubstr("ctx installed: xlsx (skill)."));
  }
  for (const char* event : {"Stop", "SubagentStop", "PreCompact", "PostCompact"}) {
    SCOPED_TRACE(event);
    const Json reply = adapter.render_reply(reply_request(event).dump());
    EXPECT_EQ(members(reply), (std::set<std::string>{"systemMessage"}));
    // Stop and SubagentStop take JSON only: nothing to say is still a JSON object.
    const Json quiet =
        adapter.render_reply((Json{{"event", event}, {"actions", Json::array()}}).dump());
    EXPECT_TRUE(quiet.is_object());
    EXPECT_EQ(quiet, Json::object());
  }
  EXPECT_EQ(adapter.render_reply(reply_request("ignored").dump()), Json::object());
}

TEST(CodexAdapter, InstallLocations) {
  const Json project = CodexAdapter(kConfig).install_locations();
  EXPECT_EQ(project.at("scope"), "project");
  EXPECT_EQ(project.at("skills"), ".agents/skills");
  EXPECT_EQ(project.at("mcp"), ".codex/config.toml");
  EXPECT_EQ(project.at("mcp_format"), "toml");
  EXPECT_EQ(project.at("user").at("skills"), "~/.agents/skills");
  EXPECT_EQ(project.at("user").at("mcp"), "~/.codex/config.toml");
  const Json user = CodexAdapter(R"({"scope":"user","home":"/home/u"})").install_locations();
  EXPECT_EQ(user.at("skills"), "/home/u/.agents/skills");
  EXPECT_EQ(user.at("agents"), "/home/u/.codex/agents");
}

}  // namespace
}  // namespace ctx::codex_host
