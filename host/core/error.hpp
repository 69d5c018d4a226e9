// The host's error vocabulary: ctx::Error and the generic types (NotFound, FailedPrecondition,
// DataLoss, SystemError, InvalidArgument) from the SDK, shared with plugins and the SDK's loader,
// and CTX_CHECK for broken invariants (bugs abort; they are not exceptions).
#ifndef CTX_HOST_CORE_ERROR_HPP_
#define CTX_HOST_CORE_ERROR_HPP_

#include <ctx/sdk/error.hpp>
#include <ctx/support/check.hpp>

namespace ctx::core::detail {
using support::detail::check_failed;
}  // namespace ctx::core::detail

#endif  // CTX_HOST_CORE_ERROR_HPP_
