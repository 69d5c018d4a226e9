#include "plugins/hosts/common/hook_input.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/hosts/common/adapter_config.hpp"
#include "plugins/hosts/common/host_adapter.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::host_adapters {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kKey(32, '\x07');

std::vector<std::string> words(std::string_view text) {
  SignalSet set;
  set.add_words(text);
  return set.to_json().get<std::vector<std::string>>();
}

TEST(HookInput, Utf8ValidationRejectsEveryIllFormedSequence) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));              // stray continuation
  EXPECT_FALSE(is_valid_utf8("\xFF"));
}

TEST(HookInput, ReadJsonObjectRefusesEveryMalformedShape) {
  CTX_EXPECT_THROW(read_json_object("", "hook payload"), InvalidArgument, "hook payload is empty");
  CTX_EXPECT_THROW(read_json_object(R"({"a":)", "hook payload"), InvalidArgument,
                   "is not valid json");
  CTX_EXPECT_THROW(read_json_object("[1]", "hook payload"), InvalidArgument, "not a json object");
  CTX_EXPECT_THROW(read_json_object(R"({"a":1,"a":2})", "hook payload"), InvalidArgument,
                   "duplicate key");
  CTX_EXPECT_THROW(read_json_object("{\"a\":\"\xC3\x28\"}", "hook payload"), InvalidArgument,
                   "is not valid UTF-8");
  std::string big = R"({"prompt":")" + std::string(kMaxPayloadBytes, 'a') + "\"}";
  CTX_EXPECT_THROW(read_json_object(big, "hook payload"), InvalidArgument, "larger than 1 MiB");

  const auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += "{\"a\":";
    text += "1";
    for (int i = 0; i < depth; ++i) text += "}";
    return text;
  };
  EXPECT_NO_THROW(read_json_object(nested(kMaxPayloadDepth), "hook payload"));
  CTX_EXPECT_THROW(read_json_object(nested(kMaxPayloadDepth + 1), "hook payload"), InvalidArgument,
                   "nested too deeply");
  // Brackets inside strings do not count as nesting.
  EXPECT_NO_THROW(
      read_json_object(R"({"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"{{{{"})", "hook payload"));
}

TEST(HookInput, ErrorsNeverQuoteThePayload) {
  try {
    read_json_object(R"({"session_id":"s","marker":zebracorn})", "hook payload");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr("zebracorn")));
  }
  const Json payload = {{"hook_event_name", "UserPromptSubmit"}, {"session_id", 7}};
  try {
    read_hook_fields(payload);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("session_id"));
  }
}

TEST(HookInput, WordTokensAreLowerCasedAsciiRunsSortedAndUnique) {
  EXPECT_THAT(words("Add a PDF-export to report.py, then PDF again!"),
              ElementsAre("a", "add", "again", "export", "pdf", "py", "report", "then", "to"));
  EXPECT_THAT(words("caf\xC3\xA9 na\xC3\xAFve C++ c#"), ElementsAre("c", "caf", "na", "ve"));
  // A run longer than a word (a hash, a token, a key) is dropped whole, never cut.
  const std::string key(kMaxTokenChars + 1, 'k');
  EXPECT_THAT(words("use " + key + " now"), ElementsAre("now", "use"));
  EXPECT_THAT(words(std::string(kMaxTokenChars, 'k')),
              ElementsAre(std::string(kMaxTokenChars, 'k')));
}

TEST(HookInput, SignalsAreCappedKeepingTheFirstDistinctTokens) {
  SignalSet set;
  std::string text;
  for (std::size_t i = 0; i < kMaxSignals + 50; ++i) text += "w" + std::to_string(i) + " ";
  set.add_words(text);
  const auto tokens = set.to_json().get<std::vector<std::string>>();
  ASSERT_EQ(tokens.size(), kMaxSignals);
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_NE(std::find(tokens.begin(), tokens.end(), "w0"), tokens.end());
  EXPECT_EQ(std::find(tokens.begin(), tokens.end(), "w" + std::to_string(kMaxSignals)),
            tokens.end());
}

TEST(HookInput, PathsGiveTheirLanguageAndExtension) {
  EXPECT_EQ(language_for_path("/p/src/main.rs"), "rust");
  EXPECT_EQ(language_for_path("a/b.TSX"), "typescript");
  EXPECT_EQ(language_for_path("x/Dockerfile"), "docker");
  EXPECT_EQ(language_for_path("CMakeLists.txt"), "cmake");
  EXPECT_EQ(language_for_path("lib.hpp"), "cpp");
  EXPECT_EQ(language_for_path("noext"), "");
  SignalSet set;
  set.add_path("/home/u/report.pdf");
  EXPECT_EQ(set.to_json(), Json::array({"pdf"}));
}

TEST(HookInput, FieldTypesAreChecked) {
  const Json base = {{"hook_event_name", "PreToolUse"}, {"session_id", "s1"}};
  const auto with = [&](const char* key, Json value) {
    Json payload = base;
    payload[key] = std::move(value);
    return payload;
  };
  EXPECT_NO_THROW(read_hook_fields(with("transcript_path", nullptr)));
  EXPECT_NO_THROW(read_hook_fields(with("tool_input", nullptr)));
  EXPECT_NO_THROW(read_hook_fields(with("brand_new_field", Json::array({1, 2}))));
  CTX_EXPECT_THROW(read_hook_fields(with("cwd", 5)), InvalidArgument, "cwd must be a string");
  CTX_EXPECT_THROW(read_hook_fields(with("prompt", Json::array())), InvalidArgument, "prompt");
  CTX_EXPECT_THROW(read_hook_fields(with("tool_input", "ls")), InvalidArgument,
                   "tool_input must be an object");
  CTX_EXPECT_THROW(read_hook_fields(with("stop_hook_active", "yes")), InvalidArgument,
                   "stop_hook_active must be a boolean");
  CTX_EXPECT_THROW(read_hook_fields(with("transcript_path", 1)), InvalidArgument,
                   "transcript_path must be a string or null");
  CTX_EXPECT_THROW(read_hook_fields(with("hook_event_name", "")), InvalidArgument,
                   "hook_event_name");
  CTX_EXPECT_THROW(read_hook_fields(with("session_id", std::string(257, 's'))), InvalidArgument,
                   "session_id");
  CTX_EXPECT_THROW(read_hook_fields(Json{{"session_id", "s"}}), InvalidArgument, "hook_event_name");
}

TEST(HookInput, EventsOutsideTheDocumentedSetAreIgnoredAndDocumentedOnesNeedTheirFields) {
  const std::set<std::string> documented = {"UserPromptSubmit", "PreToolUse"};
  HookFields fields;
  fields.event = "Notification";
  EXPECT_EQ(classify_event(fields, documented), kIgnoredEvent);
  fields.event = "UserPromptSubmit";
  CTX_EXPECT_THROW(classify_event(fields, documented), InvalidArgument, "needs a string prompt");
  fields.prompt = "x";
  EXPECT_EQ(classify_event(fields, documented), "UserPromptSubmit");
  fields.event = "PreToolUse";
  CTX_EXPECT_THROW(classify_event(fields, documented), InvalidArgument, "needs a string tool_name");
}

TEST(HookInput, SessionIdsThatAreNotEngineTokensAreKeyed) {
  EXPECT_EQ(session_token("abc-123_x.y:z@w", kKey), "abc-123_x.y:z@w");
  const std::string keyed = session_token("has space", kKey);
  EXPECT_EQ(keyed, "ses-" + plugin_common::to_hex(
                                plugin_common::hmac_sha256(
                                    kKey, std::string("ctx.host.session-v1\0has space", 29)))
                                .substr(0, 32));
  EXPECT_NE(session_token("has space", std::string(32, '\x08')), keyed);
}

TEST(HookInput, WorkRefIsAnHmacOverTheBasisAndNeverABareDigestOfThePrompt) {
  HookFields fields;
  fields.event = "UserPromptSubmit";
  fields.session_id = "abc123";
  fields.prompt = "add a PDF export";
  fields.prompt_id = "p-1";
  const Json ref = build_work_ref(fields, "UserPromptSubmit", kKey, "claude-code");
  const Json basis = {{"adapter", "claude-code"},
                      {"event", "UserPromptSubmit"},
                      {"session_id", "abc123"},
                      {"prompt_id", "p-1"},
                      {"prompt_digest", plugin_common::sha256_hex("add a PDF export")}};
  const std::string expected =
      "wrk_" + plugin_common::to_hex(plugin_common::hmac_sha256(
                   kKey, std::string("ctx.host.work-ref-v1\0", 21) + basis.dump()));
  EXPECT_EQ(ref, (Json{{"id", expected}, {"event", "UserPromptSubmit"}}));
  EXPECT_THAT(ref.dump(), Not(HasSubstr(plugin_common::sha256_hex("add a PDF export"))));
  // Another key, another prompt or another turn: another reference.
  EXPECT_NE(build_work_ref(fields, "UserPromptSubmit", std::string(32, 'x'), "claude-code"), ref);
  HookFields other = fields;
  other.prompt = "add a PDF export!";
  EXPECT_NE(build_work_ref(other, "UserPromptSubmit", kKey, "claude-code"), ref);
  other = fields;
  other.turn_id = "t2";
  EXPECT_NE(build_work_ref(other, "UserPromptSubmit", kKey, "claude-code"), ref);
}

TEST(HookInput, ScopeKeysTheWorkspaceAndNeverShowsThePath) {
  HookFields fields;
  fields.event = "SessionStart";
  fields.session_id = "s1";
  fields.cwd = "/home/alice/secret-project";
  const Json scope = build_scope(fields, kKey, "local", "codex");
  const std::string workspace =
      "ws-" +
      plugin_common::to_hex(plugin_common::hmac_sha256(
                                kKey, std::string("ctx.host.workspace-v1\0", 22) + *fields.cwd))
          .substr(0, 32);
  EXPECT_EQ(scope, (Json{{"tenant_id", "local"},
                         {"workspace_id", workspace},
                         {"repository_id", workspace},
                         {"session_id", "s1"},
                         {"exposure_id", "codex"},
                         {"host_context_id", "codex"}}));
  EXPECT_THAT(scope.dump(), Not(HasSubstr("secret")));
  fields.cwd.reset();
  EXPECT_EQ(build_scope(fields, kKey, "local", "codex").at("workspace_id"), "ws-none");
}

TEST(HookInput, OpenTokensKeepOnlyShortLowerCaseWords) {
  EXPECT_EQ(open_token("startup"), "startup");
  EXPECT_EQ(open_token("prompt_input_exit"), "prompt_input_exit");
  EXPECT_EQ(open_token("Some Free Text"), "other");
  EXPECT_EQ(open_token(""), "other");
  EXPECT_EQ(open_token(std::string(33, 'a')), "other");
}

TEST(AdapterConfig, ParsesAndRefusesMembers) {
  const std::set<std::string, std::less<>> allowed = {"installation_key", "tenant_id", "home",
                                                      "project_dir", "scope"};
  const AdapterConfig config = read_adapter_config(
      R"({"installation_key":"0707070707070707070707070707070707070707070707070707070707070707",)"
      R"("tenant_id":"acme","home":"/home/u","project_dir":"/w/p","scope":"user"})",
      "x adapter", allowed);
  EXPECT_EQ(config.installation_key, kKey);
  EXPECT_EQ(config.tenant_id, "acme");
  EXPECT_EQ(config.home, "/home/u");
  EXPECT_EQ(config.project_dir, "/w/p");
  EXPECT_TRUE(config.user_scope);
  EXPECT_FALSE(read_adapter_config("", "x", allowed).installation_key.has_value());
  CTX_EXPECT_THROW(read_adapter_config(R"({"skills_dir":"a"})", "x", allowed), InvalidArgument,
                   "unknown member");
  CTX_EXPECT_THROW(read_adapter_config(R"({"installation_key":"abcd"})", "x", allowed),
                   InvalidArgument, "64 hex characters");
  try {
    read_adapter_config(R"({"installation_key":")" + std::string(64, 'z') + "\"}", "x", allowed);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr("zzzz")));
  }
  CTX_EXPECT_THROW(read_adapter_config(R"({"home":"relative"})", "x", allowed), InvalidArgument,
                   "absolute");
  CTX_EXPECT_THROW(read_adapter_config(R"({"scope":"global"})", "x", allowed), InvalidArgument,
                   "scope");
  CTX_EXPECT_THROW(read_adapter_config(R"({"tenant_id":"a b"})", "x", allowed), InvalidArgument,
                   "tenant_id");
  CTX_EXPECT_THROW(read_adapter_config(R"({"tenant_id":5})", "x", allowed), InvalidArgument,
                   "non-empty string");
}

TEST(AdapterConfig, ParseWithoutAKeyIsAFailedPrecondition) {
  try {
    parse_hook_payload(R"({"hook_event_name":"Stop","session_id":"s"})", {"Stop"}, AdapterConfig{},
                       "codex");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("installation_key"));
  }
}

TEST(InstallLocations, PrimaryScopeAndConfiguredRoots) {
  AdapterConfig config;
  const HostDirs user{".x/skills", ".x/agents", ".x.json"};
  const HostDirs project{".y/skills", ".y/agents", ".mcp.json"};
  Json out = install_locations_json(config, user, project, "json");
  EXPECT_EQ(out.at("scope"), "project");
  EXPECT_EQ(out.at("skills"), ".y/skills");
  EXPECT_EQ(out.at("user").at("skills"), "~/.x/skills");
  config.user_scope = true;
  config.home = "/home/u";
  config.project_dir = "/w/p/";
  out = install_locations_json(config, user, project, "toml");
  EXPECT_EQ(out.at("scope"), "user");
  EXPECT_EQ(out.at("skills"), "/home/u/.x/skills");
  EXPECT_EQ(out.at("mcp"), "/home/u/.x.json");
  EXPECT_EQ(out.at("project").at("mcp"), "/w/p/.mcp.json");
  EXPECT_EQ(out.at("mcp_format"), "toml");
}

}  // namespace
}  // namespace ctx::host_adapters
