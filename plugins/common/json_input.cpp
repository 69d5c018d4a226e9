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

// Tracks the keys of every open object while nlohmann parses; records the first violation
// instead of throwing from inside the parser.
class KeyAudit {
 public:
  bool on_event(int depth, Json::parse_event_t event, const Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_.empty()) open_.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_.empty() && !open_.back().insert(parsed.get<std::string>()).second) {
          duplicate_ = true;
        }
        break;
      default:
        break;
    }
    if (depth > kMaxJsonDepth) too_deep_ = true;
    return true;
  }
  bool duplicate() const { return duplicate_; }
  bool too_deep() const { return too_deep_; }

 private:
  std::vector<std::set<std::string>> open_;
  bool duplicate_ = false;
  bool too_deep_ = false;
};

}  // namespace

Json parse_object(std::string_view text, std::string_view what) {
  KeyAudit audit;
  Json value = Json::parse(
      text.begin(), text.end(),
      [&audit](int depth, Json::parse_event_t event, Json& parsed) {
        return audit.on_event(depth, event, parsed);
      },
      /*allow_exceptions=*/false);
  if (value.is_discarded()) throw InvalidArgument(describe(what, "is not valid json"));
  if (audit.too_deep()) throw InvalidArgument(describe(what, "is nested too deeply"));
  if (audit.duplicate()) throw InvalidArgument(describe(what, "has a duplicate key"));
  if (!value.is_object()) throw InvalidArgument(describe(what, "is not a json object"));
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
