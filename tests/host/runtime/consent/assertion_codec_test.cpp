#include "host/runtime/consent/assertion_codec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ctx::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kChallenge(64, 'c');
const std::string kPrincipal(64, 'b');

SignedAssertionClaims sample_claims() {
  SignedAssertionClaims c;
  c.challenge_digest = kChallenge;
  c.decision = engine::Decision::kGranted;
  c.principal_digest = kPrincipal;
  c.authenticator_id = "managed-test-authenticator";
  c.audience = "ctx-managed-query";
  c.nonce = "managed-consent-nonce-1";
  c.issued_at = "2026-08-03T12:00:00Z";
  c.expires_at = "2026-08-03T12:30:00Z";
  c.proof = std::string("\x00\xff\x10proof", 8);
  return c;
}

// The exact texts json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True) gives.
const std::string kSigningBytes =
    R"({"audience":"ctx-managed-query","authenticator_id":"managed-test-authenticator",)"
    R"("challenge_digest":")" +
    kChallenge +
    R"(","decision":"granted",)"
    R"("expires_at":"2026-08-03T12:30:00Z","issued_at":"2026-08-03T12:00:00Z",)"
    R"("nonce":"managed-consent-nonce-1","principal_digest":")" +
    kPrincipal +
    R"(",)"
    R"("schema":"ctx.signed-human-install-decision-v1"})";
const std::string kPayload =
    R"({"audience":"ctx-managed-query","authenticator_id":"managed-test-authenticator",)"
    R"("challenge_digest":")" +
    kChallenge +
    R"(","decision":"granted",)"
    R"("expires_at":"2026-08-03T12:30:00Z","issued_at":"2026-08-03T12:00:00Z",)"
    R"("nonce":"managed-consent-nonce-1","principal_digest":")" +
    kPrincipal +
    R"(",)"
    R"("proof_base64":"AP8QcHJvb2Y=","schema":"ctx.signed-human-install-decision-v1"})";

// Replaces the first occurrence of `from` in `text` (which must contain it).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void expect_rejected(std::string_view payload, AssertionRejection want, const std::string& what) {
  try {
    (void)decode_signed_assertion(payload);
    ADD_FAILURE() << what << ": decoded";
  } catch (const AssertionCodecError& e) {
    EXPECT_EQ(e.rejection(), want)
        << what << ": " << assertion_rejection_name(e.rejection()) << " (" << e.what() << ")";
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what;
    EXPECT_THAT(e.what(), Not(HasSubstr("managed-consent-nonce-1"))) << what;
    EXPECT_THAT(e.what(), Not(HasSubstr("AP8QcHJvb2Y="))) << what;
  }
}

void expect_claims_rejected(const std::function<void(SignedAssertionClaims&)>& change,
                            AssertionRejection want, const std::string& field) {
  SignedAssertionClaims claims = sample_claims();
  change(claims);
  try {
    (void)SignedAssertion::create(claims);
    ADD_FAILURE() << field << ": accepted";
  } catch (const AssertionCodecError& e) {
    EXPECT_EQ(e.rejection(), want) << field << ": " << e.what();
    EXPECT_THAT(e.what(), HasSubstr(field));
  }
}

// Every rejection's stable name comes from kAssertionRejectionStrings, spelled exactly as
// before the table existed, and parses back to it; names are distinct and unknown ones rejected.
TEST(AssertionCodec, RejectionNamesComeFromTheirOneTable) {
  using R = AssertionRejection;
  const std::vector<std::pair<R, std::string_view>> pinned = {
      {R::kInvalidSize, "invalid-size"},
      {R::kInvalidUtf8, "invalid-utf8"},
      {R::kInvalidJson, "invalid-json"},
      {R::kDuplicateKey, "duplicate-key"},
      {R::kNonFiniteConstant, "non-finite-constant"},
      {R::kNotObject, "not-object"},
      {R::kWrongKeySet, "wrong-key-set"},
      {R::kWrongSchema, "wrong-schema"},
      {R::kNonCanonicalProof, "non-canonical-proof"},
      {R::kInvalidField, "invalid-field"},
      {R::kNotCanonical, "not-canonical"},
      {R::kTooLarge, "too-large"}};
  ASSERT_EQ(pinned.size(), std::size(kAssertionRejectionStrings.values));
  std::set<std::string_view> seen;
  for (const auto& [rejection, name] : pinned) {
    EXPECT_EQ(assertion_rejection_name(rejection), name);
    EXPECT_EQ(core::to_string(rejection), name);
    EXPECT_EQ(core::parse_enum<AssertionRejection>(name), rejection) << name;
    EXPECT_TRUE(seen.insert(name).second) << name;
  }
  EXPECT_EQ(core::find_enum<AssertionRejection>("unknown"), std::nullopt);
  EXPECT_THROW(core::parse_enum<AssertionRejection>("Duplicate-Key"), core::JsonFieldError);
}

TEST(AssertionCodec, SigningBytesAreTheCanonicalClaimsWithoutTheProof) {
  const SignedAssertion assertion = SignedAssertion::create(sample_claims());
  EXPECT_EQ(assertion.signing_bytes(), kSigningBytes);
  SignedAssertionClaims other = sample_claims();
  other.proof = "another proof";
  EXPECT_EQ(SignedAssertion::create(other).signing_bytes(), kSigningBytes);
}

TEST(AssertionCodec, EncodesTheExactWirePayload) {
  EXPECT_EQ(encode_signed_assertion(SignedAssertion::create(sample_claims())), kPayload);
}

TEST(AssertionCodec, DecodeRoundTripsByteIdentically) {
  const SignedAssertion decoded = decode_signed_assertion(kPayload);
  EXPECT_EQ(decoded, SignedAssertion::create(sample_claims()));
  EXPECT_EQ(decoded.proof(), sample_claims().proof);
  EXPECT_EQ(decoded.nonce(), "managed-consent-nonce-1");
  EXPECT_TRUE(decoded.granted());
  EXPECT_EQ(decoded.signing_bytes(), kSigningBytes);
  EXPECT_EQ(encode_signed_assertion(decoded), kPayload);
  EXPECT_LT(decoded.issued_at_time(), decoded.expires_at_time());
  EXPECT_EQ(decoded.expires_at_time().micros - decoded.issued_at_time().micros,
            30LL * 60 * 1000000);
}

TEST(AssertionCodec, NonAsciiNoncesTravelAsAsciiEscapes) {
  SignedAssertionClaims claims = sample_claims();
  claims.nonce = "caf\xc3\xa9-\xf0\x9f\x94\x91";  // "café-" + U+1F511
  claims.decision = engine::Decision::kDenied;
  const SignedAssertion assertion = SignedAssertion::create(claims);
  EXPECT_THAT(assertion.signing_bytes(), HasSubstr(R"("nonce":"caf\u00e9-\ud83d\udd11")"));
  const std::string payload = encode_signed_assertion(assertion);
  for (const char c : payload) EXPECT_LT(static_cast<unsigned char>(c), 0x80);
  const SignedAssertion decoded = decode_signed_assertion(payload);
  EXPECT_EQ(decoded.nonce(), claims.nonce);
  EXPECT_FALSE(decoded.granted());
  // The same text with the raw UTF-8 is valid JSON but not the canonical (ASCII) form.
  expect_rejected(replaced(payload, R"(caf\u00e9)", "caf\xc3\xa9"),
                  AssertionRejection::kNotCanonical, "raw utf-8 nonce");
}

TEST(AssertionCodec, RejectsPayloadSizesOutsideTheBound) {
  expect_rejected("", AssertionRejection::kInvalidSize, "empty");
  std::string padded = kPayload;
  padded.insert(padded.size() - 1, std::string(kMaxSignedAssertionBytes, ' '));
  expect_rejected(padded, AssertionRejection::kInvalidSize, "over 16 KiB");
  // Exactly at the bound it is judged on its content (here: whitespace is not canonical).
  std::string at_bound = kPayload;
  at_bound.insert(at_bound.size() - 1,
                  std::string(kMaxSignedAssertionBytes - kPayload.size(), ' '));
  ASSERT_EQ(at_bound.size(), kMaxSignedAssertionBytes);
  expect_rejected(at_bound, AssertionRejection::kNotCanonical, "at 16 KiB with spaces");
}

TEST(AssertionCodec, RejectsInvalidUtf8AndJson) {
  expect_rejected(replaced(kPayload, "nonce-1", "nonce-\xff"), AssertionRejection::kInvalidUtf8,
                  "0xff byte");
  expect_rejected(replaced(kPayload, "nonce-1", "nonce-\xc0\xaf"), AssertionRejection::kInvalidUtf8,
                  "overlong");
  expect_rejected(replaced(kPayload, "nonce-1", "nonce-\xed\xa0\x80"),
                  AssertionRejection::kInvalidUtf8, "encoded surrogate");
  expect_rejected(kPayload.substr(0, kPayload.size() - 1), AssertionRejection::kInvalidJson,
                  "truncated");
  expect_rejected(kPayload + "{}", AssertionRejection::kInvalidJson, "two values");
  expect_rejected(replaced(kPayload, "nonce-1", "nonce-\\ud800"), AssertionRejection::kInvalidJson,
                  "lone surrogate escape");
  expect_rejected("{'a':1}", AssertionRejection::kInvalidJson, "single quotes");
  expect_rejected("\xef\xbb\xbf" + kPayload, AssertionRejection::kInvalidJson, "byte-order mark");
  expect_rejected(R"({"a":1} // comment)", AssertionRejection::kInvalidJson, "comment");
  expect_rejected(std::string(5000, '[') + std::string(5000, ']'), AssertionRejection::kNotObject,
                  "deep array");
}

TEST(AssertionCodec, RejectsDuplicateKeysAnywhere) {
  expect_rejected(replaced(kPayload, R"({"audience":"ctx-managed-query",)",
                           R"({"audience":"ctx-managed-query","audience":"ctx-managed-query",)"),
                  AssertionRejection::kDuplicateKey, "top-level duplicate");
  expect_rejected(R"({"a":{"b":1,"b":2}})", AssertionRejection::kDuplicateKey, "nested duplicate");
}

TEST(AssertionCodec, RejectsNonFiniteConstants) {
  for (const std::string constant : {"NaN", "Infinity", "-Infinity"}) {
    expect_rejected(replaced(kPayload, R"("decision":"granted")", R"("decision":)" + constant),
                    AssertionRejection::kNonFiniteConstant, constant);
  }
  // Inside a string the same letters are just text.
  SignedAssertionClaims claims = sample_claims();
  claims.nonce = "NaN-Infinity";
  EXPECT_EQ(
      decode_signed_assertion(encode_signed_assertion(SignedAssertion::create(claims))).nonce(),
      "NaN-Infinity");
}

TEST(AssertionCodec, RejectsNonObjects) {
  for (const std::string text : {"[]", "\"text\"", "1", "null", "true"}) {
    expect_rejected(text, AssertionRejection::kNotObject, text);
  }
}

TEST(AssertionCodec, RejectsWrongKeySets) {
  expect_rejected(replaced(kPayload, R"("nonce":"managed-consent-nonce-1",)", ""),
                  AssertionRejection::kWrongKeySet, "missing nonce");
  expect_rejected(replaced(kPayload, R"({"audience")", R"({"aaa":1,"audience")"),
                  AssertionRejection::kWrongKeySet, "extra key");
  expect_rejected(replaced(kPayload, R"("proof_base64")", R"("proof")"),
                  AssertionRejection::kWrongKeySet, "renamed proof");
  expect_rejected("{}", AssertionRejection::kWrongKeySet, "empty object");
}

TEST(AssertionCodec, RejectsWrongSchemas) {
  expect_rejected(replaced(kPayload, "decision-v1", "decision-v2"),
                  AssertionRejection::kWrongSchema, "v2");
  expect_rejected(replaced(kPayload, R"("ctx.signed-human-install-decision-v1")", "1"),
                  AssertionRejection::kWrongSchema, "number schema");
}

TEST(AssertionCodec, RejectsNonCanonicalBase64) {
  for (const std::string proof :
       {"AP8QcHJvb2Y", "AP8QcHJvb2Z=", "AP8Q cHJvb2Y=", "AP8Q\\ncHJvb2Y=", "AP8QcHJv-2Y=",
        "AP8QcHJv_2Y=", "AP8QcHJvb2Y==", "=AP8QcHJvb2Y", "AP8QcHJ=b2Y="}) {
    expect_rejected(replaced(kPayload, "AP8QcHJvb2Y=", proof),
                    AssertionRejection::kNonCanonicalProof, proof);
  }
  expect_rejected(replaced(kPayload, R"("AP8QcHJvb2Y=")", "7"),
                  AssertionRejection::kNonCanonicalProof, "number proof");
}

TEST(AssertionCodec, RejectsInvalidFieldValuesInPayloads) {
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"("decision":"granted")", R"("decision":"maybe")"},
      {R"("decision":"granted")", R"("decision":true)"},
      {kChallenge, std::string(64, 'C')},
      {kPrincipal, std::string(63, 'b')},
      {R"("audience":"ctx-managed-query")", R"("audience":"-ctx")"},
      {R"("authenticator_id":"managed-test-authenticator")", R"("authenticator_id":"a b")"},
      {R"("nonce":"managed-consent-nonce-1")", R"("nonce":"")"},
      {R"("nonce":"managed-consent-nonce-1")", R"("nonce":"tab\there")"},
      {R"("nonce":"managed-consent-nonce-1")", R"("nonce":"del\u007f")"},
      {"2026-08-03T12:00:00Z", "2026-08-03T12:00:00+00:00"},
      {"2026-08-03T12:00:00Z", "2026-08-03T12:00:00.000Z"},
      {"2026-08-03T12:00:00Z", "2026-08-03 12:00:00Z"},
      {"2026-08-03T12:30:00Z", "2026-02-30T12:30:00Z"},
      {"2026-08-03T12:30:00Z", "2026-08-03T11:30:00Z"},
      {"2026-08-03T12:30:00Z", "2026-08-03T12:00:00Z"},
      {R"("AP8QcHJvb2Y=")", R"("")"},
  };
  for (const auto& [from, to] : edits) {
    expect_rejected(replaced(kPayload, from, to), AssertionRejection::kInvalidField, to);
  }
}

TEST(AssertionCodec, RejectsPayloadsThatDoNotReencodeIdentically) {
  expect_rejected(" " + kPayload, AssertionRejection::kNotCanonical, "leading space");
  expect_rejected(replaced(kPayload, ",", ", "), AssertionRejection::kNotCanonical, "spaces");
  expect_rejected(replaced(kPayload, "ctx-managed-query", "ctx-managed-\\u0071uery"),
                  AssertionRejection::kNotCanonical, "needless escape");
  // Keys out of order.
  const std::string reordered =
      replaced(replaced(kPayload, R"({"audience":"ctx-managed-query",)", "{"), R"("schema")",
               R"("audience":"ctx-managed-query","schema")");
  expect_rejected(reordered, AssertionRejection::kNotCanonical, "key order");
}

TEST(AssertionCodec, ValidatesEveryClaim) {
  using C = SignedAssertionClaims;
  const auto field = AssertionRejection::kInvalidField;
  expect_claims_rejected([](C& c) { c.challenge_digest = "abc"; }, field, "challenge_digest");
  expect_claims_rejected([](C& c) { c.decision = static_cast<engine::Decision>(7); }, field,
                         "decision");
  expect_claims_rejected([](C& c) { c.principal_digest = std::string(64, 'g'); }, field,
                         "principal_digest");
  expect_claims_rejected([](C& c) { c.authenticator_id = std::string(129, 'a'); }, field,
                         "authenticator_id");
  expect_claims_rejected([](C& c) { c.audience = ""; }, field, "audience");
  expect_claims_rejected([](C& c) { c.nonce = std::string(257, 'n'); }, field, "nonce");
  expect_claims_rejected([](C& c) { c.nonce = "\xff"; }, field, "nonce");
  expect_claims_rejected([](C& c) { c.nonce = std::string("a\0b", 3); }, field, "nonce");
  expect_claims_rejected([](C& c) { c.issued_at = "0000-01-01T00:00:00Z"; }, field, "issued_at");
  expect_claims_rejected([](C& c) { c.expires_at = "2026-08-03T12:30:00.500000Z"; }, field,
                         "expires_at");
  expect_claims_rejected([](C& c) { c.proof.clear(); }, field, "proof");
  expect_claims_rejected([](C& c) { c.proof = std::string(kMaxAssertionProofBytes + 1, 'p'); },
                         field, "proof");
  // Bounds themselves are accepted.
  SignedAssertionClaims edge = sample_claims();
  edge.nonce = std::string(kMaxAssertionNonceBytes, 'n');
  edge.authenticator_id = std::string(128, 'a');
  edge.proof = std::string(kMaxAssertionProofBytes, 'p');
  edge.expires_at = "2026-08-03T12:00:00.000001Z";
  const std::string payload = encode_signed_assertion(SignedAssertion::create(edge));
  EXPECT_EQ(decode_signed_assertion(payload).proof(), edge.proof);
}

TEST(AssertionCodec, EveryByteMutationDecodesCanonicallyOrIsATypedRejection) {
  // Whatever decodes must re-encode to exactly the bytes given; anything else is refused with
  // AssertionCodecError (no other exception type escapes).
  int decoded = 0;
  int rejected = 0;
  for (std::size_t i = 0; i < kPayload.size(); ++i) {
    for (const unsigned char value : {0x00, 0x22, 0x2c, 0x30, 0x41, 0x5c, 0x7f, 0x80, 0xff}) {
      std::string mutated = kPayload;
      if (static_cast<unsigned char>(mutated[i]) == value) continue;
      mutated[i] = static_cast<char>(value);
      try {
        const SignedAssertion assertion = decode_signed_assertion(mutated);
        EXPECT_EQ(encode_signed_assertion(assertion), mutated) << "byte " << i;
        ++decoded;
      } catch (const AssertionCodecError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(decoded, 0);  // e.g. another hex digit in a digest
  EXPECT_GT(rejected, 1000);
}

TEST(AssertionCodec, TheLargestAssertionStillFitsTheWireBound) {
  // Largest proof, longest tokens and a nonce of 64 four-byte characters (12 escaped bytes each):
  // the 16 KiB payload bound is never the binding limit for valid claims.
  SignedAssertionClaims claims = sample_claims();
  claims.nonce.clear();
  for (int i = 0; i < 64; ++i) claims.nonce += "\xf0\x9f\x94\x91";
  claims.authenticator_id = std::string(128, 'a');
  claims.audience = std::string(128, 'b');
  claims.proof = std::string(kMaxAssertionProofBytes, 'p');
  const std::string payload = encode_signed_assertion(SignedAssertion::create(claims));
  EXPECT_GT(payload.size(), 11000u);
  EXPECT_LE(payload.size(), kMaxSignedAssertionBytes);
  EXPECT_EQ(decode_signed_assertion(payload).nonce(), claims.nonce);
}

}  // namespace
}  // namespace ctx::runtime
