#include "ctx/support/canonical_json.hpp"

#include <cmath>
#include <ctx/sdk/error.hpp>

#include "ctx/support/digest.hpp"

namespace ctx::support {
namespace {

using Json = nlohmann::json;

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

std::string sha256_hex(std::string_view bytes) {
  const auto digest = sha256(bytes);
  if (!digest) throw SystemError("sha256: openssl failed");
  return to_hex(*digest);
}

std::string canonical_digest(const Json& value, Encoding encoding) {
  return sha256_hex(canonical_json(value, encoding));
}

}  // namespace ctx::support
