#include "host/app/hook/hook_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctx/loader/lock_file.hpp>
#include <exception>
#include <utility>

#include "host/app/installation.hpp"
#include "host/app/retry.hpp"
#include "host/app/state_service.hpp"
#include "host/core/json_reader.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/consent/printed_command.hpp"
#include "host/runtime/service/errors.hpp"

namespace ctx::runtime::hooks {
namespace {

using core::Json;
namespace fs = std::filesystem;

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// The scope member `key` of parse_hook's result, an opaque token.
std::string scope_token(const Json& scope, const char* key) {
  if (!scope.is_object() || !scope.contains(key) || !scope[key].is_string() ||
      !engine::is_opaque_token(scope[key].get_ref<const std::string&>())) {
    throw HookPayloadError(std::string("host adapter returned no usable scope ") + key);
  }
  return scope[key].get<std::string>();
}

// What a hook chose for the user from a ready plan (HookRunner's step 6): the consent challenge
// of the choice, or the capabilities it installed without one.
struct HookChoice {
  struct Challenge {
    std::string digest, capability_id, expires_at;
  };
  std::optional<Challenge> challenge;
  std::vector<std::string> installed;
  std::vector<std::string> deactivated;
};

// How many pending consents deep a prompt follows its work into branches of its session.
constexpr int kMaxBranchDepth = 4;

// How the hook reacts to a failed prepare (style §6.2): a refusal in this state
// (kFailedPrecondition), what moved under it once the service's own re-reads are spent
// (kAborted), or a store still held once the brief retries are spent (kUnavailable) leaves the
// session's current plan standing (or, for a prompt, follows the work into a branch); anything
// else propagates.
bool plan_stands(const Error& error) noexcept {
  return app::has_code(
      error, {ErrorCode::kFailedPrecondition, ErrorCode::kAborted, ErrorCode::kUnavailable});
}

// The session's head has no committed plan to reopen yet: another preparer is between committing
// it and marking it current. Code: kAborted (re-read shortly).
class NoCurrentPlan : public Error {
 public:
  NoCurrentPlan() : Error("the session has no current plan yet", ErrorCode::kAborted) {}
};

// The reply request for one plan result: its ready plan's capabilities best first, the consent
// asked for, what the hook installed or deactivated. `shown_state`: the state dir the reply's
// printed commands must name (nullopt: the default).
engine::ReplyRequest reply_request(const std::string& host_event,
                                   const ManagedQueryServiceResult& result,
                                   const HookChoice& choice,
                                   const std::optional<fs::path>& shown_state) {
  engine::ReplyRequest request;
  request.host_event = host_event;
  const auto& prepared = result.prepared();
  if (prepared.status() == engine::PlanStatus::kReady && !prepared.selections().empty()) {
    for (const auto* row : prepared.by_relevance())
      request.presented.push_back(row->capability_id());
  }
  if (choice.challenge) {
    request.challenge = {choice.challenge->digest, choice.challenge->capability_id};
  } else if (const auto& challenge = result.challenge()) {
    request.challenge = {challenge->challenge_digest(), challenge->capability_id()};
  }
  request.installed = choice.installed;
  request.deactivated = choice.deactivated;
  if (shown_state) request.state_dir = shown_state->string();
  return request;
}

// The capability a hook chooses from a ready plan: its best-ranked selection (by_relevance) that
// needs an install and is of a kind a pinned installer installs here (a skill; an agent or an
// MCP server when their installers are pinned), so the user's consent is asked for it (or a
// preapproved-auto policy installs it); the other rows stay recommendations. Empty when there is
// none.
std::vector<std::string> installable_choice(const StateService& service,
                                            const ManagedQueryServiceResult& result) {
  std::vector<std::string> ids;
  const auto& prepared = result.prepared();
  if (prepared.status() != engine::PlanStatus::kReady) return ids;
  for (const auto* row : prepared.by_relevance()) {
    if (row->actionability() == engine::Actionability::kInstall && service.installs(row->kind())) {
      ids.push_back(row->capability_id());
      break;
    }
  }
  return ids;
}

// Chooses the plan's installable capability for the user (StateService::set_first_desired: an exact
// retry commits nothing new; a query the user already chose for is left alone; a busy query is
// retried for up to ~0.5 s). A typed failure (busy store, revision conflict, superseded plan, no
// actuator) leaves the reply without a choice: a hook never fails the host's prompt over it; only
// data loss propagates.
HookChoice choose_installs(StateService& service, const ManagedQueryServiceResult& result) {
  HookChoice choice;
  std::vector<std::string> ids = installable_choice(service, result);
  if (ids.empty()) return choice;
  try {
    // A concurrent chooser of the same query holds it briefly (kUnavailable): a few short
    // retries.
    const std::optional<ManagedDesiredSetResult> desired =
        app::retry_on({ErrorCode::kUnavailable},
                      [&] { return service.set_first_desired(result.query_ref(), ids); });
    if (!desired) return choice;
    if (const auto& challenge = desired->challenge()) {
      choice.challenge.emplace(HookChoice::Challenge{
          challenge->challenge_digest(), challenge->capability_id(), challenge->expires_at()});
      return choice;
    }
    // No challenge (a preapproved-auto policy): the chosen skills the transition installed and
    // now activates (here, where the host loads skills), or that an earlier run of this same
    // choice already installed and activated (reconciled).
    const bool reconciled = desired->status() == ManagedDesiredStatus::kReconciled;
    if (!reconciled && desired->status() != ManagedDesiredStatus::kEffectPending) return choice;
    const auto named = [](const std::vector<std::string>& list, const std::string& id) {
      return std::find(list.begin(), list.end(), id) != list.end();
    };
    for (const std::string& id : ids) {
      if (named(desired->failed_capability_ids(), id) ||
          named(desired->deferred_capability_ids(), id)) {
        continue;
      }
      const auto& actions = desired->actions();
      const bool activating = std::any_of(actions.begin(), actions.end(), [&](const auto& action) {
        return action.kind() == engine::ActionKind::kActivateCapability &&
               action.entity_id() == std::optional<std::string>(id);
      });
      if (!activating && !reconciled) continue;
      choice.installed.push_back(id);
      if (!activating) continue;
      try {
        (void)service.activate_chosen(result.query_ref(), id);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kDataLoss) throw;
        // Installed but not activated now: the activation stays pending for a later hook.
      }
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
    return HookChoice{};
  }
  return choice;
}

// Executes the deactivations `result`'s plan asked for (StateService::release_deactivations);
// the capabilities that left the host's skills directory. A typed failure leaves them pending for a
// later hook (the reply still goes out); only data loss propagates.
std::vector<std::string> release_dropped(StateService& service,
                                         const ManagedQueryServiceResult& result) {
  std::vector<std::string> released;
  const auto& actions = result.actions();
  if (std::none_of(actions.begin(), actions.end(), [](const ManagedActionSummary& action) {
        return action.kind() == engine::ActionKind::kDeactivateCapability;
      })) {
    return released;
  }
  try {
    for (const ActivationSummary& summary : service.release_deactivations(result.query_ref())) {
      if (summary.settled && summary.outcome == engine::Outcome::kApplied && summary.left) {
        released.push_back(summary.capability_id);
      }
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
  }
  return released;
}

// Steps 1-3 (hook_runner.hpp) of one request: what the adapter made of the host's payload.
using engine::HookEvent;
using engine::HookObservation;

bool is_tool(const HookObservation& hook) { return hook.event == HookEvent::kToolUse; }
bool is_prompt(const HookObservation& hook) { return hook.event == HookEvent::kPrompt; }

// Step 1: the host's bytes are checked here, once, and handed to the adapter as they came. The
// session's cwd (every host sends one) places its work in a project.
std::optional<fs::path> payload_cwd(const std::string& payload) {
  try {
    const Json json = core::parse_json(payload);
    if (!json.is_object()) throw HookPayloadError("hook payload is not a json object");
    if (const auto it = json.find("cwd"); it != json.end() && it->is_string()) {
      return fs::path(it->get<std::string>());
    }
    return std::nullopt;
  } catch (const core::JsonFieldError& e) {
    throw HookPayloadError(std::string("hook payload ") + one_line(e.what()));
  }
}

// Step 3: the adapter's reading of the payload. Errors: HookPayloadError (the adapter refused
// it as invalid); the adapter's others (PluginProtocolError when its answer is no observation).
HookObservation decode_event(engine::HostAdapterPort& port, const std::string& payload) {
  try {
    return port.parse_hook(payload);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument) {
      throw HookPayloadError(one_line(e.what()));
    }
    throw;
  }
}

// The host's reply when there is nothing to show (a JSON object: Codex requires one on Stop),
// naming `deactivated` when a prompt's window retired some.
HookResponse empty_reply(engine::HostAdapterPort& port, const HookObservation& hook,
                         std::vector<std::string> deactivated = {}) {
  engine::ReplyRequest request;
  request.host_event = hook.host_event;
  request.deactivated = std::move(deactivated);
  return HookResponse{port.render_reply(request)};
}

// The session `hook` speaks for, placed in the project of its cwd
// (StateService::place_in_project).
CurrentWork session_work(const StateService& service, const HookObservation& hook,
                         const std::string& adapter, const std::optional<fs::path>& cwd) {
  CurrentWork work;
  work.tenant = scope_token(hook.scope, "tenant_id");
  work.workspace = scope_token(hook.scope, "workspace_id");
  work.repository = scope_token(hook.scope, "repository_id");
  work.session = scope_token(hook.scope, "session_id");
  service.place_in_project(work, adapter, cwd);
  return work;
}

// A prompt counts in its project's recent window (StateService::record_prompt) with what it
// planned, under the adapter's keyed reference of that prompt (a retry counts once); returns the
// lingering capabilities the window retired. Only data loss propagates.
std::vector<std::string> count_prompt(StateService& service, const HookObservation& hook,
                                      const CurrentWork& work,
                                      const std::vector<std::string>& planned) {
  if (!is_prompt(hook) || hook.work_ref.empty()) return {};
  try {
    return service.record_prompt(work, hook.work_ref, planned);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
  }
  return {};
}

// A prompt of a session that ended (a resumed one) makes it live again before it activates
// anything: what it activates is held by it (StateService::resume_session).
void resume_session(StateService& service, const CurrentWork& work) {
  try {
    service.resume_session(work);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
  }
}

// What step 6 planned: the result, whether a plain prepare of the work (or of its branch) gave
// it (only then is the reply remembered), and what it read besides the state dir's databases.
struct Planned {
  std::optional<ManagedQueryServiceResult> result;
  bool direct = false;
  std::vector<fs::path> sources;
};

// A concurrent writer (another hook's prepare or choice) may hold a database or the session's
// desired choice for a moment (kUnavailable): prepare is an exact retry of the same work, so it
// is retried briefly.
ManagedQueryServiceResult prepare_briefly(StateService& service, const CurrentWork& work,
                                          std::vector<fs::path>& sources) {
  return app::retry_on({ErrorCode::kUnavailable}, [&] {
    sources.clear();
    return service.prepare(work, sources);
  });
}

// The session's current plan, shown when a new one cannot replace it (pending authority, a
// loaded capability's selection would change). Another preparer may be between committing it
// and marking it, or replace it again meanwhile: a few short retries (kAborted: re-read and
// decide again), then the error being handled. Called only while handling a prepare's error.
ManagedQueryServiceResult reopen_current(StateService& service, const CurrentWork& work) {
  const std::exception_ptr original = std::current_exception();
  try {
    return app::retry_on({ErrorCode::kAborted}, [&] {
      auto current = service.reopen_current(work);
      if (!current) throw NoCurrentPlan();
      return std::move(*current);
    });
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kAborted) throw;
    std::rethrow_exception(original);
  }
}

// A prompt about other work while the session's consent is pending is planned in a branch of
// the session (StateService::branch_for), and a branch's pending consent leads to the next: the
// plan follows the work, which becomes the branch. False when there is no branch to plan in.
bool follow_work(StateService& service, CurrentWork& work, Planned& planned) {
  CurrentWork at = work;
  for (int depth = 0; depth < kMaxBranchDepth; ++depth) {
    std::optional<CurrentWork> branch;
    try {
      branch = service.branch_for(at);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
      return false;
    }
    if (!branch) return false;
    try {
      planned.result.emplace(prepare_briefly(service, *branch, planned.sources));
      work = std::move(*branch);
      return true;
    } catch (const ManagedConsentPolicyChangedError&) {
      return false;
    } catch (const engine::InvalidEventError&) {
      return false;
    } catch (const Error& e) {
      if (!plan_stands(e)) throw;
      at = std::move(*branch);  // this branch's consent is pending too: the next one down
    }
  }
  return false;
}

// Step 6's plan: the work prepared; when its plan cannot stand, a prompt follows its work into a
// branch, else the session's current plan is reopened. Errors: ManagedConsentPolicyChangedError
// (the session waits on a consent a policy change stranded); what no plan stands for.
Planned plan_work(StateService& service, CurrentWork& work, bool prompt) {
  Planned planned;
  try {
    planned.result.emplace(prepare_briefly(service, work, planned.sources));
    planned.direct = true;
  } catch (const ManagedConsentPolicyChangedError&) {
    throw;
  } catch (const engine::InvalidEventError&) {
    planned.result.emplace(reopen_current(service, work));
  } catch (const Error& e) {
    if (!plan_stands(e)) throw;
    if (prompt && follow_work(service, work, planned)) {
      planned.direct = true;
    } else {
      planned.result.emplace(reopen_current(service, work));
    }
  }
  return planned;
}

// The session waits on a consent that `ctx policy set` has since stranded: the reply says so,
// and when it lapses (StateService::prepare then plans again). Never remembered.
HookResponse stranded_reply(engine::HostAdapterPort& port, const HookObservation& hook,
                            const ManagedConsentPolicyChangedError& e) {
  engine::ReplyRequest request;
  request.host_event = hook.host_event;
  request.stranded.push_back({e.capability_id(), e.expires_at()});
  return HookResponse{port.render_reply(request)};
}

// Steps 6 (its end) to 8. A plan that dropped an active capability releases it first (the
// session plans on only once that deactivation is settled; the skill leaves the host's folder
// only by the project's deactivation rule, StateService::release_deactivations). Then a
// prompt's ready plan: its installable capability is chosen for the user, so the reply says how
// to approve it (or that it was installed, under a preapproved-auto policy), and the prompt
// joins the project's recent window (a lingering skill no recent prompt wants leaves). `choice`
// is what was chosen.
HookResponse respond(StateService& service, engine::HostAdapterPort& port,
                     const HookObservation& hook, const CurrentWork& work,
                     const ManagedQueryServiceResult& result,
                     const std::optional<fs::path>& shown_state, HookChoice& choice) {
  std::vector<std::string> deactivated = release_dropped(service, result);
  if (is_prompt(hook)) {
    choice = choose_installs(service, result);
    std::vector<std::string> planned;
    if (result.prepared().status() == engine::PlanStatus::kReady) {
      for (const auto& row : result.prepared().selections()) {
        planned.push_back(row.capability_id());
      }
    }
    for (auto& id : count_prompt(service, hook, work, planned))
      deactivated.push_back(std::move(id));
  }
  choice.deactivated = std::move(deactivated);
  return HookResponse{
      port.render_reply(reply_request(hook.host_event, result, choice, shown_state))};
}

// The expiries of the consent challenges a reply names (a remembered reply holds only until
// shortly before the first).
std::vector<std::string> challenge_expiries(const ManagedQueryServiceResult& result,
                                            const HookChoice& choice) {
  std::vector<std::string> expiries;
  if (const auto& challenge = result.challenge()) expiries.push_back(challenge->expires_at());
  if (choice.challenge) expiries.push_back(choice.challenge->expires_at);
  return expiries;
}

}  // namespace

HookRunner::HookRunner(fs::path state_dir, std::shared_ptr<const core::Clock> clock,
                       ExactRetries retries)
    : state_dir_(std::move(state_dir)),
      clock_(std::move(clock)),
      remember_(retries == ExactRetries::kRemember),
      owner_pid_(::getpid()),
      shown_state_(printed_state_dir_of_process(state_dir_)),
      memory_(state_dir_) {
  if (!state_dir_.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
}

HookRunner::~HookRunner() = default;

StateService& HookRunner::state() { return state(nullptr); }

StateService& HookRunner::state(const app::Installation* installation) {
  std::lock_guard lock(mutex_);
  if (!state_) {
    state_ = installation != nullptr ? StateService::open(state_dir_, clock_, *installation)
                                     : StateService::open(state_dir_, clock_);
  }
  return *state_;
}

std::unique_lock<std::mutex> HookRunner::lock(bool wait) {
  std::unique_lock lock(mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else {
    (void)lock.try_lock();
  }
  return lock;
}

StateService* HookRunner::opened_state(bool wait) {
  const auto held = lock(wait);
  return held.owns_lock() ? state_.get() : nullptr;
}

std::shared_ptr<engine::HostAdapterPort> HookRunner::adapter(
    const std::string& id, std::shared_ptr<const app::Installation>* read) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = adapters_.find(id); it != adapters_.end()) return it->second;
  }
  auto installation = std::make_shared<const app::Installation>(state_dir_);
  if (!installation->pinned(plugins::PluginKind::kHostAdapter, id)) {
    throw HookPayloadError("no host adapter \"" + id + "\" is pinned in the state directory");
  }
  // Only the key: an ignored event never opens the stores.
  auto port = installation->host_adapter(id);
  if (read != nullptr) *read = std::move(installation);
  std::lock_guard lock(mutex_);
  return adapters_.emplace(id, std::move(port)).first->second;
}

std::shared_ptr<const ReplyMemory::Entry> HookRunner::remembered(const HookRequest& request,
                                                                 bool wait,
                                                                 std::optional<std::string>& key) {
  check_hook_payload(request.payload);
  if (!engine::is_canonical_token(request.adapter)) {
    throw HookPayloadError("hook adapter must be a plugin id");
  }
  // Replies are remembered only once the service is open (a reply needs it), never in a child.
  if (!remember_) return nullptr;
  StateService* service = opened_state(wait);
  if (service == nullptr || ::getpid() != owner_pid_) return nullptr;
  key = ReplyMemory::key_of(service->installation_key(), request);
  return memory_.recall(*key, service->clock(), wait);
}

std::shared_ptr<const ReplyMemory::Entry> HookRunner::try_known(
    const HookRequest& request) noexcept {
  try {
    std::optional<std::string> key;
    return remembered(request, false, key);
  } catch (...) {
    return nullptr;
  }
}

std::optional<HookResponse> HookRunner::try_remembered(const HookRequest& request) noexcept {
  if (const auto known = try_known(request)) return HookResponse{known->reply};
  return std::nullopt;
}

std::optional<std::string> HookRunner::try_remembered_result(const HookRequest& request) noexcept {
  if (const auto known = try_known(request)) return known->result_text;
  return std::nullopt;
}

HookResponse HookRunner::run(const HookRequest& request) {
  std::optional<std::string> key;
  if (const auto known = remembered(request, true, key)) return HookResponse{known->reply};
  return run_full(request, std::move(key));
}

HookResponse HookRunner::run_full(const HookRequest& request, std::optional<std::string> key) {
  const std::optional<fs::path> cwd = payload_cwd(request.payload);
  // The lock file the adapter was found in, when it was loaded now: the state service, if this
  // request opens it, opens on the same read.
  std::shared_ptr<const app::Installation> installation;
  const auto port = adapter(request.adapter, &installation);
  HookObservation hook = decode_event(*port, request.payload);
  if (hook.event == HookEvent::kIgnored) return HookResponse{};
  if (hook.event == HookEvent::kSessionEnd) {
    // What the session holds active is released (StateService::end_session). The host reads no
    // reply to SessionEnd and nothing retries it: a database another hook holds for a moment is
    // retried briefly here; a release that cannot run (a pending consent, a state dir not ready)
    // leaves the session holding, as before; corruption is never hidden.
    try {
      StateService& service = state(installation.get());
      const CurrentWork session = session_work(service, hook, request.adapter, cwd);
      app::retry_on({ErrorCode::kUnavailable}, [&] { return service.end_session(session); });
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;
    }
    return empty_reply(*port, hook);
  }
  // Nothing to plan (Stop, ..., or no catalog term): the host's empty reply, and nothing opened
  // or stored.
  if (hook.signals.empty()) return empty_reply(*port, hook);
  StateService& service = state(installation.get());
  CurrentWork work = session_work(service, hook, request.adapter, cwd);
  if (is_prompt(hook)) resume_session(service, work);
  if (service.vocabulary().filter(hook.signals).empty()) {
    // A prompt about nothing the catalog knows plans nothing, and still counts.
    return empty_reply(*port, hook, count_prompt(service, hook, work, {}));
  }
  work.signals = std::move(hook.signals);
  if (work.signals.size() > 256) work.signals.resize(256);
  work.requested_limit = kHookRequestedLimit;
  // What the last full run of this request read, and the fingerprint before this one.
  if (!remember_) {
    key.reset();
  } else if (!key && ::getpid() == owner_pid_) {
    key = ReplyMemory::key_of(service.installation_key(), request);
  }
  std::optional<ReplyMemory::Before> before;
  if (key && ::getpid() == owner_pid_) before = memory_.before_run(*key);
  // A tool event never re-plans a session that has a plan (a command's words are not the work,
  // and a new plan would drop skills in use): the host's empty reply. Only a session's first
  // plan may come from a tool event (a recommendation; nothing is active to drop).
  if (is_tool(hook)) {
    try {
      if (service.current_plan(work)) return empty_reply(*port, hook);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
      return empty_reply(*port, hook);
    }
  }
  std::optional<Planned> planned;
  try {
    planned.emplace(plan_work(service, work, is_prompt(hook)));
  } catch (const ManagedConsentPolicyChangedError& e) {
    return stranded_reply(*port, hook, e);
  }
  HookChoice choice;
  HookResponse response =
      respond(service, *port, hook, work, *planned->result, shown_state_, choice);
  // Remembered for the next identical request only when this run was a plain prepare and nothing
  // it depends on moved while it ran (ReplyMemory::remember).
  if (before && ::getpid() == owner_pid_ && planned->direct) {
    memory_.remember(*key, *before, planned->sources, response,
                     challenge_expiries(*planned->result, choice));
  }
  return response;
}

}  // namespace ctx::runtime::hooks
