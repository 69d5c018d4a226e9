// The JSON-RPC methods over the state dir's managed query service, mirroring the CLI: each
// method's result is exactly what the command prints with --json.
//
//   hook           {"adapter", "payload"} -> {"reply": TEXT | null}      (hook_protocol.hpp)
//   query.prepare  {"work": CURRENT-WORK}  -> managed_result_json        (ctx query prepare)
//   query.reopen   {"query_ref"}           -> managed_result_json        (ctx query reopen)
//   desired.set    {"query_ref", "capability_ids": [...], "choice"?}
//                                          -> desired_result_json        (ctx desired set)
//   consent.show   {}                      -> consent_show_json          (ctx consent show)
//   consent.resolve {"assertion": WIRE-PAYLOAD TEXT}
//                                          -> consent_decision_json      (ctx consent resolve)
//   consent.recover {"challenge_digest"}   -> consent_decision_json      (ctx consent recover)
// A refused decision (codec, audience, unknown principal, replay, expiry) is an error reply with
// the error's code and one-line message; nothing durable changed.
// `hook` also has a fast path (server.hpp's FastHandler): the HookRunner's remembered reply of an
// exact retry, when it still holds (hook_runner.hpp), without a hop to the worker pool.
// The service is opened on first use and shared by every method and worker (it is thread-safe);
// a state dir that is not ready yet (no init, no catalog) fails that request only. A catalog
// imported, a plugin pinned or an activation target set while the server runs (catalog/CURRENT,
// plugins.lock.json or activation-targets/ changed) is used from the next request on;
// requests already running finish on the service they started with.
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/app/consent.hpp"
#include "host/app/hook/hook_protocol.hpp"
#include "host/app/hook/hook_runner.hpp"
#include "host/app/state_service.hpp"
#include "host/app/wire.hpp"
#include "host/core/crypto.hpp"
#include "host/core/json_reader.hpp"
#include "host/server/file_signature.hpp"
#include "host/server/server.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
namespace hooks = runtime::hooks;

core::JsonObjectReader params_of(const core::Json& params, const std::string& method) {
  return core::JsonObjectReader(params, method + " params", &core::raise_as<InvalidParams>);
}

// Bad request bytes are the caller's error (-32602); anything else keeps its type.
template <typename F>
core::Json invalid_params_on_bad_input(F&& body) {
  try {
    return body();
  } catch (const hooks::HookPayloadError& e) {
    throw InvalidParams(e.what());
  } catch (const core::JsonFieldError& e) {
    throw InvalidParams(e.what());
  }
}

// The HookRunner (its StateService and loaded adapters) of the current catalog import, plugin
// lock and activation targets (`ctx hooks install` adds a project): any of those
// files replaced means a new runner.
class CurrentRunner {
 public:
  explicit CurrentRunner(fs::path state_dir)
      : state_dir_(std::move(state_dir)), paths_(runtime::StatePaths::of(state_dir_)) {}

  std::shared_ptr<hooks::HookRunner> get() {
    const Signature now{file_signature(paths_.catalog_current), file_signature(paths_.plugin_lock),
                        file_signature(paths_.activation_targets)};
    const std::lock_guard lock(mutex_);
    if (!runner_ || now != signature_) {
      runner_ = std::make_shared<hooks::HookRunner>(state_dir_);
      signature_ = now;
    }
    return runner_;
  }

  // The last runner, if there is one and nobody holds the lock; never waits, and stats nothing:
  // it may be a replaced file's runner, but such a runner never answers from memory (its state
  // watch sees catalog/CURRENT and plugins.lock.json replaced), so the request goes to get().
  std::shared_ptr<hooks::HookRunner> try_get() {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return nullptr;
    return runner_;
  }

 private:
  using Signature = std::array<std::optional<FileSignature>, 3>;
  fs::path state_dir_;
  runtime::StatePaths paths_;
  std::mutex mutex_;
  std::shared_ptr<hooks::HookRunner> runner_;  // GUARDED_BY(mutex_)
  Signature signature_;                        // GUARDED_BY(mutex_)
};

}  // namespace

void register_service_methods(MethodTable& table, const fs::path& state_dir) {
  auto current = std::make_shared<CurrentRunner>(state_dir);

  table.add(
      std::string(hooks::kHookMethod),
      [current](const core::Json& params) {
        const auto runner = current->get();
        return invalid_params_on_bad_input([&] {
          return hooks::hook_response_to_json(runner->run(hooks::hook_request_from_json(params)));
        });
      },
      // An exact retry whose remembered reply still holds, answered on the I/O thread.
      [current](const core::Json& params) -> std::optional<std::string> {
        const auto runner = current->try_get();
        if (!runner) return std::nullopt;
        return runner->try_remembered_result(hooks::hook_request_from_json(params));
      });

  table.add("query.prepare", [current](const core::Json& params) {
    const auto runner = current->get();
    const core::Json& work =
        params_of(params, "query.prepare").exact({"work"}).object_value("work");
    std::optional<runtime::CurrentWork> current;
    try {
      current = runtime::current_work_from_value(work);
    } catch (const InvalidArgument& e) {
      throw InvalidParams(e.what());
    }
    return runtime::managed_result_json(runner->state().prepare(std::move(*current)));
  });

  table.add("query.reopen", [current](const core::Json& params) {
    const auto runner = current->get();
    const auto reader = params_of(params, "query.reopen");
    reader.exact({"query_ref"});
    return runtime::managed_result_json(runner->state().reopen(reader.string("query_ref")));
  });

  table.add("desired.set", [current](const core::Json& params) {
    const auto runner = current->get();
    const auto reader = params_of(params, "desired.set");
    reader.expect({"query_ref", "capability_ids"}, {"choice"});
    std::vector<std::string> ids;
    for (const core::Json& id : reader.array("capability_ids")) {
      if (!id.is_string()) throw InvalidParams("desired.set capability_ids must be strings");
      ids.push_back(id.get<std::string>());
    }
    return runtime::desired_result_json(runner->state().set_desired(
        reader.string("query_ref"), std::move(ids), reader.optional_string("choice")));
  });

  table.add("consent.show", [current, state_dir](const core::Json& params) {
    const auto runner = current->get();
    if (!params.is_null() && !(params.is_object() && params.empty())) {
      throw InvalidParams("consent.show takes no params");
    }
    return runtime::consent_show_json(runner->state().pending_challenges(),
                                      runtime::printed_state_dir_of_process(state_dir),
                                      &runner->state().catalog());
  });

  table.add("consent.resolve", [current](const core::Json& params) {
    const auto runner = current->get();
    const auto reader = params_of(params, "consent.resolve");
    reader.exact({"assertion"});
    return runtime::consent_decision_json(
        runner->state().resolve_consent(reader.string("assertion")));
  });

  table.add("consent.recover", [current](const core::Json& params) {
    const auto runner = current->get();
    const auto reader = params_of(params, "consent.recover");
    reader.exact({"challenge_digest"});
    const std::string digest = reader.string("challenge_digest");
    if (!core::is_sha256_hex(digest)) {
      throw InvalidParams("consent.recover challenge_digest must be 64 lower-case hex");
    }
    return runtime::consent_decision_json(runner->state().recover_consent(digest));
  });
}

}  // namespace ctx::server
