#include "host/core/json_reader.hpp"

#include <algorithm>
#include <ctx/support/strict_json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ctx::core {
namespace {

using Reason = JsonFieldError::Reason;

}  // namespace

Json parse_json(std::string_view text, std::size_t max_depth) {
  Json document;
  const auto failure = support::read_strict_json(text, &document, max_depth);
  if (!failure) return document;
  const Reason reason = failure->fault == support::JsonFault::kDuplicateKey ? Reason::kDuplicateKey
                        : failure->fault == support::JsonFault::kTooDeep    ? Reason::kTooDeep
                                                                            : Reason::kMalformed;
  throw JsonFieldError(reason, "", support::describe(*failure));
}

// ---- JsonObjectReader -----------------------------------------------------------------------

JsonObjectReader::JsonObjectReader(const Json& value, std::string name, JsonErrorRaiser raise)
    : JsonObjectReader(value, std::move(name), std::string(), raise) {}

JsonObjectReader::JsonObjectReader(const Json& value, std::string name, std::string path,
                                   JsonErrorRaiser raise)
    : value_(value), name_(std::move(name)), path_(std::move(path)), raise_(raise) {
  if (!value_.is_object()) {
    fail_message(Reason::kNotObject, "", name_ + " must be an object");
  }
}

std::string JsonObjectReader::field(std::string_view key) const {
  if (key.empty()) return path_.empty() ? std::string() : path_.substr(0, path_.size() - 1);
  return path_ + std::string(key);
}

void JsonObjectReader::fail_message(Reason reason, std::string_view key,
                                    std::string message) const {
  const JsonFieldError error(reason, field(key), message);
  if (raise_ != nullptr) raise_(error);
  throw error;  // a raiser that returned
}

void JsonObjectReader::fail(Reason reason, std::string_view key, std::string_view fact) const {
  fail_message(reason, key, field(key) + " " + std::string(fact));
}

const JsonObjectReader& JsonObjectReader::expect(
    std::initializer_list<std::string_view> required,
    std::initializer_list<std::string_view> optional) const {
  auto listed = [](std::initializer_list<std::string_view> keys, std::string_view key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  std::string unknown;
  for (const auto& item : value_.items()) {
    if (!listed(required, item.key()) && !listed(optional, item.key())) {
      unknown += (unknown.empty() ? "" : ", ") + item.key();
    }
  }
  if (!unknown.empty()) {
    fail_message(Reason::kUnknown, "", name_ + " has unknown field(s): " + unknown);
  }
  for (const auto key : required) {
    if (!value_.contains(key)) {
      fail_message(Reason::kMissing, key, name_ + " is missing " + std::string(key));
    }
  }
  return *this;
}

bool JsonObjectReader::absent_or_null(std::string_view key) const {
  const auto it = value_.find(key);
  return it == value_.end() || it->is_null();
}

const Json& JsonObjectReader::at(std::string_view key) const {
  const auto it = value_.find(key);
  if (it == value_.end()) {
    fail_message(Reason::kMissing, key, name_ + " is missing " + std::string(key));
  }
  return *it;
}

const Json* JsonObjectReader::find(std::string_view key) const {
  const auto it = value_.find(key);
  return (it == value_.end() || it->is_null()) ? nullptr : &*it;
}

const std::string& JsonObjectReader::string_ref(std::string_view key) const {
  const Json& v = at(key);
  if (!v.is_string()) fail(Reason::kWrongType, key, "must be a string");
  return v.get_ref<const std::string&>();
}

std::string JsonObjectReader::string(std::string_view key) const { return string_ref(key); }

std::string JsonObjectReader::string(std::string_view key, const StringRule& rule) const {
  const Json& v = at(key);
  if (!v.is_string()) {
    fail(Reason::kWrongType, key, "must be " + std::string(rule.requirement));
  }
  const auto& text = v.get_ref<const std::string&>();
  if (!rule.accept(text)) {
    fail(Reason::kInvalidValue, key, "must be " + std::string(rule.requirement));
  }
  return text;
}

std::optional<std::string> JsonObjectReader::optional_string(std::string_view key) const {
  if (absent_or_null(key)) return std::nullopt;
  return string(key);
}

std::optional<std::string> JsonObjectReader::optional_string(std::string_view key,
                                                             const StringRule& rule) const {
  if (absent_or_null(key)) return std::nullopt;
  return string(key, rule);
}

std::int64_t JsonObjectReader::integer(std::string_view key, std::int64_t min,
                                       std::int64_t max) const {
  const Json& v = at(key);
  if (!v.is_number_integer()) fail(Reason::kWrongType, key, "must be an integer");
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) {
      fail(Reason::kOutOfRange, key, "is outside its bounded range");
    }
  }
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max) fail(Reason::kOutOfRange, key, "is outside its bounded range");
  return n;
}

std::optional<std::int64_t> JsonObjectReader::optional_integer(std::string_view key,
                                                               std::int64_t min,
                                                               std::int64_t max) const {
  if (absent_or_null(key)) return std::nullopt;
  return integer(key, min, max);
}

bool JsonObjectReader::boolean(std::string_view key) const {
  const Json& v = at(key);
  if (!v.is_boolean()) fail(Reason::kWrongType, key, "must be a boolean");
  return v.get<bool>();
}

const Json& JsonObjectReader::array(std::string_view key) const {
  const Json& v = at(key);
  if (!v.is_array()) fail(Reason::kWrongType, key, "must be a JSON array");
  return v;
}

const Json& JsonObjectReader::object_value(std::string_view key) const {
  const Json& v = at(key);
  if (!v.is_object()) fail(Reason::kWrongType, key, "must be a JSON object");
  return v;
}

JsonObjectReader JsonObjectReader::object(std::string_view key) const {
  const Json& v = at(key);
  const std::string path = field(key);
  return JsonObjectReader(v, path, path + ".", raise_);
}

void JsonObjectReader::literal(std::string_view key, std::string_view expected,
                               std::string_view what) const {
  const Json& v = at(key);
  if (!v.is_string() || v.get_ref<const std::string&>() != expected) {
    fail_message(Reason::kInvalidValue, key, std::string(what) + " is unsupported");
  }
}

}  // namespace ctx::core
