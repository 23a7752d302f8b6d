// Whether a container's env entry can matter to a rule, decided from its JSON text before it is
// read: most entries (configuration variables) name no variable a rule reads, and the pod
// decoder skips them instead of reading them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace gpu_admission::policy {

// Whether json[at] is a backslash or the "A_" of a name read (a candidate the scan found).
bool env_sign_at(std::string_view json, size_t at);

// True when `json`, the JSON text of env entries, could hold an entry named one of kDeviceEnvVars
// or beginning with kMpsEnvPrefix (policy/base/tenant_labels.h): it contains one of those names, or a
// backslash (an escape such as \u004e could spell one); each name holds "A_", which the scan
// looks for. False means no entry can: a name in the
// decoded object is these bytes, as sent. `json` must be followed by SIMDJSON_PADDING readable
// bytes (it lies inside a document simdjson iterates). Inline: it runs once per env entry.
inline bool env_may_name_read(std::string_view json) {
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
      if (env_sign_at(json, i + static_cast<size_t>(__builtin_ctz(hits)))) return true;
  }
  return false;
#else
  for (size_t i = 0; i < n; ++i)
    if ((p[i] == '\\' || p[i] == 'A') && env_sign_at(json, i)) return true;
  return false;
#endif
}

// The same for a policy that adds names of its own (spec.gpuEnvVars, `extra`): also true when
// `json` contains one of them. A name written without an escape is its own bytes in JSON text;
// any escape (one JSON requires for '"' or '\\', or an optional one) is a backslash, which the
// first test finds. With no extra names it costs what the first test costs.
inline bool env_may_name_read(std::string_view json, std::span<const std::string> extra) {
  if (env_may_name_read(json)) return true;
  for (const std::string& name : extra)
    if (json.find(name) != std::string_view::npos) return true;
  return false;
}

}  // namespace gpu_admission::policy
