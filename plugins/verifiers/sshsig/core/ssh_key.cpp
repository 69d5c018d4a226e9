#include "plugins/verifiers/sshsig/core/ssh_key.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <array>
#include <ctx/sdk/error.hpp>
#include <vector>

#include "plugins/common/bytes.hpp"
#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"

namespace ctx::sshsig {
namespace {

namespace pc = ctx::plugin_common;

constexpr std::size_t kEd25519KeyBytes = 32;
constexpr std::size_t kEd25519SignatureBytes = 64;
constexpr std::size_t kP256PointBytes = 65;  // uncompressed: 0x04 || X || Y
constexpr std::size_t kP256ScalarBytes = 32;
constexpr int kMaxRsaBits = 16384;

struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const noexcept { EVP_PKEY_CTX_free(ctx); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* bld) const noexcept { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* params) const noexcept { OSSL_PARAM_free(params); }
};
struct BnFree {
  void operator()(BIGNUM* bn) const noexcept { BN_free(bn); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* sig) const noexcept { ECDSA_SIG_free(sig); }
};

[[noreturn]] void openssl_failed(const char* what) {
  ERR_clear_error();
  throw Error(std::string("sshsig: openssl could not ") + what, ErrorCode::kInternal);
}

[[noreturn]] void invalid_key(const std::string& why) {
  ERR_clear_error();
  throw InvalidArgument("ssh public key " + why);
}

const unsigned char* u8(std::string_view bytes) noexcept {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

std::shared_ptr<EVP_PKEY> shared(EVP_PKEY* key) {
  return std::shared_ptr<EVP_PKEY>(key, PkeyFree());
}

// Runs OpenSSL's public-key validation (curve membership, RSA modulus sanity).
void check_public(EVP_PKEY* key) {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  if (!ctx) openssl_failed("allocate a key context");
  if (EVP_PKEY_public_check(ctx.get()) != 1) invalid_key("fails validation");
  ERR_clear_error();
}

std::shared_ptr<EVP_PKEY> from_params(const char* algorithm, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, algorithm, nullptr));
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) openssl_failed("import a key");
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1 ||
      key == nullptr) {
    invalid_key("is not a valid key");
  }
  std::shared_ptr<EVP_PKEY> out = shared(key);
  check_public(out.get());
  return out;
}

std::shared_ptr<EVP_PKEY> ed25519_key(std::string_view raw) {
  if (raw.size() != kEd25519KeyBytes) invalid_key("has an ed25519 key of the wrong size");
  EVP_PKEY* key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, u8(raw), raw.size());
  if (key == nullptr) invalid_key("is not a valid ed25519 key");
  return shared(key);
}

std::shared_ptr<EVP_PKEY> p256_key(std::string_view curve, std::string_view point) {
  if (curve != "nistp256") invalid_key("names a curve other than nistp256");
  if (point.size() != kP256PointBytes || point[0] != '\x04') {
    invalid_key("has a p-256 point that is not uncompressed");
  }
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    openssl_failed("build p-256 parameters");
  }
  return from_params("EC", bld.get());
}

std::shared_ptr<EVP_PKEY> rsa_key(std::string_view e, std::string_view n) {
  if (n.empty() || e.empty()) invalid_key("has an empty rsa parameter");
  if (n.size() * 8 > static_cast<std::size_t>(kMaxRsaBits) + 8)
    invalid_key("rsa modulus is too large");
  std::unique_ptr<BIGNUM, BnFree> bn_n(BN_bin2bn(u8(n), static_cast<int>(n.size()), nullptr));
  std::unique_ptr<BIGNUM, BnFree> bn_e(BN_bin2bn(u8(e), static_cast<int>(e.size()), nullptr));
  if (!bn_n || !bn_e) openssl_failed("read rsa parameters");
  const int bits = BN_num_bits(bn_n.get());
  if (bits < kMinRsaBits || bits > kMaxRsaBits) invalid_key("rsa modulus size is not allowed");
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
    openssl_failed("build rsa parameters");
  }
  return from_params("RSA", bld.get());
}

bool digest_verify(EVP_PKEY* key, const EVP_MD* md, std::string_view signature,
                   std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) != 1) {
    openssl_failed("start a verification");
  }
  const int rc =
      EVP_DigestVerify(ctx.get(), u8(signature), signature.size(), u8(data), data.size());
  ERR_clear_error();
  return rc == 1;
}

// RFC 5656 §3.1.2 (mpint r, mpint s) to the DER ECDSA-Sig-Value EVP expects.
std::string ecdsa_der(std::string_view signature_blob) {
  SshReader in(signature_blob, "ecdsa signature");
  const std::string_view r = in.mpint_unsigned();
  const std::string_view s = in.mpint_unsigned();
  in.expect_end();
  if (r.empty() || s.empty() || r.size() > kP256ScalarBytes || s.size() > kP256ScalarBytes) {
    throw InvalidArgument("ecdsa signature has out-of-range integers");
  }
  std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
  BIGNUM* bn_r = BN_bin2bn(u8(r), static_cast<int>(r.size()), nullptr);
  BIGNUM* bn_s = BN_bin2bn(u8(s), static_cast<int>(s.size()), nullptr);
  if (!sig || bn_r == nullptr || bn_s == nullptr || ECDSA_SIG_set0(sig.get(), bn_r, bn_s) != 1) {
    BN_free(bn_r);
    BN_free(bn_s);
    openssl_failed("build an ecdsa signature");
  }
  unsigned char* der = nullptr;
  const int size = i2d_ECDSA_SIG(sig.get(), &der);
  if (size <= 0 || der == nullptr) openssl_failed("encode an ecdsa signature");
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(size));
  OPENSSL_free(der);
  return out;
}

KeyType type_of(std::string_view name) {
  for (const KeyType type : {KeyType::kEd25519, KeyType::kEcdsaP256, KeyType::kRsa,
                             KeyType::kSkEd25519, KeyType::kSkEcdsaP256}) {
    if (key_type_name(type) == name) return type;
  }
  throw InvalidArgument("ssh public key type is not supported");
}

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

}  // namespace

std::string_view key_type_name(KeyType type) noexcept {
  switch (type) {
    case KeyType::kEd25519:
      return "ssh-ed25519";
    case KeyType::kEcdsaP256:
      return "ecdsa-sha2-nistp256";
    case KeyType::kRsa:
      return "ssh-rsa";
    case KeyType::kSkEd25519:
      return "sk-ssh-ed25519@openssh.com";
    case KeyType::kSkEcdsaP256:
      return "sk-ecdsa-sha2-nistp256@openssh.com";
  }
  return "";
}

bool is_security_key(KeyType type) noexcept {
  return type == KeyType::kSkEd25519 || type == KeyType::kSkEcdsaP256;
}

SshPublicKey parse_public_key(std::string_view blob) {
  SshReader in(blob, "ssh public key");
  SshPublicKey key;
  key.type = type_of(in.string());
  switch (key.type) {
    case KeyType::kEd25519:
    case KeyType::kSkEd25519:
      key.pkey = ed25519_key(in.string());
      break;
    case KeyType::kEcdsaP256:
    case KeyType::kSkEcdsaP256: {
      const std::string_view curve = in.string();
      key.pkey = p256_key(curve, in.string());
      break;
    }
    case KeyType::kRsa: {
      const std::string_view e = in.mpint_unsigned();
      key.pkey = rsa_key(e, in.mpint_unsigned());
      break;
    }
  }
  if (is_security_key(key.type)) key.application = std::string(in.string());
  in.expect_end();
  key.blob = std::string(blob);
  return key;
}

SshPublicKey parse_authorized_key(std::string_view line) {
  const auto bad = [] { return InvalidArgument("ssh public key is not one authorized_keys line"); };
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  for (const char c : line) {
    if (c == '\n' || c == '\r' || c == '\0') throw bad();
  }
  // Fields separated by blanks; a leading options field may hold quoted blanks.
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size() && fields.size() < 3) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    bool quoted = false;
    for (; i < line.size() && (quoted || !is_space(line[i])); ++i) {
      if (line[i] == '\\' && quoted && i + 1 < line.size()) {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      }
    }
    if (quoted) throw bad();
    fields.push_back(line.substr(start, i - start));
  }
  if (fields.size() < 2) throw bad();
  std::size_t at = 0;
  try {
    (void)type_of(fields[0]);
  } catch (const InvalidArgument&) {
    at = 1;  // fields[0] is the options field
  }
  if (fields.size() < at + 2) throw bad();
  const KeyType type = type_of(fields[at]);
  SshPublicKey key = parse_public_key(pc::from_base64(fields[at + 1], "ssh public key"));
  if (key.type != type) throw InvalidArgument("ssh public key type differs from its line");
  return key;
}

bool verify_signature(const SshPublicKey& key, std::string_view signature_algorithm,
                      std::string_view signature_blob, std::string_view data) {
  switch (key.type) {
    case KeyType::kEd25519:
    case KeyType::kSkEd25519:
      if (signature_blob.size() != kEd25519SignatureBytes) {
        throw InvalidArgument("ed25519 signature is not 64 bytes");
      }
      return digest_verify(key.pkey.get(), nullptr, signature_blob, data);
    case KeyType::kEcdsaP256:
    case KeyType::kSkEcdsaP256:
      return digest_verify(key.pkey.get(), EVP_sha256(), ecdsa_der(signature_blob), data);
    case KeyType::kRsa: {
      const EVP_MD* md = signature_algorithm == "rsa-sha2-512" ? EVP_sha512() : EVP_sha256();
      const auto modulus_bytes = static_cast<std::size_t>(EVP_PKEY_get_size(key.pkey.get()));
      if (signature_blob.empty() || signature_blob.size() > modulus_bytes) {
        throw InvalidArgument("rsa signature is longer than the modulus");
      }
      // As OpenSSH does, a signature with its leading zero bytes dropped is padded back.
      std::string padded(modulus_bytes - signature_blob.size(), '\0');
      padded.append(signature_blob);
      return digest_verify(key.pkey.get(), md, padded, data);
    }
  }
  return false;
}

}  // namespace ctx::sshsig
