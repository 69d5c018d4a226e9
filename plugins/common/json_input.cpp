#include "plugins/common/json_input.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include <set>
#include <vector>

namespace ctx::plugin_common {
namespace {

std::string describe(std::string_view what, std::string_view fact) {
  std::string message(what);
  message += ' ';
  message += fact;
  return message;
}

// parse_object's rules applied to nlohmann's SAX events (its public sax_parse API), without
// building a document: stops at the first repeated key or at nesting deeper than kMaxJsonDepth.
class StrictAudit {
 public:
  bool null() { return value(); }
  bool boolean(bool /*value*/) { return value(); }
  bool number_integer(Json::number_integer_t /*value*/) { return value(); }
  bool number_unsigned(Json::number_unsigned_t /*value*/) { return value(); }
  bool number_float(Json::number_float_t /*value*/, const std::string& /*text*/) { return value(); }
  bool string(std::string& /*value*/) { return value(); }
  bool binary(Json::binary_t& /*value*/) { return value(); }
  bool start_object(std::size_t /*size*/) {
    if (!open(true)) return false;
    keys_.emplace_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) { return open(false); }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool key(std::string& key) {
    if (!keys_.back().insert(std::move(key)).second) return stop("has a duplicate key");
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const Json::exception& /*error*/) {
    return stop("is not valid json");
  }

  // The first rule the text broke, or nullptr; top_is_object() holds once it parsed.
  const char* violation() const { return violation_; }
  bool top_is_object() const { return top_is_object_; }

 private:
  bool value() {
    if (depth_ == 0) top_is_object_ = false;
    return true;
  }
  bool open(bool object) {
    if (depth_ == 0) top_is_object_ = object;
    if (++depth_ > kMaxJsonDepth) return stop("is nested too deeply");
    return true;
  }
  bool stop(const char* violation) {
    violation_ = violation;
    return false;
  }

  std::vector<std::set<std::string, std::less<>>> keys_;
  int depth_ = 0;
  bool top_is_object_ = false;
  const char* violation_ = nullptr;
};

}  // namespace

void check_object(std::string_view text, std::string_view what) {
  StrictAudit audit;
  bool parsed = false;
  try {
    parsed = Json::sax_parse(text.begin(), text.end(), &audit, Json::input_format_t::json,
                             /*strict=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception&) {
  }
  if (audit.violation() != nullptr) throw InvalidArgument(describe(what, audit.violation()));
  if (!parsed) throw InvalidArgument(describe(what, "is not valid json"));
  if (!audit.top_is_object()) throw InvalidArgument(describe(what, "is not a json object"));
}

Json parse_object(std::string_view text, std::string_view what) {
  check_object(text, what);
  Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) throw InvalidArgument(describe(what, "is not valid json"));
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
