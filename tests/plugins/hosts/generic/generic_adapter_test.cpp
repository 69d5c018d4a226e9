#include "plugins/hosts/generic/core/generic_adapter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::generic_host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kKeyHex[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

std::string config(const std::string& extra = "") {
  return std::string(R"({"installation_key":")") + kKeyHex + "\"" + extra + "}";
}

std::vector<std::string> signals_of(const Json& parsed) {
  return parsed.at("signals").get<std::vector<std::string>>();
}

TEST(GenericAdapter, ParsesAClaudeStylePromptPayload) {
  const GenericAdapter adapter(config());
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"abc123","transcript_path":"/home/u/.claude/p.jsonl","cwd":"/home/u/proj",)"
      R"("permission_mode":"default","hook_event_name":"UserPromptSubmit",)"
      R"("prompt":"Add a PDF export to report.py, then Dockerize it."})");
  EXPECT_EQ(parsed.at("event"), "UserPromptSubmit");
  EXPECT_EQ(parsed.at("kind"), "prompt");
  EXPECT_EQ(parsed.at("adapter"), "generic");
  const std::string key = plugin_common::from_hex(kKeyHex, "key");
  const std::string workspace =
      "ws-" +
      plugin_common::to_hex(plugin_common::hmac_sha256(
                                key, std::string("ctx.host.workspace-v1\0", 22) + "/home/u/proj"))
          .substr(0, 32);
  EXPECT_EQ(parsed.at("scope"), (Json{{"tenant_id", "local"},
                                      {"workspace_id", workspace},
                                      {"repository_id", workspace},
                                      {"session_id", "abc123"},
                                      {"exposure_id", "generic"},
                                      {"host_context_id", "generic"}}));
  EXPECT_THAT(signals_of(parsed), ElementsAre("a", "add", "dockerize", "export", "it", "pdf", "py",
                                              "report", "then", "to"));
  EXPECT_THAT(parsed.at("work_ref").at("id").get<std::string>(),
              ::testing::MatchesRegex("wrk_[0-9a-f]{64}"));
  EXPECT_THAT(parsed.dump(), Not(HasSubstr(plugin_common::sha256_hex(
                                 "Add a PDF export to report.py, then Dockerize it."))));
}

TEST(GenericAdapter, NeverCopiesThePromptOrThePath) {
  const GenericAdapter adapter(config());
  const std::string output =
      adapter
          .parse_hook(
              R"({"session_id":"s","cwd":"/home/alice/secret-project","hook_event_name":"x",)"
              R"("prompt":"zebra-unicorn python password=hunter2"})")
          .dump();
  EXPECT_THAT(output, Not(HasSubstr("zebra-unicorn")));
  EXPECT_THAT(output, Not(HasSubstr("hunter2")));  // an ignored event extracts no signals
  EXPECT_THAT(output, Not(HasSubstr("secret-project")));
  EXPECT_THAT(output, HasSubstr("\"ignored\""));
}

TEST(GenericAdapter, CombinesExplicitSignalsFilesAndToolsDeterministically) {
  const GenericAdapter adapter(config());
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Edit",)"
      R"("tool_input":{"file_path":"/p/src/main.rs"},"files":["a/b.TS","Dockerfile","noext",7],)"
      R"("signals":["React","react","bad token","../x",3,"c++"]})");
  EXPECT_THAT(signals_of(parsed), ElementsAre("bad", "c", "docker", "edit", "react", "rs", "rust",
                                              "token", "ts", "typescript", "x"));
  EXPECT_EQ(parsed.at("scope").at("workspace_id"), "ws-none");
  // Explicit signals and files are an event's signals: an ignored event drops them.
  EXPECT_EQ(adapter.parse_hook(R"({"session_id":"s","hook_event_name":"Later","signals":["x"]})")
                .at("signals"),
            Json::array());
}

TEST(GenericAdapter, ScopeOverridesAndConfiguredTenantApply) {
  const GenericAdapter adapter(config(R"(,"tenant_id":"acme","skills_dir":"/opt/skills")"));
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"s","hook_event_name":"Stop","workspace_id":"w1","exposure_id":"e",)"
      R"("host_context_id":"h","turn_id":"t9"})");
  EXPECT_EQ(parsed.at("scope"), (Json{{"tenant_id", "acme"},
                                      {"workspace_id", "w1"},
                                      {"repository_id", "w1"},
                                      {"session_id", "s"},
                                      {"exposure_id", "e"},
                                      {"host_context_id", "h"}}));
  EXPECT_EQ(adapter.install_locations(), (Json{{"skills", "/opt/skills"}}));
  CTX_EXPECT_THROW(
      adapter.parse_hook(R"({"session_id":"s","hook_event_name":"Stop","workspace_id":"a b"})"),
      InvalidArgument, "engine token");
}

TEST(GenericAdapter, IsDeterministic) {
  const GenericAdapter adapter(config());
  const std::string payload =
      R"({"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"rust and sql"})";
  EXPECT_EQ(adapter.parse_hook(payload), GenericAdapter(config()).parse_hook(payload));
}

TEST(GenericAdapter, RejectsMalformedPayloads) {
  const GenericAdapter adapter(config());
  CTX_EXPECT_THROW(adapter.parse_hook("not json"), InvalidArgument,
                   "hook payload is not valid json");
  CTX_EXPECT_THROW(adapter.parse_hook(R"({"session_id":"s"})"), InvalidArgument, "hook_event_name");
  CTX_EXPECT_THROW(adapter.parse_hook(R"({"hook_event_name":"x"})"), InvalidArgument, "session_id");
  CTX_EXPECT_THROW(adapter.parse_hook(R"({"hook_event_name":"x","session_id":""})"),
                   InvalidArgument, "session_id");
  CTX_EXPECT_THROW(adapter.parse_hook(R"({"hook_event_name":"x","session_id":"s","signals":"a"})"),
                   InvalidArgument, "signals must be an array");
  CTX_EXPECT_THROW(adapter.parse_hook(R"({"hook_event_name":"x","session_id":"s","prompt":1})"),
                   InvalidArgument, "prompt");
  try {
    GenericAdapter("").parse_hook(R"({"hook_event_name":"Stop","session_id":"s"})");
    FAIL() << "parsed without a key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
}

TEST(GenericAdapter, RejectsBadConfigs) {
  CTX_EXPECT_THROW(GenericAdapter("[]"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(GenericAdapter(R"({"skills":"x"})"), InvalidArgument, "unknown member");
  // A harness has no configuration directory of its own to follow.
  CTX_EXPECT_THROW(GenericAdapter(R"({"config_dir":"/cfg"})"), InvalidArgument, "unknown member");
  CTX_EXPECT_THROW(GenericAdapter(R"({"skills_dir":""})"), InvalidArgument, "non-empty string");
  EXPECT_EQ(GenericAdapter("{}").install_locations(), (Json{{"skills", ".agents/skills"}}));
}

TEST(GenericAdapter, RendersRecommendationsAndConsentCommands) {
  const GenericAdapter adapter(config());
  const std::string digest(64, 'e');
  const Json reply = adapter.render_reply(
      R"({"event":"UserPromptSubmit","actions":[{"kind":"SuggestCapability",)"
      R"("capability_id":"skill:pdf"},{"kind":"NoChange"}],"challenge":{"challenge_digest":")" +
      digest + R"(","capability_id":"skill:pdf"}})");
  EXPECT_EQ(reply.at("schema"), kReplySchema);
  EXPECT_EQ(reply.at("continue"), true);
  EXPECT_EQ(reply.at("event"), "UserPromptSubmit");
  EXPECT_EQ(reply.at("recommended"), Json::array({"skill:pdf"}));
  EXPECT_EQ(reply.at("installed"), Json::array());
  EXPECT_EQ(reply.at("challenges"),
            Json::array({{{"challenge_digest", digest},
                          {"capability_id", "skill:pdf"},
                          {"approve", "ctx consent approve " + digest + " --key FILE"},
                          {"deny", "ctx consent deny " + digest + " --key FILE"}}}));
  EXPECT_THAT(reply.at("message").get<std::string>(), HasSubstr("ctx recommends: pdf (skill)."));
  EXPECT_EQ(adapter.render_reply(R"({"actions":[]})").at("challenges"), Json::array());
}

TEST(GenericAdapter, ConsentCommandsNameANonDefaultStateDir) {
  const GenericAdapter adapter(config());
  const std::string digest(64, 'e');
  const Json reply = adapter.render_reply(Json{
      {"actions", Json::array()},
      {"challenge", {{"challenge_digest", digest}}},
      {"state_dir", "/srv/ctx state"}}.dump());
  EXPECT_EQ(reply.at("challenges").at(0).at("approve"),
            "ctx consent approve " + digest + " --key FILE --state '/srv/ctx state'");
  EXPECT_EQ(reply.at("challenges").at(0).at("deny"),
            "ctx consent deny " + digest + " --key FILE --state '/srv/ctx state'");
}

TEST(GenericAdapter, RejectsMalformedReplies) {
  const GenericAdapter adapter(config());
  CTX_EXPECT_THROW(adapter.render_reply("{}"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[1]})"), InvalidArgument, "objects");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[{}]})"), InvalidArgument, "kind");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[],"challenge":"x"})"), InvalidArgument,
                   "challenge");
}

}  // namespace
}  // namespace ctx::generic_host
