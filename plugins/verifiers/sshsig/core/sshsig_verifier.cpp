#include "plugins/verifiers/sshsig/core/sshsig_verifier.hpp"

#include <openssl/evp.h>

#include <array>
#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/verifiers/common/wire_assertion.hpp"
#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"

namespace ctx::sshsig {
namespace {

namespace pc = ctx::plugin_common;

constexpr std::string_view kBegin = "-----BEGIN SSH SIGNATURE-----";
constexpr std::string_view kEnd = "-----END SSH SIGNATURE-----";

std::string digest(std::string_view algorithm, std::string_view bytes) {
  const EVP_MD* md = algorithm == "sha512" ? EVP_sha512() : EVP_sha256();
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &size, md, nullptr) != 1) {
    throw Error("sshsig: openssl could not hash", ErrorCode::kInternal);
  }
  return std::string(reinterpret_cast<const char*>(out.data()), size);
}

bool algorithm_fits(KeyType type, std::string_view algorithm) noexcept {
  if (type == KeyType::kRsa) return algorithm == "rsa-sha2-256" || algorithm == "rsa-sha2-512";
  return algorithm == key_type_name(type);
}

}  // namespace

const char* verdict_name(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::kAccepted:
      return "accepted";
    case Verdict::kWrongKey:
      return "wrong-key";
    case Verdict::kWrongNamespace:
      return "wrong-namespace";
    case Verdict::kUnsupportedHash:
      return "unsupported-hash";
    case Verdict::kWrongAlgorithm:
      return "wrong-algorithm";
    case Verdict::kUserPresenceMissing:
      return "user-presence-missing";
    case Verdict::kBadSignature:
      return "bad-signature";
    case Verdict::kClaimsMismatch:
      return "claims-mismatch";
  }
  return "unknown";
}

std::string dearmor(std::string_view armored) {
  const auto bad = [] { return InvalidArgument("ssh signature armor is malformed"); };
  if (armored.substr(0, kBegin.size()) != kBegin) throw bad();
  armored.remove_prefix(kBegin.size());
  if (!armored.empty() && armored.back() == '\n') armored.remove_suffix(1);
  if (armored.size() < kEnd.size() + 1 || armored.substr(armored.size() - kEnd.size()) != kEnd) {
    throw bad();
  }
  armored.remove_suffix(kEnd.size());
  // What is left: "\n" line "\n" line ... "\n", each line base64 text.
  if (armored.empty() || armored.front() != '\n' || armored.back() != '\n') throw bad();
  std::string body;
  std::size_t start = 1;
  while (start < armored.size()) {
    const std::size_t end = armored.find('\n', start);
    const std::string_view line = armored.substr(start, end - start);
    if (line.empty()) throw bad();
    body.append(line);
    start = end + 1;
  }
  if (body.empty()) throw bad();
  return pc::from_base64(body, "ssh signature armor");
}

SshsigBlob parse_sshsig(std::string_view blob) {
  SshReader in(blob, "ssh signature");
  if (in.raw(kMagic.size()) != kMagic) throw InvalidArgument("ssh signature has the wrong magic");
  if (in.uint32() != kVersion) throw InvalidArgument("ssh signature version is not supported");
  SshsigBlob out;
  out.public_key = in.string();
  out.ns = in.string();
  out.reserved = in.string();
  out.hash_algorithm = in.string();
  out.signature = in.string();
  in.expect_end();
  return out;
}

std::string sshsig_signed_data(std::string_view ns, std::string_view reserved,
                               std::string_view hash_algorithm, std::string_view message_hash) {
  SshWriter out;
  out.raw(kMagic).string(ns).string(reserved).string(hash_algorithm).string(message_hash);
  return out.bytes();
}

SshsigVerifier::SshsigVerifier(std::string_view config_json) {
  const pc::Json config = pc::parse_object(config_json, "sshsig config");
  key_ = parse_authorized_key(pc::require_string(config, "public_key", "sshsig config"));
}

Verdict SshsigVerifier::check(std::string_view assertion_json,
                              std::string_view signing_bytes) const {
  const verifiers::WireAssertion wire =
      verifiers::read_wire_assertion(assertion_json, signing_bytes);
  const std::string blob = dearmor(wire.proof);
  const SshsigBlob sig = parse_sshsig(blob);
  // The signature field: algorithm, algorithm-specific blob, and for security keys flags+counter.
  SshReader in(sig.signature, "ssh signature field");
  const std::string_view algorithm = in.string();
  const std::string_view signature_blob = in.string();
  std::uint8_t flags = 0;
  std::uint32_t counter = 0;
  if (is_security_key(key_.type) && algorithm_fits(key_.type, algorithm)) {
    flags = in.byte();
    counter = in.uint32();
  }
  in.expect_end();

  if (sig.public_key != key_.blob) return Verdict::kWrongKey;
  if (sig.ns != kNamespace) return Verdict::kWrongNamespace;
  if (sig.hash_algorithm != "sha256" && sig.hash_algorithm != "sha512") {
    return Verdict::kUnsupportedHash;
  }
  if (!algorithm_fits(key_.type, algorithm)) return Verdict::kWrongAlgorithm;
  if (is_security_key(key_.type) && (flags & kUserPresent) == 0) {
    return Verdict::kUserPresenceMissing;
  }
  std::string signed_data = sshsig_signed_data(sig.ns, sig.reserved, sig.hash_algorithm,
                                               digest(sig.hash_algorithm, signing_bytes));
  if (is_security_key(key_.type)) {
    SshWriter sk;
    sk.raw(digest("sha256", key_.application)).byte(flags).uint32(counter);
    sk.raw(digest("sha256", signed_data));
    signed_data = sk.bytes();
  }
  if (!verify_signature(key_, algorithm, signature_blob, signed_data))
    return Verdict::kBadSignature;
  return wire.claims_match ? Verdict::kAccepted : Verdict::kClaimsMismatch;
}

}  // namespace ctx::sshsig
