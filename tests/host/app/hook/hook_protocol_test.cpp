#include "host/app/hook/hook_protocol.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/expect_throw.hpp"

namespace ctx::runtime::hooks {
namespace {

TEST(HookProtocol, RequestAndResponseRoundTrip) {
  const HookRequest request{"claude-code", R"({"hook_event_name":"Stop"})"};
  const core::Json params = hook_request_to_json(request);
  EXPECT_EQ(params, (core::Json{{"adapter", "claude-code"}, {"payload", request.payload}}));
  const HookRequest back = hook_request_from_json(params);
  EXPECT_EQ(back.adapter, "claude-code");
  EXPECT_EQ(back.payload, request.payload);

  EXPECT_EQ(hook_response_to_json(HookResponse{}), (core::Json{{"reply", nullptr}}));
  EXPECT_EQ(hook_response_from_json(hook_response_to_json(HookResponse{"{}"})).reply,
            std::optional<std::string>("{}"));
  EXPECT_FALSE(hook_response_from_json(core::Json{{"reply", nullptr}}).reply.has_value());
}

TEST(HookProtocol, PayloadChecksNameTheProblemWithoutQuotingIt) {
  CTX_EXPECT_THROW(check_hook_payload(""), HookPayloadError, "is empty");
  CTX_EXPECT_THROW(check_hook_payload(std::string(kMaxHookPayloadBytes + 1, ' ')),
                   HookPayloadError, "larger than 1 MiB");
  EXPECT_NO_THROW(check_hook_payload(std::string(kMaxHookPayloadBytes, ' ')));
  const std::string invalid = "{\"prompt\":\"secretword \xff\"}";
  try {
    check_hook_payload(invalid);
    ADD_FAILURE() << "invalid UTF-8 accepted";
  } catch (const HookPayloadError& e) {
    EXPECT_EQ(std::string(e.what()).find("secretword"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos);
  }
}

TEST(HookProtocol, MalformedParamsAndResultsAreRefused) {
  CTX_EXPECT_THROW(hook_request_from_json(core::Json::array()), HookPayloadError, "exactly");
  CTX_EXPECT_THROW(hook_request_from_json(core::Json{{"adapter", "codex"}}), HookPayloadError,
                   "exactly");
  CTX_EXPECT_THROW(
      hook_request_from_json(core::Json{{"adapter", "codex"}, {"payload", "{}"}, {"x", 1}}),
      HookPayloadError, "exactly");
  CTX_EXPECT_THROW(hook_request_from_json(core::Json{{"adapter", "Bad Id"}, {"payload", "{}"}}),
                   HookPayloadError, "plugin id");
  CTX_EXPECT_THROW(hook_request_from_json(core::Json{{"adapter", "codex"}, {"payload", 7}}),
                   HookPayloadError, "must be a string");
  CTX_EXPECT_THROW(hook_request_from_json(core::Json{{"adapter", "codex"}, {"payload", ""}}),
                   HookPayloadError, "is empty");
  CTX_EXPECT_THROW(hook_response_from_json(core::Json{{"reply", 3}}), InvalidArgument, "exactly");
  CTX_EXPECT_THROW(hook_response_from_json(core::Json::object()), InvalidArgument, "exactly");
}

}  // namespace
}  // namespace ctx::runtime::hooks
