// RFC 4251 §5 wire encoding for the sshsig verifier: a bounds-checked reader over borrowed bytes
// and a writer. Not thread-safe per object. Errors never quote the bytes.
#ifndef CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_WIRE_HPP_
#define CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_WIRE_HPP_

#include <cstdint>
#include <string>
#include <string_view>

namespace ctx::sshsig {

// Reads fields in order; every read checks the remaining length first.
// Errors: InvalidArgument "<what> is truncated" (a length past the end, however large).
class SshReader {
 public:
  SshReader(std::string_view bytes, std::string_view what) : rest_(bytes), what_(what) {}

  std::uint8_t byte();
  std::uint32_t uint32();
  std::string_view raw(std::size_t size);  // fixed-size field
  std::string_view string();               // uint32 length + bytes
  // mpint as an unsigned magnitude without leading zeros. Errors: InvalidArgument when negative
  // or not minimally encoded.
  std::string_view mpint_unsigned();

  bool empty() const noexcept { return rest_.empty(); }
  // Errors: InvalidArgument "<what> has trailing bytes" unless everything was read.
  void expect_end() const;

 private:
  std::string_view rest_;
  std::string_view what_;
};

class SshWriter {
 public:
  SshWriter& byte(std::uint8_t value);
  SshWriter& uint32(std::uint32_t value);
  SshWriter& raw(std::string_view bytes);
  SshWriter& string(std::string_view bytes);
  // mpint of the unsigned big-endian magnitude `bytes` (leading zeros dropped, 0x00 prefixed
  // when the top bit is set).
  SshWriter& mpint_unsigned(std::string_view bytes);
  const std::string& bytes() const noexcept { return out_; }

 private:
  std::string out_;
};

}  // namespace ctx::sshsig

#endif  // CTX_PLUGINS_VERIFIERS_SSHSIG_CORE_SSH_WIRE_HPP_
