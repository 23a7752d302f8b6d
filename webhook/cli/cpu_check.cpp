// Refuses to start, with a clear message, on an x86 CPU without the instructions the binary was
// built for (the x86-64 level of GPU_ADMISSION_X86_ARCH, x86-64-v3 by default, and PCLMUL; see
// the top-level CMakeLists.txt), instead of dying of SIGILL somewhere later. Runs as an early
// constructor, before the other static initialisers; this file itself is compiled for baseline
// x86-64.
#include <cstdio>
#include <cstdlib>

#ifndef GPU_ADMISSION_CPU_LEVEL
#define GPU_ADMISSION_CPU_LEVEL "x86-64-v3"
#endif

namespace {

__attribute__((constructor(101))) void require_cpu_features() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports(GPU_ADMISSION_CPU_LEVEL) && __builtin_cpu_supports("pclmul")) return;
  std::fputs("gpu-admission: this CPU lacks instructions the binary was built for (" GPU_ADMISSION_CPU_LEVEL
             " and PCLMUL).\nUse a build for an older level (-DGPU_ADMISSION_X86_ARCH=x86-64-v2, or OFF for any "
             "x86-64 CPU; JSON decoding is slower).\n",
             stderr);
  std::_Exit(70);
}

}  // namespace
