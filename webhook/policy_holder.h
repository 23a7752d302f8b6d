// The one holder of mutable global state: the policy currently in force. Readers take a
// shared_ptr snapshot per request; a reload swaps it atomically, and requests in flight finish
// on the policy they started with.
#pragma once

#include <atomic>
#include <memory>

#include "policy/compiled_policy.h"

namespace gpu_admission::webhook {

class PolicyHolder {
 public:
  explicit PolicyHolder(policy::PolicyPtr initial = nullptr) : current_(std::move(initial)) {}
  policy::PolicyPtr get() const { return current_.load(std::memory_order_acquire); }
  void set(policy::PolicyPtr next) { current_.store(std::move(next), std::memory_order_release); }

 private:
  std::atomic<policy::PolicyPtr> current_;
};

}  // namespace gpu_admission::webhook
