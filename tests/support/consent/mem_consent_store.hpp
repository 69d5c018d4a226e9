// MemConsentStore: the engine::ConsentStore port in memory (the memenv idea), for tests of the
// consent broker and the service that need no store file. A transaction works on a copy of the
// committed rows and replaces them on commit (destroyed uncommitted, nothing changes); it holds
// the store's mutex from begin() to its end, as the SQLite store's BEGIN IMMEDIATE holds the
// file. It refuses what the SQLite store refuses (duplicate ids, digests and nonces; a nonce of an
// unknown challenge) with the same types. Not durable, no tampering to detect. Thread-safe. The
// same contract suite (consent_store_contract.hpp) runs against it and the SQLite store.
#ifndef CTX_TESTS_SUPPORT_CONSENT_MEM_CONSENT_STORE_HPP_
#define CTX_TESTS_SUPPORT_CONSENT_MEM_CONSENT_STORE_HPP_

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "host/engine/consent_store.hpp"
#include "host/engine/journal_store.hpp"

namespace ctx::testing {

class MemConsentStore final : public engine::ConsentStore {
 public:
  // `path` is what path() returns (the broker keeps its reservation leases beside it: a directory
  // the test owns); nothing is written there by the store.
  explicit MemConsentStore(std::filesystem::path path) : path_(std::move(path)) {}

  const std::filesystem::path& path() const noexcept override { return path_; }
  std::unique_ptr<engine::ConsentStoreTransaction> begin(
      engine::ConsentCommitSync /*sync*/ = engine::ConsentCommitSync::kDurable) override {
    return std::make_unique<Txn>(*this);
  }

 private:
  struct Rows {
    std::optional<engine::ConsentIdentityRow> identity;
    std::map<std::string, engine::ConsentChallengeRow, std::less<>> challenges;  // by id
    std::map<std::string, engine::ConsentNonceRow, std::less<>> nonces;          // by digest
  };

  class Txn final : public engine::ConsentStoreTransaction {
   public:
    explicit Txn(MemConsentStore& store) : store_(store), lock_(store.mutex_), rows_(store.rows_) {}

    std::optional<engine::ConsentIdentityRow> identity() override { return rows_.identity; }
    void write_identity(const engine::ConsentIdentityRow& row) override { rows_.identity = row; }

    std::optional<engine::ConsentChallengeRow> challenge_by_id(std::string_view id) override {
      const auto found = rows_.challenges.find(id);
      if (found == rows_.challenges.end()) return std::nullopt;
      return found->second;
    }
    std::optional<engine::ConsentChallengeRow> challenge_by_digest(
        std::string_view digest) override {
      for (const auto& [id, row] : rows_.challenges) {
        if (row.challenge_digest == digest) return row;
      }
      return std::nullopt;
    }
    std::size_t challenge_count() override { return rows_.challenges.size(); }
    std::vector<std::string> oldest_unreserved_ids(std::size_t limit) override {
      return oldest(
          [](const engine::ConsentChallengeRow& r) {
            return r.state != engine::ConsentState::kReserved;
          },
          limit);
    }
    std::vector<std::string> awaiting_decision_ids() override {
      return oldest(
          [](const engine::ConsentChallengeRow& r) {
            return r.state == engine::ConsentState::kPending ||
                   r.state == engine::ConsentState::kReauthRequired;
          },
          rows_.challenges.size());
    }
    void insert_challenge(const engine::ConsentChallengeRow& row) override {
      if (rows_.challenges.contains(row.challenge_id) ||
          challenge_by_digest(row.challenge_digest)) {
        throw engine::ConsentBrokerConflict("consent challenge row was not written");
      }
      rows_.challenges.emplace(row.challenge_id, row);
    }
    void update_challenge(const engine::ConsentChallengeRow& row) override {
      const auto found = rows_.challenges.find(row.challenge_id);
      if (found == rows_.challenges.end()) {
        throw engine::ConsentBrokerConflict("consent challenge row was not written");
      }
      for (const auto& [id, other] : rows_.challenges) {
        if (id != row.challenge_id && other.challenge_digest == row.challenge_digest) {
          // SQLite's UNIQUE(challenge_digest) refuses such an update as a constraint failure.
          throw engine::EngineStoreError("UNIQUE constraint failed: challenge_digest");
        }
      }
      found->second = row;
    }
    void remove_challenge(std::string_view id) override {
      std::erase_if(rows_.nonces,
                    [id](const auto& entry) { return entry.second.challenge_id == id; });
      if (const auto found = rows_.challenges.find(id); found != rows_.challenges.end()) {
        rows_.challenges.erase(found);
      }
    }
    std::vector<engine::ConsentNonceRow> nonces_of(std::string_view id) override {
      std::vector<engine::ConsentNonceRow> out;
      for (const auto& [digest, nonce] : rows_.nonces) {
        if (nonce.challenge_id == id) out.push_back(nonce);
      }
      std::sort(out.begin(), out.end(),
                [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
      return out;
    }
    bool nonce_used(std::string_view digest) override { return rows_.nonces.contains(digest); }
    void insert_nonce(const engine::ConsentNonceRow& row) override {
      const bool taken =
          rows_.nonces.contains(row.nonce_digest) ||
          std::any_of(rows_.nonces.begin(), rows_.nonces.end(), [&row](const auto& entry) {
            return entry.second.challenge_id == row.challenge_id &&
                   entry.second.sequence == row.sequence;
          });
      if (taken) throw engine::ConsentBrokerConflict("consent nonce row was not written");
      if (!rows_.challenges.contains(row.challenge_id)) {
        // SQLite's foreign key refuses a nonce of an unknown challenge as a constraint failure.
        throw engine::EngineStoreError("FOREIGN KEY constraint failed");
      }
      rows_.nonces.emplace(row.nonce_digest, row);
    }
    void commit() override {
      store_.rows_ = std::move(rows_);
      lock_.unlock();
    }

   private:
    template <typename Keep>
    std::vector<std::string> oldest(Keep keep, std::size_t limit) const {
      std::vector<std::pair<std::string, std::string>> order;  // (created_at, id)
      for (const auto& [id, row] : rows_.challenges) {
        if (keep(row)) order.emplace_back(row.created_at, id);
      }
      std::sort(order.begin(), order.end());
      std::vector<std::string> ids;
      for (const auto& entry : order) {
        if (ids.size() == limit) break;
        ids.push_back(entry.second);
      }
      return ids;
    }

    MemConsentStore& store_;
    std::unique_lock<std::mutex> lock_;
    Rows rows_;
  };

  std::filesystem::path path_;
  std::mutex mutex_;
  Rows rows_;  // GUARDED_BY(mutex_)
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_CONSENT_MEM_CONSENT_STORE_HPP_
