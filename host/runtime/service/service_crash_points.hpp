// Named crash points of the managed query service (see host/runtime/crash_point.hpp): one per
// durable step of prepare/reopen and set_desired, each armed by a crash-and-recover test in
// tests/host/runtime/service.
#ifndef CTX_HOST_RUNTIME_SERVICE_SERVICE_CRASH_POINTS_HPP_
#define CTX_HOST_RUNTIME_SERVICE_SERVICE_CRASH_POINTS_HPP_

#include <array>
#include <string_view>

namespace ctx::runtime::service_crash_points {

// prepare: the query row is registered; nothing journaled.
inline constexpr std::string_view kAfterRegistration = "runtime.service.prepare.after-register";
// prepare/reopen: the plan is committed in the journal; the row is not marked planned.
inline constexpr std::string_view kAfterPlanCommit = "runtime.service.prepare.after-plan-commit";
// prepare/reopen: the row is marked planned; the result is not returned.
inline constexpr std::string_view kAfterPlanMark = "runtime.service.prepare.after-mark";
// set_desired: the desired set is reserved; its event is not journaled.
inline constexpr std::string_view kAfterDesiredReservation =
    "runtime.service.desired.after-reservation";
// set_desired: the desired event is committed; the reservation is not marked.
inline constexpr std::string_view kAfterDesiredCommit = "runtime.service.desired.after-commit";
// set_desired: the reservation is marked committed; the result is not returned.
inline constexpr std::string_view kAfterDesiredMark = "runtime.service.desired.after-mark";

// prepare/reopen/set_desired: the consent challenge is published in the broker; the result is
// not returned.
inline constexpr std::string_view kAfterChallengePublication =
    "runtime.service.consent.after-publication";

inline constexpr std::array<std::string_view, 7> kAll = {
    kAfterRegistration,       kAfterPlanCommit,    kAfterPlanMark,
    kAfterDesiredReservation, kAfterDesiredCommit, kAfterDesiredMark,
    kAfterChallengePublication};

}  // namespace ctx::runtime::service_crash_points

#endif  // CTX_HOST_RUNTIME_SERVICE_SERVICE_CRASH_POINTS_HPP_
