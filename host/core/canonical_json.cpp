#include "host/core/canonical_json.hpp"

#include <cmath>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"

namespace ctx::core {
namespace {

void reject_non_finite(const Json& value) {
  switch (value.type()) {
    case Json::value_t::number_float:
      if (!std::isfinite(value.get<double>())) {
        throw InvalidArgument("canonical json rejects nan and infinity");
      }
      return;
    case Json::value_t::array:
    case Json::value_t::object:
      for (const auto& item : value) reject_non_finite(item);
      return;
    default:
      return;
  }
}

}  // namespace

std::string canonical_json(const Json& value, Encoding encoding) {
  reject_non_finite(value);
  try {
    return value.dump(-1, ' ', encoding == Encoding::kAscii, Json::error_handler_t::strict);
  } catch (const Json::exception& e) {
    throw InvalidArgument(std::string("canonical json: ") + e.what());
  }
}

std::string canonical_digest(const Json& value, Encoding encoding) {
  return sha256_hex(canonical_json(value, encoding));
}

Json parse_canonical_json(std::string_view text, Encoding encoding) {
  Json value = parse_json(text);
  if (canonical_json(value, encoding) != text) throw InvalidArgument("json is not canonical");
  return value;
}

}  // namespace ctx::core
