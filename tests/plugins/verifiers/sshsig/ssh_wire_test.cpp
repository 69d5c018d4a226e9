#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctx/sdk/error.hpp>

#include "plugins/verifiers/sshsig/core/ssh_key.hpp"
#include "tests/plugins/verifiers/sshsig/ssh_test_keys.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::sshsig {
namespace {

namespace tk = testkeys;

TEST(SshWire, WriterAndReaderRoundTrip) {
  SshWriter w;
  w.byte(7)
      .uint32(0x01020304)
      .string("abc")
      .string("")
      .mpint_unsigned(std::string("\x00\x80", 2))
      .mpint_unsigned("\x7f")
      .raw("xy");
  EXPECT_EQ(w.bytes(), std::string("\x07\x01\x02\x03\x04"
                                   "\x00\x00\x00\x03"
                                   "abc"
                                   "\x00\x00\x00\x00"
                                   "\x00\x00\x00\x02\x00\x80"
                                   "\x00\x00\x00\x01\x7f"
                                   "xy",
                                   29));
  SshReader r(w.bytes(), "sample");
  EXPECT_EQ(r.byte(), 7);
  EXPECT_EQ(r.uint32(), 0x01020304u);
  EXPECT_EQ(r.string(), "abc");
  EXPECT_EQ(r.string(), "");
  EXPECT_EQ(r.mpint_unsigned(), "\x80");
  EXPECT_EQ(r.mpint_unsigned(), "\x7f");
  EXPECT_FALSE(r.empty());
  CTX_EXPECT_THROW(r.expect_end(), InvalidArgument, "sample has trailing bytes");
  EXPECT_EQ(r.raw(2), "xy");
  EXPECT_NO_THROW(r.expect_end());
  CTX_EXPECT_THROW(r.byte(), InvalidArgument, "sample is truncated");
}

TEST(SshWire, EveryLengthPastTheEndIsRefused) {
  for (const std::uint32_t length : {4u, 5u, 0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    SshWriter w;
    w.uint32(length).raw("abcd");
    SshReader r(w.bytes(), "blob");
    if (length == 4) {
      EXPECT_EQ(r.string(), "abcd");
    } else {
      CTX_EXPECT_THROW(r.string(), InvalidArgument, "blob is truncated");
    }
  }
  SshReader short_length(std::string("\x00\x00", 2), "blob");
  CTX_EXPECT_THROW(short_length.uint32(), InvalidArgument, "truncated");
}

TEST(SshWire, MpintsMustBeNonNegativeAndMinimal) {
  const auto read = [](std::string body) {
    SshWriter w;
    w.string(body);
    SshReader r(w.bytes(), "n");
    return std::string(r.mpint_unsigned());
  };
  EXPECT_EQ(read(""), "");
  EXPECT_EQ(read(std::string("\x00\xff", 2)), "\xff");
  CTX_EXPECT_THROW(read("\xff"), InvalidArgument, "negative");
  CTX_EXPECT_THROW(read(std::string("\x00", 1)), InvalidArgument, "non-minimal");
  CTX_EXPECT_THROW(read(std::string("\x00\x01", 2)), InvalidArgument, "non-minimal");
}

TEST(SshKey, ParsesEachKeyTypeFromItsBlob) {
  const tk::Pkey ed = tk::generate_ed25519();
  const tk::Pkey ec = tk::generate_p256();
  const tk::Pkey rsa = tk::generate_rsa(2048);
  const std::vector<std::pair<EVP_PKEY*, KeyType>> cases = {{ed.get(), KeyType::kEd25519},
                                                            {ec.get(), KeyType::kEcdsaP256},
                                                            {rsa.get(), KeyType::kRsa},
                                                            {ed.get(), KeyType::kSkEd25519},
                                                            {ec.get(), KeyType::kSkEcdsaP256}};
  for (const auto& [pkey, type] : cases) {
    const std::string blob = tk::public_blob(pkey, type);
    const SshPublicKey key = parse_public_key(blob);
    EXPECT_EQ(key.type, type);
    EXPECT_EQ(key.blob, blob);
    EXPECT_EQ(EVP_PKEY_eq(key.pkey.get(), pkey), 1) << key_type_name(type);
    EXPECT_EQ(key.application, is_security_key(type) ? "ssh:" : "");
    CTX_EXPECT_THROW(parse_public_key(blob + "x"), InvalidArgument, "trailing bytes");
    for (std::size_t size = 0; size < blob.size(); size += 3) {
      CTX_EXPECT_THROW(parse_public_key(blob.substr(0, size)), InvalidArgument, "ssh public key")
          << key_type_name(type) << " " << size;
    }
  }
}

TEST(SshKey, RefusesInvalidKeyMaterial) {
  const auto ecdsa_blob = [](std::string_view curve, std::string_view point) {
    SshWriter w;
    w.string("ecdsa-sha2-nistp256").string(curve).string(point);
    return w.bytes();
  };
  const tk::Pkey ec = tk::generate_p256();
  const std::string point = tk::p256_point(ec.get());
  EXPECT_NO_THROW(parse_public_key(ecdsa_blob("nistp256", point)));
  CTX_EXPECT_THROW(parse_public_key(ecdsa_blob("nistp384", point)), InvalidArgument, "curve");
  std::string off_curve = point;
  off_curve[64] = static_cast<char>(off_curve[64] ^ 0x01);
  CTX_EXPECT_THROW(parse_public_key(ecdsa_blob("nistp256", off_curve)), InvalidArgument,
                   "ssh public key");
  std::string compressed = point.substr(0, 33);
  compressed[0] = '\x02';
  CTX_EXPECT_THROW(parse_public_key(ecdsa_blob("nistp256", compressed)), InvalidArgument,
                   "uncompressed");
  SshWriter short_ed;
  short_ed.string("ssh-ed25519").string(std::string(31, 'k'));
  CTX_EXPECT_THROW(parse_public_key(short_ed.bytes()), InvalidArgument, "wrong size");
  SshWriter dsa;
  dsa.string("ssh-dss").string("p");
  CTX_EXPECT_THROW(parse_public_key(dsa.bytes()), InvalidArgument, "not supported");
  const tk::Pkey small = tk::generate_rsa(1024);
  CTX_EXPECT_THROW(parse_public_key(tk::public_blob(small.get(), KeyType::kRsa)), InvalidArgument,
                   "modulus size");
}

TEST(SshKey, ReadsAuthorizedKeysLinesWithOptionsAndComments) {
  const tk::Pkey ed = tk::generate_ed25519();
  const std::string blob = tk::public_blob(ed.get(), KeyType::kEd25519);
  const std::string b64 = tk::base64(blob);
  for (const std::string& line :
       {"ssh-ed25519 " + b64, "ssh-ed25519 " + b64 + " alice@host", "ssh-ed25519\t" + b64 + "\n",
        "ssh-ed25519 " + b64 + " a comment with spaces",
        R"(no-pty,command="echo \"a b\"" ssh-ed25519 )" + b64 + " alice",
        "restrict ssh-ed25519 " + b64}) {
    EXPECT_EQ(parse_authorized_key(line).blob, blob) << line;
  }
  CTX_EXPECT_THROW(parse_authorized_key(""), InvalidArgument, "authorized_keys line");
  CTX_EXPECT_THROW(parse_authorized_key("ssh-ed25519"), InvalidArgument, "authorized_keys line");
  CTX_EXPECT_THROW(parse_authorized_key("ssh-ed25519 " + b64 + "\nssh-ed25519 " + b64),
                   InvalidArgument, "authorized_keys line");
  CTX_EXPECT_THROW(parse_authorized_key("ecdsa-sha2-nistp256 " + b64), InvalidArgument,
                   "differs from its line");
  CTX_EXPECT_THROW(parse_authorized_key("ssh-ed25519 " + b64.substr(1)), InvalidArgument,
                   "not base64");
  CTX_EXPECT_THROW(parse_authorized_key(R"(command="unterminated ssh-ed25519 )" + b64),
                   InvalidArgument, "authorized_keys line");
  // An unknown first field reads as options, so what follows must be a supported type.
  CTX_EXPECT_THROW(parse_authorized_key("ssh-dss " + b64), InvalidArgument, "authorized_keys line");
  CTX_EXPECT_THROW(parse_authorized_key("ssh-dss " + b64 + " alice"), InvalidArgument,
                   "not supported");
}

}  // namespace
}  // namespace ctx::sshsig
