// Test-only signers for the sshsig verifier: OpenSSL EVP keys, their OpenSSH public blobs and
// authorized_keys lines, SSHSIG blobs and armor, and security-key (sk) signatures built the way
// PROTOCOL.u2f describes (there is no hardware here: the flags byte is ours to set).
#ifndef CTX_TESTS_PLUGINS_VERIFIERS_SSHSIG_SSH_TEST_KEYS_HPP_
#define CTX_TESTS_PLUGINS_VERIFIERS_SSHSIG_SSH_TEST_KEYS_HPP_

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <array>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"
#include "plugins/verifiers/sshsig/core/sshsig_verifier.hpp"

namespace ctx::sshsig::testkeys {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

inline void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test signer: ") + what);
}

inline std::string hash(const EVP_MD* md, std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int size = 0;
  require(EVP_Digest(bytes.data(), bytes.size(), out.data(), &size, md, nullptr) == 1, "digest");
  return std::string(reinterpret_cast<const char*>(out.data()), size);
}

inline std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

inline Pkey generate_ed25519() {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  require(key != nullptr, "ed25519 keygen");
  return key;
}

inline Pkey generate_p256() {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  require(key != nullptr, "p-256 keygen");
  return key;
}

inline Pkey generate_rsa(unsigned int bits) {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits)));
  require(key != nullptr, "rsa keygen");
  return key;
}

// Reads a PEM private key (e.g. one ssh-keygen wrote with -m PEM).
inline Pkey read_private_pem(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  require(key != nullptr, "read pem private key");
  return key;
}

inline std::string ed25519_raw_public(EVP_PKEY* key) {
  std::string raw(32, '\0');
  size_t size = raw.size();
  require(
      EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &size) == 1 &&
          size == 32,
      "ed25519 raw public key");
  return raw;
}

inline std::string p256_point(EVP_PKEY* key) {
  std::string point(65, '\0');
  size_t size = 0;
  require(EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY,
                                          reinterpret_cast<unsigned char*>(point.data()),
                                          point.size(), &size) == 1 &&
              size == 65,
          "p-256 public point");
  return point;
}

inline std::string bn_bytes(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  require(EVP_PKEY_get_bn_param(key, name, &bn) == 1, "rsa parameter");
  std::string out(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

// The OpenSSH public blob of `key` as `type`; `application` for the sk types.
inline std::string public_blob(EVP_PKEY* key, KeyType type, std::string_view application = "ssh:") {
  SshWriter w;
  w.string(key_type_name(type));
  switch (type) {
    case KeyType::kEd25519:
    case KeyType::kSkEd25519:
      w.string(ed25519_raw_public(key));
      break;
    case KeyType::kEcdsaP256:
    case KeyType::kSkEcdsaP256:
      w.string("nistp256").string(p256_point(key));
      break;
    case KeyType::kRsa:
      w.mpint_unsigned(bn_bytes(key, OSSL_PKEY_PARAM_RSA_E))
          .mpint_unsigned(bn_bytes(key, OSSL_PKEY_PARAM_RSA_N));
      break;
  }
  if (is_security_key(type)) w.string(application);
  return w.bytes();
}

inline std::string authorized_line(std::string_view blob, KeyType type,
                                   std::string_view comment = "signer@test") {
  return std::string(key_type_name(type)) + " " + base64(blob) + " " + std::string(comment);
}

// Raw signature by `key`: Ed25519 (no digest), ECDSA over SHA-256 as RFC 5656 (mpint r, mpint
// s), or RSA PKCS#1 v1.5 over `md`.
inline std::string sign_raw(EVP_PKEY* key, std::string_view data, const EVP_MD* md = nullptr) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  const bool ec = EVP_PKEY_is_a(key, "EC");
  require(EVP_DigestSignInit(ctx.get(), nullptr, ec ? EVP_sha256() : md, nullptr, key) == 1,
          "sign init");
  size_t size = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(data.data());
  require(EVP_DigestSign(ctx.get(), nullptr, &size, in, data.size()) == 1, "sign size");
  std::string sig(size, '\0');
  require(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &size, in,
                         data.size()) == 1,
          "sign");
  sig.resize(size);
  if (!ec) return sig;
  const auto* der = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(sig.size()));
  require(parsed != nullptr, "ecdsa der");
  std::string r(static_cast<std::size_t>(BN_num_bytes(ECDSA_SIG_get0_r(parsed))), '\0');
  std::string s(static_cast<std::size_t>(BN_num_bytes(ECDSA_SIG_get0_s(parsed))), '\0');
  BN_bn2bin(ECDSA_SIG_get0_r(parsed), reinterpret_cast<unsigned char*>(r.data()));
  BN_bn2bin(ECDSA_SIG_get0_s(parsed), reinterpret_cast<unsigned char*>(s.data()));
  ECDSA_SIG_free(parsed);
  SshWriter w;
  w.mpint_unsigned(r).mpint_unsigned(s);
  return w.bytes();
}

struct SigningOptions {
  std::string ns = std::string(kNamespace);
  std::string hash_algorithm = "sha512";
  std::string reserved;
  std::string algorithm;                     // empty: the key type's own (rsa: rsa-sha2-512)
  std::uint8_t flags = 0x01;                 // sk only
  std::optional<std::uint8_t> signed_flags;  // sk only: flags the signature covers (default: flags)
  std::uint32_t counter = 7;                 // sk only
  std::string signed_application;  // sk only: application the signature covers (empty: "ssh:")
};

inline const EVP_MD* md_named(std::string_view name) {
  return name == "sha256" ? EVP_sha256() : EVP_sha512();
}

// The SSHSIG blob `ssh-keygen -Y sign` would write (for sk keys: what a touched key returns).
inline std::string sshsig_blob(EVP_PKEY* key, KeyType type, std::string_view message,
                               const SigningOptions& o = {}) {
  const std::string blob = public_blob(key, type);
  const std::string signed_data = sshsig_signed_data(o.ns, o.reserved, o.hash_algorithm,
                                                     hash(md_named(o.hash_algorithm), message));
  std::string algorithm = o.algorithm;
  if (algorithm.empty()) algorithm = type == KeyType::kRsa ? "rsa-sha2-512" : key_type_name(type);
  SshWriter field;
  field.string(algorithm);
  if (is_security_key(type)) {
    const std::uint8_t covered = o.signed_flags.value_or(o.flags);
    SshWriter sk;
    sk.raw(hash(EVP_sha256(), o.signed_application.empty() ? "ssh:" : o.signed_application))
        .byte(covered)
        .uint32(o.counter)
        .raw(hash(EVP_sha256(), signed_data));
    field.string(sign_raw(key, sk.bytes())).byte(o.flags).uint32(o.counter);
  } else {
    const EVP_MD* md = algorithm == "rsa-sha2-256" ? EVP_sha256() : EVP_sha512();
    field.string(sign_raw(key, signed_data, type == KeyType::kRsa ? md : nullptr));
  }
  SshWriter out;
  out.raw(kMagic)
      .uint32(kVersion)
      .string(blob)
      .string(o.ns)
      .string(o.reserved)
      .string(o.hash_algorithm)
      .string(field.bytes());
  return out.bytes();
}

// Armor as ssh-keygen writes it: 70-column base64 lines.
inline std::string armor(std::string_view blob) {
  const std::string text = base64(blob);
  std::string out = "-----BEGIN SSH SIGNATURE-----\n";
  for (std::size_t i = 0; i < text.size(); i += 70) out += text.substr(i, 70) + "\n";
  return out + "-----END SSH SIGNATURE-----\n";
}

}  // namespace ctx::sshsig::testkeys

#endif  // CTX_TESTS_PLUGINS_VERIFIERS_SSHSIG_SSH_TEST_KEYS_HPP_
