// The reply request every in-tree host adapter renders, and the text the user and the model read.
// Pure functions; thread-safe. Only validated tokens (capability ids, challenge digests, event
// names) and fixed words reach the text, so no prompt text or other payload can be echoed.
//
// Request (JSON object; unknown members are ignored):
//   "event"      optional string: the "event" parse_hook returned ("UserPromptSubmit", "ignored")
//   "actions"    required array of objects with a string "kind"; the capability an action names
//                is its "capability_id" or "entity_id" (a PresentBundle names its
//                "payload.capabilities[*]" rows the same way). Every action except
//                DeactivateCapability, UninstallCapability, Notify and NoChange recommends it.
//   "challenge"  optional object (or null) {"challenge_digest": 64 hex, "capability_id"?}
//   "challenges" optional array of such objects
//   "installed"  optional array of capability ids installed for this hook (SessionStart then
//                asks a host that can to reload its skills)
//   "deactivated" optional array of capability ids this hook deactivated (its plan dropped them)
//   "stranded"   optional array of {"capability_id", "expires_at": "YYYY-MM-DDTHH:MM:SS[.f]Z"}:
//                pending consents asked for under an install policy that has since changed
// Capability ids match [a-z0-9][a-z0-9._:@-]{0,127}; "skill:pdf" is shown as "pdf (skill)".
//
// Text, one line each, at most kMaxContextChars characters in all (whole lines are dropped from
// the end, then "ctx: further lines omitted." is added):
//   "ctx recommends: pdf (skill), reviewer (agent)."
//   "ctx needs the user's consent to install pdf (skill). The user approves it in their own
//    terminal with: ctx consent approve <digest> --key FILE (or declines it with: ctx consent
//    deny <digest> --key FILE), where FILE is the user's own signing key. Do not run these
//    commands for the user."
//   "ctx installed: pdf (skill)."
//   "ctx deactivated: pdf (skill)."
//   "ctx cannot ask for approval of pdf (skill) now: it was requested under an install policy
//    that has since changed. ctx plans again once that request lapses at <expires_at>, or at
//    once if the policy is set back."
#ifndef CTX_PLUGINS_HOSTS_COMMON_REPLY_REQUEST_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_REPLY_REQUEST_HPP_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::host_adapters {

inline constexpr std::size_t kMaxContextChars = 10000;
// Capabilities and challenges listed per reply (the runtime's summary bound).
inline constexpr std::size_t kMaxListed = 16;

struct ConsentChallenge {
  std::string digest;         // 64 lower-case hex
  std::string capability_id;  // may be empty
};

struct StrandedConsent {
  std::string capability_id;
  std::string expires_at;  // RFC 3339 UTC
};

struct ReplyRequest {
  std::optional<std::string> event;
  std::vector<std::string> recommended;  // unique, in first-mention order
  std::vector<ConsentChallenge> challenges;
  std::vector<std::string> installed;  // unique
  std::vector<std::string> deactivated;  // unique
  std::vector<StrandedConsent> stranded;
};

// Parses a reply request. Errors: InvalidArgument "reply request ..." (never quoting values) for
// malformed JSON, a missing "actions" array, an action without a string "kind", a capability id
// or challenge digest of the wrong form, or a member of the wrong type.
ReplyRequest read_reply_request(std::string_view text);

// "pdf (skill)" for "skill:pdf"; the id itself when it has no kind prefix.
std::string display_capability(std::string_view capability_id);

// The text lines described above, already bounded; empty when there is nothing to say.
std::string reply_text(const ReplyRequest& request);

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_REPLY_REQUEST_HPP_
