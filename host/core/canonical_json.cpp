#include "host/core/canonical_json.hpp"

#include <cmath>
#include <set>
#include <vector>

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

// SAX handler that builds the DOM like nlohmann's own and refuses duplicate keys.
class StrictSax : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit StrictSax(Json& root) : Base(root, true) {}

  bool start_object(std::size_t n) {
    keys_.emplace_back();
    return Base::start_object(n);
  }
  bool end_object() {
    keys_.pop_back();
    return Base::end_object();
  }
  bool key(string_t& k) {
    if (!keys_.back().insert(k).second) throw InvalidArgument("json has a duplicate key");
    return Base::key(k);
  }

 private:
  std::vector<std::set<std::string>> keys_;
};

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

Json parse_json(std::string_view text) {
  Json root;
  StrictSax sax(root);
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &sax)) {
      throw InvalidArgument("json is malformed");
    }
  } catch (const Json::exception& e) {
    throw InvalidArgument(std::string("json is malformed: ") + e.what());
  }
  return root;
}

Json parse_canonical_json(std::string_view text, Encoding encoding) {
  Json value = parse_json(text);
  if (canonical_json(value, encoding) != text) throw InvalidArgument("json is not canonical");
  return value;
}

}  // namespace ctx::core
