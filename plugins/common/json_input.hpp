// Strict JSON input for plugin entry points: one object per payload, duplicate keys rejected,
// nesting bounded, and error messages that never quote the input (payloads may carry key
// material, proofs or prompt text). Thread-safe (pure functions).
#ifndef CTX_PLUGINS_COMMON_JSON_INPUT_HPP_
#define CTX_PLUGINS_COMMON_JSON_INPUT_HPP_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ctx::plugin_common {

using Json = nlohmann::json;

// Deepest nesting parse_object accepts; deeper input is refused rather than walked.
inline constexpr int kMaxJsonDepth = 32;

// Parses `text` as a single JSON object. `what` names the payload in messages ("config").
// Errors: InvalidArgument "<what> is not valid json" | "is not a json object" |
// "has a duplicate key" | "is nested too deeply"; the message never contains input bytes.
Json parse_object(std::string_view text, std::string_view what);

// parse_object's checks, same errors, without building the document: for large files of which
// the caller reads only a part.
void check_object(std::string_view text, std::string_view what);

// Returns the string member `key` of `object`. Errors: InvalidArgument naming `what` and `key`
// (never the value) when it is missing or not a string.
const std::string& require_string(const Json& object, std::string_view key, std::string_view what);

// Returns the string member `key`, or nullopt when absent. Errors: InvalidArgument when present
// but not a string.
std::optional<std::string> optional_string(const Json& object, std::string_view key,
                                           std::string_view what);

// Returns the object member `key`. Errors: InvalidArgument when missing or not an object.
const Json& require_object(const Json& object, std::string_view key, std::string_view what);

// Compact serialisation with sorted keys (nlohmann's object order) and no spaces.
std::string dump(const Json& value);

// The MaterialIdentity digest an installer reports (plugin_abi.h, "Material identity"): sha-256
// of the canonical ASCII JSON {capability_id, content_bytes, content_sha256, kind (the id up to
// its first ':'), schema "ctx.material-identity-v2"}.
std::string material_identity_digest(std::string_view capability_id,
                                     std::string_view content_sha256, std::uint64_t content_bytes);

}  // namespace ctx::plugin_common

#endif  // CTX_PLUGINS_COMMON_JSON_INPUT_HPP_
