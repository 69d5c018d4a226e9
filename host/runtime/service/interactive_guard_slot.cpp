#include "host/runtime/service/interactive_guard_slot.hpp"

#include <utility>

#include "host/core/error.hpp"
#include "host/runtime/service/errors.hpp"

namespace ctx::runtime::detail {

InteractiveInstallDecisionGuard InteractiveGuardSlot::port(
    std::shared_ptr<InteractiveGuardSlot> slot) {
  return [slot = std::move(slot)](const engine::InteractiveInstallDecisionReservation& r) {
    // Copied out of the lock: the answering guard may take its own locks and do I/O.
    const InteractiveInstallDecisionGuard guard = slot->current();
    return guard(r);
  };
}

InteractiveInstallDecisionGuard InteractiveGuardSlot::current() const {
  std::lock_guard lock(mutex_);
  if (scoped_) {
    if (!armed_) {
      throw ManagedQueryServiceError(
          "interactive consent guard cannot be used before human authentication");
    }
    return armed_;
  }
  if (!configured_) {
    throw ManagedQueryServiceError(
        "interactive install decision has no host-authenticated one-shot guard");
  }
  return configured_;
}

InteractiveGuardSlot::Scope::Scope(InteractiveGuardSlot& slot) : slot_(slot) {
  std::lock_guard lock(slot_.mutex_);
  CTX_CHECK(!slot_.scoped_);
  slot_.scoped_ = true;
  slot_.armed_ = nullptr;
}

InteractiveGuardSlot::Scope::~Scope() {
  InteractiveInstallDecisionGuard released;  // destroyed outside the lock
  std::lock_guard lock(slot_.mutex_);
  slot_.scoped_ = false;
  released.swap(slot_.armed_);
}

void InteractiveGuardSlot::Scope::arm(InteractiveInstallDecisionGuard guard) {
  CTX_CHECK(static_cast<bool>(guard));
  std::lock_guard lock(slot_.mutex_);
  slot_.armed_ = std::move(guard);
}

void InteractiveGuardSlot::Scope::disarm() noexcept {
  InteractiveInstallDecisionGuard released;  // destroyed outside the lock
  std::lock_guard lock(slot_.mutex_);
  released.swap(slot_.armed_);
}

}  // namespace ctx::runtime::detail
