// MemManagedQueryStore: the engine::ManagedQueryStore port in memory (the memenv idea), for
// tests of the runtime that need no store file. It applies the port's shared rules
// (engine::managed_store) and bounds, so it refuses what the SQLite store refuses with the same
// types and messages; references are "mqr_"/"mds_" + SHA-256 of the registration (stable for
// identical content, not keyed). Not durable, no tampering to detect. Thread-safe (one mutex).
// The same contract suite (managed_query_store_contract.hpp) runs against it and the SQLite store.
#ifndef CTX_TESTS_SUPPORT_MANAGED_QUERY_MEM_MANAGED_QUERY_STORE_HPP_
#define CTX_TESTS_SUPPORT_MANAGED_QUERY_MEM_MANAGED_QUERY_STORE_HPP_

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/managed_query_store.hpp"

namespace ctx::testing {

class MemManagedQueryStore final : public engine::ManagedQueryStore {
 public:
  // `path` is what path() returns (the service places its lifecycle lock beside it); nothing is
  // written there by the store.
  explicit MemManagedQueryStore(std::filesystem::path path = "/nonexistent/mem-queries")
      : path_(std::move(path)) {}

  const std::filesystem::path& path() const noexcept override { return path_; }

  using engine::ManagedQueryStore::register_query;
  engine::ManagedQueryRecord register_query(const std::string& logical_query_id,
                                            const engine::EngineEvent& session_started,
                                            const engine::EngineEvent& decision_event,
                                            const std::string& manifest,
                                            const std::string& environment,
                                            const RetirementCheck& may_retire) override {
    engine::managed_store::validate_registration(logical_query_id, session_started, decision_event,
                                                 manifest, environment);
    const std::string text =
        engine::managed_store::canonical_text(engine::managed_store::registration_json(
            logical_query_id, session_started, decision_event, manifest, environment));
    if (text.size() > kMaxRegistrationBytes) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed query registration is too large");
    }
    const std::string query_ref = "mqr_" + core::sha256_hex(text);
    std::lock_guard lock(mutex_);
    for (const auto& [ref, record] : queries_) {
      if (record.logical_query_id() != logical_query_id) continue;
      if (ref == query_ref) return record.copy(record_key());
      throw engine::ManagedQueryStoreConflict(
          "logical query identity is already bound to different content");
    }
    if (static_cast<std::int64_t>(queries_.size()) >= kMaxQueries &&
        (!may_retire || retire_oldest(may_retire) == 0)) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed query store is full");
    }
    for (const auto& [ref, other] : queries_) {
      if (other.decision_event().correlation_id() == decision_event.correlation_id() &&
          other.decision_event().scope() == decision_event.scope()) {
        throw engine::ManagedQueryStoreConflict(
            "managed query scope and plan are already reserved by another registration");
      }
    }
    engine::ManagedQueryRecord record(record_key(), {.query_ref = query_ref,
                                                     .logical_query_id = logical_query_id,
                                                     .session_started = session_started,
                                                     .decision_event = decision_event,
                                                     .artifact_manifest_digest = manifest,
                                                     .planning_environment_digest = environment,
                                                     .plan_id = std::nullopt,
                                                     .decision_digest = std::nullopt,
                                                     .journal_revision = std::nullopt,
                                                     .journal_record_digest = std::nullopt});
    queries_.emplace(query_ref, record.copy(record_key()));
    return record;
  }

  engine::ManagedQueryRecord mark_planned(const std::string& query_ref, const std::string& plan_id,
                                          const std::string& decision_digest,
                                          std::int64_t journal_revision,
                                          const std::string& journal_record_digest) override {
    engine::managed_store::require_query_ref(query_ref);
    engine::managed_store::require_sha(decision_digest, "decision_digest");
    engine::managed_store::require_sha(journal_record_digest, "journal_record_digest");
    std::lock_guard lock(mutex_);
    const auto& record = require_query(query_ref);
    if (engine::managed_store::planned_already(record, plan_id, decision_digest, journal_revision,
                                               journal_record_digest)) {
      return record.copy(record_key());
    }
    for (const auto& [ref, other] : queries_) {
      if (other.plan_id() == std::optional<std::string>(plan_id) &&
          other.decision_event().scope() == record.decision_event().scope()) {
        throw engine::ManagedQueryStoreConflict(
            "managed query scope and plan are already planned by another logical identity");
      }
    }
    auto fields = record.fields();
    fields.plan_id = plan_id;
    fields.decision_digest = decision_digest;
    fields.journal_revision = journal_revision;
    fields.journal_record_digest = journal_record_digest;
    queries_.erase(query_ref);  // `record` is gone; `fields` is a copy
    queries_.emplace(query_ref, engine::ManagedQueryRecord(record_key(), fields));
    return engine::ManagedQueryRecord(record_key(), std::move(fields));
  }

  engine::ManagedQueryRecord load(const std::string& query_ref) override {
    engine::managed_store::require_query_ref(query_ref);
    std::lock_guard lock(mutex_);
    return require_query(query_ref).copy(record_key());
  }

  void put_input(const std::string& plan_id, std::string_view input_json) override {
    engine::managed_store::require_input_plan_id(plan_id);
    if (input_json.empty() || input_json.size() > kMaxInputBytes) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed input registration is too large");
    }
    std::lock_guard lock(mutex_);
    if (const auto it = inputs_.find(plan_id); it != inputs_.end()) {
      if (it->second != input_json) {
        throw engine::ManagedQueryStoreCorruption(
            "managed input registration differs from the stored one");
      }
      return;
    }
    if (static_cast<std::int64_t>(inputs_.size()) >= kMaxInputs) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed query store holds too many inputs");
    }
    inputs_.emplace(plan_id, std::string(input_json));
  }

  std::optional<std::string> find_input(const std::string& plan_id) override {
    engine::managed_store::require_input_plan_id(plan_id);
    std::lock_guard lock(mutex_);
    const auto it = inputs_.find(plan_id);
    if (it == inputs_.end()) return std::nullopt;
    return it->second;
  }

  std::optional<engine::ManagedQueryRecord> find_planned_by_scope_and_plan(
      const engine::ScopeRef& scope, const std::string& plan_id) override {
    std::lock_guard lock(mutex_);
    std::optional<engine::ManagedQueryRecord> found;
    for (const auto& [ref, record] : queries_) {
      if (record.plan_id() != std::optional<std::string>(plan_id) ||
          !(record.decision_event().scope() == scope)) {
        continue;
      }
      if (found) {
        throw engine::ManagedQueryStoreCorruption("managed query scope and plan are ambiguous");
      }
      found.emplace(record.copy(record_key()));
    }
    return found;
  }

  engine::ManagedDesiredSetRecord reserve_desired_set(
      const std::string& query_ref, const std::string& logical_choice_id,
      const std::vector<std::string>& capability_ids, const engine::EngineEvent& event) override {
    engine::managed_store::require_query_ref(query_ref);
    engine::managed_store::require_sha(logical_choice_id, "logical_choice_id");
    if (event.to_json_text().size() > kMaxDesiredEventBytes ||
        engine::managed_store::canonical_text(core::Json(capability_ids)).size() >
            kMaxCapabilityIdsBytes) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed desired set is too large");
    }
    std::lock_guard lock(mutex_);
    const auto& parent = require_query(query_ref);
    engine::managed_store::validate_desired_set(parent, capability_ids, event);
    const std::string stream_digest = engine::desired_stream_identity_digest(event.scope());
    const core::Json registration = engine::managed_store::desired_registration(
        query_ref, logical_choice_id, *parent.plan_id(), *parent.decision_digest(), stream_digest,
        capability_ids, event);
    const std::string ref =
        "mds_" + core::sha256_hex(engine::managed_store::canonical_text(registration));
    std::vector<engine::ManagedDesiredSetRecord> on_stream;
    for (const auto& [other_ref, other] : desired_) {
      if (other.query_ref() == query_ref && other.logical_choice_id() == logical_choice_id) {
        engine::managed_store::require_same_choice(other, ref, capability_ids, event);
        return other.copy(record_key());
      }
      if (other.stream_identity_digest() == stream_digest) {
        on_stream.push_back(other.copy(record_key()));
      }
    }
    engine::managed_store::require_stream_continues(on_stream, query_ref, parent.decision_event(),
                                                    event);
    if (static_cast<std::int64_t>(desired_.size()) >= kMaxDesiredSets) {
      throw engine::ManagedQueryStoreCapacityExceeded("managed desired-set store is full");
    }
    engine::ManagedDesiredSetRecord record(record_key(),
                                           {.query_ref = query_ref,
                                            .logical_choice_id = logical_choice_id,
                                            .desired_set_ref = ref,
                                            .plan_id = *parent.plan_id(),
                                            .decision_digest = *parent.decision_digest(),
                                            .stream_identity_digest = stream_digest,
                                            .capability_ids = capability_ids,
                                            .event = event,
                                            .journal_revision = std::nullopt,
                                            .journal_record_digest = std::nullopt,
                                            .transition_digest = std::nullopt});
    desired_.emplace(ref, record.copy(record_key()));
    return record;
  }

  engine::ManagedDesiredSetRecord mark_desired_set_committed(
      const std::string& desired_set_ref, std::int64_t journal_revision,
      const std::string& journal_record_digest, const std::string& transition_digest) override {
    engine::managed_store::require_desired_set_ref(desired_set_ref);
    engine::managed_store::require_sha(journal_record_digest, "journal_record_digest");
    engine::managed_store::require_sha(transition_digest, "transition_digest");
    std::lock_guard lock(mutex_);
    const auto& record = require_desired(desired_set_ref);
    if (engine::managed_store::committed_already(record, journal_revision, journal_record_digest,
                                                 transition_digest)) {
      return record.copy(record_key());
    }
    auto fields = record.fields();
    fields.journal_revision = journal_revision;
    fields.journal_record_digest = journal_record_digest;
    fields.transition_digest = transition_digest;
    desired_.erase(desired_set_ref);  // `record` is gone; `fields` is a copy
    desired_.emplace(desired_set_ref, engine::ManagedDesiredSetRecord(record_key(), fields));
    return engine::ManagedDesiredSetRecord(record_key(), std::move(fields));
  }

  engine::ManagedDesiredSetRecord load_desired_set(const std::string& desired_set_ref) override {
    engine::managed_store::require_desired_set_ref(desired_set_ref);
    std::lock_guard lock(mutex_);
    return require_desired(desired_set_ref).copy(record_key());
  }

  std::optional<engine::ManagedDesiredSetRecord> find_latest_desired_set(
      const std::string& query_ref) override {
    engine::managed_store::require_query_ref(query_ref);
    std::lock_guard lock(mutex_);
    require_query(query_ref);
    const engine::ManagedDesiredSetRecord* latest = nullptr;
    for (const auto& [ref, record] : desired_) {
      if (record.query_ref() != query_ref) continue;
      if (!latest || record.event().expected_revision() > latest->event().expected_revision()) {
        latest = &record;
      }
    }
    if (!latest) return std::nullopt;
    return latest->copy(record_key());
  }

  std::optional<engine::ManagedDesiredSetRecord> find_pending_desired_set(
      const engine::ScopeRef& scope) override {
    const std::string stream_digest = engine::desired_stream_identity_digest(scope);
    std::lock_guard lock(mutex_);
    std::optional<engine::ManagedDesiredSetRecord> found;
    for (const auto& [ref, record] : desired_) {
      if (record.stream_identity_digest() != stream_digest || record.committed()) continue;
      if (found) {
        throw engine::ManagedQueryStoreCorruption(
            "managed desired stream has several pending reservations");
      }
      found.emplace(record.copy(record_key()));
    }
    return found;
  }

  // Every desired set names a stored query; every input and query is within its bounds.
  void verify() override {
    std::lock_guard lock(mutex_);
    for (const auto& [ref, record] : desired_) {
      if (!queries_.contains(record.query_ref())) {
        throw engine::ManagedQueryStoreCorruption("managed desired-set row authentication failed");
      }
    }
  }

 private:
  const engine::ManagedQueryRecord& require_query(const std::string& query_ref) const {
    const auto it = queries_.find(query_ref);
    if (it == queries_.end()) {
      throw engine::ManagedQueryStoreNotFound("managed query record is unavailable");
    }
    return it->second;
  }
  const engine::ManagedDesiredSetRecord& require_desired(const std::string& ref) const {
    const auto it = desired_.find(ref);
    if (it == desired_.end()) {
      throw engine::ManagedQueryStoreNotFound("managed desired set is unavailable");
    }
    return it->second;
  }

  // As the SQLite store: the oldest planned registrations (by their decision's occurred_at, then
  // reference; at most 4 * kRetirementBatch looked at) with no uncommitted desired set that
  // `may_retire` accepts, up to kRetirementBatch, each with its desired sets and input.
  int retire_oldest(const RetirementCheck& may_retire) {
    std::vector<std::pair<std::string, std::string>> planned;  // (occurred_at, query_ref)
    for (const auto& [ref, record] : queries_) {
      if (record.planned()) planned.emplace_back(record.decision_event().occurred_at(), ref);
    }
    std::sort(planned.begin(), planned.end());
    if (planned.size() > 4 * static_cast<std::size_t>(kRetirementBatch)) {
      planned.resize(4 * static_cast<std::size_t>(kRetirementBatch));
    }
    int retired = 0;
    for (const auto& candidate : planned) {
      const std::string& ref = candidate.second;
      if (retired == kRetirementBatch) break;
      const auto pending = std::any_of(desired_.begin(), desired_.end(), [&](const auto& entry) {
        return entry.second.query_ref() == ref && !entry.second.committed();
      });
      if (pending || !may_retire(queries_.at(ref))) continue;
      std::erase_if(desired_, [&](const auto& entry) { return entry.second.query_ref() == ref; });
      inputs_.erase(*queries_.at(ref).plan_id());
      queries_.erase(ref);
      ++retired;
    }
    return retired;
  }

  std::filesystem::path path_;
  std::mutex mutex_;
  std::map<std::string, engine::ManagedQueryRecord> queries_;       // GUARDED_BY(mutex_)
  std::map<std::string, engine::ManagedDesiredSetRecord> desired_;  // GUARDED_BY(mutex_)
  std::map<std::string, std::string> inputs_;                       // GUARDED_BY(mutex_)
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_MANAGED_QUERY_MEM_MANAGED_QUERY_STORE_HPP_
