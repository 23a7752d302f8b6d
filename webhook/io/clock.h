// The wall clock, as Unix seconds: the time the policy library is given (it reads no clock
// itself) for exceptions that expire and lint warnings about them.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpu_admission::webhook {

inline int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace gpu_admission::webhook
