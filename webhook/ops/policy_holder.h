// The one holder of mutable global state: the policy currently in force. Readers take a
// shared_ptr snapshot per request; a reload swaps it, and requests in flight finish on the
// policy they started with. A mutex (held for a pointer copy) rather than
// std::atomic<std::shared_ptr>, whose libstdc++ 12 implementation ThreadSanitizer flags; the
// request path takes it only on the first request after a reload (snapshot()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook {

class PolicyHolder {
 public:
  explicit PolicyHolder(policy::PolicyPtr initial = nullptr) : current_(std::move(initial)) {}
  policy::PolicyPtr get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
  }
  // The policy for one request, without a lock or a write to memory that other threads share
  // (so event loops on many cores do not contend): each thread keeps the snapshot it took last
  // and takes a new one, under the lock, only after a set(). The reference stays valid until
  // this thread's next snapshot(); a thread keeps the previous policy alive until then.
  const policy::PolicyPtr& snapshot() const {
    thread_local Snapshot last;
    if (last.holder != id_ || last.version != version_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      last.policy = current_;
      last.version = version_.load(std::memory_order_relaxed);
      last.holder = id_;
    }
    return last.policy;
  }
  void set(policy::PolicyPtr next) {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.swap(next);
    version_.fetch_add(1, std::memory_order_release);
  }

 private:
  struct Snapshot {
    uint64_t holder = 0;
    uint64_t version = 0;
    policy::PolicyPtr policy;
  };
  static uint64_t next_id() {
    static std::atomic<uint64_t> ids{0};
    return ids.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  const uint64_t id_ = next_id();  // tells holders apart in a thread's snapshot
  mutable std::mutex mutex_;
  std::atomic<uint64_t> version_{1};  // advanced by every set(), under the lock
  policy::PolicyPtr current_;
};

}  // namespace gpu_admission::webhook
