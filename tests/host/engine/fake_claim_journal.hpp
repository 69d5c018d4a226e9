// FakeClaimJournal: MemJournalStore plus an in-memory one-use claim ledger, so the engine's
// coordinator tests can drive claims, outcomes and settlement guards without SQLite (the
// durable store has its own suite under tests/host/store). Settlement: an append with a guard
// is checked against the claim and outcome, forwarded without the guard, and then marked
// settled. Thread-safe (one mutex around the ledger; the journal has its own).
#ifndef CTX_TESTS_HOST_ENGINE_FAKE_CLAIM_JOURNAL_HPP_
#define CTX_TESTS_HOST_ENGINE_FAKE_CLAIM_JOURNAL_HPP_

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/time.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/journal_store.hpp"
#include "tests/support/journal/mem_journal_store.hpp"

namespace ctx::engine::testing {

class FakeClock final : public core::Clock {
 public:
  explicit FakeClock(std::string now) : now_(core::parse_rfc3339(now)) {}
  core::Timestamp now() const override { return now_; }
  void set(const std::string& now) { now_ = core::parse_rfc3339(now); }

 private:
  core::Timestamp now_;
};

class FakeClaimJournal final : public JournalStore, public ClaimStore {
 public:
  explicit FakeClaimJournal(const core::Clock& clock) : clock_(clock) {}

  JournalCommit append(const JournalAppend& request) override {
    std::lock_guard lock(mutex_);
    JournalAppend forwarded = request;
    forwarded.guard.reset();
    if (request.guard) {
      const auto& g = *request.guard;
      auto& claims =
          g.authority == ExecutionAuthority::kInstall ? install_claims_ : activation_claims_;
      const bool claimed = claims.count(g.action_id) > 0;
      if (g.mode == GuardMode::kExpired) {
        if (claimed) throw InstallActionAlreadyClaimed("claimed action cannot expire as unclaimed");
      } else {
        if (!claimed) {
          throw InstallActionClaimRequired("action must be claimed before receipt commit");
        }
        if (settled_.count(g.action_id)) {
          throw InstallActionClaimSettled("already has a terminal settlement");
        }
        const auto it = outcomes_.find(g.action_id);
        if (it == outcomes_.end() ||
            std::optional(it->second.outcome_digest) != g.execution_outcome_digest) {
          throw InstallExecutionOutcomeRequired("action has no verified execution outcome");
        }
      }
    }
    auto commit = mem_.append(forwarded);
    if (request.guard && request.guard->mode != GuardMode::kExpired && !commit.replayed) {
      settled_.insert(request.guard->action_id);
    }
    return commit;
  }
  JournalHead head(const StreamId& stream) const override { return mem_.head(stream); }
  std::optional<JournalLatest> latest(const StreamId& stream) const override {
    return mem_.latest(stream);
  }
  std::vector<JournalRecord> read(const StreamId& stream, Revision after = 0) const override {
    return mem_.read(stream, after);
  }
  std::optional<JournalRecord> find(const StreamId& stream, std::string_view id) const override {
    return mem_.find(stream, id);
  }

  ActionClaim claim_install(const ClaimRequest& r) override {
    return claim(r, install_claims_, ActionKind::kInstallCapability);
  }
  ActionClaim claim_activation(const ClaimRequest& r) override {
    return claim(r, activation_claims_, ActionKind::kActivateCapability);
  }

  ExecutionOutcome record_install_outcome(const InstallOutcomeRequest& r) override {
    std::lock_guard lock(mutex_);
    const auto action = core::parse_json(r.action_json);
    const std::string id = action.at("action_id");
    if (!install_claims_.count(id)) {
      throw InstallExecutionOutcomeRequired("has no durable execution claim");
    }
    if (r.outcome == InstallOutcome::kApplied &&
        r.observed_material_identity_digest != r.expected_result_material_identity_digest) {
      throw InstallExecutionOutcomeConflict("does not match authorized result material");
    }
    return outcome(id, action, install_claims_.at(id), r.execution_binding_digest,
                   r.outcome, r.observed_material_identity_digest, r.verification_digest);
  }
  ExecutionOutcome record_activation_outcome(const ActivationOutcomeRequest& r) override {
    std::lock_guard lock(mutex_);
    const auto action = core::parse_json(r.action_json);
    const std::string id = action.at("action_id");
    if (!activation_claims_.count(id)) {
      throw ActivationExecutionOutcomeRequired("has no durable claim");
    }
    return outcome(id, action, activation_claims_.at(id), r.execution_binding_digest, std::nullopt,
                   r.observed_material_identity_digest, r.verification_digest);
  }

  InstallExecutionStatus install_execution_status(const StreamId&,
                                                  std::string_view id) const override {
    std::lock_guard lock(mutex_);
    InstallExecutionStatus s;
    fill(s, std::string(id), install_claims_);
    if (auto it = outcomes_.find(std::string(id)); it != outcomes_.end()) {
      s.outcome = it->second.outcome;
    }
    return s;
  }
  ActivationExecutionStatus activation_execution_status(const StreamId&,
                                                        std::string_view id) const override {
    std::lock_guard lock(mutex_);
    ActivationExecutionStatus s;
    fill(s, std::string(id), activation_claims_);
    return s;
  }
  std::optional<ActionClaim> find_install_claim(const StreamId&,
                                                std::string_view id) const override {
    std::lock_guard lock(mutex_);
    auto it = install_claims_.find(std::string(id));
    return it == install_claims_.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<ExecutionOutcome> find_install_outcome(const StreamId&,
                                                       std::string_view id) const override {
    std::lock_guard lock(mutex_);
    auto it = outcomes_.find(std::string(id));
    return it == outcomes_.end() ? std::nullopt : std::optional(it->second);
  }

  std::size_t claim_count() const {
    std::lock_guard lock(mutex_);
    return install_claims_.size() + activation_claims_.size();
  }

 private:
  ActionClaim claim(const ClaimRequest& r, std::map<std::string, ActionClaim>& claims,
                    ActionKind kind) {
    std::lock_guard lock(mutex_);
    const auto action = core::parse_json(r.action_json);
    const std::string id = action.at("action_id");
    // The stored action's kind spelling is parsed here, at the fake's boundary.
    const auto stored = action.at("kind");
    if (!stored.is_string() || find_enum<ActionKind>(stored.get<std::string>()) != kind) {
      throw InvalidArgument("action kind cannot be claimed here");
    }
    if (claims.count(id)) {
      if (claims.at(id).action_json == r.action_json) {
        if (kind == ActionKind::kInstallCapability) {
          throw InstallActionAlreadyClaimed("install action has already been claimed");
        }
        throw ActivationActionAlreadyClaimed("activation action is already claimed");
      }
    }
    const auto head = mem_.head(r.stream);
    if (head.revision != r.expected_revision ||
        head.record_digest != r.expected_head_record_digest) {
      throw RevisionConflict(r.expected_revision, head.revision);
    }
    const auto now = clock_.now();
    if (now >= core::parse_rfc3339(action.at("expires_at").get<std::string>())) {
      throw InstallActionClaimExpired("action expired before it was claimed");
    }
    ActionClaim c{.stream = r.stream,
                  .action_id = id,
                  .action_content_digest = core::sha256_hex(r.action_json),
                  .action_kind = kind,
                  .precondition_revision = action.at("precondition_revision"),
                  .action_json = r.action_json,
                  .issuing_record_digest = std::string(64, 'a'),
                  .claimed_head_revision = head.revision,
                  .claimed_head_record_digest = *head.record_digest,
                  .claimed_head_state_digest = *head.state_digest,
                  .action_expires_at = action.at("expires_at"),
                  .claimed_at = core::format_rfc3339(now),
                  .authorization_digest = r.authorization_digest,
                  .execution_binding_json = r.execution_binding_json,
                  .execution_binding_digest = r.execution_binding_digest,
                  .claim_digest = core::sha256_hex(r.action_json + r.execution_binding_digest)};
    claims.emplace(id, c);
    return c;
  }

  ExecutionOutcome outcome(const std::string& id, const core::Json& action,
                           const ActionClaim& claim, const std::string& binding,
                           std::optional<InstallOutcome> result,
                           std::optional<std::string> observed, const std::string& verification) {
    if (binding != claim.execution_binding_digest) {
      throw InstallExecutionOutcomeConflict("outcome binding differs from the claim");
    }
    if (auto it = outcomes_.find(id); it != outcomes_.end()) return it->second;
    ExecutionOutcome o{
        .stream = claim.stream,
        .action_id = id,
        .action_content_digest = claim.action_content_digest,
        .claim_digest = claim.claim_digest,
        .execution_binding_digest = binding,
        .outcome = result,
        .observed_material_identity_digest = observed,
        .verification_digest = verification,
        .observed_at = core::format_rfc3339(clock_.now()),
        .outcome_digest = core::sha256_hex(claim.claim_digest + verification +
                                           action.at("action_id").get<std::string>())};
    outcomes_.emplace(id, o);
    return o;
  }

  template <typename Status>
  void fill(Status& s, const std::string& id,
            const std::map<std::string, ActionClaim>& claims) const {
    if (auto it = claims.find(id); it != claims.end()) {
      s.claimed = true;
      s.execution_binding_digest = it->second.execution_binding_digest;
    }
    if (auto it = outcomes_.find(id); it != outcomes_.end()) {
      s.outcome_recorded = true;
      s.outcome_digest = it->second.outcome_digest;
      s.observed_at = it->second.observed_at;
    }
    s.settled = settled_.count(id) > 0;
  }

  const core::Clock& clock_;
  ctx::testing::MemJournalStore mem_;
  mutable std::mutex mutex_;
  std::map<std::string, ActionClaim> install_claims_, activation_claims_;
  std::map<std::string, ExecutionOutcome> outcomes_;
  std::set<std::string> settled_;
};

}  // namespace ctx::engine::testing

#endif  // CTX_TESTS_HOST_ENGINE_FAKE_CLAIM_JOURNAL_HPP_
