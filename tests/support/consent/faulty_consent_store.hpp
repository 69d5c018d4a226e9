// FaultyConsentStore: an engine::ConsentStore that forwards every transaction to another store
// (like leveldb's EnvWrapper) and, when armed, injects at an exact store operation:
//   - fail_next(op, fault, when): the next `op` (of a challenge row `when` accepts) runs `fault`
//     instead of reaching the store; `fault` throws what the failing store would (the seed's
//     patched `_settle`: the broker's settle write fails, nothing is written, the transaction
//     rolls back);
//   - after_commit(op, hook, when): once a transaction that did such an `op` has committed,
//     `hook` runs (e.g. the world changes right after the broker settled a decision).
// Each arming fires once (a hook claimed by a transaction that rolls back stays armed). Arm from
// the test's thread before the operation runs; faults and hooks run on the thread of the
// transaction, inside the caller's locks and before the store's transaction object ends: they
// must not use the consent store or its broker. Thread-safe otherwise as its base.
#ifndef CTX_TESTS_SUPPORT_CONSENT_FAULTY_CONSENT_STORE_HPP_
#define CTX_TESTS_SUPPORT_CONSENT_FAULTY_CONSENT_STORE_HPP_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/engine/consent_store.hpp"

namespace ctx::testing {

class FaultyConsentStore final : public engine::ConsentStore {
 public:
  // The operations an injection can be armed on.
  enum class Op {
    kInsertChallenge,
    kUpdateChallenge,
    kRemoveChallenge,
    kInsertNonce,
    kWriteIdentity
  };
  // Which challenge rows an arming applies to (empty: every row).
  using RowFilter = std::function<bool(const engine::ConsentChallengeRow&)>;

  explicit FaultyConsentStore(std::shared_ptr<engine::ConsentStore> base)
      : base_(std::move(base)) {}

  // Rows written in state `state`.
  static RowFilter to_state(engine::ConsentState state) {
    return [state](const engine::ConsentChallengeRow& row) { return row.state == state; };
  }

  void fail_next(Op op, std::function<void()> fault, RowFilter when = {}) {
    std::lock_guard lock(mutex_);
    fault_.emplace(Arming{op, std::move(fault), std::move(when)});
  }
  void after_commit(Op op, std::function<void()> hook, RowFilter when = {}) {
    std::lock_guard lock(mutex_);
    hook_.emplace(Arming{op, std::move(hook), std::move(when)});
  }
  // Drops what is armed and has not fired (the end of a seed's scoped patch).
  void disarm() {
    std::lock_guard lock(mutex_);
    fault_.reset();
    hook_.reset();
  }
  // How many armed faults and hooks have run.
  int faults_fired() const noexcept { return faults_fired_; }
  int hooks_fired() const noexcept { return hooks_fired_; }

  const std::filesystem::path& path() const noexcept override { return base_->path(); }
  std::unique_ptr<engine::ConsentStoreTransaction> begin(
      engine::ConsentCommitSync sync = engine::ConsentCommitSync::kDurable) override {
    return std::make_unique<Txn>(*this, base_->begin(sync));
  }

 private:
  struct Arming {
    Op op;
    std::function<void()> action;
    RowFilter when;
    bool matches(Op done, const engine::ConsentChallengeRow* row) const {
      return op == done && (!when || (row != nullptr && when(*row)));
    }
  };

  class Txn final : public engine::ConsentStoreTransaction {
   public:
    Txn(FaultyConsentStore& owner, std::unique_ptr<engine::ConsentStoreTransaction> base)
        : owner_(owner), base_(std::move(base)) {}
    ~Txn() override {
      if (!hook_) return;
      // Rolled back: the hook waits for the next such transaction.
      std::lock_guard lock(owner_.mutex_);
      if (!owner_.hook_)
        owner_.hook_.emplace(Arming{hook_op_, std::move(hook_), std::move(hook_when_)});
    }

    std::optional<engine::ConsentIdentityRow> identity() override { return base_->identity(); }
    void write_identity(const engine::ConsentIdentityRow& row) override {
      before(Op::kWriteIdentity, nullptr);
      base_->write_identity(row);
    }
    std::optional<engine::ConsentChallengeRow> challenge_by_id(std::string_view id) override {
      return base_->challenge_by_id(id);
    }
    std::optional<engine::ConsentChallengeRow> challenge_by_digest(
        std::string_view digest) override {
      return base_->challenge_by_digest(digest);
    }
    std::size_t challenge_count() override { return base_->challenge_count(); }
    std::vector<std::string> oldest_unreserved_ids(std::size_t limit) override {
      return base_->oldest_unreserved_ids(limit);
    }
    std::vector<std::string> awaiting_decision_ids() override {
      return base_->awaiting_decision_ids();
    }
    void insert_challenge(const engine::ConsentChallengeRow& row) override {
      before(Op::kInsertChallenge, &row);
      base_->insert_challenge(row);
    }
    void update_challenge(const engine::ConsentChallengeRow& row) override {
      before(Op::kUpdateChallenge, &row);
      base_->update_challenge(row);
    }
    void remove_challenge(std::string_view id) override {
      before(Op::kRemoveChallenge, nullptr);
      base_->remove_challenge(id);
    }
    std::vector<engine::ConsentNonceRow> nonces_of(std::string_view id) override {
      return base_->nonces_of(id);
    }
    bool nonce_used(std::string_view digest) override { return base_->nonce_used(digest); }
    void insert_nonce(const engine::ConsentNonceRow& row) override {
      before(Op::kInsertNonce, nullptr);
      base_->insert_nonce(row);
    }
    void commit() override {
      base_->commit();
      if (hook_) {
        ++owner_.hooks_fired_;
        std::exchange(hook_, nullptr)();
      }
    }

   private:
    // Runs an armed fault matching this operation (disarmed first), and claims an armed
    // after-commit hook matching it for this transaction.
    void before(Op op, const engine::ConsentChallengeRow* row) {
      std::function<void()> fault;
      {
        std::lock_guard lock(owner_.mutex_);
        if (owner_.fault_ && owner_.fault_->matches(op, row)) {
          fault = std::move(owner_.fault_->action);
          owner_.fault_.reset();
        }
        if (!hook_ && owner_.hook_ && owner_.hook_->matches(op, row)) {
          hook_ = std::move(owner_.hook_->action);
          hook_op_ = owner_.hook_->op;
          hook_when_ = std::move(owner_.hook_->when);
          owner_.hook_.reset();
        }
      }
      if (fault) {
        ++owner_.faults_fired_;
        fault();
      }
    }

    FaultyConsentStore& owner_;
    std::unique_ptr<engine::ConsentStoreTransaction> base_;
    std::function<void()> hook_;  // runs once this transaction committed
    Op hook_op_ = Op::kUpdateChallenge;
    RowFilter hook_when_;
  };

  std::shared_ptr<engine::ConsentStore> base_;
  std::mutex mutex_;
  std::optional<Arming> fault_;  // GUARDED_BY(mutex_)
  std::optional<Arming> hook_;   // GUARDED_BY(mutex_)
  std::atomic<int> faults_fired_{0};
  std::atomic<int> hooks_fired_{0};
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_CONSENT_FAULTY_CONSENT_STORE_HPP_
