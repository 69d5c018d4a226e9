#include "plugins/hosts/common/reply_request.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "tests/support/expect_throw.hpp"

namespace ctx::host_adapters {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using Json = nlohmann::json;

const std::string kDigest(64, 'a');

TEST(ReplyRequest, CollectsRecommendedCapabilitiesFromActionsAndBundles) {
  const Json request = {
      {"event", "UserPromptSubmit"},
      {"actions",
       {{{"kind", "PresentBundle"},
         {"payload",
          {{"capabilities",
            {{{"capability_id", "skill:pdf-export"}}, {{"entity_id", "agent:rev"}}}},
           {"plan_digest", kDigest}}}},
        {{"kind", "RequestConsent"}, {"entity_id", "skill:pdf-export"}},
        {{"kind", "SuggestCapability"}, {"capability_id", "mcp-server:files"}},
        {{"kind", "DeactivateCapability"}, {"entity_id", "skill:old"}},
        {{"kind", "NoChange"}},
        {{"kind", "Notify"}, {"payload", {{"message", "free text never shown"}}}}}},
      {"challenge", {{"challenge_digest", kDigest}, {"capability_id", "skill:pdf-export"}}},
      {"installed", {"skill:xlsx"}},
      {"unknown_member", 1}};
  const ReplyRequest parsed = read_reply_request(request.dump());
  EXPECT_EQ(parsed.event, "UserPromptSubmit");
  EXPECT_THAT(parsed.recommended, ElementsAre("skill:pdf-export", "agent:rev", "mcp-server:files"));
  ASSERT_EQ(parsed.challenges.size(), 1u);
  EXPECT_EQ(parsed.challenges[0].digest, kDigest);
  EXPECT_EQ(parsed.challenges[0].capability_id, "skill:pdf-export");
  EXPECT_THAT(parsed.installed, ElementsAre("skill:xlsx"));
  const std::string text = reply_text(parsed);
  EXPECT_EQ(text,
            "ctx recommends: pdf-export (skill), rev (agent), files (mcp-server).\n"
            "ctx needs the user's consent to install pdf-export (skill). The user approves it in "
            "their own terminal with: ctx consent approve " +
                kDigest + " --key FILE (or declines it with: ctx consent deny " + kDigest +
                " --key FILE), where FILE is the user's own signing key. Do not run these "
                "commands for the user.\n"
                "ctx installed: xlsx (skill).");
  EXPECT_THAT(text, Not(HasSubstr("free text")));
  EXPECT_THAT(text, Not(HasSubstr("old")));
}

TEST(ReplyRequest, NothingToSayIsEmpty) {
  const ReplyRequest parsed = read_reply_request(R"({"actions":[{"kind":"NoChange"}]})");
  EXPECT_FALSE(parsed.event.has_value());
  EXPECT_THAT(parsed.recommended, IsEmpty());
  EXPECT_EQ(reply_text(parsed), "");
}

TEST(ReplyRequest, MalformedRequestsAreRefused) {
  CTX_EXPECT_THROW(read_reply_request("{}"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":{}})"), InvalidArgument, "actions");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[1]})"), InvalidArgument, "objects");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[{}]})"), InvalidArgument, "kind");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[{"kind":"a b"}]})"), InvalidArgument, "kind");
  CTX_EXPECT_THROW(
      read_reply_request(R"({"actions":[{"kind":"RequestConsent","entity_id":"Skill:PDF"}]})"),
      InvalidArgument, "not a capability id");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"challenge":"x"})"), InvalidArgument,
                   "challenge must be an object");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"challenge":{"challenge_digest":"abc"}})"),
                   InvalidArgument, "64 hex");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"challenges":{}})"), InvalidArgument,
                   "challenges must be an array");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"installed":["x y"]})"), InvalidArgument,
                   "installed");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"event":"add a pdf"})"), InvalidArgument,
                   "event");
  CTX_EXPECT_THROW(read_reply_request("{\"actions\":[],\"x\":\"\xFF\"}"), InvalidArgument, "UTF-8");
}

// Issue 36 failure 1: with a state dir that is not the default, the printed commands name it, so
// they work when pasted into a fresh shell; a path a shell would split or expand is quoted.
TEST(ReplyRequest, ConsentCommandsNameANonDefaultStateDir) {
  Json request = {{"actions", Json::array()},
                  {"challenge", {{"challenge_digest", kDigest}, {"capability_id", "skill:pdf"}}},
                  {"state_dir", "/home/me/ctx-state"}};
  std::string text = reply_text(read_reply_request(request.dump()));
  EXPECT_THAT(text, HasSubstr("ctx consent approve " + kDigest +
                              " --key FILE --state /home/me/ctx-state (or declines it with: "
                              "ctx consent deny " +
                              kDigest + " --key FILE --state /home/me/ctx-state)"));
  request["state_dir"] = "/tmp/my state/it's";
  text = reply_text(read_reply_request(request.dump()));
  EXPECT_THAT(text, HasSubstr("--key FILE --state '/tmp/my state/it'\\''s'"));
  request["state_dir"] = nullptr;
  EXPECT_THAT(reply_text(read_reply_request(request.dump())),
              HasSubstr(" --key FILE (or declines"));
  // More challenges than are listed: the show command names the state dir too.
  request["state_dir"] = "/s";
  request["challenges"] = Json::array();
  for (int i = 0; i < 20; ++i) request["challenges"].push_back({{"challenge_digest", kDigest}});
  EXPECT_THAT(reply_text(read_reply_request(request.dump())),
              HasSubstr("see ctx consent show --state /s."));
  for (const Json& bad : {Json("relative/dir"), Json(""), Json("/a\nb"), Json(7),
                          Json("/" + std::string(5000, 'x'))}) {
    request["state_dir"] = bad;
    CTX_EXPECT_THROW(read_reply_request(request.dump()), InvalidArgument, "state_dir");
  }
}

TEST(ReplyRequest, NamesTheCapabilitiesAHookDeactivated) {
  const ReplyRequest parsed = read_reply_request(
      R"({"actions":[],"deactivated":["skill:pdf-export","skill:pdf-export","agent:rev"]})");
  EXPECT_THAT(parsed.deactivated, ElementsAre("skill:pdf-export", "agent:rev"));
  EXPECT_EQ(reply_text(parsed), "ctx deactivated: pdf-export (skill), rev (agent).");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"deactivated":"skill:a"})"),
                   InvalidArgument, "deactivated must be an array");
  CTX_EXPECT_THROW(read_reply_request(R"({"actions":[],"deactivated":["Skill A"]})"),
                   InvalidArgument, "deactivated entries must be capability ids");
}

// A consent stranded by a policy change is named with when it lapses; nothing but a capability
// id and a UTC timestamp of digits reaches the text.
TEST(ReplyRequest, AStrandedConsentSaysWhenItLapses) {
  const Json request = {
      {"event", "UserPromptSubmit"},
      {"actions", Json::array()},
      {"stranded", {{{"capability_id", "skill:pdf-export"}, {"expires_at", "2026-08-03T13:00:00Z"}}}}};
  const ReplyRequest parsed = read_reply_request(request.dump());
  ASSERT_EQ(parsed.stranded.size(), 1u);
  EXPECT_EQ(reply_text(parsed),
            "ctx cannot ask for approval of pdf-export (skill) now: it was requested under an "
            "install policy that has since changed. ctx plans again once that request lapses at "
            "2026-08-03T13:00:00Z, or at once if the policy is set back.");
  EXPECT_NO_THROW(read_reply_request(
      R"({"actions":[],"stranded":[{"capability_id":"skill:a","expires_at":"2026-08-03T13:00:00.123456Z"}]})"));
  for (const char* bad : {R"("stranded":{})", R"("stranded":[1])",
                          R"("stranded":[{"expires_at":"2026-08-03T13:00:00Z"}])",
                          R"("stranded":[{"capability_id":"skill:a"}])",
                          R"("stranded":[{"capability_id":"skill:a","expires_at":"soon"}])",
                          R"("stranded":[{"capability_id":"skill:a","expires_at":"2026-08-03T13:00:00+01:00"}])",
                          R"("stranded":[{"capability_id":"skill:a","expires_at":"2026-08-03T13:00:00.Z"}])",
                          R"("stranded":[{"capability_id":"skill:a","expires_at":"2026-08-03 13:00:00Z"}])"}) {
    CTX_EXPECT_THROW(read_reply_request(std::string(R"({"actions":[],)") + bad + "}"),
                     InvalidArgument, "stranded");
  }
}

TEST(ReplyRequest, TextStaysWithinTenThousandCharacters) {
  Json request = {{"event", "UserPromptSubmit"}, {"actions", Json::array()}};
  Json challenges = Json::array();
  for (int i = 0; i < 40; ++i) {
    const std::string id = "skill:" + std::string(110, 'a') + std::to_string(100 + i);
    request["actions"].push_back({{"kind", "RequestConsent"}, {"entity_id", id}});
    challenges.push_back({{"challenge_digest", kDigest}, {"capability_id", id}});
  }
  request["challenges"] = challenges;
  request["installed"] = Json::array();
  for (int i = 0; i < 40; ++i) {
    request["installed"].push_back("agent:" + std::string(110, 'b') + std::to_string(100 + i));
  }
  const std::string text = reply_text(read_reply_request(request.dump()));
  EXPECT_LE(text.size(), kMaxContextChars);
  EXPECT_THAT(text, HasSubstr("and 24 more"));
  EXPECT_THAT(text, HasSubstr("ctx: further lines omitted."));
  EXPECT_THAT(text, HasSubstr("ctx consent approve " + kDigest + " --key FILE"));
}

TEST(ReplyRequest, DisplaysCapabilitiesAsNameAndKind) {
  EXPECT_EQ(display_capability("skill:pdf"), "pdf (skill)");
  EXPECT_EQ(display_capability("mcp-server:fs:extra"), "fs:extra (mcp-server)");
  EXPECT_EQ(display_capability("plain"), "plain");
  EXPECT_EQ(display_capability("skill:"), "skill:");
}

}  // namespace
}  // namespace ctx::host_adapters
