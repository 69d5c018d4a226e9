// The seeds' `set(x.__slots__) == {...}` in C++ terms, for the managed service's results. A
// result type has exactly the seed's fields when (1) each is an accessor (the *Accessors
// concepts), (2) its object holds nothing else: its size and alignment are those of a struct
// declaring exactly those fields with the types it holds, in its declaration order (a hidden
// extra member, a path, a binding, a body, a proof, makes it larger; the *Fields mirrors), and
// (3) its wire form (host/app/wire, what `--json` and JSON-RPC return) has exactly those keys
// (keys_of). Header-only.
#ifndef CTX_TESTS_SUPPORT_RUNTIME_EXACT_FIELDS_HPP_
#define CTX_TESTS_SUPPORT_RUNTIME_EXACT_FIELDS_HPP_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/runtime/service/managed_service.hpp"

namespace ctx::testing::service {

// The keys of a JSON object.
inline std::set<std::string> keys_of(const core::Json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

// {"action_id", "entity_id", "kind"}.
struct ActionSummaryFields {
  std::string action_id;
  engine::ActionKind kind;
  std::optional<std::string> entity_id;
};
template <typename T>
concept ActionSummaryAccessors = requires(const T& t) {
  t.action_id();
  t.entity_id();
  t.kind();
};

// {"audience", "capability_id", "challenge_digest", "expires_at", "kind"}.
struct ChallengeProjectionFields {
  std::string audience, capability_id, challenge_digest, expires_at;
  engine::CapabilityKind kind;
};
template <typename T>
concept ChallengeProjectionAccessors = requires(const T& t) {
  t.audience();
  t.capability_id();
  t.challenge_digest();
  t.expires_at();
  t.kind();
};

// {"actions", "capability_id", "challenge_digest", "journal_record_digest", "journal_revision",
//  "kind", "next_challenge", "outcome", "reason_code"}.
struct ConsentResolutionFields {
  std::string challenge_digest;
  std::string capability_id;
  engine::CapabilityKind kind;
  runtime::ManagedConsentOutcome outcome;
  std::string reason_code;
  std::optional<ChallengeProjectionFields> next_challenge;
  std::vector<ActionSummaryFields> actions;
  std::int64_t journal_revision;
  std::string journal_record_digest;
};
template <typename T>
concept ConsentResolutionAccessors = requires(const T& t) {
  t.actions();
  t.capability_id();
  t.challenge_digest();
  t.journal_record_digest();
  t.journal_revision();
  t.kind();
  t.next_challenge();
  t.outcome();
  t.reason_code();
};

// {"actions", "capability_ids", "challenge", "decision_digest", "deferred_capability_ids",
//  "desired_set_ref", "failed_capability_ids", "journal_record_digest", "journal_revision",
//  "logical_choice_id", "plan_id", "query_ref", "reason_code", "status"}.
struct DesiredSetResultFields {
  std::string query_ref;
  std::string desired_set_ref;
  std::string logical_choice_id;
  std::vector<std::string> capability_ids;
  std::vector<std::string> deferred_capability_ids;
  std::vector<std::string> failed_capability_ids;
  runtime::ManagedDesiredStatus status;
  std::optional<std::string> reason_code;
  std::string plan_id;
  std::string decision_digest;
  std::int64_t journal_revision;
  std::string journal_record_digest;
  std::vector<ActionSummaryFields> actions;
  std::optional<ChallengeProjectionFields> challenge;
};
template <typename T>
concept DesiredSetResultAccessors = requires(const T& t) {
  t.actions();
  t.capability_ids();
  t.challenge();
  t.decision_digest();
  t.deferred_capability_ids();
  t.desired_set_ref();
  t.failed_capability_ids();
  t.journal_record_digest();
  t.journal_revision();
  t.logical_choice_id();
  t.plan_id();
  t.query_ref();
  t.reason_code();
  t.status();
};

// Holds exactly the fields of `Mirror` (see the file comment).
template <typename T, typename Mirror>
inline constexpr bool kHoldsExactly = sizeof(T) == sizeof(Mirror) && alignof(T) == alignof(Mirror);

}  // namespace ctx::testing::service

#endif  // CTX_TESTS_SUPPORT_RUNTIME_EXACT_FIELDS_HPP_
