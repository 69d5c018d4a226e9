// FakeActivation: a scriptable engine::ActivationPort double. It keeps the "active material" of
// each capability in memory, so reconcile answers what an earlier activate did (also across a
// simulated crash of the caller). Thread-safe.
#ifndef CTX_TESTS_SUPPORT_ENGINE_FAKE_ACTIVATION_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_FAKE_ACTIVATION_HPP_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/engine/ports/installer_port.hpp"

namespace ctx::testing {

class FakeActivation final : public engine::ActivationPort {
 public:
  // What activate does: apply (the requested material becomes active), report failed or
  // indeterminate (nothing changes), apply but report indeterminate (a lost reply), activate
  // another material, or throw a ctx::Error.
  enum class Script {
    kApply,
    kFail,
    kIndeterminate,
    kApplyReportIndeterminate,
    kApplyOtherMaterial,
    kThrow
  };

  explicit FakeActivation(Script script = Script::kApply) : script_(script) {}

  void set_script(Script script) {
    std::lock_guard lock(mutex_);
    script_ = script;
  }
  // Makes reconcile report indeterminate (true) or the in-memory state (false).
  void set_reconcile_indeterminate(bool value) {
    std::lock_guard lock(mutex_);
    reconcile_indeterminate_ = value;
  }

  engine::ActivationObservation activate(const engine::ActivationRequest& request) override {
    std::lock_guard lock(mutex_);
    ++activate_calls_;
    const std::string& id = request.material.capability_id();
    switch (script_) {
      case Script::kApply:
        active_[id] = request.material.identity_digest();
        return applied(request.material.identity_digest());
      case Script::kApplyOtherMaterial:
        active_[id] = core::sha256_hex("other material");
        return applied(active_[id]);
      case Script::kFail:
        return {engine::ActivationResult::kFailed, std::nullopt, std::nullopt, "scripted failure"};
      case Script::kApplyReportIndeterminate:
        active_[id] = request.material.identity_digest();
        [[fallthrough]];
      case Script::kIndeterminate:
        return {engine::ActivationResult::kIndeterminate, std::nullopt, std::nullopt,
                "scripted indeterminate"};
      case Script::kThrow:
        throw Error("fake activation driver is unreachable", ErrorCode::kUnavailable);
    }
    return {};
  }

  // What deactivate does: kApply (the capability becomes inactive), kFail or kIndeterminate
  // (nothing changes), kThrow; the other scripts act as kApply.
  void set_deactivate_script(Script script) {
    std::lock_guard lock(mutex_);
    deactivate_script_ = script;
  }

  engine::ActivationObservation deactivate(const engine::ActivationRequest& request) override {
    std::lock_guard lock(mutex_);
    ++deactivate_calls_;
    switch (deactivate_script_) {
      case Script::kFail:
        return {engine::ActivationResult::kFailed, std::nullopt, std::nullopt, "scripted failure"};
      case Script::kIndeterminate:
        return {engine::ActivationResult::kIndeterminate, std::nullopt, std::nullopt,
                "scripted indeterminate"};
      case Script::kThrow:
        throw Error("fake activation driver is unreachable", ErrorCode::kUnavailable);
      default:
        active_.erase(request.material.capability_id());
        return {engine::ActivationResult::kApplied, std::nullopt, std::nullopt, ""};
    }
  }

  engine::ActivationObservation reconcile(const engine::ActivationRequest& request) override {
    std::lock_guard lock(mutex_);
    ++reconcile_calls_;
    if (reconcile_indeterminate_) {
      return {engine::ActivationResult::kIndeterminate, std::nullopt, std::nullopt,
              "scripted indeterminate reconcile"};
    }
    const auto it = active_.find(request.material.capability_id());
    if (it == active_.end() || it->second != request.material.identity_digest()) {
      return {engine::ActivationResult::kFailed, std::nullopt, std::nullopt, "not active"};
    }
    return applied(it->second);
  }

  int activate_calls() const {
    std::lock_guard lock(mutex_);
    return activate_calls_;
  }
  int reconcile_calls() const {
    std::lock_guard lock(mutex_);
    return reconcile_calls_;
  }
  int deactivate_calls() const {
    std::lock_guard lock(mutex_);
    return deactivate_calls_;
  }
  // The material digest active for `capability_id`, if any.
  std::optional<std::string> active(const std::string& capability_id) const {
    std::lock_guard lock(mutex_);
    const auto it = active_.find(capability_id);
    if (it == active_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static engine::ActivationObservation applied(const std::string& material) {
    return {engine::ActivationResult::kApplied, material,
            core::sha256_hex("fake-activation-verified:" + material), ""};
  }

  mutable std::mutex mutex_;
  Script script_;
  Script deactivate_script_ = Script::kApply;
  bool reconcile_indeterminate_ = false;
  std::map<std::string, std::string> active_;
  int activate_calls_ = 0;
  int reconcile_calls_ = 0;
  int deactivate_calls_ = 0;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_FAKE_ACTIVATION_HPP_
