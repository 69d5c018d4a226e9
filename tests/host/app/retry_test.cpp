// host/app/retry.hpp: retry_on retries only the codes its caller names, at most the policy's
// attempts, and lets the last retried error (or any other) through unchanged.
#include "host/app/retry.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "host/runtime/service/errors.hpp"

namespace ctx::app {
namespace {

// No pause between calls: these tests count calls, not time.
constexpr RetryPolicy kFast{5, std::chrono::milliseconds(0)};

TEST(AppRetryTest, ANamedCodeIsRetriedUntilTheCallReturns) {
  int calls = 0;
  const int result = retry_on(
      {ErrorCode::kUnavailable},
      [&] {
        if (++calls < 3) throw runtime::ManagedDesiredSetBusyError("busy");
        return 42;
      },
      kFast);
  EXPECT_EQ(result, 42);
  EXPECT_EQ(calls, 3);
}

TEST(AppRetryTest, ACodeNotNamedPropagatesAtOnce) {
  int calls = 0;
  // Busy and superseded are both service errors (FailedPrecondition by type); their codes differ.
  EXPECT_THROW(retry_on(
                   {ErrorCode::kUnavailable},
                   [&]() -> int {
                     ++calls;
                     throw runtime::ManagedQuerySupersededError("superseded");
                   },
                   kFast),
               runtime::ManagedQuerySupersededError);
  EXPECT_EQ(calls, 1);
  calls = 0;
  EXPECT_THROW(retry_on(
                   {ErrorCode::kAborted, ErrorCode::kUnavailable},
                   [&]() -> int {
                     ++calls;
                     throw runtime::ManagedQueryServiceError("refused");
                   },
                   kFast),
               runtime::ManagedQueryServiceError);
  EXPECT_EQ(calls, 1);
  calls = 0;
  EXPECT_THROW(retry_on(
                   {ErrorCode::kUnavailable},
                   [&]() -> int {
                     ++calls;
                     throw std::runtime_error("not a ctx error");
                   },
                   kFast),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
}

TEST(AppRetryTest, AttemptsAreBoundedAndTheLastErrorIsRethrown) {
  int calls = 0;
  try {
    retry_on(
        {ErrorCode::kAborted},
        [&] {
          ++calls;
          throw runtime::ManagedQueryHeadDriftError("head changed, call " + std::to_string(calls));
        },
        kFast);
    ADD_FAILURE() << "retry_on returned";
  } catch (const runtime::ManagedQueryHeadDriftError& e) {
    EXPECT_EQ(std::string(e.what()), "head changed, call 5");
    EXPECT_EQ(e.code(), ErrorCode::kAborted);
  }
  EXPECT_EQ(calls, 5);
  // A policy of one attempt (or fewer) calls once.
  calls = 0;
  EXPECT_THROW(retry_on(
                   {ErrorCode::kAborted},
                   [&] {
                     ++calls;
                     throw runtime::ManagedQueryHeadDriftError("changed");
                   },
                   RetryPolicy{0, std::chrono::milliseconds(0)}),
               runtime::ManagedQueryHeadDriftError);
  EXPECT_EQ(calls, 1);
}

TEST(AppRetryTest, AVoidCallIsRetriedToo) {
  int calls = 0;
  retry_on(
      {ErrorCode::kUnavailable},
      [&] {
        if (++calls == 1) throw runtime::ManagedQueryStoreUnavailable("store busy");
      },
      kFast);
  EXPECT_EQ(calls, 2);
}

// The codes the service's errors carry are the retry contract the callers key on (style §6.2).
TEST(AppRetryTest, TheServiceErrorsCarryTheirRetryCodes) {
  EXPECT_EQ(runtime::ManagedDesiredSetBusyError("x").code(), ErrorCode::kUnavailable);
  EXPECT_EQ(runtime::ManagedQuerySupersededError("x").code(), ErrorCode::kAborted);
  EXPECT_EQ(runtime::ManagedDesiredSetSupersededError("x").code(), ErrorCode::kAborted);
  EXPECT_EQ(runtime::ManagedQueryHeadDriftError("x").code(), ErrorCode::kAborted);
  EXPECT_EQ(runtime::ManagedQueryServiceError("x").code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(runtime::ManagedDesiredSetConflictError("x").code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(runtime::ManagedQueryStoreConflict("x").code(), ErrorCode::kAlreadyExists);
  // Still caught as the seeds catch them.
  EXPECT_THROW(throw runtime::ManagedDesiredSetBusyError("x"), FailedPrecondition);
  EXPECT_THROW(throw runtime::ManagedQueryHeadDriftError("x"), runtime::ManagedQueryServiceError);
}

}  // namespace
}  // namespace ctx::app
