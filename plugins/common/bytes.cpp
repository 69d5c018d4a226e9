#include "plugins/common/bytes.hpp"

#include <cstdint>
#include <ctx/sdk/error.hpp>
#include <ctx/support/digest.hpp>

namespace ctx::plugin_common {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int base64_value(char c) noexcept {
  const auto pos = kBase64Alphabet.find(c);
  return pos == std::string_view::npos ? -1 : static_cast<int>(pos);
}

}  // namespace

std::string to_hex(std::string_view bytes) { return support::to_hex(bytes); }

std::string from_hex(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0) throw InvalidArgument(std::string(what) + " is not hex");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]);
    const int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) throw InvalidArgument(std::string(what) + " is not hex");
    out.push_back(static_cast<char>((high << 4) | low));
  }
  return out;
}

std::string from_base64(std::string_view text, std::string_view what) {
  const auto invalid = [&] { return InvalidArgument(std::string(what) + " is not base64"); };
  if (text.size() % 4 != 0) throw invalid();
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const bool pad_slot = last && j >= 4 - padding;
      const int value = pad_slot ? (text[i + j] == '=' ? 0 : -1) : base64_value(text[i + j]);
      if (value < 0) throw invalid();
      group = (group << 6) | static_cast<std::uint32_t>(value);
    }
    const std::size_t produced = last ? 3 - padding : 3;
    // Non-canonical encodings (bits set in the padding) are refused: one text, one byte string.
    if (last && padding == 1 && (group & 0xff) != 0) throw invalid();
    if (last && padding == 2 && (group & 0xffff) != 0) throw invalid();
    for (std::size_t k = 0; k < produced; ++k) {
      out.push_back(static_cast<char>((group >> (16 - 8 * k)) & 0xff));
    }
  }
  return out;
}

std::string sha256(std::string_view bytes) {
  const auto digest = support::sha256(bytes);
  if (!digest) throw Error("sha-256 failed in openssl", ErrorCode::kInternal);
  return std::string(digest->begin(), digest->end());
}

std::string sha256_hex(std::string_view bytes) {
  const auto digest = support::sha256(bytes);
  if (!digest) throw Error("sha-256 failed in openssl", ErrorCode::kInternal);
  return support::to_hex(*digest);
}

std::string hmac_sha256(std::string_view key, std::string_view message) {
  const auto mac = support::hmac_sha256(key, message);
  if (!mac) throw Error("hmac-sha256 failed in openssl", ErrorCode::kInternal);
  return std::string(mac->begin(), mac->end());
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  return support::constant_time_equal(a, b);
}

void cleanse(std::string& secret) noexcept { support::cleanse(secret); }

}  // namespace ctx::plugin_common
