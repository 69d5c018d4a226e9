#include "host/runtime/consent/assertion_codec.hpp"

#include <openssl/evp.h>

#include <array>
#include <ctx/support/strict_json.hpp>
#include <ctx/support/text.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace ctx::runtime {
namespace {

using Json = nlohmann::json;
using R = AssertionRejection;

constexpr std::array<std::string_view, 10> kWireKeys = {
    "audience", "authenticator_id", "challenge_digest", "decision", "expires_at", "issued_at",
    "nonce",    "principal_digest", "proof_base64",     "schema"};

[[noreturn]] void reject(R rejection, const std::string& message) {
  throw AssertionCodecError(rejection, "signed human decision assertion " + message);
}

[[noreturn]] void invalid_field(std::string_view field, std::string_view rule) {
  reject(R::kInvalidField, std::string(field) + " must be " + std::string(rule));
}

using support::is_token;
constexpr auto is_digest = support::is_sha256_hex;

bool is_utf8(std::string_view text) {
  try {
    (void)Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::strict);
    return true;
  } catch (const Json::exception&) {
    return false;
  }
}

core::Timestamp canonical_time(std::string_view text, std::string_view field) {
  // Canonical UTC text: what format_rfc3339 renders, years 0001..9999 only.
  core::Timestamp parsed;
  try {
    parsed = core::parse_rfc3339(text);
  } catch (const Error&) {
    invalid_field(field, "a canonical utc timestamp");
  }
  if (text.substr(0, 4) == "0000" || core::format_rfc3339(parsed) != text) {
    invalid_field(field, "a canonical utc timestamp");
  }
  return parsed;
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Standard padded base64 that re-encodes to exactly `text`.
std::string canonical_base64_decode(std::string_view text) {
  const auto bad = [] { reject(R::kNonCanonicalProof, "proof_base64 is not canonical base64"); };
  if (text.size() % 4 != 0) bad();
  if (text.empty()) return {};
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) bad();
  std::size_t padding = 0;
  if (text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  out.resize(out.size() - padding);
  if (base64_encode(out) != text) bad();
  return out;
}

// Outside string literals, the text spells NaN or Infinity (which JSON lacks but Python accepts).
bool has_non_finite_literal(std::string_view text) noexcept {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (text.substr(i, 3) == "NaN" || text.substr(i, 8) == "Infinity") {
      return true;
    }
  }
  return false;
}

Json parse_payload(std::string_view payload) {
  Json root;
  // No depth bound: the reader does not recurse, and the object check below refuses what is not
  // the one flat object a payload is (a 5,000-deep array is kNotObject, not kInvalidJson).
  const auto failure =
      support::read_strict_json(payload, &root, std::numeric_limits<std::size_t>::max());
  if (!failure) return root;
  if (failure->fault == support::JsonFault::kDuplicateKey) {
    reject(R::kDuplicateKey, "contains a duplicate json key");
  }
  if (has_non_finite_literal(payload)) {
    reject(R::kNonFiniteConstant, "contains a non-finite json constant");
  }
  reject(R::kInvalidJson, "payload is not valid json");
}

const std::string& claim_text(const Json& object, const char* key) {
  const Json& value = object.at(key);
  if (!value.is_string()) invalid_field(key, "a string");
  return value.get_ref<const std::string&>();
}

Json claims_object(const SignedAssertionClaims& c) {
  return Json{{"audience", c.audience},
              {"authenticator_id", c.authenticator_id},
              {"challenge_digest", c.challenge_digest},
              {"decision", c.decision},
              {"expires_at", c.expires_at},
              {"issued_at", c.issued_at},
              {"nonce", c.nonce},
              {"principal_digest", c.principal_digest},
              {"schema", kSignedAssertionSchema}};
}

}  // namespace

SignedAssertion SignedAssertion::create(SignedAssertionClaims claims) {
  if (!is_digest(claims.challenge_digest)) {
    invalid_field("challenge_digest", "a lowercase sha-256 digest");
  }
  if (engine::kDecisionStrings.to_string(claims.decision).empty()) {
    invalid_field("decision", "granted or denied");
  }
  if (!is_digest(claims.principal_digest)) {
    invalid_field("principal_digest", "a lowercase sha-256 digest");
  }
  if (!is_token(claims.authenticator_id)) invalid_field("authenticator_id", "a bounded token");
  if (!is_token(claims.audience)) invalid_field("audience", "a bounded token");
  if (claims.nonce.empty() || claims.nonce.size() > kMaxAssertionNonceBytes ||
      !is_utf8(claims.nonce)) {
    invalid_field("nonce", "non-empty utf-8 text of at most 256 bytes");
  }
  for (const char c : claims.nonce) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      invalid_field("nonce", "free of control characters");
    }
  }
  SignedAssertion out;
  out.issued_ = canonical_time(claims.issued_at, "issued_at");
  out.expires_ = canonical_time(claims.expires_at, "expires_at");
  if (out.expires_ <= out.issued_) invalid_field("expires_at", "after issued_at");
  if (claims.proof.empty() || claims.proof.size() > kMaxAssertionProofBytes) {
    invalid_field("proof", "1..8192 bytes");
  }
  out.signing_bytes_ = core::canonical_json(claims_object(claims), core::Encoding::kAscii);
  if (out.signing_bytes_.size() > kMaxSignedAssertionBytes) {
    reject(R::kTooLarge, "signing bytes exceed their bounded size");
  }
  out.claims_ = std::move(claims);
  return out;
}

std::string encode_signed_assertion(const SignedAssertion& assertion) {
  Json wire = claims_object(assertion.claims());
  wire["proof_base64"] = base64_encode(assertion.proof());
  std::string encoded = core::canonical_json(wire, core::Encoding::kAscii);
  if (encoded.size() > kMaxSignedAssertionBytes) {
    reject(R::kTooLarge, "exceeds its bounded size");
  }
  return encoded;
}

SignedAssertion decode_signed_assertion(std::string_view payload) {
  if (payload.empty() || payload.size() > kMaxSignedAssertionBytes) {
    reject(R::kInvalidSize, "payload has an invalid size");
  }
  if (!is_utf8(payload)) reject(R::kInvalidUtf8, "payload is not utf-8");
  // nlohmann skips a leading byte-order mark; JSON texts (and Python's json) do not allow one.
  if (payload.substr(0, 3) == "\xef\xbb\xbf") reject(R::kInvalidJson, "payload is not valid json");
  const Json wire = parse_payload(payload);
  if (!wire.is_object()) reject(R::kNotObject, "json must be an object");
  bool keys_match = wire.size() == kWireKeys.size();
  for (const std::string_view key : kWireKeys) {
    keys_match = keys_match && wire.contains(key);
  }
  if (!keys_match) reject(R::kWrongKeySet, "has invalid fields");
  const Json& schema = wire.at("schema");
  if (!schema.is_string() || schema.get_ref<const std::string&>() != kSignedAssertionSchema) {
    reject(R::kWrongSchema, "has an invalid schema");
  }
  const Json& proof_text = wire.at("proof_base64");
  if (!proof_text.is_string()) reject(R::kNonCanonicalProof, "proof_base64 must be base64 text");
  SignedAssertionClaims claims;
  claims.proof = canonical_base64_decode(proof_text.get_ref<const std::string&>());
  claims.challenge_digest = claim_text(wire, "challenge_digest");
  const std::string& decision = claim_text(wire, "decision");
  claims.principal_digest = claim_text(wire, "principal_digest");
  claims.authenticator_id = claim_text(wire, "authenticator_id");
  claims.audience = claim_text(wire, "audience");
  claims.nonce = claim_text(wire, "nonce");
  claims.issued_at = claim_text(wire, "issued_at");
  claims.expires_at = claim_text(wire, "expires_at");
  // The field rules run in create()'s order: challenge_digest is checked before decision.
  if (!is_digest(claims.challenge_digest)) {
    invalid_field("challenge_digest", "a lowercase sha-256 digest");
  }
  const auto typed_decision = engine::find_enum<engine::Decision>(decision);
  if (!typed_decision) invalid_field("decision", "granted or denied");
  claims.decision = *typed_decision;
  SignedAssertion assertion = SignedAssertion::create(std::move(claims));
  if (encode_signed_assertion(assertion) != payload) {
    reject(R::kNotCanonical, "payload is not canonical");
  }
  return assertion;
}

}  // namespace ctx::runtime
