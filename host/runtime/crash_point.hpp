// Named crash points: a seam for crash tests. Runtime code calls crash_point("name") at every
// durable step; it does nothing unless a test armed that name with CrashPointArmed, in which
// case it throws SimulatedCrash — deliberately NOT a ctx::Error, so no domain error handler
// swallows it and the step is abandoned exactly as a process death would leave it (no
// compensating writes). Thread-safe.
#ifndef CTX_HOST_RUNTIME_CRASH_POINT_HPP_
#define CTX_HOST_RUNTIME_CRASH_POINT_HPP_

#include <exception>
#include <string>
#include <string_view>

namespace ctx::runtime {

// Thrown by an armed crash point. Carries the point's name.
class SimulatedCrash : public std::exception {
 public:
  explicit SimulatedCrash(std::string name);
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
  std::string message_;
};

// Throws SimulatedCrash if `name` is armed (and its skip count is used up); otherwise returns.
// Cheap when nothing is armed (one atomic load).
void crash_point(std::string_view name);

// Arms `name` for its lifetime: the point lets the first `skip` hits pass, then throws once and
// disarms itself (a process dies once; the recovering code must not crash again). Arming a
// name that is already armed is a bug (CTX_CHECK). Not copyable or movable.
class CrashPointArmed {
 public:
  explicit CrashPointArmed(std::string name, int skip = 0);
  ~CrashPointArmed();
  CrashPointArmed(const CrashPointArmed&) = delete;
  CrashPointArmed& operator=(const CrashPointArmed&) = delete;

  // True once the point has thrown.
  bool fired() const;
  // How many times the point was reached while armed (including the throwing hit).
  int hits() const;

 private:
  std::string name_;
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CRASH_POINT_HPP_
