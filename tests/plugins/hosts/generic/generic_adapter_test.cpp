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

std::vector<std::string> signals_of(const Json& parsed) {
  return parsed.at("signals").get<std::vector<std::string>>();
}

TEST(GenericAdapter, ParsesAClaudeStylePromptPayload) {
  const GenericAdapter adapter("");
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"abc123","transcript_path":"/home/u/.claude/p.jsonl","cwd":"/home/u/proj",)"
      R"("permission_mode":"default","hook_event_name":"UserPromptSubmit",)"
      R"("prompt":"Add a PDF export to report.py, then Dockerize it."})");
  EXPECT_EQ(parsed.at("event"), "UserPromptSubmit");
  const Json& scope = parsed.at("scope");
  const std::string workspace =
      "ws-" + plugin_common::sha256_hex("ctx.generic.workspace\n/home/u/proj").substr(0, 32);
  EXPECT_EQ(scope, (Json{{"tenant_id", "local"},
                         {"workspace_id", workspace},
                         {"repository_id", workspace},
                         {"session_id", "abc123"},
                         {"exposure_id", "generic"},
                         {"host_context_id", "generic"}}));
  EXPECT_THAT(signals_of(parsed), ElementsAre("pdf", "python"));
  const Json& work = parsed.at("work_ref");
  EXPECT_EQ(work.at("prompt_sha256"),
            plugin_common::sha256_hex("Add a PDF export to report.py, then Dockerize it."));
  Json without_id = work;
  without_id.erase("id");
  EXPECT_EQ(work.at("id"), plugin_common::sha256_hex(without_id.dump()));
}

TEST(GenericAdapter, NeverCopiesThePromptOrThePath) {
  const GenericAdapter adapter("");
  const std::string output =
      adapter
          .parse_hook(
              R"({"session_id":"s","cwd":"/home/alice/secret-project","hook_event_name":"x",)"
              R"("prompt":"zebra-unicorn python password=hunter2"})")
          .dump();
  EXPECT_THAT(output, Not(HasSubstr("zebra")));
  EXPECT_THAT(output, Not(HasSubstr("hunter2")));
  EXPECT_THAT(output, Not(HasSubstr("secret-project")));
  EXPECT_THAT(output, HasSubstr("\"python\""));
}

TEST(GenericAdapter, CombinesExplicitSignalsFilesAndToolsDeterministically) {
  const GenericAdapter adapter("");
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Edit",)"
      R"("tool_input":{"file_path":"/p/src/main.rs"},"files":["a/b.TS","Dockerfile","noext",7],)"
      R"("signals":["React","react","bad token","../x",3,"c++"]})");
  EXPECT_THAT(signals_of(parsed),
              ElementsAre("c++", "docker", "react", "rust", "tool-edit", "typescript"));
  EXPECT_EQ(parsed.at("scope").at("workspace_id"), "ws-none");
  EXPECT_FALSE(parsed.at("work_ref").contains("prompt_sha256"));
}

TEST(GenericAdapter, SignalsAreCapped) {
  const GenericAdapter adapter("");
  Json payload = {{"session_id", "s"}, {"hook_event_name", "x"}, {"signals", Json::array()}};
  for (int i = 0; i < 100; ++i) payload["signals"].push_back("s" + std::to_string(i));
  EXPECT_EQ(adapter.parse_hook(payload.dump()).at("signals").size(), kMaxSignals);
}

TEST(GenericAdapter, ScopeOverridesAndConfiguredTenantApply) {
  const GenericAdapter adapter(R"({"tenant_id":"acme","skills_dir":"/opt/skills"})");
  const Json parsed = adapter.parse_hook(
      R"({"session_id":"s","hook_event_name":"x","workspace_id":"w1","exposure_id":"e",)"
      R"("host_context_id":"h","turn_id":"t9"})");
  EXPECT_EQ(parsed.at("scope"), (Json{{"tenant_id", "acme"},
                                      {"workspace_id", "w1"},
                                      {"repository_id", "w1"},
                                      {"session_id", "s"},
                                      {"exposure_id", "e"},
                                      {"host_context_id", "h"}}));
  EXPECT_EQ(parsed.at("work_ref").at("turn_id"), "t9");
  EXPECT_EQ(adapter.install_locations(), (Json{{"skills", "/opt/skills"}}));
}

TEST(GenericAdapter, IsDeterministic) {
  const GenericAdapter adapter("");
  const std::string payload =
      R"({"session_id":"s","hook_event_name":"x","prompt":"rust and sql and yaml"})";
  EXPECT_EQ(adapter.parse_hook(payload), adapter.parse_hook(payload));
}

TEST(GenericAdapter, RejectsMalformedPayloads) {
  const GenericAdapter adapter("");
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
}

TEST(GenericAdapter, RejectsBadConfigs) {
  CTX_EXPECT_THROW(GenericAdapter("[]"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(GenericAdapter(R"({"skills":"x"})"), InvalidArgument, "unknown member");
  CTX_EXPECT_THROW(GenericAdapter(R"({"skills_dir":""})"), InvalidArgument, "non-empty string");
  EXPECT_EQ(GenericAdapter("{}").install_locations(), (Json{{"skills", ".agents/skills"}}));
}

TEST(GenericAdapter, RendersActionsAndChallenge) {
  const GenericAdapter adapter("");
  const Json reply = adapter.render_reply(
      R"({"actions":[{"kind":"SuggestCapability","capability_id":"skill:pdf"},{"kind":"Noop"}],)"
      R"("challenge":{"challenge_digest":"abc"}})");
  EXPECT_EQ(reply.at("schema"), kReplySchema);
  EXPECT_EQ(reply.at("continue"), true);
  EXPECT_EQ(reply.at("actions").size(), 2u);
  EXPECT_EQ(reply.at("challenge").at("challenge_digest"), "abc");
  EXPECT_EQ(reply.at("message"), "ctx: SuggestCapability skill:pdf\nctx: Noop\n");
  EXPECT_FALSE(adapter.render_reply(R"({"actions":[]})").contains("challenge"));
}

TEST(GenericAdapter, RejectsMalformedReplies) {
  const GenericAdapter adapter("");
  CTX_EXPECT_THROW(adapter.render_reply("{}"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[1]})"), InvalidArgument, "objects");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[{}]})"), InvalidArgument, "kind");
  CTX_EXPECT_THROW(adapter.render_reply(R"({"actions":[],"challenge":"x"})"), InvalidArgument,
                   "challenge");
}

TEST(GenericAdapter, MapsExtensionsToLanguages) {
  EXPECT_EQ(language_for_extension("py"), "python");
  EXPECT_EQ(language_for_extension("HPP"), "c++");
  EXPECT_EQ(language_for_extension("unknown"), "");
  EXPECT_EQ(signal_vocabulary().count("python"), 1u);
  EXPECT_EQ(signal_vocabulary().count("go"), 0u);  // too common an English word
}

}  // namespace
}  // namespace ctx::generic_host
