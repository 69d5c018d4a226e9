#include "host/app/hook/hook_protocol.hpp"

#include "host/engine/lexical.hpp"

namespace ctx::runtime::hooks {

void check_hook_payload(std::string_view payload) {
  if (payload.empty()) throw HookPayloadError("hook payload is empty");
  if (payload.size() > kMaxHookPayloadBytes) {
    throw HookPayloadError("hook payload is larger than 1 MiB");
  }
  if (!engine::is_valid_unicode(payload)) throw HookPayloadError("hook payload is not valid UTF-8");
  // JSON text has no byte order mark (RFC 8259 §8.1); a reader may skip it or refuse it, so the
  // adapter, which reads these very bytes, could see other JSON than the check did.
  if (payload.starts_with("\xEF\xBB\xBF")) {
    throw HookPayloadError("hook payload starts with a byte order mark");
  }
}

core::Json hook_request_to_json(const HookRequest& request) {
  return core::Json{{"adapter", request.adapter}, {"payload", request.payload}};
}

HookRequest hook_request_from_json(const core::Json& params) {
  if (!params.is_object() || params.size() != 2 || !params.contains("adapter") ||
      !params.contains("payload")) {
    throw HookPayloadError("hook params must be exactly {\"adapter\", \"payload\"}");
  }
  const core::Json& adapter = params["adapter"];
  const core::Json& payload = params["payload"];
  if (!adapter.is_string() || !engine::is_canonical_token(adapter.get_ref<const std::string&>())) {
    throw HookPayloadError("hook adapter must be a plugin id");
  }
  if (!payload.is_string()) throw HookPayloadError("hook payload must be a string");
  HookRequest request{adapter.get<std::string>(), payload.get<std::string>()};
  check_hook_payload(request.payload);
  return request;
}

core::Json hook_response_to_json(const HookResponse& response) {
  return core::Json{{"reply", response.reply ? core::Json(*response.reply) : core::Json(nullptr)}};
}

HookResponse hook_response_from_json(const core::Json& result) {
  if (!result.is_object() || result.size() != 1 || !result.contains("reply") ||
      !(result["reply"].is_string() || result["reply"].is_null())) {
    throw InvalidArgument("hook result must be exactly {\"reply\": string or null}");
  }
  HookResponse response;
  if (result["reply"].is_string()) response.reply = result["reply"].get<std::string>();
  return response;
}

}  // namespace ctx::runtime::hooks
