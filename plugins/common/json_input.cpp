#include "plugins/common/json_input.hpp"

#include <ctx/sdk/error.hpp>
#include <ctx/support/strict_json.hpp>

#include "plugins/common/bytes.hpp"

namespace ctx::plugin_common {
namespace {

std::string describe(std::string_view what, std::string_view fact) {
  std::string message(what);
  message += ' ';
  message += fact;
  return message;
}

// Reads `text` under parse_object's rules into `*out`, or only checks it when `out` is null.
void read_object(std::string_view text, std::string_view what, Json* out) {
  const auto failure =
      support::read_strict_json(text, out, static_cast<std::size_t>(kMaxJsonDepth));
  if (failure) {
    switch (failure->fault) {
      case support::JsonFault::kDuplicateKey:
        throw InvalidArgument(describe(what, "has a duplicate key"));
      case support::JsonFault::kTooDeep:
        throw InvalidArgument(describe(what, "is nested too deeply"));
      case support::JsonFault::kMalformed:
        throw InvalidArgument(describe(what, "is not valid json"));
    }
  }
  // Valid JSON whose first byte after white space is '{' is an object.
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool object = out != nullptr ? out->is_object() : text[first] == '{';
  if (!object) throw InvalidArgument(describe(what, "is not a json object"));
}

}  // namespace

void check_object(std::string_view text, std::string_view what) {
  read_object(text, what, nullptr);
}

Json parse_object(std::string_view text, std::string_view what) {
  Json value;
  read_object(text, what, &value);
  return value;
}

const std::string& require_string(const Json& object, std::string_view key, std::string_view what) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    throw InvalidArgument(describe(what, "needs a string \"" + std::string(key) + "\""));
  }
  return it->get_ref<const std::string&>();
}

std::optional<std::string> optional_string(const Json& object, std::string_view key,
                                           std::string_view what) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (!it->is_string()) {
    throw InvalidArgument(describe(what, "field \"" + std::string(key) + "\" is not a string"));
  }
  return it->get<std::string>();
}

const Json& require_object(const Json& object, std::string_view key, std::string_view what) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_object()) {
    throw InvalidArgument(describe(what, "needs an object \"" + std::string(key) + "\""));
  }
  return *it;
}

std::string dump(const Json& value) { return value.dump(); }

std::string material_identity_digest(std::string_view capability_id,
                                     std::string_view content_sha256, std::uint64_t content_bytes) {
  const Json identity = {{"capability_id", capability_id},
                         {"content_bytes", content_bytes},
                         {"content_sha256", content_sha256},
                         {"kind", capability_id.substr(0, capability_id.find(':'))},
                         {"schema", "ctx.material-identity-v2"}};
  return sha256_hex(identity.dump(-1, ' ', /*ensure_ascii=*/true));
}

}  // namespace ctx::plugin_common
