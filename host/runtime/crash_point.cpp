#include "host/runtime/crash_point.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "host/core/error.hpp"

namespace ctx::runtime {
namespace {

struct ArmedPoint {
  int skip = 0;
  int hits = 0;
  bool fired = false;
  CrashMode mode = CrashMode::kThrow;
  std::function<void()> fault;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, ArmedPoint, std::less<>> points;  // GUARDED_BY(mutex)
  std::atomic<int> armed{0};
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

SimulatedCrash::SimulatedCrash(std::string name)
    : name_(std::move(name)), message_("simulated crash at " + name_) {}

void crash_point(std::string_view name) {
  Registry& r = registry();
  if (r.armed.load(std::memory_order_acquire) == 0) return;
  std::function<void()> fault;
  {
    std::lock_guard lock(r.mutex);
    auto it = r.points.find(name);
    if (it == r.points.end() || it->second.fired) return;
    ++it->second.hits;
    if (it->second.hits <= it->second.skip) return;
    it->second.fired = true;
    if (it->second.mode == CrashMode::kKill) {
      ::kill(::getpid(), SIGKILL);
      std::abort();  // not reached: SIGKILL cannot be caught
    }
    if (it->second.mode != CrashMode::kFault) throw SimulatedCrash(std::string(name));
    fault = it->second.fault;
  }
  if (fault) fault();
}

CrashPointArmed::CrashPointArmed(std::string_view name, int skip, CrashMode mode)
    : name_(name) {
  CTX_CHECK(skip >= 0);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  bool inserted = r.points.emplace(name_, ArmedPoint{skip, 0, false, mode, {}}).second;
  CTX_CHECK(inserted);
  r.armed.fetch_add(1, std::memory_order_release);
}

CrashPointArmed::CrashPointArmed(std::string_view name, std::function<void()> fault, int skip)
    : name_(name) {
  CTX_CHECK(skip >= 0);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  bool inserted =
      r.points.emplace(name_, ArmedPoint{skip, 0, false, CrashMode::kFault, std::move(fault)})
          .second;
  CTX_CHECK(inserted);
  r.armed.fetch_add(1, std::memory_order_release);
}

CrashPointArmed::~CrashPointArmed() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.points.erase(name_);
  r.armed.fetch_sub(1, std::memory_order_release);
}

bool CrashPointArmed::fired() const {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.points.at(name_).fired;
}

int CrashPointArmed::hits() const {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.points.at(name_).hits;
}

}  // namespace ctx::runtime
