// Named crash points of resolve_consent / recover_consent (see host/runtime/crash_point.hpp):
// one per durable step of a signed decision, each armed by a crash-and-recover seed test in
// tests/host/runtime/service/consent_resolution_seed_test.cpp.
#ifndef CTX_HOST_RUNTIME_SERVICE_CONSENT_RESOLUTION_CRASH_POINTS_HPP_
#define CTX_HOST_RUNTIME_SERVICE_CONSENT_RESOLUTION_CRASH_POINTS_HPP_

#include <array>
#include <string_view>

namespace ctx::runtime::consent_crash_points {

// The broker holds the authenticated decision (decision-ready); its journal event is not
// committed. Recovery never mints the decision: it asks for reauthentication.
inline constexpr std::string_view kAfterAuthentication =
    "runtime.service.consent.after-authentication";
// The decision event is committed and the broker settled; the install is not executed.
inline constexpr std::string_view kAfterDecisionCommit =
    "runtime.service.consent.after-decision-commit";
// A consent or grant expiry event is committed; the result is not returned.
inline constexpr std::string_view kAfterExpiryCommit = "runtime.service.consent.after-expiry";

inline constexpr std::array<std::string_view, 3> kAll = {kAfterAuthentication,
                                                         kAfterDecisionCommit, kAfterExpiryCommit};

}  // namespace ctx::runtime::consent_crash_points

#endif  // CTX_HOST_RUNTIME_SERVICE_CONSENT_RESOLUTION_CRASH_POINTS_HPP_
