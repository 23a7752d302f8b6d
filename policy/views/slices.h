// GPU arithmetic in compute slices (one slice is 1/7 of an A100 or H100, 1/4 of an A30): exact
// integers that saturate far above any cap instead of overflowing, so a huge or unbounded
// request always counts as more than the cap.
#pragma once

#include <cstdint>
#include <limits>

namespace gpu_admission::policy {

// Where slice arithmetic saturates: far above any cap (caps are at most 1000000 GPUs).
inline constexpr int64_t kSaturatedSlices = std::numeric_limits<int64_t>::max() / 4;

inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > kSaturatedSlices) return kSaturatedSlices;
  return r;
}

inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kSaturatedSlices) return kSaturatedSlices;
  return r;
}

}  // namespace gpu_admission::policy
