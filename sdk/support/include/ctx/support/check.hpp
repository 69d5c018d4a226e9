// CTX_CHECK: aborts with the condition's text when an invariant is false (a bug, not an error:
// nothing catches it). One definition for the host, the SDK's loader and plugins.
#ifndef CTX_SUPPORT_CHECK_HPP_
#define CTX_SUPPORT_CHECK_HPP_

namespace ctx::support::detail {
// Prints "ctx: invariant violated: <condition> (<file>:<line>)" to stderr and aborts.
[[noreturn]] void check_failed(const char* condition, const char* file, int line) noexcept;
}  // namespace ctx::support::detail

#define CTX_CHECK(condition) \
  ((condition) ? (void)0 : ::ctx::support::detail::check_failed(#condition, __FILE__, __LINE__))

#endif  // CTX_SUPPORT_CHECK_HPP_
