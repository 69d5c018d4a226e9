// A bounded map that evicts its least recently used entry: the planner's per-snapshot memos
// (drift detection, projections, identities) stay bounded and never refuse a new key.
// Not thread-safe; the owner serialises access.
#ifndef CTX_HOST_ENGINE_PLANNING_LRU_MAP_HPP_
#define CTX_HOST_ENGINE_PLANNING_LRU_MAP_HPP_

#include <cstddef>
#include <list>
#include <map>
#include <utility>

namespace ctx::engine::planning {

template <typename Key, typename Value>
class LruMap {
 public:
  // capacity >= 1 (a zero capacity is treated as one).
  explicit LruMap(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  LruMap(const LruMap&) = delete;
  LruMap& operator=(const LruMap&) = delete;

  // The value under `key` (now the most recently used), or nullptr.
  Value* find(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->second;
  }

  // Stores `value` under `key` as the most recently used entry, replacing an earlier value and
  // evicting the least recently used entry when the map is full. Returns the stored value.
  Value& put(const Key& key, Value value) {
    if (Value* existing = find(key)) {
      *existing = std::move(value);
      return *existing;
    }
    if (entries_.size() >= capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
    return entries_.front().second;
  }

  bool contains(const Key& key) const { return index_.count(key) != 0; }
  std::size_t size() const noexcept { return entries_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  using Entries = std::list<std::pair<Key, Value>>;
  std::size_t capacity_;
  Entries entries_;  // most recently used first
  std::map<Key, typename Entries::iterator> index_;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_LRU_MAP_HPP_
