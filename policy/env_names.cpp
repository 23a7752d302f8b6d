#include "policy/env_names.h"

#include <cstdint>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "policy/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// Both prefixes the names read begin with hold "A_": the scan looks for that pair (and for
// backslashes), then checks whether a name read starts where it would.
constexpr std::string_view kDevicePrefix = "NVIDIA_";  // every kDeviceEnvVars name begins so
constexpr size_t kDevicePair = 5;                      // "A_" at 5 in NVIDIA_
constexpr size_t kMpsPair = 3;                         // and at 3 in CUDA_MPS_
static_assert(kDevicePrefix.substr(kDevicePair, 2) == "A_" && kMpsEnvPrefix.substr(kMpsPair, 2) == "A_");
constexpr bool all_device_vars_begin_with_prefix() {
  for (auto var : kDeviceEnvVars)
    if (!var.starts_with(kDevicePrefix)) return false;
  return true;
}
static_assert(all_device_vars_begin_with_prefix(), "the scan finds device env vars by the A_ of NVIDIA_");

bool starts_read_name(std::string_view rest) {
  if (rest.starts_with(kMpsEnvPrefix)) return true;
  for (auto var : kDeviceEnvVars)
    if (rest.starts_with(var)) return true;
  return false;
}

// Whether json[at] is a backslash or the "A_" of a name read.
bool sign_at(std::string_view json, size_t at) {
  if (json[at] == '\\') return true;
  return (at >= kDevicePair && starts_read_name(json.substr(at - kDevicePair))) ||
         (at >= kMpsPair && starts_read_name(json.substr(at - kMpsPair)));
}

}  // namespace

bool env_may_name_read(std::string_view json) {
  const char* p = json.data();
  const size_t n = json.size();
#ifdef __AVX2__
  // 32 bytes at a time; the loads reach 32 bytes past a block's start: inside the padding.
  const __m256i a = _mm256_set1_epi8('A'), underscore = _mm256_set1_epi8('_'), backslash = _mm256_set1_epi8('\\');
  for (size_t i = 0; i < n; i += 32) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 1));
    const __m256i pair = _mm256_and_si256(_mm256_cmpeq_epi8(b0, a), _mm256_cmpeq_epi8(b1, underscore));
    auto hits = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(pair, _mm256_cmpeq_epi8(b0, backslash))));
    if (n - i < 32) hits &= (uint32_t{1} << (n - i)) - 1;
    for (; hits != 0; hits &= hits - 1)
      if (sign_at(json, i + static_cast<size_t>(__builtin_ctz(hits)))) return true;
  }
  return false;
#else
  for (size_t i = 0; i < n; ++i)
    if ((p[i] == '\\' || p[i] == 'A') && sign_at(json, i)) return true;
  return false;
#endif
}

}  // namespace gpu_admission::policy
