// HostAdapterPort: translation between one AI coding host's hook/reply JSON and the engine's
// vocabulary (Claude Code, Codex, generic). Thread-safety: implementations serialise their calls.
// Which adapter runs is settled before the port exists: the runtime loads the one its id names in
// the lock file, pinned by digest. Nothing an adapter returns is journaled as its identity.
#ifndef CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
#define CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_

#include <optional>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

class HostAdapterPort {
 public:
  virtual ~HostAdapterPort() = default;

  // Host hook payload -> {"event","scope":{...},"signals":[...],"work_ref":{...}}.
  // Errors: ctx::Error with the adapter's code (kInvalidArgument for a payload it cannot read).
  virtual core::Json parse_hook(const core::Json& payload) = 0;

  // {"actions":[...],"challenge":...} -> the host's native reply JSON.
  // Errors: ctx::Error with the adapter's code.
  virtual core::Json render_reply(const core::Json& actions) = 0;

  // Where the host looks for installed capabilities ({"skills": "<dir>", ...}); std::nullopt when
  // the adapter does not say. Errors: ctx::Error with the adapter's code.
  virtual std::optional<core::Json> install_locations() = 0;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_PORTS_HOST_ADAPTER_PORT_HPP_
