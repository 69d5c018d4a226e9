// CountingJournalStore: a JournalStore port wrapper that forwards every call to another store
// and counts them — how many read() calls and how many records they returned, latest() and
// head() calls, appends — so tests can prove what an engine did and did not ask the journal.
// Thread-safe (atomic counters; the wrapped store serialises itself).
#ifndef CTX_TESTS_SUPPORT_JOURNAL_COUNTING_JOURNAL_STORE_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_COUNTING_JOURNAL_STORE_HPP_

#include <atomic>
#include <optional>
#include <string_view>
#include <vector>

#include "host/engine/journal_store.hpp"

namespace ctx::testing::journal {

class CountingJournalStore final : public engine::JournalStore {
 public:
  explicit CountingJournalStore(engine::JournalStore& inner) : inner_(inner) {}

  engine::JournalCommit append(const engine::JournalAppend& request) override {
    ++appends;
    return inner_.append(request);
  }
  engine::JournalHead head(const engine::StreamId& stream) const override {
    ++heads;
    return inner_.head(stream);
  }
  std::optional<engine::JournalLatest> latest(const engine::StreamId& stream) const override {
    ++latests;
    return inner_.latest(stream);
  }
  std::vector<engine::JournalRecord> read(const engine::StreamId& stream,
                                          engine::Revision after = 0) const override {
    ++reads;
    auto records = inner_.read(stream, after);
    records_read += static_cast<long>(records.size());
    return records;
  }
  std::optional<engine::JournalRecord> find(const engine::StreamId& stream,
                                            std::string_view event_id) const override {
    ++finds;
    return inner_.find(stream, event_id);
  }

  mutable std::atomic<long> appends{0}, heads{0}, latests{0}, reads{0}, records_read{0},
      finds{0};

 private:
  engine::JournalStore& inner_;
};

}  // namespace ctx::testing::journal

#endif  // CTX_TESTS_SUPPORT_JOURNAL_COUNTING_JOURNAL_STORE_HPP_
