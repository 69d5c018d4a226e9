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
//   "state_dir"  optional string (or null): the state dir the printed ctx commands must name
//                (--state DIR) because it is not the default one; an absolute path of at most
//                4096 bytes without control characters, shell-quoted when it needs quotes
// Capability ids match [a-z0-9][a-z0-9._:@-]{0,127}; "skill:pdf" is shown as "pdf (skill)".
//
// Text, one line each, at most kMaxContextChars characters in all (whole lines are dropped from
// the end, then "ctx: further lines omitted." is added):
//   "ctx recommends: pdf (skill), reviewer (agent)."
//   "ctx needs the user's consent to install pdf (skill). The user approves it in their own
//    terminal with: ctx consent approve <digest> --key FILE (or declines it with: ctx consent
//    deny <digest> --key FILE), where FILE is the user's own signing key. Do not run these
//    commands for the user."  (each command then " --state DIR" when the request names one)
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
  std::optional<std::string> state_dir;  // already checked: absolute, no control characters
};

// Parses a reply request. Errors: InvalidArgument "reply request ..." (never quoting values) for
// malformed JSON, a missing "actions" array, an action without a string "kind", a capability id
// or challenge digest of the wrong form, or a member of the wrong type.
ReplyRequest read_reply_request(std::string_view text);

// "pdf (skill)" for "skill:pdf"; the id itself when it has no kind prefix.
std::string display_capability(std::string_view capability_id);

// "ctx consent VERB DIGEST --key FILE", then " --state DIR" (quoted for a POSIX shell when
// needed) when `state_dir` is given: a command that works as printed in a fresh shell.
std::string consent_command(std::string_view verb, std::string_view digest,
                            const std::optional<std::string>& state_dir);

// " --state DIR" (DIR quoted for a POSIX shell when needed), or "" without a state dir.
std::string state_argument(const std::optional<std::string>& state_dir);

// The text lines described above, already bounded; empty when there is nothing to say.
std::string reply_text(const ReplyRequest& request);

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_REPLY_REQUEST_HPP_
