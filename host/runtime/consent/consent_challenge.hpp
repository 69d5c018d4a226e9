// The install consent challenge a human is asked to decide (runtime spec §5.1, schema
// "ctx.install-consent-challenge-v2"): 23 identity fields; challenge_digest = SHA(CJSON(fields +
// "schema")); the JSON form adds challenge_digest (25 keys, at most 16 KiB). The execution
// binding digest names the exact installer plugin identity and target the human approves.
// Thread-safety: immutable values and pure functions.
#ifndef CTX_HOST_RUNTIME_CONSENT_CONSENT_CHALLENGE_HPP_
#define CTX_HOST_RUNTIME_CONSENT_CONSENT_CHALLENGE_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kConsentChallengeSchema = "ctx.install-consent-challenge-v2";
inline constexpr std::size_t kMaxConsentChallengeBytes = 16384;

// A challenge violates a rule (the message names the field, never its value).
// Code: kInvalidArgument. Retry: never.
class ConsentChallengeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

struct ConsentChallengeFields {
  std::string challenge_id;  // TOKEN: the engine's consent id
  std::string audience;      // TOKEN
  std::string workspace_identity_digest;
  core::Json scope = core::Json::object();  // object of token strings
  std::string capability_id;                // TOKEN
  engine::CapabilityKind kind = engine::CapabilityKind::kSkill;  // never kHarness
  std::string source_digest;
  std::string catalog_snapshot_digest;
  std::string plan_id;  // TOKEN
  std::string install_plan_digest;
  std::string descriptor_digest;
  std::string execution_binding_digest;
  std::string selection_digest;
  std::string material_identity_digest;
  std::string requested_action_id;                  // TOKEN
  engine::ActionKind requested_action_kind = engine::ActionKind::kInstallCapability;  // only
  std::string requested_action_content_digest;
  std::int64_t requested_action_precondition_revision = 1;  // >= 1
  std::string policy_snapshot_digest;
  std::string release_root_digest;
  bool permission_expansion = false;
  bool credential_requirement = false;
  std::string expires_at;  // canonical UTC
};

class ConsentChallenge {
 public:
  // Errors: ConsentChallengeError naming the first broken rule.
  static ConsentChallenge create(ConsentChallengeFields fields);
  // Decodes the 25-key JSON form: canonical, exact key set, digest match, size.
  // Errors: ConsentChallengeError.
  static ConsentChallenge from_json_text(std::string_view text);

  const ConsentChallengeFields& fields() const noexcept { return fields_; }
  const std::string& challenge_id() const noexcept { return fields_.challenge_id; }
  const std::string& digest() const noexcept { return digest_; }
  core::Timestamp expires_at_time() const noexcept { return expires_; }
  // The canonical JSON form (with challenge_digest).
  const std::string& json_text() const noexcept { return json_text_; }

  friend bool operator==(const ConsentChallenge& a, const ConsentChallenge& b) noexcept {
    return a.json_text_ == b.json_text_;
  }

 private:
  ConsentChallenge() = default;
  ConsentChallengeFields fields_;
  core::Timestamp expires_;
  std::string digest_;
  std::string json_text_;
};

// TOKEN: [A-Za-z0-9][A-Za-z0-9._:@-]{0,127}.
bool is_consent_token(std::string_view text) noexcept;

// SHA(CJSON({driver_digest, driver_id, host_identity_digest, "schema":
// "ctx.install-execution-binding-v1", target_identity_digest})).
std::string execution_binding_digest(std::string_view driver_id, std::string_view driver_digest,
                                     std::string_view host_identity_digest,
                                     std::string_view target_identity_digest);

// SHA(CJSON({"schema":"ctx.install-consent-selection-binding-v1","selection": selection})).
std::string selection_binding_digest(const core::Json& selection);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_CONSENT_CHALLENGE_HPP_
