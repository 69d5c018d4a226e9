// HookRunner: serves one `hook` request (hook_protocol.hpp) on a state dir — what `ctx hook`
// runs in process and what the server's "hook" method calls.
//
//   1. check_hook_payload; parse it as JSON (depth ≤ 64, no duplicate keys);
//   2. the adapter: the host-adapter plugin pinned under that id in <state>/plugins.lock.json,
//      loaded through the PluginLoader and created with the installation key;
//   3. parse_hook → a HookObservation (the host-neutral HookEvent, scope, signals, work_ref); an
//      ignored event → no reply; the work is placed in the project of the payload's cwd
//      (StateService::place_in_project: its skills and recent prompts are that project's); a
//      session end →
//      StateService::end_session (the session's holds are released; what the project's recent
//      prompts want stays in its skills folder), then the adapter's reply to nothing;
//   4. the signals are kept only where they are catalog vocabulary (inside the input authority,
//      before anything is stored); none left → the adapter's reply to nothing (its empty
//      object), with no store opened;
//   5. a tool-use event in a session that already has a plan → the reply to nothing:
//      tool events never re-plan (so never deactivate); only a session's first plan may come
//      from one;
//   6. StateService::prepare (the work's identity is an HMAC under the installation key); a
//      prompt about other work while the session's consent is pending is planned in a branch of
//      the session (StateService::branch_for; up to four pending consents deep), so it gets a
//      plan for that work while the earlier challenge stays approvable until it expires; when a
//      new plan still cannot replace the session's current one (pending authority, a changed
//      selection of a capability already loaded), the current plan is reopened instead (retried
//      briefly while a concurrent preparer is between its commit and its mark); a plan that dropped
//      an active capability settles its deactivation (StateService::release_deactivations);
//   7. on a prompt whose ready plan selects capabilities that need an install, the
//      best-ranked of them (by relevance) of a kind a pinned installer installs here
//      (StateService::installs: skills; agents and MCP servers when their installers are pinned)
//      is chosen for the user (StateService::set_first_desired, the default logical choice id:
//      an exact retry commits nothing new and gets the same challenge; a query with another
//      desired set is left alone); a typed failure of that choice (busy, conflict, superseded)
//      only leaves it out of the reply, data loss propagates; then the prompt joins the
//      project's recent window (StateService::record_prompt), which may retire a lingering
//      skill;
//   8. render_reply with a ReplyRequest: the host's event name as the adapter gave it, the ready
//      plan's capabilities best first, the challenge (the choice's consent challenge, else the
//      plan's), what the choice installed without a challenge under a preapproved-auto policy,
//      what left the skills folder → the reply text.
//      The request's state_dir is the state dir when a fresh shell of this process's user
//      would not find it by default (consent/printed_command.hpp), so the printed consent
//      commands carry --state DIR and work as pasted.
// Exact retries (ReplyMemory, reply_memory.hpp): a hook whose request bytes (adapter id and
// payload) were answered before by step 6's plain prepare gets that same reply without steps 1-8 (a
// reply naming a consent challenge: only until 5 s before the challenge expires, by the service's
// clock) when a StateWatch fingerprint (state_watch.hpp: every database of the state dir unchanged
// by any process, the state dir's files and the work's registration and artifact files untouched)
// equals the one taken when the reply was computed — which itself is only remembered when the
// fingerprint did not move while it was computed, and on the second computation (the first names
// the files to watch). Anything else runs the full path. The key is an HMAC of the request under
// the installation key; no payload is kept. Thread-safe: adapters are loaded once per id and
// serialise their own calls; the state service is opened on first use and shared. Process-bound
// (the service is): a forked child never uses the remembered replies.
#ifndef CTX_HOST_APP_HOOK_HOOK_RUNNER_HPP_
#define CTX_HOST_APP_HOOK_HOOK_RUNNER_HPP_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/app/hook/hook_protocol.hpp"
#include "host/app/hook/reply_memory.hpp"
#include "host/core/time.hpp"

namespace ctx::engine {
class HostAdapterPort;
}  // namespace ctx::engine

namespace ctx::app {
class Installation;
}  // namespace ctx::app

namespace ctx::runtime {
class StateService;
}  // namespace ctx::runtime

namespace ctx::runtime::hooks {

inline constexpr std::int64_t kHookRequestedLimit = 3;

// kRemember: exact retries are answered from remembered replies (a long-lived runner, the
// server's). kForget: one-shot use (`ctx hook` in process): no reply is remembered, so no state
// watch is set up or captured.
enum class ExactRetries { kRemember, kForget };

class HookRunner {
 public:
  // `state_dir` must be absolute. Nothing is opened until the first run().
  // `clock`: the state service's trusted clock (nullptr: the system's).
  explicit HookRunner(std::filesystem::path state_dir,
                      std::shared_ptr<const core::Clock> clock = nullptr,
                      ExactRetries retries = ExactRetries::kRemember);
  ~HookRunner();
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  // Errors: HookPayloadError (malformed payload, unknown adapter — one line, never the
  // payload); the state service's errors (not initialised, no catalog, store failures).
  HookResponse run(const HookRequest& request);

  // The state dir's service, opened on first use and shared with run() (the server's query and
  // desired methods use it too). Errors: StateService::open's.
  StateService& state();

  // The remembered exact-retry reply of `request` when it holds now, found without waiting (no
  // lock another thread holds, no busy database, no plugin call, nothing opened that is not yet
  // open): what the server answers on its I/O thread. nullopt: run() decides. Never throws.
  std::optional<HookResponse> try_remembered(const HookRequest& request) noexcept;
  // The same, as the compact JSON text of hook_response_to_json (the server's `hook` result),
  // encoded once, when the reply was remembered.
  std::optional<std::string> try_remembered_result(const HookRequest& request) noexcept;

  // How many run() / try_remembered() calls were answered with a remembered reply.
  std::uint64_t exact_retry_replies() const noexcept { return memory_.hits(); }

 private:
  // mutex_, locked; or when !wait, only if it is free now (owns_lock() says which).
  std::unique_lock<std::mutex> lock(bool wait);
  // The adapter `id`; when it is loaded now, the installation (key and plugins.lock.json) it
  // was found in goes to `read` (if given), for this request's state(read).
  std::shared_ptr<engine::HostAdapterPort> adapter(
      const std::string& id, std::shared_ptr<const app::Installation>* read = nullptr);
  // state(), opened on `installation` (this request's read of it) when it is not open yet.
  StateService& state(const app::Installation* installation);
  StateService* opened_state(bool wait);
  // The remembered reply of `request` (reply set) if the state watch vouches for it now; sets
  // `key` (once the service is open). Errors: check_hook_payload's (with `wait`).
  std::shared_ptr<const ReplyMemory::Entry> remembered(const HookRequest& request, bool wait,
                                                       std::optional<std::string>& key);
  // remembered() without waiting; nullptr for any error too.
  std::shared_ptr<const ReplyMemory::Entry> try_known(const HookRequest& request) noexcept;
  // Steps 1-8 in their stages (hook_runner.cpp), and remembering the reply.
  HookResponse run_full(const HookRequest& request, std::optional<std::string> key);

  std::filesystem::path state_dir_;
  std::shared_ptr<const core::Clock> clock_;
  bool remember_;
  pid_t owner_pid_;
  // The state dir the replies' printed ctx commands name (printed_state_dir_of_process).
  std::optional<std::filesystem::path> shown_state_;
  ReplyMemory memory_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<engine::HostAdapterPort>> adapters_;  // GUARDED_BY
  std::unique_ptr<StateService> state_;                                       // GUARDED_BY
};

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_APP_HOOK_HOOK_RUNNER_HPP_
