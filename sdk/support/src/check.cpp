#include "ctx/support/check.hpp"

#include <cstdio>
#include <cstdlib>

namespace ctx::support::detail {

void check_failed(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "ctx: invariant violated: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace ctx::support::detail
