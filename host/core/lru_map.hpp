// A map that evicts its least recently used entries to stay within a bound on the number of
// entries and, optionally, on their total cost in bytes (as declared by the caller on put()).
// It never refuses a new key: a long-running process's memos and caches stay bounded and keep
// working after any number of entries. An entry costing more than the per-entry bound is simply
// not kept. Not thread-safe; the owner serialises access (a mutex beside it when shared).
#ifndef CTX_HOST_CORE_LRU_MAP_HPP_
#define CTX_HOST_CORE_LRU_MAP_HPP_

#include <cstddef>
#include <functional>
#include <limits>
#include <list>
#include <unordered_map>
#include <utility>

namespace ctx::core {

struct LruBounds {
  static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();
  // At most this many entries (a zero bound is treated as one).
  std::size_t max_entries = 1;
  // At most this many bytes in total over the kept entries.
  std::size_t max_bytes = kUnbounded;
  // An entry costing more than this (or more than max_bytes) is never kept.
  std::size_t max_entry_bytes = kUnbounded;
};

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class LruMap {
 public:
  // Bounded by count only (every entry costs zero bytes unless put() says otherwise).
  explicit LruMap(std::size_t max_entries) : LruMap(LruBounds{.max_entries = max_entries}) {}
  explicit LruMap(LruBounds bounds) : bounds_(bounds) {
    if (bounds_.max_entries == 0) bounds_.max_entries = 1;
    if (bounds_.max_entry_bytes > bounds_.max_bytes) bounds_.max_entry_bytes = bounds_.max_bytes;
  }
  LruMap(const LruMap&) = delete;
  LruMap& operator=(const LruMap&) = delete;

  // The value under `key` (now the most recently used), or nullptr. The pointer stays valid
  // until the entry is replaced, erased or evicted.
  Value* find(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->value;
  }

  // Stores `value` under `key`, costing `bytes`, as the most recently used entry (replacing an
  // earlier value), then evicts least recently used entries until both bounds hold again.
  // Returns the stored value, or nullptr when `bytes` exceeds the per-entry bound: then nothing
  // is stored and an earlier value under `key` is dropped.
  Value* put(const Key& key, Value value, std::size_t bytes = 0) {
    erase(key);
    if (bytes > bounds_.max_entry_bytes) return nullptr;
    entries_.push_front(Entry{key, std::move(value), bytes});
    index_.emplace(key, entries_.begin());
    bytes_ += bytes;
    while (entries_.size() > bounds_.max_entries || bytes_ > bounds_.max_bytes) {
      bytes_ -= entries_.back().bytes;
      index_.erase(entries_.back().key);
      entries_.pop_back();
    }
    return &entries_.front().value;
  }

  // Drops the entry under `key`; false when there was none.
  bool erase(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return false;
    bytes_ -= it->second->bytes;
    entries_.erase(it->second);
    index_.erase(it);
    return true;
  }

  bool contains(const Key& key) const { return index_.count(key) != 0; }
  std::size_t size() const noexcept { return entries_.size(); }
  // The total declared cost of the kept entries.
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t capacity() const noexcept { return bounds_.max_entries; }
  const LruBounds& bounds() const noexcept { return bounds_; }

 private:
  struct Entry {
    Key key;
    Value value;
    std::size_t bytes;
  };
  using Entries = std::list<Entry>;
  LruBounds bounds_;
  Entries entries_;  // most recently used first
  std::unordered_map<Key, typename Entries::iterator, Hash> index_;
  std::size_t bytes_ = 0;
};

}  // namespace ctx::core

#endif  // CTX_HOST_CORE_LRU_MAP_HPP_
