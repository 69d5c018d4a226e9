#include "host/store/keyed_rows.hpp"

#include "host/core/crypto.hpp"

namespace ctx::store {

KeyedRows::KeyedRows(std::string_view key) : key_(key) {}

std::string KeyedRows::tag(std::string_view domain, std::string_view bytes) const {
  std::string message(domain);
  message.push_back('\0');
  message.append(bytes);
  return core::hmac_sha256_hex(key_, message);
}

bool KeyedRows::authentic(std::string_view domain, std::string_view bytes,
                          std::string_view stored) const {
  return core::constant_time_equal(tag(domain, bytes), stored);
}

}  // namespace ctx::store
