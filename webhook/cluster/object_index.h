// The in-memory index of one resource's cached objects, on the request path: readers look up
// without locks, writers (the informer, the resolver's GET fallback) coalesce changes.
//
// The keys are split over kShards shards. Readers see, per shard, an immutable hash map
// published through an atomic pointer: a lookup is one acquire load and one hash lookup. The
// writer side keeps its own mutable copy of every shard under a mutex; publish() (called by the
// cluster state's publisher thread every publish interval, so a burst of events costs one copy
// per touched shard) copies each dirty shard and swaps its pointer in. Replaced maps and erased
// entries are retired, not freed: they stay alive for a grace period (RCU-like), longer than any
// admission request holds a pointer it got from find().
#pragma once

#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpu_admission::webhook::cluster {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

template <typename Entry>
class ShardedIndex {
 public:
  static constexpr size_t kShards = 256;
  using EntryPtr = std::shared_ptr<const Entry>;
  using Map = std::unordered_map<std::string, EntryPtr, StringHash, std::equal_to<>>;
  using Clock = std::chrono::steady_clock;

  explicit ShardedIndex(std::chrono::milliseconds grace = std::chrono::seconds(10)) : grace_(grace) {
    auto empty = std::make_shared<const Map>();
    for (size_t i = 0; i < kShards; ++i) {
      owners_[i] = empty;
      published_[i].store(empty.get(), std::memory_order_release);
    }
  }
  ShardedIndex(const ShardedIndex&) = delete;
  ShardedIndex& operator=(const ShardedIndex&) = delete;

  // Lock-free. The pointer stays valid for the grace period after the entry is replaced.
  const Entry* find(std::string_view key) const {
    const Map* map = published_[shard_of(key)].load(std::memory_order_acquire);
    const auto it = map->find(key);
    return it == map->end() ? nullptr : it->second.get();
  }

  // Writer side (any thread; serialized by a mutex). Visible to find() after the next publish().
  void upsert(std::string key, EntryPtr entry) {
    std::lock_guard lock(mutex_);
    const size_t shard = shard_of(key);
    auto& slot = master_[shard][std::move(key)];
    if (slot) retire(std::move(slot), Clock::now());
    slot = std::move(entry);
    dirty_.set(shard);
  }
  void erase(std::string_view key) {
    std::lock_guard lock(mutex_);
    const size_t shard = shard_of(key);
    const auto it = master_[shard].find(key);
    if (it == master_[shard].end()) return;
    retire(std::move(it->second), Clock::now());
    master_[shard].erase(it);
    dirty_.set(shard);
  }
  // Inserts `entry` unless `key` is present; returns the entry now stored (alive for the grace
  // period even if erased at once).
  const Entry* insert_if_absent(std::string key, EntryPtr entry) {
    std::lock_guard lock(mutex_);
    const size_t shard = shard_of(key);
    auto [it, inserted] = master_[shard].try_emplace(std::move(key), std::move(entry));
    if (inserted) dirty_.set(shard);
    return it->second.get();
  }
  // Replaces every entry (after a full list).
  void replace_all(std::vector<std::pair<std::string, EntryPtr>> entries) {
    std::array<Map, kShards> fresh;
    for (auto& [key, entry] : entries) fresh[shard_of(key)][std::move(key)] = std::move(entry);
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    for (size_t i = 0; i < kShards; ++i) {
      for (auto& [key, entry] : master_[i]) retire(std::move(entry), now);
      master_[i] = std::move(fresh[i]);
    }
    dirty_.set();
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    size_t total = 0;
    for (const Map& map : master_) total += map.size();
    return total;
  }

  // Publishes the dirty shards and frees what was retired more than the grace period ago.
  // Returns whether anything was published.
  bool publish() {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    while (!retired_.empty() && now - retired_.front().first > grace_) retired_.pop_front();
    if (dirty_.none()) return false;
    for (size_t i = 0; i < kShards; ++i) {
      if (!dirty_.test(i)) continue;
      auto copy = std::make_shared<const Map>(master_[i]);
      published_[i].store(copy.get(), std::memory_order_release);
      retire(std::move(owners_[i]), now);
      owners_[i] = std::move(copy);
    }
    dirty_.reset();
    return true;
  }

 private:
  static size_t shard_of(std::string_view key) { return StringHash{}(key) % kShards; }
  void retire(std::shared_ptr<const void> object, Clock::time_point now) {
    if (object) retired_.emplace_back(now, std::move(object));
  }

  const std::chrono::milliseconds grace_;
  std::array<std::atomic<const Map*>, kShards> published_;
  mutable std::mutex mutex_;
  std::array<std::shared_ptr<const Map>, kShards> owners_;  // keep published_ alive
  std::array<Map, kShards> master_;
  std::bitset<kShards> dirty_;
  std::deque<std::pair<Clock::time_point, std::shared_ptr<const void>>> retired_;
};

}  // namespace gpu_admission::webhook::cluster
