// Strict readers for JSON objects with an exact key set, used by every from_json() in the
// engine. Each failure throws the caller's error type with a message naming the field.
// Thread-safe (no shared state).
#ifndef CTX_HOST_ENGINE_JSON_FIELDS_HPP_
#define CTX_HOST_ENGINE_JSON_FIELDS_HPP_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine::detail {

using core::Json;

// Reads fields of one JSON object named `object_name`, throwing `E` (constructible from a
// std::string) for anything malformed.
template <typename E>
class FieldReader {
 public:
  FieldReader(const Json& value, std::string object_name)
      : value_(value), name_(std::move(object_name)) {
    if (!value_.is_object()) throw E(name_ + " must be an object");
  }

  // Requires the key set to be exactly `keys`.
  const FieldReader& exact(std::initializer_list<std::string_view> keys) const {
    std::set<std::string_view> wanted(keys.begin(), keys.end());
    std::string unknown;
    for (const auto& item : value_.items()) {
      if (!wanted.count(item.key())) unknown += (unknown.empty() ? "" : ", ") + item.key();
    }
    if (!unknown.empty()) throw E(name_ + " has unknown field(s): " + unknown);
    for (const auto key : keys) {
      if (!value_.contains(key)) throw E(name_ + " is missing " + std::string(key));
    }
    return *this;
  }

  bool has(std::string_view key) const { return value_.contains(key); }

  const Json& at(std::string_view key) const {
    const auto it = value_.find(key);
    if (it == value_.end()) throw E(name_ + " is missing " + std::string(key));
    return *it;
  }

  std::string string(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string()) throw E(std::string(key) + " must be a string");
    return v.get<std::string>();
  }

  std::string trimmed(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string() || !is_trimmed_string(v.get_ref<const std::string&>())) {
      throw E(std::string(key) + " must be a non-empty trimmed string");
    }
    return v.get<std::string>();
  }

  std::optional<std::string> optional_trimmed(std::string_view key) const {
    if (!has(key) || at(key).is_null()) return std::nullopt;
    return trimmed(key);
  }

  std::string digest(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string() || !is_digest(v.get_ref<const std::string&>())) {
      throw E(std::string(key) + " must be a lowercase SHA-256 digest");
    }
    return v.get<std::string>();
  }

  std::optional<std::string> optional_digest(std::string_view key) const {
    if (!has(key) || at(key).is_null()) return std::nullopt;
    return digest(key);
  }

  std::string canonical_token(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string() || !is_canonical_token(v.get_ref<const std::string&>())) {
      throw E(std::string(key) + " must be a canonical token");
    }
    return v.get<std::string>();
  }

  std::string opaque_token(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string() || !is_opaque_token(v.get_ref<const std::string&>())) {
      throw E(std::string(key) + " must be an opaque safe token");
    }
    return v.get<std::string>();
  }

  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) throw E(std::string(key) + " must be an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      throw E(std::string(key) + " is outside its bounded range");
    }
    const auto n = v.get<std::int64_t>();
    if (n < min || n > max) throw E(std::string(key) + " is outside its bounded range");
    return n;
  }

  bool boolean(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_boolean()) throw E(std::string(key) + " must be a boolean");
    return v.get<bool>();
  }

  // Requires `key` to equal the string `expected` (schema ids and fixed literals).
  void literal(std::string_view key, std::string_view expected, std::string_view what) const {
    const Json& v = at(key);
    if (!v.is_string() || v.get_ref<const std::string&>() != expected) {
      throw E(std::string(what) + " is unsupported");
    }
  }

  const std::string& name() const noexcept { return name_; }

 private:
  const Json& value_;
  std::string name_;
};

}  // namespace ctx::engine::detail

#endif  // CTX_HOST_ENGINE_JSON_FIELDS_HPP_
