#include "host/core/canonical_json.hpp"

#include "host/core/error.hpp"

namespace ctx::core {

Json parse_canonical_json(std::string_view text, Encoding encoding) {
  Json value = parse_json(text);
  if (canonical_json(value, encoding) != text) throw InvalidArgument("json is not canonical");
  return value;
}

}  // namespace ctx::core
