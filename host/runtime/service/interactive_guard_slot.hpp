// The interactive install decision guard a ManagedQueryService gives the composition it keeps
// open between calls (runtime spec §3.14 step 11), so resolve_consent can use that composition
// instead of opening one per decision. Outside resolve_consent the slot forwards to the
// configured guard (none: every interactive decision is refused). While a Scope is open it
// refuses every reservation until the broker's guard for the one authenticated decision is armed,
// answers with that guard only while it is armed, and restores the configured guard when the
// Scope ends, however it ends. Thread-safe.
#ifndef CTX_HOST_RUNTIME_SERVICE_INTERACTIVE_GUARD_SLOT_HPP_
#define CTX_HOST_RUNTIME_SERVICE_INTERACTIVE_GUARD_SLOT_HPP_

#include <memory>
#include <mutex>

#include "host/runtime/planning_ports.hpp"

namespace ctx::runtime::detail {

class InteractiveGuardSlot {
 public:
  // `configured` may be empty.
  explicit InteractiveGuardSlot(InteractiveInstallDecisionGuard configured)
      : configured_(std::move(configured)) {}
  InteractiveGuardSlot(const InteractiveGuardSlot&) = delete;
  InteractiveGuardSlot& operator=(const InteractiveGuardSlot&) = delete;

  // The guard to hand to a composition: calls whichever guard answers at the moment of the
  // call. Errors: ManagedQueryServiceError ("before human authentication" inside a Scope not
  // armed; "no host-authenticated one-shot guard" outside one without a configured guard), and
  // whatever the answering guard throws.
  static InteractiveInstallDecisionGuard port(std::shared_ptr<InteractiveGuardSlot> slot);

  // One resolve_consent's hold on the slot. REQUIRES: no other Scope of the slot is open (the
  // service's lock serializes them).
  class Scope {
   public:
    explicit Scope(InteractiveGuardSlot& slot);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // Only `guard` answers until disarm() or the end of the Scope. REQUIRES: `guard` non-empty.
    void arm(InteractiveInstallDecisionGuard guard);
    // Refuses every reservation again (until the Scope ends).
    void disarm() noexcept;

   private:
    InteractiveGuardSlot& slot_;
  };

 private:
  InteractiveInstallDecisionGuard current() const;

  const InteractiveInstallDecisionGuard configured_;
  mutable std::mutex mutex_;
  bool scoped_ = false;                    // GUARDED_BY(mutex_)
  InteractiveInstallDecisionGuard armed_;  // GUARDED_BY(mutex_)
};

}  // namespace ctx::runtime::detail

#endif  // CTX_HOST_RUNTIME_SERVICE_INTERACTIVE_GUARD_SLOT_HPP_
