#include "plugins/verifiers/ed25519/core/ed25519_verifier.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string>

#include <ctx/sdk/error.hpp>

#include "plugins/common/json_input.hpp"
#include "plugins/verifiers/common/wire_assertion.hpp"

namespace ctx::ed25519 {
namespace {

namespace pc = ctx::plugin_common;

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

constexpr std::string_view kPemHeader = "-----BEGIN PUBLIC KEY-----";
// DER of SubjectPublicKeyInfo { AlgorithmIdentifier { id-Ed25519 (1.3.101.112) }, BIT STRING }
// up to the 32 key bytes (RFC 8410 §4).
constexpr std::string_view kSpkiPrefix{"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00", 12};
constexpr std::size_t kPublicKeyBytes = 32;

bool only_whitespace(std::string_view text) noexcept {
  for (const char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

}  // namespace

void Ed25519Verifier::KeyFree::operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }

Ed25519Verifier::Ed25519Verifier(std::string_view config_json) {
  const pc::Json config = pc::parse_object(config_json, "ed25519 config");
  const std::string& pem = pc::require_string(config, "public_key_pem", "ed25519 config");
  if (pem.rfind(kPemHeader, 0) != 0) {
    throw InvalidArgument("ed25519 config public_key_pem does not start with a public key block");
  }
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw Error("ed25519: openssl could not allocate", ErrorCode::kInternal);
  // The armor only (PEM_read_bio: no key decoder is set up), then the one DER an Ed25519
  // SubjectPublicKeyInfo has; the raw key goes to EVP_PKEY_new_raw_public_key.
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* der = nullptr;
  long der_size = 0;
  const bool armored = PEM_read_bio(bio.get(), &name, &header, &der, &der_size) == 1;
  const std::string block_name = name != nullptr ? name : "";
  const bool no_header = header != nullptr && header[0] == '\0';
  const std::string spki = der != nullptr && der_size > 0
                               ? std::string(reinterpret_cast<const char*>(der),
                                             static_cast<std::size_t>(der_size))
                               : std::string();
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(der);
  ERR_clear_error();
  if (!armored || block_name != "PUBLIC KEY" || !no_header || spki.empty()) {
    throw InvalidArgument("ed25519 config public_key_pem is not a pem public key");
  }
  // Exactly one key: whatever follows the PEM block must be blank.
  char* rest = nullptr;
  const long rest_size = BIO_get_mem_data(bio.get(), &rest);
  if (rest_size > 0 &&
      !only_whitespace(std::string_view(rest, static_cast<std::size_t>(rest_size)))) {
    throw InvalidArgument("ed25519 config public_key_pem has text after the key");
  }
  if (spki.size() != kSpkiPrefix.size() + kPublicKeyBytes || spki.rfind(kSpkiPrefix, 0) != 0) {
    throw InvalidArgument("ed25519 config public_key_pem is not an ed25519 key");
  }
  const auto* raw = reinterpret_cast<const unsigned char*>(spki.data() + kSpkiPrefix.size());
  key_.reset(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw, kPublicKeyBytes));
  ERR_clear_error();
  if (!key_) throw InvalidArgument("ed25519 config public_key_pem is not an ed25519 key");
}

Ed25519Verifier::~Ed25519Verifier() = default;

bool Ed25519Verifier::verify(std::string_view assertion_json,
                             std::string_view signing_bytes) const {
  const verifiers::WireAssertion wire =
      verifiers::read_wire_assertion(assertion_json, signing_bytes);
  if (wire.proof.size() != kSignatureBytes) {
    throw InvalidArgument("ed25519 proof is not a 64-byte signature");
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1) {
    ERR_clear_error();
    throw Error("ed25519: openssl could not start a verification", ErrorCode::kInternal);
  }
  const int rc = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(wire.proof.data()), wire.proof.size(),
      reinterpret_cast<const unsigned char*>(signing_bytes.data()), signing_bytes.size());
  ERR_clear_error();
  return rc == 1 && wire.claims_match;
}

}  // namespace ctx::ed25519
