#include "host/core/crypto.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/expect_throw.hpp"

namespace ctx::core {
namespace {

TEST(Crypto, Sha256KnownAnswers) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Crypto, IncrementalEqualsOneShot) {
  std::string data(100000, 'x');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  Sha256 hash;
  for (std::size_t i = 0; i < data.size(); i += 4096) {
    hash.update(data.data() + i, std::min<std::size_t>(4096, data.size() - i));
  }
  EXPECT_EQ(to_hex(hash.finish()), sha256_hex(data));
}

TEST(Crypto, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// One MAC after another, each under its own key (none carried over from the call before, on this
// thread or another), a key longer than the block (hashed first) and an empty key: RFC 4231
// cases 1, 2 and 6, and HMAC-SHA256("", "").
TEST(Crypto, HmacSha256KeysNeverCarryOverBetweenCallsOrThreads) {
  const std::string case1 = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
  const std::string case2 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  const std::string case6 = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
  const std::string empty = "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad";
  const std::string key1(20, '\x0b');
  const std::string key6(131, '\xaa');
  const std::string data6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  const auto all_match = [&] {
    bool ok = true;
    for (int i = 0; i < 50; ++i) {
      ok = ok && hmac_sha256_hex(key1, "Hi There") == case1 &&
           hmac_sha256_hex("Jefe", "what do ya want for nothing?") == case2 &&
           hmac_sha256_hex(key6, data6) == case6 && hmac_sha256_hex("", "") == empty;
    }
    return ok;
  };
  EXPECT_TRUE(all_match());
  std::vector<std::thread> threads;
  std::vector<int> results(4, 0);
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = all_match() ? 1 : 0; });
  }
  for (auto& thread : threads) thread.join();
  for (int result : results) EXPECT_EQ(result, 1);
}

TEST(Crypto, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
}

TEST(Crypto, IsSha256Hex) {
  EXPECT_TRUE(is_sha256_hex(sha256_hex("x")));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'A')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
}

}  // namespace
// Every byte of the buffer is drawn (no short read left as zeros), and draws differ.
TEST(Crypto, RandomBytesFillTheWholeBufferAndDrawsDiffer) {
  std::vector<std::uint8_t> big(1 << 16, 0);
  random_bytes(big.data(), big.size());
  for (std::size_t at = 0; at < big.size(); at += 32) {
    const bool all_zero = std::all_of(big.begin() + static_cast<std::ptrdiff_t>(at),
                                      big.begin() + static_cast<std::ptrdiff_t>(at + 32),
                                      [](std::uint8_t b) { return b == 0; });
    EXPECT_FALSE(all_zero) << "32 zero bytes at " << at;
  }
  const std::string a = random_hex(32);
  const std::string b = random_hex(32);
  EXPECT_TRUE(is_sha256_hex(a));
  EXPECT_TRUE(is_sha256_hex(b));
  EXPECT_NE(a, b);
  EXPECT_EQ(random_hex(16).size(), 32u);
}

}  // namespace ctx::core
