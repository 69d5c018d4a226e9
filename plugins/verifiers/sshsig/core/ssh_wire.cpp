#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"

#include <ctx/sdk/error.hpp>

namespace ctx::sshsig {

std::string_view SshReader::raw(std::size_t size) {
  if (size > rest_.size()) throw InvalidArgument(std::string(what_) + " is truncated");
  const std::string_view out = rest_.substr(0, size);
  rest_.remove_prefix(size);
  return out;
}

std::uint8_t SshReader::byte() { return static_cast<std::uint8_t>(raw(1)[0]); }

std::uint32_t SshReader::uint32() {
  const std::string_view b = raw(4);
  std::uint32_t value = 0;
  for (const char c : b) value = (value << 8) | static_cast<std::uint8_t>(c);
  return value;
}

std::string_view SshReader::string() { return raw(uint32()); }

std::string_view SshReader::mpint_unsigned() {
  std::string_view v = string();
  if (v.empty()) return v;
  const auto first = static_cast<std::uint8_t>(v[0]);
  if (first & 0x80) throw InvalidArgument(std::string(what_) + " has a negative integer");
  if (first == 0) {
    // A leading zero is allowed only to clear the sign bit of the next byte.
    if (v.size() == 1 || !(static_cast<std::uint8_t>(v[1]) & 0x80)) {
      throw InvalidArgument(std::string(what_) + " has a non-minimal integer");
    }
    v.remove_prefix(1);
  }
  return v;
}

void SshReader::expect_end() const {
  if (!rest_.empty()) throw InvalidArgument(std::string(what_) + " has trailing bytes");
}

SshWriter& SshWriter::byte(std::uint8_t value) {
  out_.push_back(static_cast<char>(value));
  return *this;
}

SshWriter& SshWriter::uint32(std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) byte(static_cast<std::uint8_t>(value >> shift));
  return *this;
}

SshWriter& SshWriter::raw(std::string_view bytes) {
  out_.append(bytes);
  return *this;
}

SshWriter& SshWriter::string(std::string_view bytes) {
  uint32(static_cast<std::uint32_t>(bytes.size()));
  return raw(bytes);
}

SshWriter& SshWriter::mpint_unsigned(std::string_view bytes) {
  while (!bytes.empty() && bytes.front() == '\0') bytes.remove_prefix(1);
  if (!bytes.empty() && (static_cast<std::uint8_t>(bytes.front()) & 0x80)) {
    return string(std::string(1, '\0') + std::string(bytes));
  }
  return string(bytes);
}

}  // namespace ctx::sshsig
