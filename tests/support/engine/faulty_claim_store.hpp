// FaultyClaimStore: an engine::ClaimStore wrapper (the EnvWrapper idea) that forwards every call
// to a real store and injects scripted faults: an activation status that reads as unclaimed for
// its next N calls (a stale read racing a competing claim), or an exception thrown by the next
// call of one operation. Counts calls. Thread-safe.
#ifndef CTX_TESTS_SUPPORT_ENGINE_FAULTY_CLAIM_STORE_HPP_
#define CTX_TESTS_SUPPORT_ENGINE_FAULTY_CLAIM_STORE_HPP_

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host/engine/claim_store.hpp"

namespace ctx::testing {

class FaultyClaimStore final : public engine::ClaimStore {
 public:
  enum class Op {
    kClaimInstall,
    kClaimActivation,
    kRecordInstallOutcome,
    kRecordActivationOutcome,
    kInstallStatus,
    kActivationStatus,
  };

  // `target` is the real store; it must outlive the wrapper (shared ownership).
  explicit FaultyClaimStore(std::shared_ptr<engine::ClaimStore> target)
      : target_(std::move(target)) {}

  // The next `calls` activation_execution_status calls report an unclaimed action.
  void report_activation_unclaimed(int calls) {
    std::lock_guard lock(mutex_);
    unclaimed_activation_reads_ = calls;
  }
  // The next call of `op` throws `error` instead of reaching the store.
  void fail_next(Op op, std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    failures_[op] = std::move(error);
  }
  // How many times `op` was called (including faulted calls).
  int calls(Op op) const {
    std::lock_guard lock(mutex_);
    const auto it = calls_.find(op);
    return it == calls_.end() ? 0 : it->second;
  }

  engine::ActionClaim claim_install(const engine::ClaimRequest& request) override {
    enter(Op::kClaimInstall);
    return target_->claim_install(request);
  }
  engine::ActionClaim claim_activation(const engine::ClaimRequest& request) override {
    enter(Op::kClaimActivation);
    return target_->claim_activation(request);
  }
  engine::ExecutionOutcome record_install_outcome(
      const engine::InstallOutcomeRequest& request) override {
    enter(Op::kRecordInstallOutcome);
    return target_->record_install_outcome(request);
  }
  engine::ExecutionOutcome record_activation_outcome(
      const engine::ActivationOutcomeRequest& request) override {
    enter(Op::kRecordActivationOutcome);
    return target_->record_activation_outcome(request);
  }
  engine::InstallExecutionStatus install_execution_status(
      const engine::StreamId& stream, std::string_view action_id) const override {
    enter(Op::kInstallStatus);
    return target_->install_execution_status(stream, action_id);
  }
  engine::ActivationExecutionStatus activation_execution_status(
      const engine::StreamId& stream, std::string_view action_id) const override {
    enter(Op::kActivationStatus);
    {
      std::lock_guard lock(mutex_);
      if (unclaimed_activation_reads_ > 0) {
        --unclaimed_activation_reads_;
        return engine::ActivationExecutionStatus{};
      }
    }
    return target_->activation_execution_status(stream, action_id);
  }
  // The row finders are forwarded unchanged.
#define CTX_FAULTY_CLAIM_STORE_FORWARD(Row, name)                                        \
  std::optional<engine::Row> name(const engine::StreamId& stream, std::string_view action_id) \
      const override {                                                                   \
    return target_->name(stream, action_id);                                             \
  }
  CTX_FAULTY_CLAIM_STORE_FORWARD(ActionClaim, find_install_claim)
  CTX_FAULTY_CLAIM_STORE_FORWARD(ExecutionOutcome, find_install_outcome)
#undef CTX_FAULTY_CLAIM_STORE_FORWARD

 private:
  void enter(Op op) const {
    std::exception_ptr error;
    {
      std::lock_guard lock(mutex_);
      ++calls_[op];
      const auto it = failures_.find(op);
      if (it != failures_.end()) {
        error = it->second;
        failures_.erase(it);
      }
    }
    if (error) std::rethrow_exception(error);
  }

  std::shared_ptr<engine::ClaimStore> target_;
  mutable std::mutex mutex_;
  mutable int unclaimed_activation_reads_ = 0;            // GUARDED_BY(mutex_)
  mutable std::map<Op, std::exception_ptr> failures_;     // GUARDED_BY(mutex_)
  mutable std::map<Op, int> calls_;                       // GUARDED_BY(mutex_)
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_ENGINE_FAULTY_CLAIM_STORE_HPP_
