// ReplyMemory: HookRunner's remembered exact-retry replies (hook_runner.hpp, "Exact retries").
// A reply is remembered under an HMAC of the request (adapter id and payload) under the
// installation key — no payload is kept — with the StateWatch fingerprint (state_watch.hpp) of
// what its full run read, and only when that fingerprint did not move while the run computed it,
// on the second run (the first names the files to watch). It is given again while the watch
// still vouches for it, and a reply naming a consent challenge only until 5 s before the
// challenge expires (by the service's clock). At most 256 replies are kept (then all are
// forgotten). Thread-safe (its own mutex; recall can be asked not to wait for it).
// Process-bound as StateWatch is; HookRunner never uses it in a forked child.
#ifndef CTX_HOST_APP_HOOK_REPLY_MEMORY_HPP_
#define CTX_HOST_APP_HOOK_REPLY_MEMORY_HPP_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/app/hook/hook_protocol.hpp"
#include "host/app/hook/state_watch.hpp"
#include "host/core/time.hpp"

namespace ctx::runtime::hooks {

class ReplyMemory {
 public:
  // One remembered reply.
  struct Entry {
    std::vector<std::filesystem::path> sources;  // what the last full run read besides the dbs
    std::optional<std::string> reply;            // set once a full run was not disturbed
    std::string result_text;                     // hook_response_to_json of `reply`, encoded
    std::string fingerprint;                     // the StateWatch fingerprint
    std::optional<core::Timestamp> until;        // a challenge's reply: given only before this
  };
  // What a full run of a key watches, taken before it runs.
  struct Before {
    std::vector<std::filesystem::path> watched;  // the files the key's last full run read
    std::optional<std::string> fingerprint;      // the state watch's, nullopt: unknown
  };

  // `state_dir` must be absolute. Nothing is opened until the first capture.
  explicit ReplyMemory(std::filesystem::path state_dir);
  ReplyMemory(const ReplyMemory&) = delete;
  ReplyMemory& operator=(const ReplyMemory&) = delete;

  // The remembering key of `request`: an HMAC under `installation_key`.
  static std::string key_of(const std::string& installation_key, const HookRequest& request);

  // The remembered reply of `key` when the state watch vouches for it now and, for a
  // challenge's reply, `clock` says it is still before its `until`; nullptr otherwise. With
  // `wait` false it never waits (a lock another thread holds, a busy database: nullptr). Never
  // throws for the watch (a failed capture is "changed").
  std::shared_ptr<const Entry> recall(const std::string& key, const core::Clock& clock, bool wait);
  // Before a full run of `key`: the files its last run read and the fingerprint now.
  Before before_run(const std::string& key);
  // After a full run of `key` that read `sources`: remembers `response` when the fingerprint is
  // what `before` took and the files are those it watched (else only the files, for the next
  // run). `challenge_expiries`: the RFC 3339 expiry of each consent challenge the reply names.
  void remember(const std::string& key, const Before& before,
                const std::vector<std::filesystem::path>& sources, const HookResponse& response,
                const std::vector<std::string>& challenge_expiries);

  // How many recall() calls found a reply.
  std::uint64_t hits() const noexcept { return hits_.load(); }

 private:
  StateWatch watch_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Entry>> entries_;  // GUARDED_BY(mutex_)
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace ctx::runtime::hooks

#endif  // CTX_HOST_APP_HOOK_REPLY_MEMORY_HPP_
