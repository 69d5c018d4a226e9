#include "host/app/hook/hook_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "host/app/installation.hpp"
#include "host/app/retry.hpp"
#include "host/app/state_service.hpp"
#include "host/core/crypto.hpp"
#include "host/core/json_reader.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/plugins/lock_file.hpp"
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

// The latest time at which a remembered reply naming a challenge that expires at `expires_at`
// may still be given: kChallengeMargin before it, so the host never shows an expired one.
constexpr std::int64_t kChallengeMarginMicros = 5'000'000;
core::Timestamp remember_until(const std::string& expires_at) {
  return core::Timestamp{core::parse_rfc3339(expires_at).micros - kChallengeMarginMicros};
}

// The reply request for one plan result (reply_request.hpp's shape).
// `shown_state`: the state dir the reply's printed commands must name (nullopt: the default).
Json reply_request(const std::string& event, const ManagedQueryServiceResult& result,
                   const HookChoice& choice, const std::optional<fs::path>& shown_state) {
  Json actions = Json::array();
  const auto& prepared = result.prepared();
  if (prepared.status() == engine::PlanStatus::kReady && !prepared.selections().empty()) {
    Json capabilities = Json::array();
    for (const auto* row : prepared.by_relevance()) {
      capabilities.push_back({{"capability_id", row->capability_id()}});
    }
    actions.push_back({{"kind", "PresentBundle"}, {"payload", {{"capabilities", capabilities}}}});
  }
  Json request = {{"event", event}, {"actions", std::move(actions)}};
  if (choice.challenge) {
    request["challenge"] = {{"challenge_digest", choice.challenge->digest},
                            {"capability_id", choice.challenge->capability_id}};
  } else if (const auto& challenge = result.challenge()) {
    request["challenge"] = {{"challenge_digest", challenge->challenge_digest()},
                            {"capability_id", challenge->capability_id()}};
  }
  if (!choice.installed.empty()) request["installed"] = choice.installed;
  if (!choice.deactivated.empty()) request["deactivated"] = choice.deactivated;
  if (shown_state) request["state_dir"] = shown_state->string();
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

// The remembered-reply key of `request`: an HMAC under the installation key (no payload kept).
std::string reply_key(const StateService& service, const HookRequest& request) {
  std::string message = "ctx.hook-reply-cache-v1";
  message.push_back('\0');
  message += request.adapter;
  message.push_back('\0');
  message += request.payload;
  return core::hmac_sha256_hex(service.installation_key(), message);
}

}  // namespace

// At most this many exact-retry replies are remembered (then all are forgotten).
constexpr std::size_t kMaxRemembered = 256;

HookRunner::HookRunner(fs::path state_dir, std::shared_ptr<const core::Clock> clock,
                       ExactRetries retries)
    : state_dir_(std::move(state_dir)),
      clock_(std::move(clock)),
      remember_(retries == ExactRetries::kRemember),
      owner_pid_(::getpid()),
      shown_state_(printed_state_dir_of_process(state_dir_)),
      watch_(state_dir_) {
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

std::shared_ptr<const HookRunner::Remembered> HookRunner::remembered(
    const HookRequest& request, bool wait, std::optional<std::string>& key) {
  check_hook_payload(request.payload);
  if (!engine::is_canonical_token(request.adapter)) {
    throw HookPayloadError("hook adapter must be a plugin id");
  }
  // Replies are remembered only once the service is open (a reply needs it), never in a child.
  if (!remember_) return nullptr;
  StateService* service = opened_state(wait);
  if (service == nullptr || ::getpid() != owner_pid_) return nullptr;
  key = reply_key(*service, request);
  std::shared_ptr<const Remembered> known;
  {
    const auto held = lock(wait);
    if (!held.owns_lock()) return nullptr;
    if (const auto it = remembered_.find(*key); it != remembered_.end() && it->second->reply) {
      known = it->second;
    }
  }
  // A reply naming a consent challenge holds only while the challenge is well before expiry.
  if (!known || (known->until && !(service->clock().now() < *known->until))) return nullptr;
  try {
    if (const auto now = watch_.capture(known->sources, wait); now && *now == known->fingerprint) {
      ++exact_retry_replies_;
      return known;
    }
  } catch (const std::exception&) {
    // Unknown: the full path decides.
  }
  return nullptr;
}

std::shared_ptr<const HookRunner::Remembered> HookRunner::try_known(
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
  // The host's bytes are checked here, once, and handed to the adapter as they came. The
  // session's cwd (every host sends one) places its work in a project.
  std::optional<fs::path> cwd;
  try {
    const Json payload = core::parse_json(request.payload);
    if (!payload.is_object()) throw HookPayloadError("hook payload is not a json object");
    if (const auto it = payload.find("cwd"); it != payload.end() && it->is_string()) {
      cwd = fs::path(it->get<std::string>());
    }
  } catch (const core::JsonFieldError& e) {
    throw HookPayloadError(std::string("hook payload ") + one_line(e.what()));
  }
  // The lock file the adapter was found in, when it was loaded now: the state service, if this
  // request opens it, opens on the same read.
  std::shared_ptr<const app::Installation> installation;
  const auto port = adapter(request.adapter, &installation);
  Json parsed;
  try {
    parsed = port->parse_hook(request.payload);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument) {
      throw HookPayloadError(one_line(e.what()));
    }
    throw;
  }
  if (!parsed.is_object() || !parsed.contains("event") || !parsed["event"].is_string()) {
    throw HookPayloadError("host adapter returned no event");
  }
  const std::string event = parsed["event"].get<std::string>();
  if (event == "ignored") return HookResponse{};
  std::vector<std::string> signals;
  if (parsed.contains("signals") && parsed["signals"].is_array()) {
    for (const auto& signal : parsed["signals"]) {
      if (signal.is_string()) signals.push_back(signal.get<std::string>());
    }
  }
  // Nothing to plan (Stop, SessionEnd, ..., or no catalog term): the host's empty reply (a JSON
  // object: Codex requires one on Stop), and nothing opened or stored (but for a SessionEnd's
  // release, below).
  const auto nothing = [&] {
    return HookResponse{port->render_reply(Json{{"event", event}, {"actions", Json::array()}})};
  };
  const auto session_work = [&](const StateService& service) {
    const Json& scope = parsed.contains("scope") ? parsed["scope"] : Json();
    CurrentWork work;
    work.tenant = scope_token(scope, "tenant_id");
    work.workspace = scope_token(scope, "workspace_id");
    work.repository = scope_token(scope, "repository_id");
    work.session = scope_token(scope, "session_id");
    service.place_in_project(work, request.adapter, cwd);
    return work;
  };
  if (event == "SessionEnd") {
    // What the session holds active is released (StateService::end_session). The host reads no
    // reply to SessionEnd and nothing retries it: a database another hook holds for a moment is
    // retried briefly here; a release that cannot run (a pending consent, a state dir not ready)
    // leaves the session holding, as before; corruption is never hidden.
    try {
      StateService& service = state(installation.get());
      const CurrentWork session = session_work(service);
      app::retry_on({ErrorCode::kUnavailable}, [&] { return service.end_session(session); });
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;
    }
    return nothing();
  }
  // A prompt counts in its project's recent window (StateService::record_prompt) with what it
  // planned, under the adapter's keyed reference of that prompt (a retry counts once).
  const bool prompt_event = event == "UserPromptSubmit";
  std::string prompt_key;
  if (parsed.contains("work_ref") && parsed["work_ref"].is_object() &&
      parsed["work_ref"].contains("id") && parsed["work_ref"]["id"].is_string()) {
    prompt_key = parsed["work_ref"]["id"].get<std::string>();
  }
  std::vector<std::string> retired;
  const auto count_prompt = [&](StateService& service, const CurrentWork& work,
                                const std::vector<std::string>& planned) {
    if (!prompt_event || prompt_key.empty()) return;
    try {
      retired = service.record_prompt(work, prompt_key, planned);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
    }
  };
  if (signals.empty()) return nothing();
  StateService& service = state(installation.get());
  CurrentWork work = session_work(service);
  if (prompt_event) {
    // A prompt of a session that ended (a resumed one) makes it live again before it activates
    // anything: what it activates is held by it (StateService::resume_session).
    try {
      service.resume_session(work);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
    }
  }
  if (service.vocabulary().filter(signals).empty()) {
    // A prompt about nothing the catalog knows plans nothing, and still counts.
    if (prompt_event) {
      count_prompt(service, work, {});
      if (!retired.empty()) {
        return HookResponse{port->render_reply(
            Json{{"event", event}, {"actions", Json::array()}, {"deactivated", retired}})};
      }
    }
    return nothing();
  }
  work.signals = std::move(signals);
  if (work.signals.size() > 256) work.signals.resize(256);
  work.requested_limit = kHookRequestedLimit;
  std::optional<ManagedQueryServiceResult> result;
  // What the last full run of this request read, and the fingerprint before this one.
  std::vector<fs::path> watched;
  std::optional<std::string> before;
  if (!remember_) {
    key.reset();
  } else if (!key && ::getpid() == owner_pid_) {
    key = reply_key(service, request);
  }
  if (key && ::getpid() == owner_pid_) {
    {
      std::lock_guard lock(mutex_);
      if (const auto it = remembered_.find(*key); it != remembered_.end()) {
        watched = it->second->sources;
      }
    }
    try {
      if (auto now = watch_.capture(watched)) before = std::move(*now);
    } catch (const std::exception&) {
      before.reset();
    }
  }
  // A tool event never re-plans a session that has a plan (a command's words are not the work,
  // and a new plan would drop skills in use): the host's empty reply. Only a session's first
  // plan may come from a tool event (a recommendation; nothing is active to drop).
  const bool tool_event = event == "PreToolUse" || event == "PostToolUse";
  if (tool_event) {
    try {
      if (service.current_plan(work)) return nothing();
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) throw;  // corruption is never hidden
      return nothing();
    }
  }
  std::vector<fs::path> sources;
  bool direct = false;
  // The session's current plan stands when a new one cannot replace it (pending authority, a
  // loaded capability's selection would change): show it instead of replanning. Another preparer
  // may be between committing the current plan and marking it, or replace it again meanwhile: a
  // few short retries (then the original error).
  // (kAborted: re-read and decide again; then the original error).
  const auto reopen_current = [&] {
    const std::exception_ptr original = std::current_exception();
    try {
      result.emplace(app::retry_on({ErrorCode::kAborted}, [&] {
        auto current = service.reopen_current(work);
        if (!current) throw NoCurrentPlan();
        return std::move(*current);
      }));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kAborted) throw;
      std::rethrow_exception(original);
    }
  };
  // A concurrent writer (another hook's prepare or choice) may hold a database or the session's
  // desired choice for a moment (kUnavailable): prepare is an exact retry of the same work, so
  // retry it briefly.
  const auto prepare = [&](const CurrentWork& at) {
    return app::retry_on({ErrorCode::kUnavailable}, [&] {
      sources.clear();
      return service.prepare(at, sources);
    });
  };
  // A prompt about other work while the session's consent is pending is planned in a branch of
  // the session (StateService::branch_for), and a branch's pending consent leads to the next:
  // the plan follows the work. False when there is no branch to plan in.
  const auto follow_work = [&] {
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
        result.emplace(prepare(*branch));
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
  };
  try {
    try {
      result.emplace(prepare(work));
      direct = true;
    } catch (const ManagedConsentPolicyChangedError&) {
      throw;
    } catch (const engine::InvalidEventError&) {
      reopen_current();
    } catch (const Error& e) {
      if (!plan_stands(e)) throw;
      if (prompt_event && follow_work()) {
        direct = true;
      } else {
        reopen_current();
      }
    }
  } catch (const ManagedConsentPolicyChangedError& e) {
    // The session waits on a consent that `ctx policy set` has since stranded: the reply says
    // so, and when it lapses (StateService::prepare then plans again). Never remembered.
    return HookResponse{port->render_reply(Json{
        {"event", event},
        {"actions", Json::array()},
        {"stranded", {{{"capability_id", e.capability_id()}, {"expires_at", e.expires_at()}}}}})};
  }
  // A plan that dropped an active capability releases it first (the session plans on only once
  // that deactivation is settled; the skill leaves the host's folder only by the project's
  // deactivation rule, StateService::release_deactivations). Then a prompt's ready plan: its
  // installable skills are chosen for the user, so the reply says how to approve them (or that
  // they were installed, under a preapproved-auto policy), and the
  // prompt joins the project's recent window (a lingering skill no recent prompt wants leaves).
  std::vector<std::string> deactivated = release_dropped(service, *result);
  HookChoice choice;
  if (prompt_event) {
    choice = choose_installs(service, *result);
    std::vector<std::string> planned;
    if (result->prepared().status() == engine::PlanStatus::kReady) {
      for (const auto& row : result->prepared().selections()) {
        planned.push_back(row.capability_id());
      }
    }
    count_prompt(service, work, planned);
    for (auto& id : retired) deactivated.push_back(std::move(id));
  }
  choice.deactivated = std::move(deactivated);
  HookResponse response =
      HookResponse{port->render_reply(reply_request(event, *result, choice, shown_state_))};
  // Remembered for the next identical request only when this run was a plain prepare and nothing
  // it depends on moved while it ran (the first run only names the files to watch); a reply
  // naming a consent challenge only until shortly before the challenge expires (time, not state).
  if (key && ::getpid() == owner_pid_ && direct) {
    auto remembered = std::make_shared<Remembered>();
    remembered->sources = sources;
    if (const auto& challenge = result->challenge()) {
      remembered->until = remember_until(challenge->expires_at());
    }
    if (choice.challenge) {
      const core::Timestamp until = remember_until(choice.challenge->expires_at);
      if (!remembered->until || until < *remembered->until) remembered->until = until;
    }
    try {
      const auto after = before ? watch_.capture(sources) : std::nullopt;
      if (after && sources == watched && *after == *before) {
        remembered->reply = response.reply;
        remembered->result_text = hook_response_to_json(response).dump();
        remembered->fingerprint = *before;
      }
    } catch (const std::exception&) {
      remembered->reply.reset();
    }
    std::lock_guard lock(mutex_);
    if (remembered_.size() >= kMaxRemembered && !remembered_.contains(*key)) remembered_.clear();
    remembered_[*key] = std::move(remembered);
  }
  return response;
}

}  // namespace ctx::runtime::hooks
