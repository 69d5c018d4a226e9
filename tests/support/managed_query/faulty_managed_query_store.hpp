// FaultyManagedQueryStore: an engine::ManagedQueryStore that forwards every call to another store
// (like leveldb's EnvWrapper) and, when armed, throws a given failure instead of forwarding one
// operation's next call (the store is left as it was: the failure a busy or vanished file gives).
// For tests that inject a store failure at an exact step through the port, where a crash point
// would fire past the caller's handling. Thread-safe as its base; arming is for one thread.
#ifndef CTX_TESTS_SUPPORT_MANAGED_QUERY_FAULTY_MANAGED_QUERY_STORE_HPP_
#define CTX_TESTS_SUPPORT_MANAGED_QUERY_FAULTY_MANAGED_QUERY_STORE_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/engine/managed_query_store.hpp"

namespace ctx::testing {

class FaultyManagedQueryStore final : public engine::ManagedQueryStore {
 public:
  // The operations a failure can be armed on.
  enum class Op { kRegisterQuery, kMarkPlanned, kReserveDesiredSet, kMarkDesiredSetCommitted };

  explicit FaultyManagedQueryStore(std::shared_ptr<engine::ManagedQueryStore> base)
      : base_(std::move(base)) {}

  // The next call of `op` throws what `fail` throws (and is not forwarded); later calls forward.
  void fail_next(Op op, std::function<void()> fail) {
    armed_ = op;
    fail_ = std::move(fail);
  }
  // How many armed failures have been thrown.
  int failures() const noexcept { return failures_; }

  const std::filesystem::path& path() const noexcept override { return base_->path(); }

  using engine::ManagedQueryStore::register_query;
  engine::ManagedQueryRecord register_query(const std::string& logical_query_id,
                                            const engine::EngineEvent& session_started,
                                            const engine::EngineEvent& decision_event,
                                            const std::string& manifest,
                                            const std::string& environment,
                                            const RetirementCheck& may_retire) override {
    maybe_fail(Op::kRegisterQuery);
    return base_->register_query(logical_query_id, session_started, decision_event, manifest,
                                 environment, may_retire);
  }
  engine::ManagedQueryRecord mark_planned(const std::string& query_ref, const std::string& plan_id,
                                          const std::string& decision_digest,
                                          std::int64_t journal_revision,
                                          const std::string& journal_record_digest) override {
    maybe_fail(Op::kMarkPlanned);
    return base_->mark_planned(query_ref, plan_id, decision_digest, journal_revision,
                               journal_record_digest);
  }
  engine::ManagedQueryRecord load(const std::string& query_ref) override {
    return base_->load(query_ref);
  }
  void put_input(const std::string& plan_id, std::string_view input_json) override {
    base_->put_input(plan_id, input_json);
  }
  std::optional<std::string> find_input(const std::string& plan_id) override {
    return base_->find_input(plan_id);
  }
  std::optional<engine::ManagedQueryRecord> find_planned_by_scope_and_plan(
      const engine::ScopeRef& scope, const std::string& plan_id) override {
    return base_->find_planned_by_scope_and_plan(scope, plan_id);
  }
  engine::ManagedDesiredSetRecord reserve_desired_set(
      const std::string& query_ref, const std::string& logical_choice_id,
      const std::vector<std::string>& capability_ids, const engine::EngineEvent& event) override {
    maybe_fail(Op::kReserveDesiredSet);
    return base_->reserve_desired_set(query_ref, logical_choice_id, capability_ids, event);
  }
  engine::ManagedDesiredSetRecord mark_desired_set_committed(
      const std::string& desired_set_ref, std::int64_t journal_revision,
      const std::string& journal_record_digest, const std::string& transition_digest) override {
    maybe_fail(Op::kMarkDesiredSetCommitted);
    return base_->mark_desired_set_committed(desired_set_ref, journal_revision,
                                             journal_record_digest, transition_digest);
  }
  engine::ManagedDesiredSetRecord load_desired_set(const std::string& desired_set_ref) override {
    return base_->load_desired_set(desired_set_ref);
  }
  std::optional<engine::ManagedDesiredSetRecord> find_latest_desired_set(
      const std::string& query_ref) override {
    return base_->find_latest_desired_set(query_ref);
  }
  std::optional<engine::ManagedDesiredSetRecord> find_pending_desired_set(
      const engine::ScopeRef& scope) override {
    return base_->find_pending_desired_set(scope);
  }
  void verify() override { base_->verify(); }

 private:
  void maybe_fail(Op op) {
    if (armed_ != op) return;
    armed_.reset();
    ++failures_;
    auto fail = std::move(fail_);
    fail();
  }

  std::shared_ptr<engine::ManagedQueryStore> base_;
  std::optional<Op> armed_;
  std::function<void()> fail_;
  int failures_ = 0;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_MANAGED_QUERY_FAULTY_MANAGED_QUERY_STORE_HPP_
