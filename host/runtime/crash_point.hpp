// Named crash points: a seam for crash tests. Runtime code calls crash_point(name) at every
// durable step, naming it with one of the constants in ctx::runtime::crash_points below; the call
// does nothing unless a test armed that name with CrashPointArmed. Armed, it either throws
// SimulatedCrash — deliberately no std::exception and no ctx::Error, so no domain or library
// handler swallows it and the step is abandoned exactly as a process death would leave it (no
// compensating writes) — or kills the process with SIGKILL (CrashMode::kKill, for fork tests), or
// runs a test's fault at that step (CrashMode::kFault: an I/O error thrown where the real one
// would surface, or the world changed between two steps of one call, as a seed's monkeypatch
// does). Thread-safe.
#ifndef CTX_HOST_RUNTIME_CRASH_POINT_HPP_
#define CTX_HOST_RUNTIME_CRASH_POINT_HPP_

#include <array>
#include <functional>
#include <string>
#include <string_view>

namespace ctx::runtime {

// Every durable step of the runtime that a crash test must be able to interrupt. Each name is
// armed by at least one test that crashes there and recovers (tests/host/runtime).
namespace crash_points {
// The activation claim is durable (claimed by this call or found claimed); nothing observed.
inline constexpr std::string_view kAfterActivationClaim = "runtime.activation.after-claim";
// The installer's applied observation is recorded as the durable outcome; no receipt yet.
inline constexpr std::string_view kAfterActivationOutcome = "runtime.activation.after-outcome";
// The ActionApplied receipt and its claim settlement are committed; the report is not returned.
inline constexpr std::string_view kAfterActivationReceipt = "runtime.activation.after-receipt";
// An interactive decision is committed; the host's decision guard is not settled yet.
inline constexpr std::string_view kBeforeDecisionSettlement =
    "runtime.decision.before-guard-settlement";

// A preapproved (automatic) install grant is committed; nothing is claimed yet.
inline constexpr std::string_view kAfterInstallDecision = "runtime.install.after-decision";
// The install claim is durable (claimed by this call or found claimed); the driver not called.
inline constexpr std::string_view kAfterInstallClaim = "runtime.install.after-claim";
// The driver's observation (applied or failed) is the durable outcome; no receipt yet.
inline constexpr std::string_view kAfterInstallOutcome = "runtime.install.after-outcome";
// The install receipt and its claim settlement are committed; the report is not returned.
inline constexpr std::string_view kAfterInstallReceipt = "runtime.install.after-receipt";
// The service observed the settled install; its desired result is not returned.
inline constexpr std::string_view kAfterInstallSettlement = "runtime.install.after-settlement";

// The installer verified a pending deactivation (inactive, or failed); no receipt yet.
inline constexpr std::string_view kAfterDeactivation = "runtime.deactivation.after-deactivate";
// The deactivation's ActionApplied (or ActionFailed) receipt is committed; no report returned.
inline constexpr std::string_view kAfterDeactivationReceipt =
    "runtime.deactivation.after-receipt";

// The activation and decision-settlement points (armed by tests/host/runtime).
inline constexpr std::array<std::string_view, 4> kAll = {
    kAfterActivationClaim, kAfterActivationOutcome, kAfterActivationReceipt,
    kBeforeDecisionSettlement};
// The install points (armed by tests/host/runtime/service/preapproved_install_seed_test.cpp).
inline constexpr std::array<std::string_view, 5> kInstall = {
    kAfterInstallDecision, kAfterInstallClaim, kAfterInstallOutcome, kAfterInstallReceipt,
    kAfterInstallSettlement};
// The deactivation points (armed by tests/host/app/state_service_test.cpp).
inline constexpr std::array<std::string_view, 2> kDeactivation = {kAfterDeactivation,
                                                                  kAfterDeactivationReceipt};
}  // namespace crash_points

// Thrown by an armed crash point in CrashMode::kThrow. Carries the point's name. Not derived
// from std::exception on purpose (see the file comment): only a test's explicit catch sees it.
class SimulatedCrash {
 public:
  explicit SimulatedCrash(std::string name);
  const char* what() const noexcept { return message_.c_str(); }
  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
  std::string message_;
};

// What an armed point does when it fires.
enum class CrashMode : int {
  kThrow = 1,  // throw SimulatedCrash
  kKill = 2,   // SIGKILL the calling process: no unwinding, no destructors, no flushes
  kFault = 3,  // run the armed fault: it may throw (any exception) or return
};

// Fires if `name` is armed (and its skip count is used up); otherwise returns.
// Cheap when nothing is armed (one atomic load).
void crash_point(std::string_view name);

// Arms `name` for its lifetime: the point lets the first `skip` hits pass, then fires once and
// disarms itself (a process dies once; the recovering code must not crash again). Arming a
// name that is already armed is a bug (CTX_CHECK). Not copyable or movable.
class CrashPointArmed {
 public:
  explicit CrashPointArmed(std::string_view name, int skip = 0, CrashMode mode = CrashMode::kThrow);
  // CrashMode::kFault: when the point fires, `fault` runs on the calling thread (outside the
  // registry's lock); what it throws propagates from the point.
  CrashPointArmed(std::string_view name, std::function<void()> fault, int skip = 0);
  ~CrashPointArmed();
  CrashPointArmed(const CrashPointArmed&) = delete;
  CrashPointArmed& operator=(const CrashPointArmed&) = delete;

  // True once the point has fired.
  bool fired() const;
  // How many times the point was reached while armed (including the throwing hit).
  int hits() const;

 private:
  std::string name_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CRASH_POINT_HPP_
