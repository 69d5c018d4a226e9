// MemJournalStore: an in-memory JournalStore for tests (the memenv idea). Same contract as
// store::SqliteJournalStore — it is checked by the same typed contract suite — except that it
// is not durable and does not support settlement guards (claims live in the SQLite store only):
// an append with a guard is an InvalidArgument. Thread-safe (one mutex).
#ifndef CTX_TESTS_SUPPORT_JOURNAL_MEM_JOURNAL_STORE_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_MEM_JOURNAL_STORE_HPP_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/engine/journal_store.hpp"

namespace ctx::testing {

class MemJournalStore final : public engine::JournalStore {
 public:
  engine::JournalCommit append(const engine::JournalAppend& request) override {
    if (request.guard) throw InvalidArgument("MemJournalStore does not settle claims");
    engine::JournalRecord record = engine::build_journal_record(request);
    std::lock_guard lock(mutex_);
    if (auto it = by_event_.find(request.event_id); it != by_event_.end()) {
      const engine::JournalRecord& existing = at(it->second);
      if (existing.stream != request.stream ||
          existing.event_content_digest != request.event_content_digest) {
        throw engine::EventIdCollision(request.event_id, existing.event_content_digest,
                                       request.event_content_digest);
      }
      return {existing, true};
    }
    std::vector<engine::JournalRecord>& records = streams_[request.stream.stream_key()];
    engine::Revision actual = static_cast<engine::Revision>(records.size());
    if (actual != request.expected_revision) {
      throw engine::RevisionConflict(request.expected_revision, actual);
    }
    engine::chain_journal_record(
        record,
        records.empty() ? std::nullopt : std::optional<std::string>(records.back().record_digest));
    records.push_back(record);
    states_[request.stream.stream_key()] = request.result_state;
    by_event_.emplace(request.event_id,
                      Location{request.stream.stream_key(), records.size() - 1});
    return {record, false};
  }

  engine::JournalHead head(const engine::StreamId& stream) const override {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(stream.stream_key());
    if (it == streams_.end() || it->second.empty()) return {};
    const engine::JournalRecord& last = it->second.back();
    return {last.revision, last.record_digest, last.result_state_digest};
  }

  std::optional<engine::JournalLatest> latest(const engine::StreamId& stream) const override {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(stream.stream_key());
    if (it == streams_.end() || it->second.empty()) return std::nullopt;
    const engine::JournalRecord& last = it->second.back();
    return engine::JournalLatest{last.revision, last.record_digest,
                                 states_.at(stream.stream_key())};
  }

  std::vector<engine::JournalRecord> read(const engine::StreamId& stream,
                                          engine::Revision after = 0) const override {
    if (after < 0) throw InvalidArgument("after must be >= 0");
    std::lock_guard lock(mutex_);
    auto it = streams_.find(stream.stream_key());
    if (it == streams_.end()) return {};
    engine::verify_journal_chain(it->second, nullptr);
    if (after >= static_cast<engine::Revision>(it->second.size())) return {};
    return {it->second.begin() + after, it->second.end()};
  }

  std::optional<engine::JournalRecord> find(const engine::StreamId& stream,
                                            std::string_view event_id) const override {
    std::lock_guard lock(mutex_);
    auto it = by_event_.find(std::string(event_id));
    if (it == by_event_.end()) return std::nullopt;
    const engine::JournalRecord& record = at(it->second);
    if (record.stream != stream) {
      throw engine::EventIdCollision(std::string(event_id), record.event_content_digest, "");
    }
    return record;
  }

 private:
  struct Location {
    std::string stream_key;
    std::size_t index;
  };
  const engine::JournalRecord& at(const Location& location) const {
    return streams_.at(location.stream_key).at(location.index);
  }

  mutable std::mutex mutex_;
  std::map<std::string, std::vector<engine::JournalRecord>> streams_;  // GUARDED_BY(mutex_)
  std::map<std::string, Location> by_event_;  // GUARDED_BY(mutex_)
  std::map<std::string, engine::CanonicalText> states_;  // GUARDED_BY(mutex_): latest per stream
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_JOURNAL_MEM_JOURNAL_STORE_HPP_
