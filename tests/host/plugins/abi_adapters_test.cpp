#include "host/plugins/abi_adapters.hpp"

#include <cstring>
#include <ctx/loader/errors.hpp>
#include <string>
#include <utility>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/identities.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

using ctx::testing::TempDir;

class AbiAdaptersTest : public ::testing::Test {
 protected:
  std::shared_ptr<const LoadedPlugin> load(const char* file) {
    return loader_.load(loader_.inspect_for_pin(file));
  }
  TempDir state_;
  PluginLoader loader_{state_.path()};
};

TEST_F(AbiAdaptersTest, VerifierAcceptsOnlyTheAcceptedVerdict) {
  const auto plugin = load(CTX_FIXTURE_VALID_VERIFIER);
  AbiVerifier verifier(plugin, "k3y");
  EXPECT_EQ(verifier.verify(R"({"proof":"p"})", "k3y"), engine::Verdict::kAccepted);
  EXPECT_EQ(verifier.verify(R"({"proof":"p"})", "k3y!"), engine::Verdict::kRejected);
  EXPECT_EQ(verifier.id(), "fixture-verifier");
  EXPECT_EQ(verifier.identity_digest(), plugin->identity().digest());
  try {
    verifier.verify("", "k3y");
    ADD_FAILURE() << "an empty assertion was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("plugin fixture-verifier verify failed"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("empty assertion"));
  }
}

TEST_F(AbiAdaptersTest, ThrowingOpBecomesAnInternalErrorNotAnAcceptance) {
  AbiVerifier verifier(load(CTX_FIXTURE_THROWING_OP), "");
  try {
    verifier.verify(R"({"proof":"p"})", "bytes");
    ADD_FAILURE() << "a throwing verify returned a verdict";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("fixture verify exploded"));
  }
}

TEST_F(AbiAdaptersTest, ThrowingCreateFailsTheConstruction) {
  const auto plugin = load(CTX_FIXTURE_THROWING_CREATE);
  try {
    AbiVerifier verifier(plugin, "");
    ADD_FAILURE() << "create succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("plugin fixture-throwing-create create failed"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("fixture create exploded"));
  }
}

TEST_F(AbiAdaptersTest, InstallerCarriesJsonBothWays) {
  const auto plugin = load(CTX_FIXTURE_VALID_INSTALLER);
  AbiInstaller installer(plugin, "{}");
  const engine::TargetIdentity target = installer.target_identity();
  EXPECT_EQ(target, (engine::TargetIdentity{7, 42, 0, 16832, "/fixture/root"}));
  EXPECT_EQ(target.digest(),
            core::canonical_digest(core::Json::parse(
                R"({"device":7,"inode":42,"mode":16832,"owner":0,"path":"/fixture/root"})")));
  const std::string digest = core::sha256_hex("fixture skill");
  const core::Json request = {
      {"capability_id", "skill:x"}, {"content", "fixture skill"}, {"content_sha256", digest}};
  // The installer reports the engine's MaterialIdentity digest (plugin_abi.h), not sha256.
  const std::string material =
      engine::MaterialIdentity::create("skill:x", engine::CapabilityKind::kSkill, digest, 13)
          .identity_digest();
  EXPECT_EQ(installer.install(request), (core::Json{{"capability_id", "skill:x"},
                                                    {"observed_material_identity_digest", material},
                                                    {"op", "install"},
                                                    {"outcome", "applied"},
                                                    {"verification_digest", digest}}));
  const core::Json entry = {{"capability_id", "skill:x"}, {"content_sha256", digest}};
  EXPECT_EQ(installer.activate(entry), (core::Json{{"capability_id", "skill:x"},
                                                   {"observed_material_identity_digest", material},
                                                   {"op", "activate"},
                                                   {"outcome", "applied"},
                                                   {"verification_digest", digest}}));
  EXPECT_EQ(installer.reconcile(core::Json{{"capabilities", core::Json::array({entry})}}),
            (core::Json{{"capabilities",
                         {{{"active", true},
                           {"active_material_identity_digest", material},
                           {"capability_id", "skill:x"},
                           {"installed", true},
                           {"verification_digest", digest}}}},
                        {"op", "reconcile"}}));
  EXPECT_EQ(
      installer.deactivate(core::Json{{"capability_id", "skill:x"}}),
      (core::Json{{"capability_id", "skill:x"}, {"op", "deactivate"}, {"outcome", "applied"}}));
  EXPECT_EQ(installer.id(), "fixture-installer");
  EXPECT_EQ(installer.identity_digest(), plugin->identity().digest());
  // The fixture offers no install_from_source (ABI minor 1, optional): absent, never called.
  bool looked_up = false;
  EXPECT_FALSE(installer
                   .install_from_source(request,
                                        [&](std::string_view) -> std::optional<std::string_view> {
                                          looked_up = true;
                                          return std::nullopt;
                                        })
                   .has_value());
  EXPECT_FALSE(looked_up);
  try {
    installer.install(core::Json{{"fail", true}});
    ADD_FAILURE() << "the install did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("asked to fail"));
  }
}

TEST_F(AbiAdaptersTest, HostAdapterCarriesJsonBothWays) {
  const auto plugin = load(CTX_FIXTURE_VALID_HOST_ADAPTER);
  AbiHostAdapter adapter(plugin, "");
  const std::string payload =
      R"({"hook_event_name":"UserPromptSubmit","prompt":"say hi","session_id":"s-1"})";
  const engine::HookObservation hook = adapter.parse_hook(payload);
  EXPECT_EQ(hook.event, engine::HookEvent::kPrompt);
  EXPECT_EQ(hook.host_event, "UserPromptSubmit");
  EXPECT_EQ(hook.scope,
            core::Json::parse(R"({"exposure_id":"fixture-exposure",)"
                              R"("host_context_id":"fixture-host-context","repository_id":)"
                              R"("fixture-repository","session_id":"s-1","tenant_id":)"
                              R"("fixture-tenant","workspace_id":"fixture-workspace"})"));
  EXPECT_TRUE(hook.signals.empty());
  EXPECT_EQ(hook.work_ref, "");
  engine::ReplyRequest request;
  request.host_event = hook.host_event;
  request.presented = {"skill:pdf", "agent:x"};
  EXPECT_EQ(adapter.render_reply(request),
            R"({"reply":{"actions":[{"kind":"PresentBundle","payload":{"capabilities":)"
            R"([{"capability_id":"skill:pdf"},{"capability_id":"agent:x"}]}}],)"
            R"("event":"UserPromptSubmit"}})");
  EXPECT_EQ(adapter.install_locations(), core::Json::parse(R"({"skills":"/fixture/skills"})"));
}

// Every kind of the C ABI decodes to its HookEvent; an answer without a known kind, or with a
// member of the wrong type, is the plugin's protocol error, never an event ctx guesses.
TEST_F(AbiAdaptersTest, AHookObservationNeedsAKnownKind) {
  const auto plugin = load(CTX_FIXTURE_VALID_HOST_ADAPTER);
  AbiHostAdapter adapter(plugin, "");
  const auto parse = [&](const std::string& kind) {
    return adapter.parse_hook(R"({"hook_event_name":"Anything","fixture_kind":")" + kind + R"("})");
  };
  const std::pair<const char*, engine::HookEvent> kinds[] = {
      {"ignored", engine::HookEvent::kIgnored},
      {"session_start", engine::HookEvent::kSessionStart},
      {"prompt", engine::HookEvent::kPrompt},
      {"tool_use", engine::HookEvent::kToolUse},
      {"turn_end", engine::HookEvent::kTurnEnd},
      {"compact", engine::HookEvent::kCompact},
      {"session_end", engine::HookEvent::kSessionEnd}};
  for (const auto& [name, event] : kinds) {
    SCOPED_TRACE(name);
    const engine::HookObservation hook = parse(name);
    EXPECT_EQ(hook.event, event);
    EXPECT_EQ(hook.host_event, "Anything");
  }
  CTX_EXPECT_THROW(parse("none"), PluginProtocolError, "no \"kind\"");
  CTX_EXPECT_THROW(parse("UserPromptSubmit"), PluginProtocolError, "an unknown \"kind\"");
  CTX_EXPECT_THROW(parse("Prompt"), PluginProtocolError, "an unknown \"kind\"");

  const core::Json good = {{"kind", "prompt"}, {"event", "E"}};
  EXPECT_EQ(decode_hook_observation(good, "p").event, engine::HookEvent::kPrompt);
  for (const auto& [member, value] :
       std::vector<std::pair<std::string, core::Json>>{{"event", 5},
                                                       {"scope", "s"},
                                                       {"signals", "a b"},
                                                       {"signals", {"a", 1}},
                                                       {"work_ref", "w"},
                                                       {"work_ref", {{"id", 7}}}}) {
    SCOPED_TRACE(member + " " + value.dump());
    core::Json bad = good;
    bad[member] = value;
    CTX_EXPECT_THROW(decode_hook_observation(bad, "p"), PluginProtocolError, "plugin p parse_hook");
  }
  core::Json no_event = good;
  no_event.erase("event");
  CTX_EXPECT_THROW(decode_hook_observation(no_event, "p"), PluginProtocolError, "no \"event\"");
}

// The reply request's JSON: what reply_request.hpp reads, empty members left out.
TEST(EncodeReplyRequest, NamesWhatIsSetAndNothingElse) {
  EXPECT_EQ(encode_reply_request(engine::ReplyRequest{}), core::Json::parse(R"({"actions":[]})"));
  engine::ReplyRequest request;
  request.host_event = "Stop";
  request.challenge = engine::ReplyRequest::Challenge{std::string(64, 'a'), "skill:pdf"};
  request.installed = {"skill:xlsx"};
  request.deactivated = {"skill:old"};
  request.stranded = {{"skill:csv", "2026-12-07T18:00:00Z"}};
  request.state_dir = "/tmp/my state";
  EXPECT_EQ(encode_reply_request(request),
            core::Json::parse(R"({"actions":[],"event":"Stop","challenge":{"challenge_digest":")" +
                              std::string(64, 'a') +
                              R"(","capability_id":"skill:pdf"},"installed":["skill:xlsx"],)"
                              R"("deactivated":["skill:old"],"stranded":[{"capability_id":)"
                              R"("skill:csv","expires_at":"2026-12-07T18:00:00Z"}],)"
                              R"("state_dir":"/tmp/my state"})"));
}

// The reply goes to the host's stdout as one line: an adapter's one-line text as it wrote it,
// anything else (line breaks, whitespace or a BOM around the object) as the object encoded.
TEST(HostReplyLine, AOneLineReplyIsKeptAnythingElseIsReencoded) {
  const core::Json reply = {{"a", 1}, {"b", "x y"}};
  EXPECT_EQ(host_reply_line(R"({"b": "x y",  "a":1})", reply), R"({"b": "x y",  "a":1})");
  EXPECT_EQ(host_reply_line("{\n  \"a\": 1,\n  \"b\": \"x y\"\n}", reply), R"({"a":1,"b":"x y"})");
  EXPECT_EQ(host_reply_line(R"({"a":1,"b":"x y"})"
                            "\r",
                            reply),
            R"({"a":1,"b":"x y"})");
  EXPECT_EQ(host_reply_line(R"( {"a":1,"b":"x y"})", reply), R"({"a":1,"b":"x y"})");
  EXPECT_EQ(host_reply_line("\xEF\xBB\xBF"
                            R"({"a":1,"b":"x y"})",
                            reply),
            R"({"a":1,"b":"x y"})");
}

TEST_F(AbiAdaptersTest, AdapterOfTheWrongKindIsRefused) {
  const auto verifier = load(CTX_FIXTURE_VALID_VERIFIER);
  CTX_EXPECT_THROW(AbiInstaller(verifier, ""), InvalidArgument, "is not a installer");
  CTX_EXPECT_THROW(AbiHostAdapter(verifier, ""), InvalidArgument, "is not a host-adapter");
}

TEST_F(AbiAdaptersTest, AdapterKeepsThePluginResident) {
  std::unique_ptr<AbiVerifier> verifier;
  {
    auto plugin = load(CTX_FIXTURE_VALID_VERIFIER);
    verifier = std::make_unique<AbiVerifier>(std::move(plugin), "k");
  }
  EXPECT_EQ(verifier->verify("{}", "k"), engine::Verdict::kAccepted);
}

TEST(ThrowIfError, RethrowsTheCodeWithTheBoundedText) {
  ctx_error err{};
  EXPECT_NO_THROW(throw_if_error(CTX_OK, err, "p", "op"));
  std::memset(err.message, 'x', sizeof err.message);  // no NUL: must stay bounded
  try {
    throw_if_error(CTX_UNAVAILABLE, err, "p", "op");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("plugin p op failed (unavailable): xxx"));
  }
  try {
    throw_if_error(99, ctx_error{}, "p", "op");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknown);
  }
}

TEST(StringSink, AppendsAndRefusesPastItsLimit) {
  StringSink sink(8);
  ctx_sink* s = sink.sink();
  EXPECT_EQ(s->write(s->context, reinterpret_cast<const uint8_t*>("abcd"), 4), CTX_OK);
  EXPECT_EQ(s->write(s->context, reinterpret_cast<const uint8_t*>("efgh"), 4), CTX_OK);
  EXPECT_EQ(s->write(s->context, reinterpret_cast<const uint8_t*>("i"), 1),
            CTX_RESOURCE_EXHAUSTED);
  EXPECT_EQ(sink.text(), "abcdefgh");
}

}  // namespace
}  // namespace ctx::plugins
