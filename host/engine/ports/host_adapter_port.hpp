// HostAdapterPort: translation between one AI coding host's hook/reply JSON and the engine's
// vocabulary (Claude Code, Codex, generic). Thread-safety: implementations serialise their calls.
// Which adapter runs is settled before the port exists: the runtime loads the one its id names in
// the lock file, pinned by digest. Nothing an adapter returns is journaled as its identity.
// The host's own event names stay inside its adapter: ctx sees a HookEvent, and hands the host's
// name back, unread, in the reply request.
#ifndef CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

// What a hook event means to ctx, whatever the host calls it (the C ABI's CTX_HOOK_KIND_* names,
// decoded by the host-adapter port).
enum class HookEvent {
  kIgnored,       // an event ctx does nothing for
  kSessionStart,  // a session starts or resumes
  kPrompt,        // the user submitted a prompt (the work itself)
  kToolUse,       // before or after a tool call
  kTurnEnd,       // the agent (or a sub-agent) finished its turn
  kCompact,       // the host compacts (or compacted) its context
  kSessionEnd,    // the session ends
};

// One hook payload as the adapter read it, decoded once at the adapter boundary.
struct HookObservation {
  HookEvent event = HookEvent::kIgnored;
  std::string host_event;            // the host's own name for it: opaque, echoed in the reply
  core::Json scope;                  // {"tenant_id", "workspace_id", ...}: opaque tokens
  std::vector<std::string> signals;  // word tokens; only catalog vocabulary may be stored
  std::string work_ref;              // the adapter's keyed reference of the work ("": none)
};

// What ctx asks an adapter to tell its host (the C ABI's render_reply request, encoded once at
// the adapter boundary; plugins/hosts/common/reply_request.hpp reads it).
struct ReplyRequest {
  struct Challenge {
    std::string digest;         // the consent challenge's digest
    std::string capability_id;  // what it asks consent for
  };
  struct Stranded {
    std::string capability_id;  // a consent asked for under a policy that has since changed
    std::string expires_at;     // when it lapses
  };
  std::string host_event;                // HookObservation::host_event ("": none)
  std::vector<std::string> presented;    // recommended capability ids, best first
  std::optional<Challenge> challenge;    // the consent the user is asked for
  std::vector<std::string> installed;    // what this hook installed
  std::vector<std::string> deactivated;  // what this hook deactivated
  std::vector<Stranded> stranded;        // consents a policy change stranded
  std::optional<std::string> state_dir;  // the state dir printed commands name (none: default)
};

class HostAdapterPort {
 public:
  virtual ~HostAdapterPort() = default;

  // Host hook payload, the host's own bytes (REQUIRES: the caller checked them: one JSON object,
  // UTF-8, bounded depth, no duplicate keys) -> what it means to ctx. Errors: ctx::Error with the
  // adapter's code (kInvalidArgument for a payload it cannot read); the port's own error when
  // the adapter's answer is not an observation.
  virtual HookObservation parse_hook(std::string_view payload_json) = 0;

  // The host's native reply to `request`, one line: the adapter's text, checked to be one JSON
  // object, as the adapter wrote it when that is one line (else that object encoded). Errors:
  // ctx::Error with the adapter's code.
  virtual std::string render_reply(const ReplyRequest& request) = 0;

  // Where the host looks for installed capabilities ({"skills": "<dir>", ...}); std::nullopt when
  // the adapter does not say. Errors: ctx::Error with the adapter's code.
  virtual std::optional<core::Json> install_locations() = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
