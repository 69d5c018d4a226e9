// HostAdapterPort: translation between one AI coding host's hook/reply JSON and the engine's
// vocabulary (Claude Code, Codex, generic). Thread-safety: implementations serialise their calls.
// Which adapter runs is settled before the port exists: the runtime loads the one its id names in
// the lock file, pinned by digest. Nothing an adapter returns is journaled as its identity.
#ifndef CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_

#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

class HostAdapterPort {
 public:
  virtual ~HostAdapterPort() = default;

  // Host hook payload, the host's own bytes (REQUIRES: the caller checked them: one JSON object,
  // UTF-8, bounded depth, no duplicate keys) -> {"event","scope":{...},"signals":[...],
  // "work_ref":{...}}. Errors: ctx::Error with the adapter's code (kInvalidArgument for a
  // payload it cannot read).
  virtual core::Json parse_hook(std::string_view payload_json) = 0;

  // {"actions":[...],"challenge":...} -> the host's native reply, one line: the adapter's text,
  // checked to be one JSON object, as the adapter wrote it when that is one line (else that
  // object encoded). Errors: ctx::Error with the adapter's code.
  virtual std::string render_reply(const core::Json& actions) = 0;

  // Where the host looks for installed capabilities ({"skills": "<dir>", ...}); std::nullopt when
  // the adapter does not say. Errors: ctx::Error with the adapter's code.
  virtual std::optional<core::Json> install_locations() = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
