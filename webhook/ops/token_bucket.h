// A token bucket without a lock, for rate limits that many threads share (log lines caused by
// outside input): at most `burst` events at once, then `per_second` on average. Implemented as
// the generic cell rate algorithm: one atomic "theoretical arrival time" per bucket, advanced by
// one interval per event taken, so a refused event costs one atomic load and writes nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace gpu_admission::webhook {

class TokenBucket {
 public:
  TokenBucket() : TokenBucket(1, 1) {}
  TokenBucket(double per_second, int burst) { configure(per_second, burst); }

  // Not meant to race with take(): set before use (a race only blurs the limit for a moment).
  void configure(double per_second, int burst) {
    const double rate = per_second > 1e-6 ? per_second : 1e-6;
    const auto interval = static_cast<int64_t>(std::min(1e9 / rate, 1e15));
    interval_ns_.store(interval, std::memory_order_relaxed);
    tolerance_ns_.store(interval * std::max(burst - 1, 0), std::memory_order_relaxed);
  }

  // Takes a token at `now_ns` (a monotonic clock); false when the bucket is empty.
  bool take(int64_t now_ns) {
    const int64_t interval = interval_ns_.load(std::memory_order_relaxed);
    const int64_t tolerance = tolerance_ns_.load(std::memory_order_relaxed);
    int64_t arrival = arrival_ns_.load(std::memory_order_relaxed);
    while (true) {
      const int64_t base = std::max(arrival, now_ns);
      if (base - now_ns > tolerance) return false;
      if (arrival_ns_.compare_exchange_weak(arrival, base + interval, std::memory_order_relaxed)) return true;
    }
  }

 private:
  std::atomic<int64_t> arrival_ns_{INT64_MIN / 2};
  std::atomic<int64_t> interval_ns_{0};
  std::atomic<int64_t> tolerance_ns_{0};
};

}  // namespace gpu_admission::webhook
