// Rows authenticated under an installation key: the one keyed-row (HMAC) helper of the stores
// that key their rows (the managed query store, the consent broker). A tag is the lower-case hex
// HMAC-SHA256(key, domain ‖ 0x00 ‖ bytes): the domain names what the bytes are, so a tag of one
// kind of row never authenticates another. Immutable after construction; thread-safe. Holds the
// key: not copyable.
#ifndef CTX_HOST_STORE_KEYED_ROWS_HPP_
#define CTX_HOST_STORE_KEYED_ROWS_HPP_

#include <string>
#include <string_view>

namespace ctx::store {

class KeyedRows {
 public:
  // Copies `key` (callers check the installation key's size).
  explicit KeyedRows(std::string_view key);
  KeyedRows(const KeyedRows&) = delete;
  KeyedRows& operator=(const KeyedRows&) = delete;

  // HMAC-SHA256(key, domain ‖ 0x00 ‖ bytes), 64 lower-case hex characters.
  std::string tag(std::string_view domain, std::string_view bytes) const;
  // Whether `stored` is tag(domain, bytes), compared in constant time.
  bool authentic(std::string_view domain, std::string_view bytes, std::string_view stored) const;

 private:
  std::string key_;
};

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_KEYED_ROWS_HPP_
