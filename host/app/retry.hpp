// The app's one retry policy, keyed on the error's code (style §6.2): a call that fails with one
// of the codes its caller names — kUnavailable (a store, or a query another process holds for a
// moment: back off) or kAborted (what it read moved under it: calling again re-reads and decides
// again) — is called again, briefly apart, a bounded number of times. Any other failure, and the
// last retried one, propagates unchanged. kFailedPrecondition is never worth naming: it holds
// until the state changes. Header-only; thread-compatible (it keeps no state).
#ifndef CTX_HOST_APP_RETRY_HPP_
#define CTX_HOST_APP_RETRY_HPP_

#include <chrono>
#include <initializer_list>
#include <thread>

#include "host/core/error.hpp"

namespace ctx::app {

// How often and how far apart a retried call is made.
struct RetryPolicy {
  int attempts = 25;                    // calls in all, the first included (< 1 counts as 1)
  std::chrono::milliseconds pause{20};  // between two calls
};
// A concurrent writer's moment: 25 calls, 20 ms apart (up to ~0.5 s of pauses).
inline constexpr RetryPolicy kBriefRetry{};

// True when `error`'s code is among `codes`.
inline bool has_code(const Error& error, std::initializer_list<ErrorCode> codes) noexcept {
  for (const ErrorCode code : codes) {
    if (error.code() == code) return true;
  }
  return false;
}

// Calls `attempt` until it returns, retrying (policy.pause apart, policy.attempts calls at most)
// while it throws a ctx::Error whose code is in `codes`; returns its result. Errors: the last
// retried error once the attempts are spent; any other exception at once, as thrown.
template <typename Attempt>
auto retry_on(std::initializer_list<ErrorCode> codes, Attempt&& attempt,
              RetryPolicy policy = kBriefRetry) {
  for (int n = 1;; ++n) {
    try {
      return attempt();
    } catch (const Error& error) {
      if (n >= policy.attempts || !has_code(error, codes)) throw;
    }
    std::this_thread::sleep_for(policy.pause);
  }
}

}  // namespace ctx::app

#endif  // CTX_HOST_APP_RETRY_HPP_
