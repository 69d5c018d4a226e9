// The `hook` request shared by `ctx hook ADAPTER` (client and in-process paths) and the `ctx serve`
// JSON-RPC method "hook": the bytes a coding host wrote on stdin go in, the bytes ctx writes on
// stdout come out. The client checks the payload (check_hook_payload) before it is sent, so the
// payload always fits a JSON string; the server checks it again.
//
//   JSON-RPC request   {"method": "hook", "params": {"adapter": ID, "payload": TEXT}}
//   JSON-RPC result    {"reply": TEXT}   what `ctx hook` prints on stdout (one line), or
//                      {"reply": null}   print nothing (an ignored event, nothing to say)
//   JSON-RPC error     -32602 (invalid params) with a one-line message that never quotes the
//                      payload: the payload is malformed or the adapter is unknown; any other
//                      error code: the hook could not be served.
// `ctx hook` exits 0 after printing the reply (or nothing) and 1 with the error message as one
// stderr line otherwise; it never exits 2 (that would block the host's prompt or tool).
#ifndef CTX_HOST_APP_HOOK_HOOK_PROTOCOL_HPP_
#define CTX_HOST_APP_HOOK_HOOK_PROTOCOL_HPP_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"

namespace ctx::runtime::hooks {

inline constexpr std::string_view kHookMethod = "hook";
inline constexpr std::size_t kMaxHookPayloadBytes = std::size_t{1} << 20;  // 1 MiB

// The payload cannot be served as a hook: empty, over 1 MiB, not UTF-8, a byte order mark, not
// JSON the adapter reads. The message is one line and never quotes the payload. Code:
// kInvalidArgument.
class HookPayloadError : public InvalidArgument {
 public:
  explicit HookPayloadError(const std::string& message) : InvalidArgument(message) {}
};

struct HookRequest {
  std::string adapter;  // a pinned host-adapter plugin id ("claude-code", "codex", "generic")
  std::string payload;  // the host's stdin bytes, already passed check_hook_payload
};

struct HookResponse {
  std::optional<std::string> reply;  // stdout text without the trailing newline; nullopt: none
};

// Throws HookPayloadError "hook payload is empty" / "is larger than 1 MiB" / "is not valid
// UTF-8". Cheap: done by the client before anything is opened or sent.
void check_hook_payload(std::string_view payload);

// {"adapter": ..., "payload": ...}.
core::Json hook_request_to_json(const HookRequest& request);
// Errors: HookPayloadError for params that are not exactly {"adapter": token, "payload":
// string} or whose payload fails check_hook_payload.
HookRequest hook_request_from_json(const core::Json& params);

// {"reply": TEXT | null}.
core::Json hook_response_to_json(const HookResponse& response);
// Errors: InvalidArgument when `result` is not exactly {"reply": string | null}.
HookResponse hook_response_from_json(const core::Json& result);

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_APP_HOOK_HOOK_PROTOCOL_HPP_
