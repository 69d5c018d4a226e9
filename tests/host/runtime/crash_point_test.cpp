// The crash-point seam: inert unless armed, throws SimulatedCrash (no std::exception, no
// ctx::Error) once when armed, honours a skip count, kills the process in kKill mode, and is
// safe to hit from many threads.
#include "host/runtime/crash_point.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <csignal>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "host/core/error.hpp"

namespace ctx::runtime {
namespace {

static_assert(!std::is_base_of_v<Error, SimulatedCrash>,
              "a simulated crash must not be caught as a domain error");
static_assert(!std::is_base_of_v<std::exception, SimulatedCrash>,
              "a simulated crash must not be caught by a catch (const std::exception&) handler");
static_assert(!std::is_copy_constructible_v<CrashPointArmed>);

TEST(CrashPoint, UnarmedPointsDoNothing) {
  EXPECT_NO_THROW(crash_point("journal.after-claim"));
  CrashPointArmed armed("some.other.point");
  EXPECT_NO_THROW(crash_point("journal.after-claim"));
  EXPECT_EQ(armed.hits(), 0);
}

TEST(CrashPoint, ArmedPointThrowsOnceThenDisarms) {
  CrashPointArmed armed("executor.after-outcome");
  try {
    crash_point("executor.after-outcome");
    FAIL() << "expected SimulatedCrash";
  } catch (const SimulatedCrash& crash) {
    EXPECT_EQ(crash.name(), "executor.after-outcome");
    EXPECT_STREQ(crash.what(), "simulated crash at executor.after-outcome");
  }
  EXPECT_TRUE(armed.fired());
  EXPECT_NO_THROW(crash_point("executor.after-outcome"));  // the recovering run passes
  EXPECT_EQ(armed.hits(), 1);
}

TEST(CrashPoint, SkipLetsEarlierHitsPass) {
  CrashPointArmed armed("loop.step", 2);
  EXPECT_NO_THROW(crash_point("loop.step"));
  EXPECT_NO_THROW(crash_point("loop.step"));
  EXPECT_FALSE(armed.fired());
  EXPECT_THROW(crash_point("loop.step"), SimulatedCrash);
  EXPECT_TRUE(armed.fired());
  EXPECT_EQ(armed.hits(), 3);
}

TEST(CrashPoint, DisarmedWhenTheGuardEnds) {
  { CrashPointArmed armed("scoped.point"); }
  EXPECT_NO_THROW(crash_point("scoped.point"));
  CrashPointArmed again("scoped.point");  // a name can be armed again after disarming
  EXPECT_THROW(crash_point("scoped.point"), SimulatedCrash);
}

TEST(CrashPoint, ExactlyOneOfManyConcurrentHitsCrashes) {
  CrashPointArmed armed("shared.point");
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::atomic<int> crashes{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int n = 0; n < 100; ++n) {
        try {
          crash_point("shared.point");
        } catch (const SimulatedCrash&) {
          ++crashes;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(crashes.load(), 1);
  EXPECT_EQ(armed.hits(), 1);
}

TEST(CrashPoint, KillModeKillsTheProcessAtThePoint) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CrashPointArmed armed("kill.point", 1, CrashMode::kKill);
    crash_point("kill.point");  // skipped
    crash_point("kill.point");  // dies here
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(CrashPoint, FaultModeRunsTheFaultOnceAtThePointAndPropagatesWhatItThrows) {
  int runs = 0;
  {
    CrashPointArmed armed(
        "fault.point", [&] { ++runs; }, 1);
    crash_point("fault.point");  // skipped
    EXPECT_EQ(runs, 0);
    crash_point("fault.point");  // the fault runs and returns: the step goes on
    crash_point("fault.point");  // fired once: disarmed
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(armed.fired());
    EXPECT_EQ(armed.hits(), 2);
  }
  CrashPointArmed failing("fault.throws", [] { throw std::runtime_error("disk full"); });
  try {
    crash_point("fault.throws");
    ADD_FAILURE() << "the fault did not propagate";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "disk full");
  }
  // The registry's lock is not held while the fault runs: it may reach other points.
  CrashPointArmed outer("fault.outer", [] { crash_point("fault.inner"); });
  CrashPointArmed inner("fault.inner");
  EXPECT_THROW(crash_point("fault.outer"), SimulatedCrash);
  EXPECT_TRUE(inner.fired());
}

TEST(CrashPoint, NamedPointsAreDistinctAndScoped) {
  std::set<std::string_view> names(crash_points::kAll.begin(), crash_points::kAll.end());
  EXPECT_EQ(names.size(), crash_points::kAll.size());
  for (const auto name : crash_points::kAll) EXPECT_EQ(name.substr(0, 8), "runtime.");
}

}  // namespace
}  // namespace ctx::runtime
