// Canonical JSON for the host: the SDK's encoder (ctx/support/canonical_json.hpp, the one home of
// canonical_json and canonical_digest) and parse_canonical_json, which reads through the host's
// strict reader. Thread-safe (pure functions).
#ifndef CTX_HOST_CORE_CANONICAL_JSON_HPP_
#define CTX_HOST_CORE_CANONICAL_JSON_HPP_

#include <ctx/support/canonical_json.hpp>
#include <string>
#include <string_view>

#include "host/core/json_reader.hpp"

namespace ctx::core {

using support::canonical_digest;
using support::canonical_json;
using support::Encoding;

// Parses `text` and requires it to be byte-identical to its canonical re-encoding.
// Errors: InvalidArgument "json is not canonical", or parse_json's JsonFieldError.
Json parse_canonical_json(std::string_view text, Encoding encoding = Encoding::kUtf8);

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_CANONICAL_JSON_HPP_
