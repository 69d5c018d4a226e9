// InteractiveGuardSlot: the interactive decision guard of a service's kept composition refuses
// every decision inside a resolve_consent scope until armed, answers only with the armed guard,
// and is back to the configured guard (or refuses) once the scope ends, however it ends.
#include "host/runtime/service/interactive_guard_slot.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/runtime/service/errors.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::runtime::detail {
namespace {

engine::InteractiveInstallDecisionReservation reservation(const std::string& event_id) {
  return engine::InteractiveInstallDecisionReservation{
      .scope = engine::ScopeRef::create("tenant-1", "workspace-1", "repository-1", "session-1",
                                        "exposure-1", "host-1"),
      .event_id = event_id,
      .event_content_digest = {},
      .consent_id = {},
      .decision = {},
      .policy_snapshot_digest = {},
      .requested_action_id = {},
      .requested_action_kind = {},
      .requested_action_content_digest = {},
      .requested_action_precondition_revision = 1,
      .install_expires_at = {}};
}

// A guard that records the reservations it saw under `name` and settles by recording again.
InteractiveInstallDecisionGuard recording(std::vector<std::string>& seen, std::string name) {
  return [&seen, name](const engine::InteractiveInstallDecisionReservation& r) {
    seen.push_back(name + ":" + r.event_id);
    return std::function<void()>([&seen, name] { seen.push_back(name + ":settled"); });
  };
}

TEST(InteractiveGuardSlot, WithoutConfiguredGuardRefusesOutsideAScope) {
  auto slot = std::make_shared<InteractiveGuardSlot>(nullptr);
  const auto port = InteractiveGuardSlot::port(slot);
  ASSERT_TRUE(static_cast<bool>(port));
  CTX_EXPECT_THROW(port(reservation("e-1")), ManagedQueryServiceError,
                   "no host-authenticated one-shot guard");
}

TEST(InteractiveGuardSlot, ForwardsToTheConfiguredGuardOutsideAScope) {
  std::vector<std::string> seen;
  auto slot = std::make_shared<InteractiveGuardSlot>(recording(seen, "configured"));
  const auto port = InteractiveGuardSlot::port(slot);
  port(reservation("e-1"))();
  EXPECT_EQ(seen, (std::vector<std::string>{"configured:e-1", "configured:settled"}));
}

TEST(InteractiveGuardSlot, ScopeRefusesUntilArmedThenAnswersOnlyWithTheArmedGuard) {
  std::vector<std::string> seen;
  auto slot = std::make_shared<InteractiveGuardSlot>(recording(seen, "configured"));
  const auto port = InteractiveGuardSlot::port(slot);
  {
    InteractiveGuardSlot::Scope scope(*slot);
    // Inside the scope the configured guard no longer answers: nothing before authentication.
    CTX_EXPECT_THROW(port(reservation("e-early")), ManagedQueryServiceError,
                     "before human authentication");
    scope.arm(recording(seen, "broker"));
    port(reservation("e-1"))();
    scope.disarm();
    CTX_EXPECT_THROW(port(reservation("e-late")), ManagedQueryServiceError,
                     "before human authentication");
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"broker:e-1", "broker:settled"}));
  port(reservation("e-2"));
  EXPECT_EQ(seen.back(), "configured:e-2");
}

TEST(InteractiveGuardSlot, ScopeEndingByAnExceptionStillDisarms) {
  std::vector<std::string> seen;
  auto slot = std::make_shared<InteractiveGuardSlot>(nullptr);
  const auto port = InteractiveGuardSlot::port(slot);
  try {
    InteractiveGuardSlot::Scope scope(*slot);
    scope.arm(recording(seen, "broker"));
    throw std::runtime_error("crash point");
  } catch (const std::runtime_error&) {
  }
  // The armed broker guard of the failed call never answers again.
  CTX_EXPECT_THROW(port(reservation("e-1")), ManagedQueryServiceError,
                   "no host-authenticated one-shot guard");
  EXPECT_TRUE(seen.empty());
  InteractiveGuardSlot::Scope next(*slot);  // and the next call can open its own scope
  CTX_EXPECT_THROW(port(reservation("e-2")), ManagedQueryServiceError,
                   "before human authentication");
}

}  // namespace
}  // namespace ctx::runtime::detail
