// Refuses to start, with a clear message, on an x86 CPU without the instructions the binary was
// built for (the x86-64 level of GPU_ADMISSION_X86_ARCH, x86-64-v3 by default, and PCLMUL; see
// the top-level CMakeLists.txt), instead of dying of SIGILL somewhere later. Runs as an early
// constructor, before the other static initialisers; this file itself is compiled for baseline
// x86-64. Each level is checked feature by feature: GCC and clang agree on these names, not on
// the level names (clang 14 knows no "x86-64-v3").
#include <cstdio>
#include <cstdlib>
#include <string_view>

#ifndef GPU_ADMISSION_CPU_LEVEL
#define GPU_ADMISSION_CPU_LEVEL "x86-64-v3"
#endif

namespace {

constexpr std::string_view kLevel = GPU_ADMISSION_CPU_LEVEL;

bool has_v2() {
  return __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse3") && __builtin_cpu_supports("ssse3") &&
         __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2");
}

bool has_v3() {
  return has_v2() && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
}

bool has_v4() {
  return has_v3() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}

bool has_level() {
  if (kLevel == "x86-64-v2") return has_v2();
  if (kLevel == "x86-64-v4") return has_v4();
  return has_v3();
}

__attribute__((constructor(101))) void require_cpu_features() {
  __builtin_cpu_init();
  if (has_level() && __builtin_cpu_supports("pclmul")) return;
  std::fputs("gpu-admission: this CPU lacks instructions the binary was built for (" GPU_ADMISSION_CPU_LEVEL
             " and PCLMUL).\nUse a build for an older level (-DGPU_ADMISSION_X86_ARCH=x86-64-v2, or OFF for any "
             "x86-64 CPU; JSON decoding is slower).\n",
             stderr);
  std::_Exit(70);
}

}  // namespace
