// The one holder of mutable global state: the policy currently in force. Readers take a
// shared_ptr snapshot per request; a reload swaps it, and requests in flight finish on the
// policy they started with. A mutex (held for a pointer copy) rather than
// std::atomic<std::shared_ptr>, whose libstdc++ 12 implementation ThreadSanitizer flags.
#pragma once

#include <memory>
#include <mutex>

#include "policy/compiled_policy.h"

namespace gpu_admission::webhook {

class PolicyHolder {
 public:
  explicit PolicyHolder(policy::PolicyPtr initial = nullptr) : current_(std::move(initial)) {}
  policy::PolicyPtr get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
  }
  void set(policy::PolicyPtr next) {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.swap(next);
  }

 private:
  mutable std::mutex mutex_;
  policy::PolicyPtr current_;
};

}  // namespace gpu_admission::webhook
