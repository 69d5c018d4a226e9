// Seed 001's first test: the runtime package (host/runtime/runtime.hpp, the only include here)
// exports the managed desired-set contract and the consent resolution result.
#include <gtest/gtest.h>

#include <type_traits>

#include "host/runtime/runtime.hpp"

namespace ctx::runtime {
namespace {

template <typename T>
concept Complete = requires {
  sizeof(T);
};

TEST(ManagedServiceSeed, runtime_package_exports_managed_desired_set_contract) {
  static_assert(Complete<ManagedDesiredSetRequest>);
  static_assert(Complete<ManagedDesiredSetResult>);
  static_assert(Complete<ManagedConsentResolutionResult>);
  static_assert(std::is_base_of_v<ManagedQueryServiceError, ManagedDesiredSetBusyError>);
  static_assert(std::is_base_of_v<ManagedQueryServiceError, ManagedDesiredSetConflictError>);
  static_assert(std::is_base_of_v<ManagedQuerySupersededError, ManagedDesiredSetSupersededError>);
  // The package's factory takes the request and returns the results by these exact types.
  static_assert(std::is_same_v<decltype(std::declval<ManagedQueryService&>().set_desired(
                                   std::declval<const ManagedDesiredSetRequest&>())),
                               ManagedDesiredSetResult>);
  static_assert(std::is_same_v<decltype(std::declval<ManagedQueryService&>().recover_consent(
                                   std::declval<const std::string&>())),
                               ManagedConsentResolutionResult>);
  const ManagedDesiredSetBusyError busy("busy");
  const ManagedQueryServiceError& base = busy;
  EXPECT_STREQ(base.what(), "busy");
}

}  // namespace
}  // namespace ctx::runtime
