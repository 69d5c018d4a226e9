// The one strict JSON reader of ctx (host and plugins): RFC 8259 text (no comments, nothing after
// the value, no NUL byte), no object that repeats a key, nesting bounded. nlohmann keeps one of
// two repeated keys silently, so every reader of untrusted or user-edited JSON goes through here.
// Header-only over any nlohmann basic_json (ordered_json keeps a user's key order); the includer
// links nlohmann_json (ctx::support itself does not need it). Thread-safe.
#ifndef CTX_SUPPORT_STRICT_JSON_HPP_
#define CTX_SUPPORT_STRICT_JSON_HPP_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctx::support {

enum class JsonFault {
  kMalformed,     // not one JSON value
  kDuplicateKey,  // an object repeats a key
  kTooDeep,       // more than the allowed nested objects and arrays
};

struct JsonFailure {
  JsonFault fault = JsonFault::kMalformed;
  std::size_t byte = 0;  // kMalformed: the 1-based byte where reading stopped
};

// The failure in words, never quoting the input: "json has a duplicate key", "json is nested too
// deeply", "json is malformed (parse error at byte N)".
inline std::string describe(const JsonFailure& failure) {
  switch (failure.fault) {
    case JsonFault::kDuplicateKey:
      return "json has a duplicate key";
    case JsonFault::kTooDeep:
      return "json is nested too deeply";
    case JsonFault::kMalformed:
      break;
  }
  return "json is malformed (parse error at byte " + std::to_string(failure.byte) + ")";
}

namespace strict_json_internal {

// nlohmann SAX handler (its public sax_parse interface): builds the document into `*out`, or
// only checks when `out` is null, and stops at the first repeated key or too deep a container.
template <class BasicJson>
class StrictSax {
 public:
  StrictSax(BasicJson* out, std::size_t max_depth) : out_(out), max_depth_(max_depth) {}

  bool null() { return put(nullptr); }
  bool boolean(bool value) { return put(value); }
  bool number_integer(typename BasicJson::number_integer_t value) { return put(value); }
  bool number_unsigned(typename BasicJson::number_unsigned_t value) { return put(value); }
  bool number_float(typename BasicJson::number_float_t value, const std::string& /*text*/) {
    return put(value);
  }
  bool string(std::string& value) { return put(std::move(value)); }
  bool binary(typename BasicJson::binary_t& value) {
    return put(BasicJson::binary(std::move(value)));
  }
  bool start_object(std::size_t /*size*/) {
    if (out_ == nullptr) keys_.emplace_back();
    return open(BasicJson::object());
  }
  bool start_array(std::size_t /*size*/) { return open(BasicJson::array()); }
  bool end_object() {
    if (out_ == nullptr) keys_.pop_back();
    return close();
  }
  bool end_array() { return close(); }
  // A repeated key: the open object already holds it (building), or its key set does (checking).
  bool key(std::string& key) {
    const bool repeated =
        out_ != nullptr ? open_.back()->contains(key) : !keys_.back().insert(key).second;
    if (repeated) return stop(JsonFault::kDuplicateKey);
    if (out_ != nullptr) key_ = std::move(key);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const typename BasicJson::exception& error) {
    const auto* parse = dynamic_cast<const typename BasicJson::parse_error*>(&error);
    failure_ = JsonFailure{JsonFault::kMalformed, parse != nullptr ? parse->byte : position};
    return false;
  }

  std::optional<JsonFailure> failure() const { return failure_; }

 private:
  template <class Value>
  bool put(Value&& value) {
    if (out_ != nullptr) place(BasicJson(std::forward<Value>(value)));
    return true;
  }
  // Places `value` in the open container (or as the document); returns where it now lives.
  BasicJson* place(BasicJson value) {
    if (open_.empty()) {
      *out_ = std::move(value);
      return out_;
    }
    BasicJson& container = *open_.back();
    if (container.is_array()) {
      container.push_back(std::move(value));
      return &container.back();
    }
    return &(container[key_] = std::move(value));
  }
  bool open(BasicJson container) {
    if (++depth_ > max_depth_) return stop(JsonFault::kTooDeep);
    // Nothing is added to a parent while a child is open, so this address stays valid.
    if (out_ != nullptr) open_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    --depth_;
    if (out_ != nullptr) open_.pop_back();
    return true;
  }
  bool stop(JsonFault fault) {
    failure_ = JsonFailure{fault, 0};
    return false;
  }

  BasicJson* out_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  std::vector<BasicJson*> open_;
  std::vector<std::set<std::string, std::less<>>> keys_;
  std::string key_;
  std::optional<JsonFailure> failure_;
};

}  // namespace strict_json_internal

// Reads `text` as one JSON value under the rules above, into `*out` (untouched on failure), or
// only checks it when `out` is null (no document is built: the cost of reading a large file of
// which the caller needs a part). Returns the first rule broken, or nullopt.
template <class BasicJson = nlohmann::json>
std::optional<JsonFailure> read_strict_json(std::string_view text, BasicJson* out,
                                            std::size_t max_depth) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return JsonFailure{JsonFault::kMalformed, nul + 1};
  }
  BasicJson document;
  strict_json_internal::StrictSax<BasicJson> sax(out != nullptr ? &document : nullptr, max_depth);
  bool parsed = false;
  try {
    parsed = BasicJson::sax_parse(text.begin(), text.end(), &sax, BasicJson::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  } catch (const typename BasicJson::exception&) {
    parsed = false;
  }
  if (!parsed) return sax.failure().value_or(JsonFailure{});
  if (out != nullptr) *out = std::move(document);
  return std::nullopt;
}

}  // namespace ctx::support

#endif  // CTX_SUPPORT_STRICT_JSON_HPP_
