// The signed human-decision assertion and its one wire form (runtime spec §5.6): canonical ASCII
// JSON of the 8 claims + "schema" + "proof_base64" (standard padded base64), at most 16 KiB.
// decode() accepts only payloads that re-encode byte-identically; signing_bytes() are exactly
// what a verifier checks. Messages never contain the nonce, the proof or payload bytes.
// Thread-safe (immutable values, pure functions).
#ifndef CTX_HOST_RUNTIME_CONSENT_ASSERTION_CODEC_HPP_
#define CTX_HOST_RUNTIME_CONSENT_ASSERTION_CODEC_HPP_

#include <cstddef>
#include <string>
#include <string_view>

#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kSignedAssertionSchema = "ctx.signed-human-install-decision-v1";
// Largest wire payload and largest signing-bytes text (bytes).
inline constexpr std::size_t kMaxSignedAssertionBytes = 16384;
inline constexpr std::size_t kMaxAssertionProofBytes = 8192;
inline constexpr std::size_t kMaxAssertionNonceBytes = 256;

// Why a payload or a set of claims was refused. Every rejection of spec §5.6 has its own value.
enum class AssertionRejection {
  kInvalidSize,        // payload size outside [1, kMaxSignedAssertionBytes]
  kInvalidUtf8,        // payload bytes are not UTF-8
  kInvalidJson,        // not one JSON text
  kDuplicateKey,       // an object repeats a key
  kNonFiniteConstant,  // NaN, Infinity or -Infinity
  kNotObject,          // top-level value is not an object
  kWrongKeySet,        // keys differ from the 8 claims + "proof_base64" + "schema"
  kWrongSchema,        // "schema" is not kSignedAssertionSchema
  kNonCanonicalProof,  // "proof_base64" is not standard padded base64 (or not a string)
  kInvalidField,       // a claim or the proof violates its rule
  kNotCanonical,       // the payload does not re-encode byte-identically
  kTooLarge,           // encoding or signing bytes would exceed kMaxSignedAssertionBytes
};

// The stable lower-case names of the rejections ("duplicate-key"), defined once here.
inline constexpr core::EnumStrings<AssertionRejection, 12> kAssertionRejectionStrings{
    "assertion rejection",
    {AssertionRejection::kInvalidSize, AssertionRejection::kInvalidUtf8,
     AssertionRejection::kInvalidJson, AssertionRejection::kDuplicateKey,
     AssertionRejection::kNonFiniteConstant, AssertionRejection::kNotObject,
     AssertionRejection::kWrongKeySet, AssertionRejection::kWrongSchema,
     AssertionRejection::kNonCanonicalProof, AssertionRejection::kInvalidField,
     AssertionRejection::kNotCanonical, AssertionRejection::kTooLarge},
    {"invalid-size", "invalid-utf8", "invalid-json", "duplicate-key", "non-finite-constant",
     "not-object", "wrong-key-set", "wrong-schema", "non-canonical-proof", "invalid-field",
     "not-canonical", "too-large"}};

// The stable name of `rejection`, from kAssertionRejectionStrings.
constexpr std::string_view assertion_rejection_name(AssertionRejection rejection) noexcept {
  return kAssertionRejectionStrings.to_string(rejection);
}

// A payload or claims the codec refuses. Code: kInvalidArgument. Retry: never (same input).
class AssertionCodecError : public InvalidArgument {
 public:
  AssertionCodecError(AssertionRejection rejection, const std::string& message)
      : InvalidArgument(message), rejection_(rejection) {}
  AssertionRejection rejection() const noexcept { return rejection_; }

 private:
  AssertionRejection rejection_;
};

// The claims a human's authenticator signs, plus the proof over signing_bytes().
struct SignedAssertionClaims {
  std::string challenge_digest;  // 64 lower-case hex
  engine::Decision decision = engine::Decision::kDenied;
  std::string principal_digest;  // 64 lower-case hex
  std::string authenticator_id;  // TOKEN
  std::string audience;          // TOKEN
  std::string nonce;             // 1..256 UTF-8 bytes, no C0 control characters or DEL
  std::string issued_at;         // canonical UTC text
  std::string expires_at;        // canonical UTC text, after issued_at
  std::string proof;             // raw bytes, 1..kMaxAssertionProofBytes
};

// A validated assertion: every field obeys its rule and the signing bytes fit.
class SignedAssertion {
 public:
  // Validates `claims`. Errors: AssertionCodecError kInvalidField naming the field (never its
  // value); kTooLarge when the signing bytes exceed kMaxSignedAssertionBytes.
  static SignedAssertion create(SignedAssertionClaims claims);

  const std::string& challenge_digest() const noexcept { return claims_.challenge_digest; }
  engine::Decision decision() const noexcept { return claims_.decision; }
  bool granted() const noexcept { return claims_.decision == engine::Decision::kGranted; }
  const std::string& principal_digest() const noexcept { return claims_.principal_digest; }
  const std::string& authenticator_id() const noexcept { return claims_.authenticator_id; }
  const std::string& audience() const noexcept { return claims_.audience; }
  const std::string& nonce() const noexcept { return claims_.nonce; }
  const std::string& issued_at() const noexcept { return claims_.issued_at; }
  const std::string& expires_at() const noexcept { return claims_.expires_at; }
  core::Timestamp issued_at_time() const noexcept { return issued_; }
  core::Timestamp expires_at_time() const noexcept { return expires_; }
  const std::string& proof() const noexcept { return claims_.proof; }
  const SignedAssertionClaims& claims() const noexcept { return claims_; }

  // CJSON-A of the 8 claims + "schema" (proof excluded): exactly what the verifier checks.
  const std::string& signing_bytes() const noexcept { return signing_bytes_; }

  friend bool operator==(const SignedAssertion& a, const SignedAssertion& b) noexcept {
    return a.signing_bytes_ == b.signing_bytes_ && a.claims_.proof == b.claims_.proof;
  }

 private:
  SignedAssertion() = default;

  SignedAssertionClaims claims_;
  core::Timestamp issued_;
  core::Timestamp expires_;
  std::string signing_bytes_;
};

// The wire payload of `assertion`. Errors: AssertionCodecError kTooLarge past 16 KiB.
std::string encode_signed_assertion(const SignedAssertion& assertion);

// Decodes a wire payload, in the order: size, UTF-8, JSON (duplicate keys, non-finite constants),
// object, key set, schema, proof base64, field rules, byte-identical re-encoding.
// Errors: AssertionCodecError carrying the first rejection found.
SignedAssertion decode_signed_assertion(std::string_view payload);

}  // namespace ctx::runtime

namespace ctx::core {
template <>
struct EnumTraits<runtime::AssertionRejection> {
  static constexpr const auto& kStrings = runtime::kAssertionRejectionStrings;
};
}  // namespace ctx::core

#endif  // CTX_HOST_RUNTIME_CONSENT_ASSERTION_CODEC_HPP_
